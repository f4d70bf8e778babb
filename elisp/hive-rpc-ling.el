;;; hive-rpc-ling.el --- Let the hive_rpc hub type into agents' terminals  -*- lexical-binding: t; -*-

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

;; AI agents ("lings") such as Claude Code often run in an Emacs
;; terminal buffer: vterm, eat, term or ansi-term, or a comint buffer
;; (shell, and the buffers of claude-code.el or claude-code-ide.el).
;; The hub's Agora relays type messages into them through the Emacs
;; connected to the hub.
;;
;; Each time `hive-rpc-mode' connects, this file offers Emacs to the
;; hub as a delivery peer (`hive/offerDelivery'), unless
;; `hive-rpc-ling-offer-delivery' is nil.  It then answers four
;; requests from the hub:
;;
;;   hive/bufferState   {buffer}       -> {exists, alive, mode, tail,
;;                                         pid, draft}
;;   hive/deliver       {buffer, text} -> {delivered: true}
;;   hive/watchBuffer   {buffer}       -> {watching: true}
;;   hive/unwatchBuffer {buffer}       -> {watching: BOOL}
;;
;; The text is typed as data, as one paste where the terminal supports
;; it, then submitted with Enter.  Control characters other than
;; newline and tab are stripped first, and nothing that comes from the
;; network is ever evaluated.
;;
;; While the hub holds a turn for a buffer (a dialog on its screen,
;; the human's draft in its input), it watches the buffer: a
;; buffer-local `after-change-functions' hook then sends the hub
;; `hive/bufferChanged' shortly after the buffer changes (one
;; notification for a burst of output), and `kill-buffer-hook' sends
;; it as the buffer is killed, so the turn goes in as soon as the hold
;; clears.
;;
;; `hive-rpc-register-ling' registers the terminal in the current
;; buffer with the hub under a ling name; `hive-rpc-unregister-ling'
;; removes a ling.  `hive-rpc-spawn-ling' starts one in a new buffer,
;; displayed, never selected: the keyboard stays where you type.
;;
;; While the hub holds a turn for a ling (its human is typing a
;; draft, its terminal shows a dialog), the ling's buffer says so in
;; its header line, from the hub's `hive/agora' notifications, which
;; also say in the echo area when a turn failed, a dialogue paused or
;; reached consensus.
;;
;; hive-rpc.el loads this file when `hive-rpc-mode' is turned on.
;; This file requires hive-rpc-core.el only, never hive-rpc.el: it
;; learns of each connection from `hive-rpc-connected-functions' and
;; answers the hub through `hive-rpc-handle-request', both in
;; hive-rpc-core.el, so the two files do not depend on each other.

;;; Code:

(require 'cl-lib)
(require 'jsonrpc)
(require 'subr-x)
(require 'hive-rpc-core)
(require 'term)

(declare-function vterm-send-string "ext:vterm" (string &optional paste-p))
(declare-function vterm-send-return "ext:vterm" ())
(declare-function eat-term-send-string "ext:eat" (terminal string))
(declare-function eat-term-send-string-as-yank "ext:eat" (terminal args))
(declare-function term-send-raw-string "term" (chars))
(declare-function comint-send-input "comint" (&optional no-newline artificial))

(defvar eat-terminal)


;;; User options
;;;

(defcustom hive-rpc-ling-offer-delivery t
  "Non-nil means the hub may type into this Emacs's terminal buffers.
When non-nil, `hive-rpc-mode' offers Emacs to the hub as a
delivery peer each time it connects, and the hub's relays can
then type messages into the terminal buffers registered as lings
with `hive-rpc-register-ling'.  When nil, Emacs makes no offer and
refuses the hub's requests to read or type into buffers."
  :type 'boolean
  :group 'hive-rpc)

(defcustom hive-rpc-ling-tail-lines 40
  "Number of lines at the end of a terminal buffer shown to the hub.
The hub reads them before typing, so that it does not type into a
terminal that shows a question of its own (a permission prompt, say)."
  :type 'natnum
  :group 'hive-rpc)


;;; Private
;;;

(defconst hive-rpc-ling--max-tail-chars 16384
  "At most this many characters of a buffer's tail are sent to the hub.")

(defconst hive-rpc-ling--name-regexp
  "\\`[A-Za-z0-9_-]+\\(?:\\.[A-Za-z0-9_-]+\\)*\\'"
  "Ling names: dot-separated parts of letters, digits, `-' and `_'.")

(defun hive-rpc-ling--refuse (format-string &rest args)
  "Refuse the hub's request with the message FORMAT-STRING applied to ARGS."
  (jsonrpc-error :code hive-rpc-error-refused
                 :message (apply #'format format-string args)))

(defun hive-rpc-ling--string-param (params key method)
  "Return the string KEY of PARAMS, or refuse METHOD's request."
  (let ((value (plist-get params key)))
    (unless (stringp value)
      (jsonrpc-error :code hive-rpc-error-invalid-params
                     :message (format "%s: parameter %s must be a string"
                                      method (hive-rpc--key-name key))))
    value))

(defun hive-rpc-ling--kind (buffer)
  "Return the kind of terminal BUFFER is, or nil if it is none.
The kind is one of the symbols `vterm', `eat', `term' or `comint'.
An Emacs Lisp REPL (IELM) is never a terminal: its input is
evaluated by Emacs itself."
  (with-current-buffer buffer
    (cond ((derived-mode-p 'vterm-mode) 'vterm)
          ((derived-mode-p 'eat-mode) 'eat)
          ((derived-mode-p 'term-mode) 'term)
          ((derived-mode-p 'inferior-emacs-lisp-mode) nil)
          ((derived-mode-p 'comint-mode) 'comint))))

(defun hive-rpc-ling--strip (text)
  "Return TEXT without text properties, control and invisible characters.
Newlines and tabs are kept; every other C0 control character
\(escape and carriage return included), DEL and the C1 controls
are removed, so that no escape sequence or key reaches the terminal,
and so are the characters a person cannot see (`hive-rpc--visible')."
  (hive-rpc--visible
   (replace-regexp-in-string "[\0-\10\13-\37\177\u0080-\u009f]" ""
                             (substring-no-properties text) t t)))

(defun hive-rpc-ling--tail (buffer)
  "Return the last `hive-rpc-ling-tail-lines' non-blank lines of BUFFER."
  (with-current-buffer buffer
    (save-excursion
      (save-restriction
        (widen)
        (goto-char (point-max))
        (skip-chars-backward " \t\n")
        (let ((end (line-end-position)))
          (forward-line (- 1 (max 1 hive-rpc-ling-tail-lines)))
          (buffer-substring-no-properties
           (max (point) (- end hive-rpc-ling--max-tail-chars)) end))))))

(defun hive-rpc-ling--draft (buffer kind)
  "Return the input the user typed in BUFFER, a terminal of KIND, or nil.
In a comint buffer that is the text after the process mark, not
yet sent.  Other terminals draw their input line on their screen,
which the hub reads in the tail, so for them this is nil."
  (when (eq kind 'comint)
    (let ((process (get-buffer-process buffer)))
      (when process
        (with-current-buffer buffer
          (save-restriction
            (widen)
            (buffer-substring-no-properties
             (min (process-mark process) (point-max)) (point-max))))))))

(defun hive-rpc-ling--live-p (buffer)
  "Return non-nil if BUFFER is a terminal whose process is running."
  (and (hive-rpc-ling--kind buffer)
       (process-live-p (get-buffer-process buffer))))

(defun hive-rpc-ling--comint-send (text)
  "Send TEXT as one input of the current comint buffer.
Input the user had typed but not sent is set aside, and put back
after TEXT is sent."
  (let* ((mark (process-mark (get-buffer-process (current-buffer))))
         (draft (delete-and-extract-region mark (point-max))))
    (goto-char (point-max))
    (insert text)
    (comint-send-input)
    (unless (string-empty-p draft)
      (goto-char (point-max))
      (insert draft))))

(defun hive-rpc-ling--type (buffer kind text)
  "Type TEXT into BUFFER, a terminal of KIND, and submit it with Enter."
  (with-current-buffer buffer
    (pcase kind
      ('vterm
       (vterm-send-string text t)
       (vterm-send-return))
      ('eat
       (if (fboundp 'eat-term-send-string-as-yank)
           (eat-term-send-string-as-yank eat-terminal text)
         (eat-term-send-string eat-terminal text))
       (eat-term-send-string eat-terminal "\r"))
      ('term
       (term-send-raw-string text)
       (term-send-raw-string "\r"))
      ('comint
       (hive-rpc-ling--comint-send text)))))

(defconst hive-rpc-ling--watch-delay 0.05
  "Seconds a watched buffer's changes gather before the hub is told.
A burst of output (a redraw, a line written in pieces) then sends
one `hive/bufferChanged', not one per change.")

(defvar-local hive-rpc-ling--watches nil
  "The hub's watches of this buffer: a list of (CONNECTION . NAME).
One entry per `hive/watchBuffer' not yet undone by a
`hive/unwatchBuffer'; NAME is the buffer's name as the hub gave it.")
(put 'hive-rpc-ling--watches 'permanent-local t)

(defvar-local hive-rpc-ling--watch-timer nil
  "The timer that tells the hub of this buffer's changes, or nil.")
(put 'hive-rpc-ling--watch-timer 'permanent-local t)

(defun hive-rpc-ling--changed (&rest _)
  "Tell the hub, shortly, that the current buffer changed.
Run from `after-change-functions' in a watched buffer.  A change
while the timer is pending adds nothing: one notification goes for
all the changes of `hive-rpc-ling--watch-delay' seconds."
  (unless hive-rpc-ling--watch-timer
    (setq hive-rpc-ling--watch-timer
          (run-at-time hive-rpc-ling--watch-delay nil
                       #'hive-rpc-ling--tell-changed (current-buffer)))))
(put 'hive-rpc-ling--changed 'permanent-local-hook t)

(defun hive-rpc-ling--tell-changed (buffer)
  "Send `hive/bufferChanged' for BUFFER to the connections watching it.
The watches of connections that have closed are dropped, and the
hooks with the last of them."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (setq hive-rpc-ling--watch-timer nil)
      (setq hive-rpc-ling--watches
            (cl-remove-if-not #'hive-rpc-ling--running-p hive-rpc-ling--watches
                              :key #'car))
      (if hive-rpc-ling--watches
          (hive-rpc-ling--notify hive-rpc-ling--watches)
        (hive-rpc-ling--stop-watching)))))

(defun hive-rpc-ling--running-p (connection)
  "Return non-nil if CONNECTION is a connection still running."
  (and connection (jsonrpc-running-p connection)))

(defun hive-rpc-ling--notify (watches)
  "Send `hive/bufferChanged' once per connection and name of WATCHES."
  (dolist (watch (cl-remove-duplicates watches :test #'hive-rpc-ling--same-watch-p))
    (let ((conn (car watch)))
      (when (hive-rpc-ling--running-p conn)
        (jsonrpc-notify conn 'hive/bufferChanged (list :buffer (cdr watch)))))))

(defun hive-rpc-ling--same-watch-p (a b)
  "Return non-nil if the watches A and B are one connection's of one name."
  (and (eq (car a) (car b)) (equal (cdr a) (cdr b))))

(defun hive-rpc-ling--killed ()
  "Tell the hub that the current buffer, which it watches, is being killed.
Sent once the buffer is gone, from a timer: the hub's next
`hive/bufferState' then finds no buffer."
  (let ((watches hive-rpc-ling--watches))
    (hive-rpc-ling--stop-watching)
    (run-at-time 0 nil #'hive-rpc-ling--notify watches)))
(put 'hive-rpc-ling--killed 'permanent-local-hook t)

(defun hive-rpc-ling--stop-watching ()
  "Forget the hub's watches of the current buffer; remove its hooks."
  (when hive-rpc-ling--watch-timer
    (cancel-timer hive-rpc-ling--watch-timer))
  (setq hive-rpc-ling--watches nil
        hive-rpc-ling--watch-timer nil)
  (remove-hook 'after-change-functions #'hive-rpc-ling--changed t)
  (remove-hook 'kill-buffer-hook #'hive-rpc-ling--killed t))

(defun hive-rpc-ling--check-offer ()
  "Refuse the hub's request unless `hive-rpc-ling-offer-delivery' is set."
  (unless hive-rpc-ling-offer-delivery
    (hive-rpc-ling--refuse
     "this Emacs does not let the hub type into its buffers (hive-rpc-ling-offer-delivery is nil)")))

(defun hive-rpc-ling--offer (connection)
  "Offer Emacs to the hub on CONNECTION as a delivery peer."
  (when hive-rpc-ling-offer-delivery
    (jsonrpc-async-request
     connection 'hive/offerDelivery nil
     :success-fn #'ignore
     :error-fn (lambda (err)
                 (message "hive-rpc: the hub cannot type into Emacs buffers: %s"
                          (hive-rpc--clean (plist-get err :message))))
     :timeout-fn #'ignore)))

(add-hook 'hive-rpc-connected-functions #'hive-rpc-ling--offer)

(defun hive-rpc-ling--default-name (buffer-name)
  "Return a ling name derived from BUFFER-NAME.
It is lowercase, and every run of characters other than letters,
digits, `_', `-' and `.' becomes a single `-'; for example
\"*claude-code: auth*\" gives \"claude-code-auth\"."
  (let* ((name (downcase buffer-name))
         (name (replace-regexp-in-string "[^a-z0-9_.-]+" "-" name t t))
         (name (replace-regexp-in-string "-*\\.[-.]*" "." name t t))
         (name (replace-regexp-in-string "\\`[-.]+\\|[-.]+\\'" "" name t t))
         (name (replace-regexp-in-string "-\\{2,\\}" "-" name t t)))
    (if (string-empty-p name)
        "ling"
      (string-trim-right (substring name 0 (min 128 (length name))) "[-.]+"))))

(defun hive-rpc-ling--check-name (name)
  "Signal a `user-error' unless NAME is a valid ling name."
  (unless (and (stringp name) (<= (length name) 128)
               (string-match-p hive-rpc-ling--name-regexp name))
    (user-error "Not a ling name: %S; use dot-separated parts of letters, digits, `-' and `_'"
                name)))

(defun hive-rpc-ling--require-connection ()
  "Signal a `user-error' unless hive-rpc is connected to the hub."
  (unless (hive-rpc--connected-p)
    (user-error "Not connected to the hub; turn on `hive-rpc-mode'")))

(defun hive-rpc-ling--refused-message (verb name err)
  "Show that the hub refused to VERB ling NAME, with error ERR."
  (message "hive-rpc: cannot %s ling %s: %s%s" verb name
           (hive-rpc--clean (plist-get err :message))
           (if (eql (plist-get err :code) hive-rpc-error-method-not-found)
               " (this hub has no lings; update hive-rpc)"
             "")))


;;; Requests from the hub
;;;

(cl-defmethod hive-rpc-handle-request
  (_connection (_method (eql 'hive/bufferState)) params)
  "Report the state of the buffer named in PARAMS.
The result says whether the buffer exists, whether it is a
terminal whose process runs (alive), its kind of terminal (mode:
vterm, eat, term, comint, or the major mode of any other buffer),
the text of its last lines (tail), the id of its process (pid),
from which the hub tells whether a shell or an agent runs there,
and in a comint buffer the input the user typed and has not sent
\(draft), which holds the hub's messages until it is sent."
  (hive-rpc-ling--check-offer)
  (let* ((name (hive-rpc-ling--string-param params :buffer 'hive/bufferState))
         (buffer (get-buffer name)))
    (if (not (buffer-live-p buffer))
        (list :exists :json-false :alive :json-false :mode nil :tail "" :pid nil
              :draft nil)
      (let ((kind (hive-rpc-ling--kind buffer))
            (process (get-buffer-process buffer)))
        (list :exists t
              :alive (if (hive-rpc-ling--live-p buffer) t :json-false)
              :mode (symbol-name (or kind (buffer-local-value 'major-mode buffer)))
              :tail (hive-rpc-ling--tail buffer)
              :pid (and process (process-id process))
              :draft (hive-rpc-ling--draft buffer kind))))))

(cl-defmethod hive-rpc-handle-request
  (_connection (_method (eql 'hive/deliver)) params)
  "Type the text in PARAMS into the terminal buffer named in PARAMS.
The text is typed as data and submitted with Enter; the result
is (:delivered t)."
  (hive-rpc-ling--check-offer)
  (let* ((name (hive-rpc-ling--string-param params :buffer 'hive/deliver))
         (text (hive-rpc-ling--string-param params :text 'hive/deliver))
         (buffer (get-buffer name))
         (kind (and (buffer-live-p buffer) (hive-rpc-ling--kind buffer))))
    (cond ((not (buffer-live-p buffer))
           (hive-rpc-ling--refuse "no buffer named %s in this Emacs" name))
          ((not kind)
           (hive-rpc-ling--refuse
            "buffer %s is not a terminal (vterm, eat, term or comint)" name))
          ((not (process-live-p (get-buffer-process buffer)))
           (hive-rpc-ling--refuse "the process in buffer %s has exited" name)))
    (condition-case err
        (hive-rpc-ling--type buffer kind (hive-rpc-ling--strip text))
      (error (hive-rpc-ling--refuse "typing into buffer %s failed: %s"
                                    name (error-message-string err))))
    (list :delivered t)))

(cl-defmethod hive-rpc-handle-request
  (connection (_method (eql 'hive/watchBuffer)) params)
  "Follow the buffer named in PARAMS for the hub on CONNECTION.
From now until a `hive/unwatchBuffer' undoes this watch, a change
to the buffer sends `hive/bufferChanged' (once for the changes of
`hive-rpc-ling--watch-delay' seconds), and so does killing it.
The hub watches a buffer while it holds a turn for it.  The result
is (:watching t)."
  (hive-rpc-ling--check-offer)
  (let* ((name (hive-rpc-ling--string-param params :buffer 'hive/watchBuffer))
         (buffer (get-buffer name)))
    (unless (buffer-live-p buffer)
      (hive-rpc-ling--refuse "no buffer named %s in this Emacs" name))
    (with-current-buffer buffer
      (push (cons connection name) hive-rpc-ling--watches)
      (add-hook 'after-change-functions #'hive-rpc-ling--changed nil t)
      (add-hook 'kill-buffer-hook #'hive-rpc-ling--killed nil t))
    (list :watching t)))

(cl-defmethod hive-rpc-handle-request
  (connection (_method (eql 'hive/unwatchBuffer)) params)
  "Undo one `hive/watchBuffer' by CONNECTION of the buffer named in PARAMS.
The hooks go with the buffer's last watch.  The result says
whether the buffer is still watched: (:watching t) or
\(:watching :json-false); a buffer that is gone is watched no more."
  (let* ((name (hive-rpc-ling--string-param params :buffer 'hive/unwatchBuffer))
         (buffer (get-buffer name)))
    (if (not (buffer-live-p buffer))
        (list :watching :json-false)
      (with-current-buffer buffer
        (let ((watch (cl-find (cons connection name) hive-rpc-ling--watches
                              :test #'hive-rpc-ling--same-watch-p)))
          (setq hive-rpc-ling--watches (delq watch hive-rpc-ling--watches)))
        (unless hive-rpc-ling--watches
          (hive-rpc-ling--stop-watching))
        (list :watching (if hive-rpc-ling--watches t :json-false))))))


;;; Commands
;;;

;;;###autoload
(defun hive-rpc-register-ling (name &optional buffer)
  "Register the terminal in BUFFER with the hub as the ling NAME.
BUFFER defaults to the current buffer, which must be a vterm,
eat, term or comint buffer.  NAME is made of dot-separated parts
of letters, digits, `-' and `_', such as \"main.feature.auth\";
interactively, the default is derived from the buffer's name.
The hub's relays can then type messages into BUFFER.  Registered
from the Emacs that has BUFFER, it takes effect at once; otherwise
the hub asks for approval first, like any question."
  (interactive
   (let ((default (hive-rpc-ling--default-name (buffer-name))))
     (unless (hive-rpc-ling--kind (current-buffer))
       (user-error "Buffer %s is not a terminal (vterm, eat, term or comint)"
                   (buffer-name)))
     (hive-rpc-ling--require-connection)
     (list (read-string (format-prompt "Ling name" default) nil nil default)
           (current-buffer))))
  (let ((buffer (or buffer (current-buffer))))
    (hive-rpc-ling--check-name name)
    (unless (hive-rpc-ling--kind buffer)
      (user-error "Buffer %s is not a terminal (vterm, eat, term or comint)"
                  (buffer-name buffer)))
    (hive-rpc-ling--require-connection)
    (let ((address (buffer-name buffer)))
      (jsonrpc-async-request
       hive-rpc--connection 'ling/register
       (list :name name :kind "emacs-buffer" :address address)
       :success-fn (lambda (ling)
                     (cl-pushnew address hive-rpc--ling-buffers :test #'equal)
                     (if (equal (plist-get ling :state) "pending")
                         (message "hive-rpc: ling %s (buffer %s) waits for your approval"
                                  name address)
                       (message "hive-rpc: ling %s is buffer %s" name address)))
       :error-fn (lambda (err) (hive-rpc-ling--refused-message "register" name err))))))

;;;###autoload
(defun hive-rpc-spawn-ling (name command &optional directory wait)
  "Start COMMAND in a new terminal buffer and register it as the ling NAME.
This is what `hive-rpc spawn NAME --emacs -- COMMAND' runs, through
emacsclient, and what you run in Emacs.  The buffer, named *ling
NAME*, runs COMMAND (a list of words, or a string split into words
as a shell would, but run without a shell) in DIRECTORY, by default
`default-directory'.  It is a vterm buffer when the vterm package is
installed, else a term buffer.  It is registered from this Emacs, so
it takes effect at once, like \[hive-rpc-register-ling] in a
terminal you opened yourself.  The hub never asks Emacs to start a
program: a command from the network is never run here.  With WAIT
\=(`hive-rpc spawn --emacs', through emacsclient), wait for the hub's
answer and return the ling's state, \"registered\" or \"pending\";
else return the buffer."
  (interactive
   (progn
     (hive-rpc-ling--require-connection)
     (list (read-string "Ling name: ")
           (read-shell-command "Command: ")
           (read-directory-name "In directory: " nil nil t))))
  (hive-rpc-ling--check-name name)
  (hive-rpc-ling--require-connection)
  (let ((words (if (listp command) command (split-string-and-unquote command)))
        (buffer-name (format "*ling %s*" name))
        (default-directory (file-name-as-directory
                            (expand-file-name (or directory default-directory)))))
    (unless words
      (user-error "Give the command the ling runs"))
    (when (get-buffer buffer-name)
      (user-error "Buffer %s exists already" buffer-name))
    (let ((buffer (hive-rpc-ling--start name buffer-name words)))
      (push buffer-name hive-rpc--ling-buffers)
      (hive-rpc-ling--display buffer)
      (if (not wait)
          (progn (hive-rpc-register-ling name buffer) buffer)
        (plist-get (jsonrpc-request hive-rpc--connection 'ling/register
                                    (list :name name :kind "emacs-buffer"
                                          :address (buffer-name buffer)))
                   :state)))))

(defun hive-rpc-ling--display (buffer)
  "Display BUFFER, a new ling's, without selecting its window.
The keyboard stays in the window and buffer the human types in: a
spawn comes from an agent, at any moment, and the human's next
keys must not become the new agent's input.  Return the window."
  (let ((window (display-buffer buffer '(nil (inhibit-same-window . t)
                                             (inhibit-switch-frame . t)))))
    (when window
      ;; A terminal follows its output from the end.
      (set-window-point window (with-current-buffer buffer (point-max))))
    window))

(defvar-local hive-rpc-ling--held nil
  "Why the hub holds a turn for the ling in this buffer, or nil.")

(defvar-local hive-rpc-ling--header nil
  "The buffer's own header line, put back when no turn is held.")

(defun hive-rpc-ling--held-header ()
  "Return the header line of a ling buffer while a turn is held."
  (propertize (format " hive: a turn for this ling waits: %s"
                      (hive-rpc--clean hive-rpc-ling--held))
              'face 'warning))

(defun hive-rpc-ling--show-held (buffer reason)
  "Show in BUFFER's header line that a turn is held for REASON; nil clears it."
  (with-current-buffer buffer
    (cond ((and reason (not hive-rpc-ling--held))
           (setq hive-rpc-ling--header header-line-format
                 hive-rpc-ling--held reason
                 header-line-format '(:eval (hive-rpc-ling--held-header))))
          (reason (setq hive-rpc-ling--held reason))
          (hive-rpc-ling--held
           (setq hive-rpc-ling--held nil
                 header-line-format hive-rpc-ling--header)))
    (force-mode-line-update)))

(defconst hive-rpc-ling--told-events
  '("relay/failed" "agora/ling-unavailable" "agora/participant-absent"
    "agora/paused" "agora/consensus" "agora/max-turns-reached")
  "The hub's Agora events said in the echo area, in the hub's words.
A held turn shows in its ling's header line instead.")

(cl-defmethod hive-rpc-handle-notification
  (_connection (_method (eql 'hive/agora)) params)
  "Show what became of a turn or a dialogue, from the Agora's event PARAMS.
A turn held for a ling in this Emacs (the human's draft in its
input, a dialog in its terminal) shows in the ling buffer's header
line until it is typed or fails; a failure, a paused dialogue,
consensus and the like are said in the echo area.  Nothing is
selected."
  (let* ((event (plist-get params :event))
         (name (plist-get params :buffer))
         (buffer (and (stringp name) (get-buffer name)))
         (text (plist-get params :message)))
    (when (and (buffer-live-p buffer)
               (member event '("relay/held" "relay/delivered" "relay/failed")))
      (let ((reason (plist-get params :reason)))
        (hive-rpc-ling--show-held
         buffer (and (equal event "relay/held") (stringp reason)
                     (not (string-empty-p reason))
                     (string-remove-prefix "held: " reason)))))
    (when (and (member event hive-rpc-ling--told-events) (stringp text))
      (message "hive-rpc: %s" (hive-rpc--clean text)))))

(defvar vterm-shell)
(declare-function vterm "ext:vterm" (&optional arg))

(defun hive-rpc-ling--start (name buffer-name words &optional make)
  "Return a new terminal buffer BUFFER-NAME running WORDS as the ling NAME.
MAKE makes it, given BUFFER-NAME and WORDS: by default a vterm
buffer when the vterm package is installed, else a term buffer.  The
program gets HIVE_RPC_LING=NAME in its environment: an Emacs buffer
is no terminal its hooks could name (as tmux's TMUX_PANE names a
pane), so this is how `hive-rpc hook claude-code' in it finds the
ling it reports for."
  (let ((process-environment (cons (concat "HIVE_RPC_LING=" name)
                                   process-environment)))
    (funcall (or make (if (require 'vterm nil t)
                          #'hive-rpc-ling--vterm
                        #'hive-rpc-ling--term))
             buffer-name words)))

(defun hive-rpc-ling--vterm (buffer-name words)
  "Return a new vterm buffer BUFFER-NAME running the program WORDS."
  (let ((vterm-shell (mapconcat #'shell-quote-argument words " ")))
    (save-window-excursion (vterm buffer-name))))

(defun hive-rpc-ling--term (buffer-name words)
  "Return a new term buffer BUFFER-NAME running the program WORDS."
  (let ((buffer (apply #'make-term (substring buffer-name 1 -1)
                       (car words) nil (cdr words))))
    (with-current-buffer buffer
      (term-mode)
      (term-char-mode))
    buffer))

;;;###autoload
(defun hive-rpc-unregister-ling (name)
  "Remove the ling NAME from the hub.
Interactively, the default is the name `hive-rpc-register-ling'
would derive from the current buffer's name."
  (interactive
   (let ((default (and (hive-rpc-ling--kind (current-buffer))
                       (hive-rpc-ling--default-name (buffer-name)))))
     (hive-rpc-ling--require-connection)
     (list (read-string (format-prompt "Remove ling" default) nil nil default))))
  (hive-rpc-ling--check-name name)
  (hive-rpc-ling--require-connection)
  (jsonrpc-async-request
   hive-rpc--connection 'ling/remove (list :name name)
   :success-fn (lambda (_result) (message "hive-rpc: removed ling %s" name))
   :error-fn (lambda (err) (hive-rpc-ling--refused-message "remove" name err))))

(provide 'hive-rpc-ling)
;;; hive-rpc-ling.el ends here
