;;; hive-rpc-sessions.el --- The agent sessions the hive_rpc hub knows  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The hive_rpc authors

;; This file is not part of GNU Emacs.

;; This program is free software: you can redistribute it and/or modify
;; it under the terms of the GNU General Public License as published by
;; the Free Software Foundation, either version 3 of the License, or
;; (at your option) any later version.

;; This program is distributed in the hope that it will be useful,
;; but WITHOUT ANY WARRANTY; without even the implied warranty of
;; MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the
;; GNU General Public License for more details.

;; You should have received a copy of the GNU General Public License
;; along with this program.  If not, see <https://www.gnu.org/licenses/>.

;;; Commentary:

;; `hive-rpc-sessions' answers "which of my agents waits on me?": one
;; line per agent session the hub keeps (docs/protocol.md, "Agent
;; sessions"), the waiting ones first, with what each waits on, its
;; kind, project, how long it has been in its state and its last
;; message.  The hub sends each change (`hive/session'), so the buffer
;; follows live; it never moves point nor selects a window.
;;
;; RET on a session that waits on questions or permission requests
;; opens the oldest of them in the minibuffer, as `hive-rpc-list'
;; does; on any other session it shows the session's terminal: the
;; buffer whose process is an ancestor of the agent's process (walked
;; up from its pid with `process-attributes': a fact, not a name), else
;; the buffer of the ling it says it is, else the tmux pane it says it
;; runs in.

;;; Code:

(require 'cl-lib)
(require 'hive-rpc)
(require 'tabulated-list)


;;; User options
;;;

(defcustom hive-rpc-sessions-refresh-interval 1
  "Seconds between refreshes of the ages shown by `hive-rpc-sessions'."
  :type 'number
  :group 'hive-rpc)


;;; Private
;;;

(defconst hive-rpc--sessions-buffer "*hive-rpc sessions*"
  "Name of the `hive-rpc-sessions' buffer.")

(defconst hive-rpc--session-states '("waiting" "working" "idle" "gone")
  "Session states in the order the list shows them, as the hub orders them.")

(defvar hive-rpc--sessions-timer nil
  "Timer refreshing the ages shown by `hive-rpc-sessions'.")

(defvar hive-rpc-sessions-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'hive-rpc-sessions-visit)
    (define-key map "j" #'hive-rpc-sessions-jump)
    (define-key map "w" #'hive-rpc-sessions-copy-id)
    map)
  "Keymap of `hive-rpc-sessions-mode'.")

(define-derived-mode hive-rpc-sessions-mode tabulated-list-mode "Hive sessions"
  "Major mode listing the agent sessions the hub knows, waiting ones first.
\\{hive-rpc-sessions-mode-map}"
  (setq tabulated-list-format
        [("State" 34 nil) ("Agent" 20 nil) ("Project" 30 nil) ("Age" 7 nil)
         ("Message" 0 nil)])
  (setq tabulated-list-padding 1)
  (add-hook 'tabulated-list-revert-hook #'hive-rpc--sessions-fetch nil t)
  (tabulated-list-init-header))

(defun hive-rpc--session-waits-on (session)
  "Return what SESSION waits on, in words: \"2 permissions, 1 question\".
A session that waits in its agent's own dialog, with no prompt in the
hub, says \"its own dialog\"; nil when it waits on nothing."
  (let ((permissions (or (plist-get session :permissions) 0))
        (questions (or (plist-get session :questions) 0)))
    (cond
     ((or (> permissions 0) (> questions 0))
      (string-join
       (delq nil (list (and (> permissions 0)
                            (format "%d permission%s" permissions
                                    (if (= permissions 1) "" "s")))
                       (and (> questions 0)
                            (format "%d question%s" questions
                                    (if (= questions 1) "" "s")))))
       ", "))
     ((eq (plist-get session :in_terminal) t) "its own dialog"))))

(defun hive-rpc--session-state-text (session)
  "Return SESSION's State column: its state, and what it waits on."
  (let ((state (hive-rpc--clean (or (plist-get session :state) "?")))
        (on (hive-rpc--session-waits-on session)))
    (cond ((equal state "waiting")
           (propertize (if on (format "waiting: %s" on) state) 'face 'hive-rpc-urgent))
          ((equal state "gone") (propertize state 'face 'shadow))
          (t state))))

(defun hive-rpc--session-agent-text (session)
  "Return SESSION's Agent column: its kind and process, or its agent id."
  (let ((kind (or (plist-get session :display) (plist-get session :agent)))
        (pid (plist-get session :pid)))
    (propertize
     (hive-rpc--clean
      (if (stringp kind)
          (if (numberp pid) (format "%s %d" kind pid) kind)
        (or (plist-get session :agent_id) "?")))
     'help-echo (hive-rpc--clean (or (plist-get session :agent_id) "")))))

(defun hive-rpc--session-order (a b)
  "Return non-nil if session A is listed before session B.
As the hub lists them: by state (waiting, working, idle, gone), the
longest waiting first, else the most recently changed first."
  (let ((ra (or (cl-position (plist-get a :state) hive-rpc--session-states
                             :test #'equal)
                9))
        (rb (or (cl-position (plist-get b :state) hive-rpc--session-states
                             :test #'equal)
                9))
        (ta (or (plist-get a :changed_at) 0))
        (tb (or (plist-get b :changed_at) 0)))
    (cond ((/= ra rb) (< ra rb))
          ((= ra 0) (< ta tb))
          (t (> ta tb)))))

(defun hive-rpc--sessions-sorted ()
  "Return the known session records, in the list's order."
  (let (sessions)
    (maphash (lambda (_id s) (push s sessions)) hive-rpc--sessions)
    (sort sessions #'hive-rpc--session-order)))

(defun hive-rpc--sessions-entries ()
  "Return the `tabulated-list-entries' of the known sessions."
  (let ((now (float-time)))
    (mapcar
     (lambda (s)
       (let ((dir (plist-get s :project_dir))
             (changed (plist-get s :changed_at)))
         (list (plist-get s :agent_id)
               (vector (hive-rpc--session-state-text s)
                       (hive-rpc--session-agent-text s)
                       (if (stringp dir)
                           (hive-rpc--clean (abbreviate-file-name dir))
                         "")
                       (if (numberp changed) (hive-rpc--duration (- now changed)) "")
                       (hive-rpc--session-message s)))))
     (hive-rpc--sessions-sorted))))

(defun hive-rpc--session-message (session)
  "Return SESSION's Message column.
For a session waiting on prompts, the oldest one's question: what
RET opens.  Else its last notice or failure, or its last event."
  (let* ((id (and (equal (plist-get session :state) "waiting")
                  (hive-rpc--session-oldest-prompt session)))
         (prompt (and id (gethash id (hive-rpc--prompts)))))
    (if prompt
        (concat (if (hive-rpc--permission-p prompt) "permission: " "")
                (hive-rpc--clean (or (plist-get prompt :question) "")))
      (hive-rpc--clean (or (plist-get session :message)
                           (plist-get session :last_event)
                           "")))))

(defun hive-rpc--sessions-refresh ()
  "Redisplay the sessions buffer, the current one, from the known sessions.
Point stays on its session in every window showing the buffer, and
no window is selected."
  (let ((windows (mapcar (lambda (w)
                           (cons w (save-excursion
                                     (goto-char (window-point w))
                                     (tabulated-list-get-id))))
                         (get-buffer-window-list (current-buffer) nil t))))
    (setq tabulated-list-entries (hive-rpc--sessions-entries))
    (tabulated-list-print t)
    (dolist (pair windows)
      (when (cdr pair)
        (save-excursion
          (goto-char (point-min))
          (while (and (not (eobp)) (not (equal (tabulated-list-get-id) (cdr pair))))
            (forward-line 1))
          (unless (eobp) (set-window-point (car pair) (point))))))))

(defvar hive-rpc--sessions-pending nil
  "Timer of the refresh that follows a change of the sessions, or nil.")

(defun hive-rpc--sessions-shown-p (buffer)
  "Return non-nil if BUFFER is shown in a window, on any frame."
  (get-buffer-window buffer t))

(defun hive-rpc--sessions-update (&optional _id)
  "Refresh the sessions buffer soon, once, if it is shown.
A new subscription brings every session, up to 2,000, one
notification each: they make one refresh, after the burst.  A
buffer not shown is refreshed when it is shown again (the tick)
or by `hive-rpc-sessions'."
  (unless (timerp hive-rpc--sessions-pending)
    (setq hive-rpc--sessions-pending
          (run-at-time 0 nil (lambda ()
                               (setq hive-rpc--sessions-pending nil)
                               (hive-rpc--sessions-refresh-shown))))))

(defun hive-rpc--sessions-refresh-shown ()
  "Refresh the sessions buffer if it is shown."
  (let ((buffer (get-buffer hive-rpc--sessions-buffer)))
    (when (and (buffer-live-p buffer) (hive-rpc--sessions-shown-p buffer))
      (with-current-buffer buffer
        (when (derived-mode-p 'hive-rpc-sessions-mode)
          (hive-rpc--sessions-refresh))))))

(defun hive-rpc--sessions-tick ()
  "Refresh the sessions buffer's ages while shown; stop when it is gone."
  (if (buffer-live-p (get-buffer hive-rpc--sessions-buffer))
      (hive-rpc--sessions-refresh-shown)
    (hive-rpc--cancel-timer 'hive-rpc--sessions-timer)))

(defun hive-rpc--sessions-fetch ()
  "Ask the hub for every session (`hive/sessions'), then refresh."
  (when (hive-rpc--connected-p)
    (let ((conn hive-rpc--connection))
      (jsonrpc-async-request
       conn 'hive/sessions nil
       :success-fn (lambda (sessions)
                     (when (eq conn hive-rpc--connection)
                       (clrhash hive-rpc--sessions)
                       (mapc (lambda (s)
                               (when (stringp (plist-get s :agent_id))
                                 (puthash (plist-get s :agent_id) s hive-rpc--sessions)))
                             sessions)
                       (run-hook-with-args 'hive-rpc-sessions-changed-hook nil)))
       :error-fn (lambda (err)
                   (message "hive-rpc: sessions refused: %s"
                            (hive-rpc--clean (plist-get err :message))))))))

(defun hive-rpc--sessions-show (&optional fetch)
  "Return the sessions buffer, made and up to date; with FETCH, ask the hub too.
It is not displayed."
  (add-hook 'hive-rpc-sessions-changed-hook #'hive-rpc--sessions-update)
  ;; The Message column of a waiting session shows its oldest question.
  (add-hook 'hive-rpc-update-hook #'hive-rpc--sessions-update)
  (with-current-buffer (get-buffer-create hive-rpc--sessions-buffer)
    (unless (derived-mode-p 'hive-rpc-sessions-mode)
      (hive-rpc-sessions-mode))
    (hive-rpc--sessions-refresh)
    (when fetch (hive-rpc--sessions-fetch))
    (unless (timerp hive-rpc--sessions-timer)
      (setq hive-rpc--sessions-timer
            (run-at-time hive-rpc-sessions-refresh-interval hive-rpc-sessions-refresh-interval
                         #'hive-rpc--sessions-tick)))
    (current-buffer)))

(defun hive-rpc--session-at-point ()
  "Return the session record at point, or signal a `user-error'."
  (let* ((id (tabulated-list-get-id))
         (session (and id (gethash id hive-rpc--sessions))))
    (or session (user-error "No session here"))))

(defun hive-rpc--session-oldest-prompt (session)
  "Return the id of the oldest prompt SESSION waits on that Emacs knows, or nil."
  (let (best best-time)
    (mapc (lambda (id)
            (let ((r (gethash id (hive-rpc--prompts))))
              (when (and r (or (null best-time)
                               (< (plist-get r :created_at) best-time)))
                (setq best id best-time (plist-get r :created_at)))))
          (plist-get session :prompt_ids))
    best))

(defun hive-rpc--process-ancestors (pid)
  "Return PID and its ancestors' pids, PID first, from the kernel."
  (let (chain)
    (while (and (natnump pid) (> pid 1) (not (memq pid chain)))
      (push pid chain)
      (setq pid (alist-get 'ppid (process-attributes pid))))
    (nreverse chain)))

(defun hive-rpc--session-buffer (session)
  "Return the live buffer whose process started SESSION's agent, or nil.
That is the buffer of the nearest ancestor of the agent's process
\(`:pid', which the hub checked) among Emacs's subprocesses: a vterm,
eat, term, comint buffer... wherever the agent was started."
  (let ((ancestors (hive-rpc--process-ancestors (plist-get session :pid)))
        found)
    (when ancestors
      (let ((by-pid (make-hash-table)))
        (dolist (proc (process-list))
          (let ((pid (process-id proc))
                (buffer (process-buffer proc)))
            (when (and pid (buffer-live-p buffer) (process-live-p proc))
              (puthash pid buffer by-pid))))
        (setq found (cl-some (lambda (pid) (gethash pid by-pid)) ancestors))))
    found))

(defun hive-rpc--tmux-pane (terminal)
  "Return (PANE . SOCKET) from TERMINAL, \"tmux:%3@/tmp/tmux-1000/default\", or nil."
  (when (and (stringp terminal)
             (string-match "\\`tmux:\\(%[0-9]+\\)@\\(.+\\)\\'" terminal))
    (cons (match-string 1 terminal) (match-string 2 terminal))))

(defun hive-rpc--show-tmux-pane (pane socket)
  "Offer to switch this Emacs's tmux client to PANE of the server at SOCKET.
Only when Emacs runs in that tmux server; else say where the pane is."
  (let ((ours (car (split-string (or (getenv "TMUX") "") ","))))
    (if (and (equal ours socket) (executable-find "tmux")
             (y-or-n-p (format "Switch this tmux client to pane %s? " pane)))
        (unless (eq 0 (call-process "tmux" nil nil nil "-S" socket
                                    "switch-client" "-t" pane ";"
                                    "select-window" "-t" pane ";"
                                    "select-pane" "-t" pane))
          (message "hive-rpc: tmux could not switch to pane %s" pane))
      (message "hive-rpc: the agent runs in tmux pane %s (server %s)" pane socket))))

(defun hive-rpc--jump-to-ling (session from)
  "Show the buffer of SESSION's ling, asking the hub where it is.
FROM is the buffer the human asked in: the ling's buffer shows only
if they are still there when the hub answers.  Return non-nil if a
request went to the hub."
  (let ((ling (plist-get session :ling)))
    (when (and (stringp ling) (hive-rpc--connected-p))
      (jsonrpc-async-request
       hive-rpc--connection 'ling/list nil
       :success-fn
       (lambda (lings)
         (let* ((found (cl-find ling (if (vectorp lings) (append lings nil) lings)
                                :key (lambda (l) (plist-get l :name)) :test #'equal))
                (buffer (and found (equal (plist-get found :kind) "emacs-buffer")
                             (get-buffer (plist-get found :address)))))
           (cond
            ((and buffer (eq (window-buffer (selected-window)) from))
             (pop-to-buffer buffer))
            (buffer (message "hive-rpc: ling %s is buffer %s"
                             (hive-rpc--clean ling) (buffer-name buffer)))
            (t (hive-rpc--say-where session)))))
       :error-fn (lambda (_err) (hive-rpc--say-where session)))
      t)))

(defun hive-rpc--say-where (session)
  "Say in the echo area what is known of the place of SESSION."
  (let ((pane (hive-rpc--tmux-pane (plist-get session :terminal))))
    (if pane
        (hive-rpc--show-tmux-pane (car pane) (cdr pane))
      (message "hive-rpc: no buffer or pane known for %s%s"
               (hive-rpc--clean (or (plist-get session :agent_id) "this session"))
               (let ((dir (plist-get session :project_dir)))
                 (if (stringp dir)
                     (format " (in %s)" (hive-rpc--clean (abbreviate-file-name dir)))
                   ""))))))


;;; Commands
;;;

;;;###autoload
(defun hive-rpc-sessions ()
  "List the agent sessions the hub knows, those waiting on you first.
\\<hive-rpc-sessions-mode-map>\\[hive-rpc-sessions-visit] answers what \
a waiting session waits on,
or shows another's terminal; \\[hive-rpc-sessions-jump] shows its \
terminal in any case,
\\[hive-rpc-sessions-copy-id] copies its agent id, \\[revert-buffer] \
refreshes from the hub."
  (interactive)
  (pop-to-buffer (hive-rpc--sessions-show t))
  (unless (hive-rpc--connected-p)
    (message "hive-rpc: not connected to the hub; the sessions show once it is")))

(defun hive-rpc-sessions-visit ()
  "Answer what the session at point waits on, or show its terminal.
A session waiting on questions or permission requests has the
oldest of them opened in the minibuffer, then each queued question,
as `hive-rpc-answer-next' does; any other session's terminal is shown
with `hive-rpc-sessions-jump'."
  (interactive)
  (let* ((session (hive-rpc--session-at-point))
         (id (and (equal (plist-get session :state) "waiting")
                  (hive-rpc--session-oldest-prompt session))))
    (if id
        (progn (hive-rpc--clear-news) (hive-rpc--chain id))
      (hive-rpc-sessions-jump))))

(defun hive-rpc-sessions-jump ()
  "Show the terminal of the session at point.
That is the Emacs buffer whose process is the agent's process or
one of its ancestors, else the buffer of the ling the agent says it
is, else the tmux pane it says it runs in (this Emacs's tmux client
switches to it if you agree and Emacs runs in that tmux server)."
  (interactive)
  (let* ((session (hive-rpc--session-at-point))
         (buffer (hive-rpc--session-buffer session)))
    (cond
     (buffer (pop-to-buffer buffer))
     ((hive-rpc--jump-to-ling session (current-buffer)))
     (t (hive-rpc--say-where session)))))

(defun hive-rpc-sessions-copy-id ()
  "Copy the agent id of the session at point to the kill ring."
  (interactive)
  (let ((id (plist-get (hive-rpc--session-at-point) :agent_id)))
    (kill-new id)
    (message "%s" id)))

(provide 'hive-rpc-sessions)
;;; hive-rpc-sessions.el ends here
