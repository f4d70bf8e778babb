;;; hive-rpc.el --- Answer AI agents' questions in the minibuffer  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The hive_rpc authors

;; Author: The hive_rpc authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, comm, processes
;; URL: https://github.com/hive-rpc/hive_rpc

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

;; hive-rpc is the Emacs face of the hive_rpc hub, where AI agents ask
;; humans questions without blocking.  `hive-rpc-mode' connects to the
;; hub's Unix socket with the built-in jsonrpc.el, subscribes, and
;; announces each question: the mode line counts them (with the most
;; urgent countdown) and the echo area names the key that opens them.
;; The keyboard is yours: a question opens only when you ask for it,
;; with `hive-rpc-answer-next' (n in `hive-rpc-command-map') or RET in
;; `hive-rpc-list'; after you answer it, the next queued one opens at
;; once, and keys typed ahead when none is left are dropped, never
;; given to another buffer.  Nothing selects a window of its own.
;;
;; In a hive prompt:
;;   RET      answers;
;;   C-g      defers it and every queued question (they stay pending;
;;            see `hive-rpc-answer-next');
;;   C-c C-k  declines (`hive-rpc-decline');
;;   C-c C-d  shows the question in full (`hive-rpc-details').
;; Every other key edits the answer as in any minibuffer.  The first
;; key you type tells the hub you are typing, which stops the agent's
;; countdown.  With `hive-rpc-auto-ask' (an opt-in) a question also
;; opens by itself when you pause.
;;
;; Commands: `hive-rpc-mode', `hive-rpc-list', `hive-rpc-sessions'
;; (the agents' sessions, those waiting on you first),
;; `hive-rpc-answer-next',
;; `hive-rpc-defer-all', `hive-rpc-clear-unseen', `hive-rpc-ask',
;; `hive-rpc-events-buffer', and for agents running in
;; terminal buffers `hive-rpc-register-ling' (hive-rpc-ling.el).  They
;; are on `hive-rpc-command-map', for you to bind to a prefix key:
;;   (global-set-key (kbd "C-c h") hive-rpc-command-map)
;;
;; When no hub answers, hive-rpc starts one with `hive-rpc-program'
;; ("hive-rpc serve --detach"): the hub runs in a session of its own
;; and outlives Emacs, since every agent uses it.
;;
;; Every call to the hub is asynchronous: Emacs never waits for the hub
;; or for an agent.  If the hub dies, the mode line says so, answers you
;; give meanwhile are kept, and they are sent once the hub is back
;; (hive-rpc starts a new hub if none answers).
;;
;; The files depend on each other one way, each on files above it
;; only:
;;
;;   file                 requires (of hive-rpc's files)
;;   hive-rpc-core        nothing
;;   hive-rpc-question    core
;;   hive-rpc-minibuffer  core, question
;;   hive-rpc-hub         core
;;   hive-rpc-ling        core
;;   hive-rpc             core, minibuffer, hub; loads ling when the
;;                        mode is turned on
;;   hive-rpc-list        hive-rpc
;;   hive-rpc-sessions    hive-rpc
;;
;; hive-rpc-core.el holds the state (what one hub said in slots of
;; the `hive-rpc-connection', what is the human's across reconnects in
;; variables), the connection's class, the hub's error codes and
;; shared helpers; hive-rpc-hub.el
;; finds the hub, starts one and reconnects with backoff;
;; hive-rpc-minibuffer.el reads one answer in the minibuffer
;; (`hive-rpc-minibuffer-read', with its countdown and
;; `hive-rpc-decline'); this file, which requires them, holds the
;; connection, the notifications, when a question opens, the outbox,
;; the mode and the commands.  hive-rpc-ling.el requires core only,
;; and this file loads it when the mode is turned on.

;;; Code:

(require 'cl-lib)
(require 'jsonrpc)
(require 'seq)
(require 'subr-x)
(require 'hive-rpc-core)
(require 'hive-rpc-minibuffer)
(require 'hive-rpc-hub)

(declare-function notifications-notify "notifications" (&rest params))
(declare-function dbus-ping "dbus" (bus service &optional timeout))


;;; User options
;;;

(defgroup hive-rpc nil
  "Answer questions from AI agents held by the hive_rpc hub."
  :prefix "hive-rpc-"
  :group 'tools
  :link '(url-link "https://github.com/hive-rpc/hive_rpc"))

(defcustom hive-rpc-by nil
  "Name recorded as who answered, or nil to let the hub say \"human\"."
  :type '(choice (const :tag "Hub default" nil) string))

(defcustom hive-rpc-agent-id "emacs"
  "Agent name under which `hive-rpc-ask' asks its questions."
  :type 'string)

(defcustom hive-rpc-auto-ask nil
  "Non-nil means a new question also opens by itself when you pause.
By default (nil) a question opens only when you ask for it:
`hive-rpc-answer-next' or RET in `hive-rpc-list'.  It is announced
meanwhile: counted in the mode line with its countdown, and named
in the echo area.

The risk of turning it on: no pause tells \"thinking, about to type
on\" from \"looked up, ready to answer\", so a question can open
while you mean to keep typing, and your next keys would be its
answer.  So where it is on, a question opens by itself only after
`hive-rpc-idle-delay' seconds without a key (longer after typing
text), never while the selected window shows a terminal or an
agent's buffer (vterm, eat, term, comint, a ling), never in
another minibuffer, a keyboard macro or a command; in its first
`hive-rpc-open-grace' seconds RET does nothing and any other key
goes back to your buffer; and a choice has no default that RET
would take."
  :type 'boolean)

(defcustom hive-rpc-queue-window nil
  "Non-nil means show the waiting questions in a side window.
The list buffer `*hive-rpc*' is displayed at the bottom of the
frame while questions wait, and goes away when none does.  It is
shown, never selected: the keyboard stays where it is."
  :type 'boolean)

(defcustom hive-rpc-idle-delay 3
  "Seconds of idleness before a queued prompt opens by itself.
Only with `hive-rpc-auto-ask' on: it opens by itself only after
this many seconds without a key (after typing text, after
`hive-rpc-idle-delay-after-typing' seconds), and keys pressed in its
first `hive-rpc-open-grace' seconds go back to your buffer."
  :type 'number)

(defcustom hive-rpc-notify-urgent t
  "Non-nil means urgent prompts also raise a desktop notification.
This needs D-Bus and a notification daemon; without them it does
nothing.  It is skipped when the hub raises its own notifications
\(its status says so), so an urgent prompt is not announced twice."
  :type 'boolean)


;;; Internal state
;;;

(defvar hive-rpc-mode)                   ; defined below by `define-minor-mode'

;; The state of the session and of the connection is in hive-rpc-core.el.

(defvar hive-rpc--idle-timer nil
  "Idle timer asking queued prompts, once per pause of `hive-rpc-idle-delay'.")

(defvar hive-rpc--pause-timer nil
  "Idle timer asking queued prompts after a longer pause in the same idle time.")

(defvar hive-rpc--unseen (make-hash-table :test #'equal)
  "The questions that expired before any editor showed them, by id.
Each is the hub's record.  Filled at each connection from
`hive/list' with expired_unseen, and as the hub reports them;
emptied by `hive-rpc-clear-unseen'.")

(defvar hive-rpc--news nil
  "Ids of the questions announced and not yet opened, newest first.")

(defvar hive-rpc--fresh nil
  "Ids of the questions queued as they came, not yet announced, newest first.")

(defvar hive-rpc--announcing nil
  "Non-nil while an announcement of new questions is due.")

(defvar hive-rpc--announcement nil
  "The text of the last announcement in the echo area, or nil.")

(defvar hive-rpc--mode-line-timer nil
  "Timer ticking the mode line's countdown, while it shows one.")

(defvar hive-rpc--guard-until nil
  "Until when (a `float-time') keys typed ahead for questions are dropped.")

(defvar hive-rpc--dropped 0
  "How many keys typed ahead for questions were dropped lately.")


;;; The connection
;;;

(defun hive-rpc--check-connected ()
  "Signal a `user-error' saying how to reach the hub, unless connected."
  (unless (hive-rpc--connected-p)
    (cond
     ((not hive-rpc-mode)
      (user-error "Not connected to the hub: turn on hive-rpc-mode first (M-x hive-rpc-mode)"))
     ((eq hive-rpc--state 'connecting)
      (user-error "The hub on %s is starting; try again in a moment" (hive-rpc--socket)))
     ((hive-rpc--stopped-text (hive-rpc--socket))
      (user-error "No hub answers on %s: %s" (hive-rpc--socket)
                  (hive-rpc--stopped-text (hive-rpc--socket))))
     (hive-rpc-program
      (user-error "No hub answers on %s; hive-rpc keeps trying to start one \
\(see buffer \" *hive-rpc hub*\")" (hive-rpc--socket)))
     (t
      (user-error "No hub answers on %s; start one with: hive-rpc serve --detach --socket %s"
                  (hive-rpc--socket) (hive-rpc--socket))))))

(defcustom hive-rpc-events-buffer-size 0
  "Characters of traffic kept in `hive-rpc-events-buffer', or nil for all.
Older messages are dropped past it.  0, the default, logs nothing:
jsonrpc.el prints each message logged in full, and a new
subscription brings one message per pending question, thousands of
them on a busy hub (20,000 took Emacs 68 s logged within 2,000,000
characters, 5.5 s not logged).  Like `eglot-events-buffer-size'.
Takes effect on the next connection."
  :type '(choice (const :tag "No limit" nil) (natnum :tag "Characters"))
  :group 'hive-rpc)

(defun hive-rpc--open (socket)
  "Open a connection to the hub on SOCKET; return it, or nil if none answers."
  (when-let ((proc (condition-case nil
                       (make-network-process
                        :name "hive-rpc" :family 'local :service socket
                        :coding 'utf-8-emacs-unix :noquery t)
                     (file-error nil))))
    (hive-rpc-connection
     :name "hive-rpc"
     :events-buffer-scrollback-size hive-rpc-events-buffer-size
     :process proc
     :notification-dispatcher #'hive-rpc--dispatch
     :request-dispatcher #'hive-rpc--request-dispatch
     :on-shutdown #'hive-rpc--on-shutdown)))

(defun hive-rpc--connect (&optional start)
  "Connect to the hub and subscribe; return non-nil on success.
With START non-nil, start a hub with `hive-rpc-program' when none
answers, and connect once it listens."
  (let* ((socket (hive-rpc--socket))
         (conn (hive-rpc--open socket)))
    (cond
     (conn
      (hive-rpc--hub-connected)
      (setq hive-rpc--connection conn
            hive-rpc--state 'connected)
      ;; The answers kept while the hub was away go once this Emacs has
      ;; proved it is an approver: some may answer permission prompts.
      (hive-rpc--prove-approver
       conn (lambda ()
              (when (eq conn hive-rpc--connection) (hive-rpc--flush-outbox))))
      ;; Typing that began while the hub was away still stops its countdown.
      (dolist (id hive-rpc--typed)
        (jsonrpc-notify conn 'hive/typing (list :id id)))
      ;; And a question left while it was away gets its countdown back.
      (dolist (id (reverse hive-rpc--deferred))
        (jsonrpc-notify conn 'hive/defer (list :id id)))
      (setq hive-rpc--deferred nil)
      ;; Learn whether the hub notifies urgent prompts itself before the
      ;; subscription replays the pending ones.
      (jsonrpc-async-request
       conn 'hive/status nil
       :success-fn (lambda (status)
                     ;; Only the hub's own D-Bus notifications count:
                     ;; its notify-send fallback may reach no desktop.
                     (oset conn hub-notifies
                           (equal (plist-get status :notifications) "dbus"))
                     ;; A hub that recovered, or another hub, while we were away.
                     (hive-rpc--set-health (plist-get status :degraded))
                     (hive-rpc--subscribe conn)
                     (hive-rpc--fetch-unseen conn))
       :error-fn (lambda (_err) (hive-rpc--subscribe conn)))
      (run-hook-with-args 'hive-rpc-connected-functions conn)
      (hive-rpc--update)
      t)
     ((and start hive-rpc-program)
      (hive-rpc--start-hub socket)
      nil)
     (t
      (setq hive-rpc--state 'dead)
      (hive-rpc--schedule-reconnect)
      (hive-rpc--update)
      nil))))

(defvar hive-rpc--sessions (make-hash-table :test #'equal)
  "The hub's agent sessions, by agent id: each a session record plist.")

(defvar hive-rpc-sessions-changed-hook nil
  "Run after agent sessions changed, with the agent id of the one changed.
The id is nil when the whole table changed (a new connection, a fetch).")

;; hive-rpc-hub.el (re)connects through this variable: it does not
;; require this file, which requires it.
(setq hive-rpc--connect-function #'hive-rpc--connect)

(defun hive-rpc--subscribe (conn)
  "Subscribe on CONN: the hub then sends each pending prompt, and new ones.
With the agent sessions: the hub sends every session, then each
change, so the sessions of an earlier hub are forgotten first.
Nothing is sent when CONN is no longer the live connection."
  (when (and (eq conn hive-rpc--connection) (jsonrpc-running-p conn))
    (clrhash hive-rpc--sessions)
    (run-hook-with-args 'hive-rpc-sessions-changed-hook nil)
    (jsonrpc-async-request
     conn 'hive/subscribe '(:sessions t)
     :success-fn #'ignore
     :error-fn (lambda (err)
                 (message "hive-rpc: subscribe failed: %s"
                          (hive-rpc--clean (plist-get err :message)))))))

(defun hive-rpc--on-shutdown (connection)
  "Note that the hub went away from CONNECTION; reconnect later."
  (when (eq connection hive-rpc--connection)
    ;; It stays, with the prompts it brought, until the next connection.
    (when hive-rpc--state
      (setq hive-rpc--state 'dead)
      (hive-rpc--cancel-timer 'hive-rpc--countdown-timer)
      (hive-rpc--cancel-timer 'hive-rpc--idle-timer)
      (hive-rpc--show-countdown)
      (message "hive-rpc: lost the hub; answers are kept until it is back")
      (hive-rpc--schedule-reconnect)
      (hive-rpc--update))))

(defun hive-rpc--disconnect ()
  "Close the connection and forget everything."
  (setq hive-rpc--state nil)
  (hive-rpc--hub-stop)
  (hive-rpc--cancel-timer 'hive-rpc--idle-timer)
  (hive-rpc--cancel-timer 'hive-rpc--countdown-timer)
  (let ((conn hive-rpc--connection))
    (setq hive-rpc--connection nil)
    (when (and conn (jsonrpc-running-p conn))
      ;; A shutdown we asked for is no news: jsonrpc's sentinel, which runs
      ;; within `jsonrpc-shutdown', would say "[jsonrpc] Server exited with
      ;; status 0", and requests still in flight would report "Server died".
      (let ((inhibit-message t)
            (message-log-max nil))
        (jsonrpc-shutdown conn t))))
  (setq hive-rpc--typed nil
        hive-rpc--deferred nil
        hive-rpc--degraded nil
        hive-rpc--news nil
        hive-rpc--shown nil)
  (clrhash hive-rpc--unseen)
  (clrhash hive-rpc--sessions)
  (run-hook-with-args 'hive-rpc-sessions-changed-hook nil)
  (hive-rpc--update))


;;; Notifications from the hub
;;;

(cl-defmethod hive-rpc-handle-notification
  (_connection (_method (eql 'hive/prompt)) params)
  "Note prompt PARAMS, queue it, and announce it."
  (let ((id (plist-get params :id)))
    (when (and (stringp id) (equal (plist-get params :status) "pending")
               (numberp (plist-get params :created_at))
               (numberp (plist-get params :deadline_at)))
      ;; Only a prompt known already can be queued: the queue is searched
      ;; for those alone, so a snapshot of thousands stays linear.
      (let ((known (gethash id (hive-rpc--prompts))))
        (puthash id params (hive-rpc--prompts))
        (unless (or (and known (member id (hive-rpc--queue)))
                    (equal id hive-rpc--current)
                    (hive-rpc--in-outbox-p id))
          (hive-rpc--enqueue id)
          (unless noninteractive          ; only announced where there is a human
            (push id hive-rpc--fresh))))
      (when (eq (plist-get params :urgent) t)
        (hive-rpc--notify params))
      ;; The question open here, sent again after a reconnection: its
      ;; countdown runs again instead of reading "(hub down)".
      (when (equal id hive-rpc--current)
        (hive-rpc--restart-countdown))
      (hive-rpc--update)
      (hive-rpc--later #'hive-rpc--schedule-ask))))

(cl-defmethod hive-rpc-handle-notification
  (_connection (_method (eql 'hive/update)) params)
  "Take the new record in PARAMS of a known prompt.
Someone started typing its answer, here or in another editor: its
countdown stops.  A record that expired unseen is kept for
`hive-rpc-clear-unseen'; one cleared is forgotten."
  (let ((id (plist-get params :id)))
    (when (stringp id)
      (cond
       ((and (gethash id (hive-rpc--prompts))
             (equal (plist-get params :status) "pending")
             (numberp (plist-get params :created_at))
             (numberp (plist-get params :deadline_at)))
        (puthash id params (hive-rpc--prompts))
        (hive-rpc--show-countdown)
        (hive-rpc--update))
       ((or (plist-get params :cleared_at) (eq (plist-get params :unseen) :json-false))
        (when (gethash id hive-rpc--unseen)
          (remhash id hive-rpc--unseen)
          (hive-rpc--update)))
       ((eq (plist-get params :unseen) t)
        (puthash id params hive-rpc--unseen)
        (hive-rpc--update))))))

(cl-defmethod hive-rpc-handle-notification
  (_connection (_method (eql 'hive/dismiss)) params)
  "Forget the prompt in PARAMS, which was closed, and its announcement."
  (let ((id (plist-get params :id)))
    (when (stringp id)
      (let ((record (gethash id (hive-rpc--prompts))))
        (when (equal (plist-get params :status) "expired")
          (pcase (plist-get params :unseen)
            ('t (puthash id (append params record) hive-rpc--unseen))
            ('nil (hive-rpc--fetch-unseen hive-rpc--connection)))))
      (remhash id (hive-rpc--prompts))
      (setf (hive-rpc--queue) (delete id (hive-rpc--queue)))
      (setq hive-rpc--typed (delete id hive-rpc--typed)
            hive-rpc--deferred (delete id hive-rpc--deferred)
            hive-rpc--shown (delete id hive-rpc--shown))
      (hive-rpc--forget id)
      (when (equal id hive-rpc--current)
        (run-at-time 0 nil #'hive-rpc--abort-current id
                     (hive-rpc--clean (or (plist-get params :status) "closed"))
                     (plist-get params :by)))
      (hive-rpc--unannounce id)
      (hive-rpc--update))))

(cl-defmethod hive-rpc-handle-notification
  (_connection (_method (eql 'hive/unseenCleared)) params)
  "Forget the question in PARAMS that expired unseen: the human cleared it."
  (let ((id (plist-get params :id)))
    (when (and (stringp id) (gethash id hive-rpc--unseen))
      (remhash id hive-rpc--unseen)
      (hive-rpc--update))))

(cl-defmethod hive-rpc-handle-notification
  (_connection (_method (eql 'hive/session)) params)
  "Keep the agent session record in PARAMS.
Say so in the echo area when the agent starts waiting on the human
in its own terminal's dialog: nothing in the hub announces that."
  (let ((id (plist-get params :agent_id)))
    (when (stringp id)
      (unless (hive-rpc--own-dialog-p (gethash id hive-rpc--sessions))
        (when (hive-rpc--own-dialog-p params)
          (hive-rpc--say-own-dialog params)))
      (puthash id params hive-rpc--sessions)
      (force-mode-line-update t)
      (run-hook-with-args 'hive-rpc-sessions-changed-hook id))))

(defun hive-rpc--own-dialog-p (session)
  "Return non-nil if SESSION waits on the human in its own terminal only."
  (and (equal (plist-get session :state) "waiting")
       (eq (plist-get session :in_terminal) t)
       (eql (plist-get session :questions) 0)
       (eql (plist-get session :permissions) 0)))

(defun hive-rpc--say-own-dialog (session)
  "Say that SESSION waits on the human in its terminal, unless a question is open."
  (unless (hive-rpc--hive-minibuffer-p)
    (let ((dir (plist-get session :project_dir)))
      (message "hive-rpc: %s%s waits on you in its terminal (%s: sessions)"
               (hive-rpc--clean (or (plist-get session :display)
                                    (plist-get session :agent_id)))
               (if (stringp dir)
                   (concat " in " (hive-rpc--clean (abbreviate-file-name dir)))
                 "")
               (substitute-command-keys "\\[hive-rpc-sessions]")))))

(cl-defmethod hive-rpc-handle-notification
  (_connection (_method (eql 'hive/sessionRemoved)) params)
  "Forget the agent session PARAMS names: it left the hub's list."
  (let ((id (plist-get params :agent_id)))
    (when (stringp id)
      (remhash id hive-rpc--sessions)
      (force-mode-line-update t)
      (run-hook-with-args 'hive-rpc-sessions-changed-hook id))))

(cl-defmethod hive-rpc-handle-notification
  (_connection (_method (eql 'hive/health)) params)
  "Note the store's health in PARAMS: `:degraded' is why, or nil."
  (hive-rpc--set-health (plist-get params :degraded)))

(defun hive-rpc--fetch-unseen (conn)
  "Ask the hub on CONN for the questions that expired unseen.
A hub older than `hive/list' with `expired_unseen' refuses; that is no news."
  (when (and conn (eq conn hive-rpc--connection) (jsonrpc-running-p conn))
    (jsonrpc-async-request
     conn 'hive/list '(:expired_unseen t)
     :success-fn (lambda (records)
                   (when (eq conn hive-rpc--connection)
                     (clrhash hive-rpc--unseen)
                     (mapc (lambda (r)
                             (when (and (stringp (plist-get r :id))
                                        (not (plist-get r :cleared_at)))
                               (puthash (plist-get r :id) r hive-rpc--unseen)))
                           (if (and (listp records) (keywordp (car-safe records)))
                               (plist-get records :prompts)
                             records))
                     (hive-rpc--update)))
     :error-fn #'ignore
     :timeout-fn #'ignore)))

(defun hive-rpc--set-health (degraded)
  "Note that the hub's store is DEGRADED (the hub's reason), or works (nil).
Say so once when it becomes degraded or the reason changes, and
once when it works again; the mode line shows it meanwhile."
  (let ((reason (and (stringp degraded) (not (string-empty-p degraded))
                     (truncate-string-to-width
                      (string-remove-prefix "store: " (hive-rpc--clean degraded))
                      200 nil nil "..."))))
    (unless (equal reason hive-rpc--degraded)
      (let ((was hive-rpc--degraded))
        (setq hive-rpc--degraded reason)
        ;; Through "%s": `message' would curve the apostrophes of a format.
        (cond (reason (message "%s" (hive-rpc--degraded-text reason)))
              (was (message "%s" "hive-rpc: the hub's store works again"))))
      (hive-rpc--update))))

(defun hive-rpc--degraded-text (reason)
  "Return the text shown while the hub's store is degraded for REASON."
  (format "hive-rpc: the hub's store is degraded: %s (hive-rpc doctor checks it)" reason))

(defun hive-rpc--notify (record)
  "Raise a desktop notification for the urgent RECORD, if D-Bus is up."
  (when (and hive-rpc-notify-urgent
             (not (hive-rpc--hub-notifies))
             (featurep 'dbusbind)
             (require 'notifications nil t)
             (ignore-errors
               (dbus-ping :session "org.freedesktop.Notifications" 100)))
    (ignore-errors
      (notifications-notify
       :title (format "hive-rpc: %s asks" (hive-rpc--agent record))
       :body (hive-rpc--clean (plist-get record :question))
       :urgency 'critical))))


;;; Announcing
;;;

;; A question is announced where the eye already is, without the
;; keyboard: the mode line counts the waiting ones with the most
;; urgent countdown, the echo area names the newest (or how many
;; came) and the key that opens it, and `hive-rpc-queue-window'
;; shows them all.  Arrivals handled in one go (a burst read by one
;; process filter) make one message, after them.

(defun hive-rpc--answer-key ()
  "Return how to type `hive-rpc-answer-next', as text."
  (let ((key (where-is-internal #'hive-rpc-answer-next nil t)))
    (if key (key-description key) "M-x hive-rpc-answer-next")))

(defun hive-rpc--news-text ()
  "Return the announcement of the questions in `hive-rpc--news', or nil."
  (let ((ids (seq-filter (lambda (id) (gethash id (hive-rpc--prompts)))
                         hive-rpc--news)))
    (cond
     ((null ids) nil)
     ((cdr ids)
      (format "hive-rpc: %d new questions (%s: answer)" (length ids) (hive-rpc--answer-key)))
     (t
      (let ((record (gethash (car ids) (hive-rpc--prompts))))
        (format "hive-rpc: %s asks \"%s\"%s (%s: %s)"
                (hive-rpc--agent-label record)
                (truncate-string-to-width
                 (hive-rpc--clean (plist-get record :question)) 50 nil nil "...")
                (if hive-rpc-auto-ask "; it opens when you pause" "")
                (hive-rpc--answer-key)
                (if hive-rpc-auto-ask "now" "answer")))))))

(defun hive-rpc--announce ()
  "Note the queued questions not announced yet, and announce them soon.
The message is shown once the notifications being handled now
are all in, so a burst of questions makes one message.  Only the
questions queued since the last call are looked at
\=(`hive-rpc--fresh'), not the whole queue, which may hold many
thousands."
  (let ((new (seq-filter (lambda (id) (and (gethash id (hive-rpc--prompts))
                                           (not (equal id hive-rpc--current))
                                           (not (member id hive-rpc--announced))))
                         (nreverse hive-rpc--fresh))))
    (setq hive-rpc--fresh nil)
    (when new
      (setq hive-rpc--announced (seq-take (append (reverse new) hive-rpc--announced) 200)
            hive-rpc--news (append (reverse new) hive-rpc--news))
      (unless hive-rpc--announcing
        (setq hive-rpc--announcing t)
        (run-at-time 0 nil #'hive-rpc--say-news)))))

(defun hive-rpc--say-news ()
  "Show the announcement of the new questions in the echo area."
  (setq hive-rpc--announcing nil)
  (hive-rpc--show-queue-window)
  ;; In a hive prompt the chain reaches them: the mode line counts them.
  (unless (hive-rpc--hive-minibuffer-p)
    (let ((text (hive-rpc--news-text)))
      (when text
        (setq hive-rpc--announcement text)
        (let ((message-log-max nil)) (message "%s" text))))))

(defun hive-rpc--unannounce (id)
  "Take the announcement of ID, closed or opened, off the echo area.
If the echo area still shows it, it shows what is still new instead,
or nothing."
  (when (member id hive-rpc--news)
    (setq hive-rpc--news (delete id hive-rpc--news))
    (when (and hive-rpc--announcement
               (equal (current-message) hive-rpc--announcement))
      (let ((text (hive-rpc--news-text))
            (message-log-max nil))
        (setq hive-rpc--announcement text)
        (message (and text "%s") text)))))

(defun hive-rpc--clear-news ()
  "Forget the announcements: the human is looking at the questions."
  (when (and hive-rpc--announcement (equal (current-message) hive-rpc--announcement))
    (message nil))
  (setq hive-rpc--news nil
        hive-rpc--announcement nil))

(declare-function hive-rpc--list-show "hive-rpc-list" (&optional buffer))

(defun hive-rpc--show-queue-window ()
  "Show the waiting questions in a side window, or close it when none waits.
Only with `hive-rpc-queue-window'.  The window is displayed, never
selected."
  (when hive-rpc-queue-window
    (if (> (hash-table-count (hive-rpc--prompts)) 0)
        (progn
          (require 'hive-rpc-list)
          (let ((buffer (hive-rpc--list-show)))
            (unless (get-buffer-window buffer t)
              (display-buffer buffer '((display-buffer-in-side-window)
                                       (side . bottom) (slot . 0)
                                       (window-height . 8)
                                       (inhibit-switch-frame . t)
                                       (inhibit-same-window . t))))))
      (let ((window (and (get-buffer "*hive-rpc*")
                         (get-buffer-window "*hive-rpc*" t))))
        (when (and window (window-parameter window 'window-side)
                   (not (eq window (selected-window))))
          (delete-window window))))))


;;; When a question may open
;;;

;; An answer is only what the human typed knowing that it answers a
;; question: by default a question opens only when the human asks for
;; it (`hive-rpc-answer-next', the list buffer), and the next queued
;; one then opens at once (`hive-rpc--chain').  With
;; `hive-rpc-auto-ask', a question also opens by itself, after a pause
;; (see `hive-rpc-idle-delay'), never in another minibuffer, a
;; keyboard macro, a command, or over a terminal.
;; hive-rpc-minibuffer.el asks it.

(defun hive-rpc--idle-p ()
  "Return non-nil if a hive prompt may open by itself now."
  (not (or noninteractive
           hive-rpc--current
           (minibufferp)
           (active-minibuffer-window)
           executing-kbd-macro
           defining-kbd-macro
           (hive-rpc--agent-buffer-p (window-buffer (selected-window)))
           (and this-command
                (not (memq this-command hive-rpc--minibuffer-exits))))))

(defun hive-rpc--typing-event-p (event)
  "Return non-nil if EVENT is a key that types or deletes text."
  (or (memq event '(return backspace tab delete))
      (and (characterp event)
           (or (>= event ?\s) (memq event '(?\t ?\r ?\n))))))

(defun hive-rpc--pause-needed ()
  "Return how many seconds of idleness a question waits for before opening."
  (if (and (hive-rpc--typing-event-p last-command-event)
           ;; The key that closed a hive prompt typed no text in a buffer.
           (not (memq this-command hive-rpc--minibuffer-exits)))
      (max hive-rpc-idle-delay hive-rpc-idle-delay-after-typing)
    hive-rpc-idle-delay))

(defun hive-rpc--idle-seconds ()
  "Return the idle seconds since the last key, or nil in a command.
A hive prompt is read from a timer, and after such a nested read
Emacs's idle clock stays stopped until the next key:
`current-idle-time' is then nil although no command runs, and
idle timers do not fire.  The time since the prompt closed is the
idle time then."
  (let ((idle (current-idle-time)))
    (cond (idle (float-time idle))
          ((and hive-rpc--closed-at
                (or (null this-command) (memq this-command hive-rpc--minibuffer-exits)))
           (- (float-time) hive-rpc--closed-at)))))

(defun hive-rpc--paused-p ()
  "Return non-nil if Emacs has been idle long enough to open a question."
  (let ((idle (hive-rpc--idle-seconds)))
    (and idle (>= idle (hive-rpc--pause-needed)))))

(defun hive-rpc--wait-for-pause ()
  "Ask the oldest queued prompt after a long enough pause.
Within this same idle time; the repeating `hive-rpc--idle-timer'
covers the pauses after the next keys."
  (let ((idle (hive-rpc--idle-seconds)))
    (when idle
      (hive-rpc--cancel-timer 'hive-rpc--pause-timer)
      (setq hive-rpc--pause-timer
            (if (current-idle-time)
                (run-with-idle-timer (hive-rpc--pause-needed) nil #'hive-rpc--ask-queued)
              ;; The idle clock is stopped (see `hive-rpc--idle-seconds').
              (run-at-time (max 0 (- (hive-rpc--pause-needed) idle)) nil
                           #'hive-rpc--ask-queued))))))

(defun hive-rpc--schedule-ask ()
  "Announce the queued questions, and open them after a pause if set to.
That is with `hive-rpc-auto-ask' on."
  (when (and (hive-rpc--queue) (not noninteractive))
    (hive-rpc--announce))
  (when (and hive-rpc-auto-ask (hive-rpc--queue) (not noninteractive))
    (unless (timerp hive-rpc--idle-timer)
      (setq hive-rpc--idle-timer
            (run-with-idle-timer hive-rpc-idle-delay t #'hive-rpc--ask-queued)))
    (if (hive-rpc--paused-p)
        (run-at-time 0 nil #'hive-rpc--ask-queued)
      (hive-rpc--wait-for-pause))))

(defun hive-rpc--stop-asking ()
  "Cancel the idle timers of `hive-rpc--schedule-ask'."
  (hive-rpc--cancel-timer 'hive-rpc--idle-timer)
  (hive-rpc--cancel-timer 'hive-rpc--pause-timer))

(defun hive-rpc--ask-queued ()
  "Open the oldest queued prompt by itself if Emacs is idle and the human paused.
Only with `hive-rpc-auto-ask'."
  (cond
   ((null (hive-rpc--queue)) (hive-rpc--stop-asking))
   ((not (and hive-rpc-auto-ask (hive-rpc--idle-p))) nil)
   ((hive-rpc--paused-p)
    (hive-rpc--cancel-timer 'hive-rpc--pause-timer)
    (hive-rpc--chain (car (hive-rpc--queue)) 'auto))
   ;; Idle, but not for long enough after typing: wait on in this pause.
   (t (hive-rpc--wait-for-pause))))


;;; Asking
;;;

(defun hive-rpc--ask (id &optional opening)
  "Ask prompt ID in the minibuffer and send the answer.
OPENING says how it opens (see `hive-rpc-minibuffer-read'): nil
when the human opened it, `chain' when it follows the question
just answered, `auto' when it opened by itself.
Return `next' when the human answered, declined, or the question
was closed meanwhile: the next queued question may open; nil else.
\\<hive-rpc-minibuffer-map>\\[hive-rpc-decline] declines; \\[keyboard-quit] \
defers it and every question queued behind it."
  (let ((record (gethash id (hive-rpc--prompts)))
        (next nil))
    (setf (hive-rpc--queue) (delete id (hive-rpc--queue)))
    (unless (hive-rpc--queue) (hive-rpc--stop-asking))
    (hive-rpc--unannounce id)
    (when record
      (condition-case err
          (pcase (hive-rpc-minibuffer-read record opening)
            (`(answer . ,answer)
             (hive-rpc--respond id answer)
             (setq next 'next))
            ('decline
             (hive-rpc--respond id nil "decline")
             (message "hive-rpc: declined")
             (setq next 'next))
            (`(give-back . ,keys)
             (push id (hive-rpc--queue))
             (hive-rpc--unread keys)
             (message "hive-rpc: your key went to your buffer; the question \
waits for your next pause")
             (hive-rpc--schedule-ask))
            (`(dismiss . ,text)
             (message "%s" text)
             (setq next 'next))
            (_ (hive-rpc--defer-all)))
        (error
         (message "hive-rpc: could not ask %s: %s" (hive-rpc--clean id)
                  (error-message-string err)))))
    next))

(defun hive-rpc--chain (id &optional opening)
  "Ask ID, opened the way OPENING names, then each queued question in turn.
The chain goes on while the human answers (or declines);
\\<hive-rpc-minibuffer-map>\\[keyboard-quit] ends it.  Each next
question opens at once, within this same command, so no key typed
for it can reach another buffer, and RET does nothing in its
opening moment.
When the chain ends after an answer, keys typed ahead are dropped
\(`hive-rpc--guard-type-ahead')."
  (let ((result (hive-rpc--ask id opening)))
    (while (and (eq result 'next) (hive-rpc--queue))
      (setq result (hive-rpc--ask (car (hive-rpc--queue)) 'chain)))
    (when (eq result 'next)
      (hive-rpc--guard-type-ahead))
    result))

(defun hive-rpc--defer-all ()
  "Leave the question just deferred and every queued one pending, unasked."
  (let ((n (hash-table-count (hive-rpc--prompts))))
    (setf (hive-rpc--queue) nil)
    (hive-rpc--stop-asking)
    (hive-rpc--clear-news)
    (message "%s" (substitute-command-keys
                   (format "hive-rpc: deferred; %d question%s pending: \
\\[hive-rpc-answer-next] asks the oldest" n (if (= n 1) " is" "s are"))))))


;;; Keys typed ahead
;;;

;; After the last question of a chain closes, the keys typed for
;; questions are not the buffer's: "yes RET no RET" for two questions
;; when the second was answered elsewhere meanwhile.  Those already
;; typed are dropped, and so are the commands of the next
;; `hive-rpc-open-grace' seconds, with a message naming how many keys
;; went; never given to the buffer, which may be an agent's terminal.
;; \\[keyboard-quit] and `hive-rpc-answer-next' still work then.

(defun hive-rpc--guard-type-ahead ()
  "Drop the keys typed ahead for questions, now and for a moment."
  (setq hive-rpc--dropped 0)
  (while (input-pending-p)
    (if (read-event nil nil 0)
        (setq hive-rpc--dropped (1+ hive-rpc--dropped))
      (discard-input)))
  (when (> hive-rpc--dropped 0)
    (hive-rpc--say-dropped))
  (when (and (numberp hive-rpc-open-grace) (> hive-rpc-open-grace 0))
    (setq hive-rpc--guard-until (+ (float-time) hive-rpc-open-grace))
    (add-hook 'pre-command-hook #'hive-rpc--drop-typed-ahead)))

(defun hive-rpc--say-dropped ()
  "Say how many keys typed ahead for questions were dropped."
  (message "hive-rpc: dropped %d key%s typed after your answer: no question \
was waiting for %s" hive-rpc--dropped (if (= hive-rpc--dropped 1) "" "s")
           (if (= hive-rpc--dropped 1) "it" "them")))

(defun hive-rpc--drop-typed-ahead ()
  "Drop the command about to run if it comes right after a chain's last answer.
In `pre-command-hook' while `hive-rpc--guard-until' is ahead."
  (cond
   ((or (null hive-rpc--guard-until) (> (float-time) hive-rpc--guard-until)
        (minibufferp))
    (setq hive-rpc--guard-until nil)
    (remove-hook 'pre-command-hook #'hive-rpc--drop-typed-ahead))
   ((memq this-command '(hive-rpc-answer-next keyboard-quit hive-rpc-defer-all))
    (setq hive-rpc--guard-until nil)
    (remove-hook 'pre-command-hook #'hive-rpc--drop-typed-ahead))
   (t
    (setq hive-rpc--dropped (+ hive-rpc--dropped (length (this-command-keys-vector))))
    (setq this-command #'ignore)
    (hive-rpc--say-dropped))))


;;; Answers
;;;

(defun hive-rpc--in-outbox-p (id)
  "Return non-nil if an answer to ID waits in the outbox."
  (cl-some (lambda (e) (equal (plist-get e :id) id)) hive-rpc--outbox))

(defun hive-rpc--respond (id answer &optional action)
  "Answer prompt ID with ANSWER, or with ACTION \"decline\" or \"cancel\".
The answer goes to the outbox and is sent asynchronously; if the
hub is away it is kept and sent after reconnecting."
  (let ((entry (list :id id :answer answer :action (or action "accept"))))
    (setq hive-rpc--outbox (append hive-rpc--outbox (list entry)))
    (setf (hive-rpc--queue) (delete id (hive-rpc--queue)))
    (if (hive-rpc--connected-p)
        (hive-rpc--send-answer entry)
      (message "hive-rpc: the hub is away; the answer is kept"))
    (hive-rpc--update)))

(defun hive-rpc--send-answer (entry)
  "Send ENTRY of the outbox with `hive/respond'."
  (let ((id (plist-get entry :id))
        (action (plist-get entry :action)))
    (jsonrpc-async-request
     hive-rpc--connection 'hive/respond
     `(:id ,id :action ,action
           ,@(when (equal action "accept") (list :answer (plist-get entry :answer)))
           ,@(when hive-rpc-by (list :by hive-rpc-by)))
     :success-fn
     (lambda (record)
       (setq hive-rpc--outbox (delq entry hive-rpc--outbox))
       (remhash id (hive-rpc--prompts))
       (hive-rpc--answer-sent entry record)
       (hive-rpc--update))
     :error-fn
     (lambda (err)
       (let ((code (plist-get err :code)))
         (unless (eql code hive-rpc-error-hub-died) ; keep it for later
           (setq hive-rpc--outbox (delq entry hive-rpc--outbox))
           (message "hive-rpc: answer refused: %s%s"
                    (hive-rpc--clean (plist-get err :message))
                    (if (eql code hive-rpc-error-invalid-answer)
                        (format " (%s: answer again)" (hive-rpc--answer-key))
                      ""))
           (when (and (eql code hive-rpc-error-invalid-answer) (gethash id (hive-rpc--prompts)))
             (hive-rpc--answer-refused id (plist-get err :message))
             (setf (hive-rpc--queue) (append (hive-rpc--queue) (list id)))
             (hive-rpc--schedule-ask))
           (hive-rpc--update))))
     :timeout-fn
     (lambda ()
       (message "hive-rpc: no reply to an answer yet; it is kept")))))

(defun hive-rpc--flush-outbox ()
  "Send every kept answer."
  (dolist (entry hive-rpc--outbox)
    (hive-rpc--send-answer entry)))


;;; Mode line and updates
;;;

(defface hive-rpc-urgent
  '((t :inherit warning))
  "Face of the mode line's countdown under 30 seconds, and of unseen expiries."
  :group 'hive-rpc)

(defun hive-rpc--countdown-seconds ()
  "Return the seconds left to the most urgent waiting question, or nil.
Only questions with a countdown count: an agent's timeout, not
stopped by typing."
  (let (soonest)
    (maphash (lambda (id r)
               (when (and (numberp (plist-get r :timeout_s))
                          (numberp (plist-get r :deadline_at))
                          (not (plist-get r :typing_at))
                          (not (member id hive-rpc--typed)))
                 (let ((left (- (plist-get r :deadline_at) (float-time))))
                   (when (or (null soonest) (< left soonest))
                     (setq soonest left)))))
             (hive-rpc--prompts))
    soonest))

(defun hive-rpc--clock (seconds)
  "Return SECONDS as the mode line's clock: 0:25, 4:49, 1:02:03."
  (let ((s (max 0 (floor seconds))))
    (if (>= s 3600)
        (format "%d:%02d:%02d" (/ s 3600) (/ (% s 3600) 60) (% s 60))
      (format "%d:%02d" (/ s 60) (% s 60)))))

(defvar hive-rpc--waiting-mouse-map
  (make-mode-line-mouse-map 'mouse-1 #'hive-rpc-sessions)
  "Keymap of the mode line's \" · N waiting\": a click lists the sessions.")

(defun hive-rpc--mode-line-string ()
  "Return the mode-line text of `hive-rpc-mode'.
\" hive:N\" while N questions wait, followed by the most urgent
countdown (in `hive-rpc-urgent' under 30 seconds); \", N expired
unseen\" while questions that expired before anyone saw them are
not cleared; \" · N waiting\" while N agent sessions wait on the
human (`hive-rpc-sessions'), last; \"!\" after the count while the
hub's store is degraded, with the reason in its tooltip."
  (let* ((line (hive-rpc--mode-line-prompts))
         (waiting (if (eq hive-rpc--state 'connected) (hive-rpc--sessions-waiting) 0)))
    (if (= waiting 0)
        line
      (concat (if (string-empty-p line) " hive:" line)
              (propertize (format (if (string-empty-p line) " %d waiting" " · %d waiting")
                                  waiting)
                          'help-echo (substitute-command-keys "Agent sessions waiting \
on you: mouse-1 or \\[hive-rpc-sessions] lists them")
                          'mouse-face 'mode-line-highlight
                          'local-map hive-rpc--waiting-mouse-map)))))

(defun hive-rpc--mode-line-prompts ()
  "Return the part of `hive-rpc--mode-line-string' that counts questions."
  (let* ((n (hash-table-count (hive-rpc--prompts)))
         (unseen (hash-table-count hive-rpc--unseen))
         (left (and (> n 0) (memq hive-rpc--state '(connected))
                    (hive-rpc--countdown-seconds)))
         (main
          (cond ((eq hive-rpc--state 'dead) " hive:down")
                ((eq hive-rpc--state 'connecting) " hive:...")
                (hive-rpc--degraded
                 (propertize (if (> n 0) (format " hive:%d!" n) " hive:!")
                             'face 'warning
                             'help-echo (hive-rpc--degraded-text hive-rpc--degraded)))
                ((> n 0) (format " hive:%d" n))
                ((> unseen 0) " hive:")
                (t ""))))
    (concat main
            (if left
                (concat " " (propertize (hive-rpc--clock left)
                                        'face (and (< left 30) 'hive-rpc-urgent)
                                        'help-echo "Time left to the most urgent question"))
              "")
            (if (> unseen 0)
                (propertize (format "%s%d expired unseen"
                                    (if (string-suffix-p ":" main) " " ", ") unseen)
                            'face 'hive-rpc-urgent
                            'help-echo (substitute-command-keys
                                        "Questions that expired before anyone saw them: \
\\[hive-rpc-list] lists them, \\[hive-rpc-clear-unseen] clears them"))
              ""))))

(defun hive-rpc--sessions-waiting ()
  "Return how many agent sessions wait on the human."
  (let ((n 0))
    (maphash (lambda (_id s) (when (equal (plist-get s :state) "waiting") (setq n (1+ n))))
             hive-rpc--sessions)
    n))

(defun hive-rpc--tick-mode-line ()
  "Redraw the mode line's countdown; stop ticking when none is shown."
  (if (and hive-rpc-mode (hive-rpc--connected-p) (hive-rpc--countdown-seconds))
      (force-mode-line-update t)
    (hive-rpc--cancel-timer 'hive-rpc--mode-line-timer)
    (force-mode-line-update t)))

(defun hive-rpc--watch-countdown ()
  "Tick the mode line each second while a countdown is in it, and only then.
In `hive-rpc-update-hook'; also show or close `hive-rpc-queue-window'."
  (if (and hive-rpc-mode (hive-rpc--connected-p) (hive-rpc--countdown-seconds))
      (unless (timerp hive-rpc--mode-line-timer)
        (setq hive-rpc--mode-line-timer (run-at-time 1 1 #'hive-rpc--tick-mode-line)))
    (hive-rpc--cancel-timer 'hive-rpc--mode-line-timer))
  (when (and hive-rpc-queue-window (not noninteractive))
    (hive-rpc--show-queue-window)))

(add-hook 'hive-rpc-update-hook #'hive-rpc--watch-countdown)

(defun hive-rpc--pending-ids ()
  "Return the ids of the pending questions, oldest first."
  (let (records)
    (maphash (lambda (_id r) (push r records)) (hive-rpc--prompts))
    (mapcar (lambda (r) (plist-get r :id))
            (sort records (lambda (a b) (< (plist-get a :created_at)
                                           (plist-get b :created_at)))))))



;;; The command map
;;;

;;;###autoload (autoload 'hive-rpc-command-map "hive-rpc" nil t 'keymap)
(defvar hive-rpc-command-map
  (let ((map (make-sparse-keymap)))
    (define-key map "n" #'hive-rpc-answer-next)
    (define-key map "z" #'hive-rpc-defer-all)
    (define-key map "x" #'hive-rpc-clear-unseen)
    (define-key map "l" #'hive-rpc-list)
    (define-key map "s" #'hive-rpc-sessions)
    (define-key map "a" #'hive-rpc-ask)
    (define-key map "d" #'hive-rpc-decline)
    (define-key map "m" #'hive-rpc-mode)
    (define-key map "e" #'hive-rpc-events-buffer)
    (define-key map "r" #'hive-rpc-register-ling)
    (define-key map "u" #'hive-rpc-unregister-ling)
    (define-key map "S" #'hive-rpc-start-hub)
    map)
  "Keymap of hive-rpc's commands, for you to bind to a prefix key.
hive-rpc binds it to no key itself.  For example:

  (global-set-key (kbd \"C-c h\") hive-rpc-command-map)

\\{hive-rpc-command-map}")
(defalias 'hive-rpc-command-map hive-rpc-command-map)


;;; Public commands
;;;

;;;###autoload
(define-minor-mode hive-rpc-mode
  "Answer AI agents' questions held by the hive_rpc hub.
Connect to the hub (starting one with `hive-rpc-program' if none
answers), subscribe, and announce each question: the mode line
shows \" hive:N\" while N questions are pending, with the most
urgent countdown, \" N expired unseen\" for those that expired
before anyone saw them, \" · N waiting\" while N agent sessions
wait on you (`hive-rpc-sessions' lists them), and \" hive:N!\"
while the hub's store is degraded (its tooltip says why).  A
question opens in the minibuffer when you ask, with
`hive-rpc-answer-next' (or by itself after a pause, with
`hive-rpc-auto-ask').

In a hive prompt, \\<hive-rpc-minibuffer-map>\\[hive-rpc-decline] \
declines and \\[keyboard-quit] defers."
  :global t
  :group 'hive-rpc
  :lighter (:eval (hive-rpc--mode-line-string))
  (hive-rpc--disconnect)
  (when hive-rpc-mode
    ;; Typing into terminal buffers for the hub (see hive-rpc-ling.el).
    (require 'hive-rpc-ling)
    (setq hive-rpc--state 'connecting)
    (hive-rpc--connect t)))

(autoload 'hive-rpc-list "hive-rpc-list" "List the questions pending in the hub." t)
(autoload 'hive-rpc-sessions "hive-rpc-sessions"
  "List the agent sessions the hub knows, those waiting on you first." t)
(autoload 'hive-rpc-register-ling "hive-rpc-ling"
  "Register the terminal in the current buffer as a ling." t)
(autoload 'hive-rpc-unregister-ling "hive-rpc-ling" "Remove a ling from the hub." t)

;;;###autoload
(defun hive-rpc-answer-next ()
  "Answer the oldest waiting question, deferred ones included.
Then each waiting question opens in turn, at once, until none is
left or \\<hive-rpc-minibuffer-map>\\[keyboard-quit] defers them all; keys typed
ahead after the last one are dropped (see `hive-rpc-open-grace')."
  (interactive)
  (when (hive-rpc--hive-minibuffer-p)
    (user-error "A question is open: answer it, or C-g to leave it"))
  ;; After "not now" the queue is empty: asking again takes them all up.
  (unless (hive-rpc--queue)
    (setf (hive-rpc--queue) (seq-remove #'hive-rpc--in-outbox-p (hive-rpc--pending-ids))))
  (let ((id (car (hive-rpc--queue))))
    (hive-rpc--clear-news)
    (if id
        (hive-rpc--chain id)
      (message "hive-rpc: no question is waiting"))))

(defun hive-rpc-defer-all ()
  "Say \"not now\" to every waiting question: none opens until you ask.
They stay pending in the hub, counted in the mode line; the one
open in the minibuffer, if any, is left too (as with
\\<hive-rpc-minibuffer-map>\\[keyboard-quit] there).
`hive-rpc-answer-next' asks them."
  (interactive)
  (if (hive-rpc--hive-minibuffer-p)
      (abort-recursive-edit)            ; `hive-rpc--ask' defers them all
    (hive-rpc--defer-all)))

(defun hive-rpc-clear-unseen ()
  "Clear the trace of the questions that expired before anyone saw them.
The mode line stops counting them (\"N expired unseen\"); the hub
records that you saw they expired (`hive/clearUnseen'), and every
other editor takes them off too."
  (interactive)
  (let ((n (hash-table-count hive-rpc--unseen)))
    (if (= n 0)
        (message "hive-rpc: no question expired unseen")
      (clrhash hive-rpc--unseen)
      (hive-rpc--update)
      (when (hive-rpc--connected-p)
        (jsonrpc-async-request hive-rpc--connection 'hive/clearUnseen '(:all t)
                               :success-fn #'ignore :error-fn #'ignore
                               :timeout-fn #'ignore))
      (message "hive-rpc: cleared %d question%s that expired unseen"
               n (if (= n 1) "" "s")))))

;;;###autoload
(defun hive-rpc-ask (question &optional choices)
  "Ask QUESTION through the hub as agent `hive-rpc-agent-id'.
CHOICES, a list of strings, restricts the answers; interactively,
give them separated by commas, or nothing for free text.
Without a connection to the hub it signals a `user-error' saying
how to get one, before reading anything."
  (interactive
   (progn
     ;; Check first: a question typed and then thrown away is lost work.
     (hive-rpc--check-connected)
     (list (read-string "Question: ")
           (split-string (read-string "Choices (comma-separated, empty for free text): ")
                         "," t "[ \t]+"))))
  (hive-rpc--check-connected)
  (jsonrpc-async-request
   hive-rpc--connection 'hive/ask
   `(:question ,question :agent_id ,hive-rpc-agent-id
               ,@(when choices (list :choices (vconcat choices))))
   :success-fn (lambda (record)
                 (message "hive-rpc: asked %s" (plist-get record :id)))
   :error-fn (lambda (err)
               (message "hive-rpc: ask refused: %s"
                        (hive-rpc--clean (plist-get err :message))))))

(defun hive-rpc-events-buffer ()
  "Show the JSON-RPC traffic with the hub."
  (interactive)
  (cond
   ((not (hive-rpc--connected-p)) (user-error "Not connected to the hub"))
   ((eql hive-rpc-events-buffer-size 0)
    (user-error "The traffic is not logged: set `hive-rpc-events-buffer-size', then reconnect"))
   (t (display-buffer (jsonrpc-events-buffer hive-rpc--connection)))))

(provide 'hive-rpc)
;;; hive-rpc.el ends here
