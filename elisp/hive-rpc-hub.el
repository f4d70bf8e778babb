;;; hive-rpc-hub.el --- Find the hive_rpc hub, start one, reconnect  -*- lexical-binding: t; -*-

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

;; Where the hub listens, and what Emacs does when nothing answers
;; there: start a hub, wait for it, and retry with backoff.
;;
;; The hub is shared: every agent asks through it, and it keeps the
;; questions while no editor is up.  So Emacs starts it the way
;; emacsclient starts an Emacs server or gpg starts gpg-agent:
;; detached ("hive-rpc serve --detach"), in a session of its own, so
;; that it outlives Emacs.  Emacs only runs the short-lived starter,
;; which exits once the hub listens, or says why it could not.
;;
;; When the hub goes away, Emacs tries the socket again every
;; `hive-rpc-reconnect-interval' seconds, and starts a hub again only
;; when no earlier start is still under way and the last failed start
;; is long enough ago: the wait doubles after each failed start, from
;; `hive-rpc-start-timeout' seconds up to 5 minutes, so a hub that
;; cannot start is not started in a loop.
;;
;; A hub started that way comes back with the options it last ran
;; with (its start record: "serve --detach --autostart"), `--http'
;; included.  But a hub the human stopped on purpose (Ctrl-C, `kill
;; PID', "hive-rpc stop") is marked so in that record, and Emacs does
;; not start it again: it says so once, and connects when someone
;; starts it.  `hive-rpc-start-hub' starts it again, as it last ran.
;;
;; This file knows nothing of what a connection carries: it calls
;; `hive-rpc--connect-function', which hive-rpc.el sets, to connect.
;; It requires hive-rpc-core.el only, and hive-rpc.el requires it.
;;
;; On each connection it proves to the hub that this Emacs is an
;; approver: one that may answer permission prompts (an agent asking
;; to run a tool) and change answer rules.  The proof is the contents
;; of the hub's approver token file, which `hive/status' names: the
;; hub refuses those answers from any connection that did not send
;; it, since an agent's own shell can open the socket too, and an
;; agent's sandbox is kept from reading that file (docs/security.md).

;;; Code:

(require 'subr-x)
(require 'json)
(require 'jsonrpc)
(require 'hive-rpc-core)


;;; User options
;;;

(defcustom hive-rpc-socket nil
  "Path of the hub's Unix socket, or nil for the hub's own default.
The default, computed by `hive-rpc-default-socket' each time
hive-rpc connects, is $HIVE_RPC_SOCKET if set, else
$XDG_RUNTIME_DIR/hive-rpc/hub.sock if $XDG_RUNTIME_DIR names a
directory, else hive-rpc-UID/hub.sock under
the variable `temporary-file-directory' (normally /tmp/hive-rpc-UID/hub.sock)."
  :group 'hive-rpc
  :type '(choice (const :tag "Hub default" nil) file))


(defcustom hive-rpc-program '("hive-rpc" "serve")
  "Command that starts a hub when none answers on the socket.
It is run when `hive-rpc-mode' is turned on, and again when the
hub went away and none answers, unless the hub was stopped on
purpose; and by `hive-rpc-start-hub'.  A list of strings: the
program and its arguments.  hive-rpc appends \"--detach\",
\"--socket\", the socket path, and \"--autostart\" (or, from
`hive-rpc-start-hub', \"--as-before\"): the command starts the hub
in a session of its own, with the options it last ran with, and
exits once it listens, so the hub outlives Emacs and keeps serving
agents after Emacs exits.  Set it to nil to never start a hub from
Emacs."
  :group 'hive-rpc
  :type '(repeat string))


(defcustom hive-rpc-reconnect-interval 2
  "Seconds between attempts to reach the hub after it went away."
  :group 'hive-rpc
  :type 'number)


(defcustom hive-rpc-prove-approver t
  "Non-nil means prove to the hub that this Emacs is an approver.
On each connection Emacs reads the hub's approver token file (the
file `hive/status' names) and sends its contents with
`hive/proveApprover'.  Only an approver may answer a permission
prompt, an agent's request to use a tool.  With nil, or when the
file cannot be read, such answers are refused by the hub, and every
other question is answered as before."
  :group 'hive-rpc
  :type 'boolean)


(defcustom hive-rpc-start-timeout 20
  "Seconds to wait for a hub started by hive-rpc to listen.
A backstop: \"hive-rpc serve --detach\" gives up by itself after
15 seconds and says why."
  :group 'hive-rpc
  :type 'number)



;;; Internal state
;;;

(defvar hive-rpc--connect-function #'ignore
  "Function that connects to the hub and subscribes; it returns non-nil on success.
Called with one optional argument START: non-nil means start a
hub with `hive-rpc--start-hub' when none answers.  hive-rpc.el sets
it to `hive-rpc--connect'; a variable, so that this file need not
require the file that holds the connection.")

(defvar hive-rpc--reconnect-timer nil
  "Timer retrying the connection to the hub.")

(defvar hive-rpc--hub-process nil
  "The process starting a hub (`hive-rpc-program' --detach), if any.
It exits once the hub listens; the hub itself is not Emacs's child.")

(defvar hive-rpc--start-timer nil
  "Timer giving up on a starting hub after `hive-rpc-start-timeout'.")

(defvar hive-rpc--start-retry nil
  "When reconnecting may start a hub again after a failed start, or nil.
A cons (TIME . DELAY): reconnecting starts no hub before `float-time'
TIME, and DELAY doubles with each failed start, up to 5 minutes.")

(defvar hive-rpc--start-explicitly nil
  "Non-nil while `hive-rpc-start-hub' starts a hub.
The start is then the human's: it starts a hub stopped on purpose
too (\"--as-before\" rather than \"--autostart\").")

(defvar hive-rpc--stopped-said nil
  "The stop mark of the hub already said to be stopped on purpose, or nil.")

(defvar hive-rpc-mode)
(declare-function hive-rpc-mode "hive-rpc" (&optional arg))


;;; Where the hub listens
;;;

(defvar hive-rpc--user-runtime-root "/run/user"
  "Where the system makes each user's runtime directory, named by uid.
Without XDG_RUNTIME_DIR (an Emacs started outside a login session),
the hub's socket is still there when that directory is the user's own
and private, as the hub decides; a variable so the tests can move it.")

(defun hive-rpc--own-private-directory-p (dir)
  "Return non-nil if DIR is a directory, not a link, of this user, mode 0700."
  (let ((attrs (file-attributes dir 'integer)))
    (and attrs
         (eq t (file-attribute-type attrs))
         (eql (file-attribute-user-id attrs) (user-uid))
         (string-suffix-p "------" (file-attribute-modes attrs)))))

(defun hive-rpc-default-socket ()
  "Return the hub's default socket path, as the hub computes it.
In order: HIVE_RPC_SOCKET; XDG_RUNTIME_DIR/hive-rpc/hub.sock; the
same place in /run/user/UID when that directory is the user's own and
private (an Emacs started without XDG_RUNTIME_DIR still finds the hub
the CLI and the agents use); else hive-rpc-UID/hub.sock in the
temporary directory.  See `hive-rpc-socket'."
  (let ((env (getenv "HIVE_RPC_SOCKET"))
        (runtime (getenv "XDG_RUNTIME_DIR"))
        (systemd (expand-file-name (number-to-string (user-uid))
                                   hive-rpc--user-runtime-root)))
    (cond ((and env (not (string-empty-p env))) env)
          ((and runtime (not (string-empty-p runtime))
                (file-directory-p runtime))
           (expand-file-name "hive-rpc/hub.sock" runtime))
          ((hive-rpc--own-private-directory-p systemd)
           (expand-file-name "hive-rpc/hub.sock" systemd))
          (t (expand-file-name (format "hive-rpc-%d/hub.sock" (user-uid))
                               temporary-file-directory)))))

(defun hive-rpc--socket ()
  "Return the socket path to use."
  (expand-file-name (or hive-rpc-socket (hive-rpc-default-socket))))


;;; Starting a hub
;;;

(defun hive-rpc--hub-connect (&optional start)
  "Connect to the hub with `hive-rpc--connect-function'.
START non-nil means start a hub when none answers.  Return non-nil
when connected."
  (funcall hive-rpc--connect-function start))

(defun hive-rpc--start-hub (socket)
  "Start a hub listening on SOCKET, and connect when it is ready.
The hub is started detached (\"hive-rpc serve --detach\"): in a
session of its own, not as a child of Emacs, so it outlives Emacs,
as `emacs --daemon' and ssh-agent do.  Every agent uses it, and
Emacs exiting must not take it from them.  Emacs runs only the
short-lived starter, which prints \"listening on SOCKET\" and
exits 0 once the hub listens, or prints the cause and exits
non-zero."
  (cond
   ((process-live-p hive-rpc--hub-process))
   ((and (not hive-rpc--start-explicitly) (hive-rpc--stopped-on-purpose socket))
    (hive-rpc--leave-stopped socket))
   (t
    (setq hive-rpc--state 'connecting)
    (hive-rpc--update)
    (condition-case err
        (let ((buffer (get-buffer-create " *hive-rpc hub*"))
              (how (if hive-rpc--start-explicitly "--as-before" "--autostart")))
          (setq hive-rpc--hub-process
                (make-process
                 :name "hive-rpc-hub"
                 :buffer buffer
                 :command (append hive-rpc-program (list "--detach" "--socket" socket how))
                 :noquery t
                 :connection-type 'pipe
                 :filter #'hive-rpc--hub-filter
                 :sentinel #'hive-rpc--hub-sentinel))
          ;; The buffer may hold an earlier start's output: only this
          ;; start's own "listening on" counts.
          (process-put hive-rpc--hub-process 'hive-rpc-output-start
                       (with-current-buffer buffer (point-max)))
          (hive-rpc--cancel-timer 'hive-rpc--start-timer)
          (setq hive-rpc--start-timer
                (run-at-time hive-rpc-start-timeout nil #'hive-rpc--start-failed)))
      (error
       (message "hive-rpc: cannot start a hub with %S: %s"
                hive-rpc-program (error-message-string err))
       (setq hive-rpc--state 'dead)
       (hive-rpc--start-failed-later)
       (hive-rpc--schedule-reconnect)
       (hive-rpc--update))))))

(defun hive-rpc--stopped-on-purpose (socket)
  "Return the mark of the hub on SOCKET if it was stopped on purpose, else nil.
The mark is in the hub's start record beside SOCKET, written when the
hub was stopped with SIGINT (Ctrl-C), SIGTERM (`kill PID') or
\"hive-rpc stop\", and gone once a hub is started there again; a
crashed hub leaves none.  It is a cons (BY . AT): how, and when."
  (let ((file (concat socket ".start.json")))
    (when (file-readable-p file)
      (condition-case nil
          (let* ((record (with-temp-buffer
                           (insert-file-contents file)
                           (let ((json-object-type 'alist))
                             (json-read))))
                 (by (alist-get 'stopped_by record))
                 (at (alist-get 'stopped_at record)))
            (and (stringp by) (numberp at) (cons by at)))
        (error nil)))))

(defun hive-rpc--stopped-text (socket)
  "Return a sentence saying the hub on SOCKET was stopped on purpose, or nil.
It says how, when, and how to start it again; nil when the hub was
not stopped on purpose."
  (when-let ((mark (hive-rpc--stopped-on-purpose socket)))
    (format "the hub was stopped on purpose (%s at %s); M-x hive-rpc-start-hub starts it again"
            (pcase (car mark)
              ("SIGINT" "Ctrl-C")
              ("SIGTERM" "kill PID")
              (by by))
            (format-time-string "%F %T" (cdr mark)))))

(defun hive-rpc--leave-stopped (socket)
  "Start no hub on SOCKET, stopped on purpose; say so once, and wait for one.
Emacs still tries the socket every `hive-rpc-reconnect-interval'
seconds, and connects when a hub is started there."
  (let ((mark (hive-rpc--stopped-on-purpose socket))
        (text (hive-rpc--stopped-text socket)))
    (setq hive-rpc--state 'dead)
    (hive-rpc--schedule-reconnect)
    (hive-rpc--update)
    (unless (or (null text) (equal mark hive-rpc--stopped-said))
      (setq hive-rpc--stopped-said mark)
      (message "hive-rpc: %s" text))))

;;;###autoload
(defun hive-rpc-start-hub ()
  "Start the hub, even one stopped on purpose, and connect to it.
It is started as it last ran (\"hive-rpc serve --detach --as-before\":
the options in its start record, `--http' included), with
`hive-rpc-program'.  Turns `hive-rpc-mode' on if it is off.  Emacs
does not start by itself a hub stopped on purpose (Ctrl-C, `kill
PID', \"hive-rpc stop\"): this is how to ask for it."
  (interactive)
  (unless hive-rpc-program
    (user-error "Cannot start a hub: `hive-rpc-program' is nil; run: hive-rpc serve --detach --socket %s"
                (hive-rpc--socket)))
  (setq hive-rpc--start-retry nil)
  (let ((hive-rpc--start-explicitly t))
    (cond
     ((not hive-rpc-mode) (hive-rpc-mode 1))
     ((eq hive-rpc--state 'connected)
      (message "hive-rpc: connected to the hub on %s already" (hive-rpc--socket)))
     (t (hive-rpc--hub-connect t)))))

(defun hive-rpc--hub-filter (proc string)
  "Log STRING from the starter PROC; connect once the hub is listening."
  (when (buffer-live-p (process-buffer proc))
    (with-current-buffer (process-buffer proc)
      (goto-char (point-max))
      (insert string)
      (when (and (eq hive-rpc--state 'connecting)
                 (save-excursion
                   (goto-char (or (process-get proc 'hive-rpc-output-start)
                                  (point-min)))
                   (search-forward "listening on" nil t)))
        (hive-rpc--cancel-timer 'hive-rpc--start-timer)
        (hive-rpc--hub-connect)))))

(defun hive-rpc--hub-sentinel (proc _event)
  "Note the end of the starter PROC; connect, or say why no hub came up."
  (unless (process-live-p proc)
    (when (eq hive-rpc--state 'connecting)
      (hive-rpc--cancel-timer 'hive-rpc--start-timer)
      ;; Exit 0 means a hub listens (ours, or one that won the race).
      (cond
       ((hive-rpc--hub-connect))
       ;; Stopped on purpose after we looked: "--autostart" refused it.
       ((hive-rpc--stopped-on-purpose (hive-rpc--socket))
        (hive-rpc--leave-stopped (hive-rpc--socket)))
       (t
        (hive-rpc--start-failed-later)
        (let ((cause (hive-rpc--start-output proc)))
          (if (and cause (not (zerop (process-exit-status proc))))
              (message "hive-rpc: %s" (hive-rpc--clean cause))
            (message "hive-rpc: no hub came up (%s exited with %s); see buffer \" *hive-rpc hub*\""
                     (car hive-rpc-program) (process-exit-status proc)))))))))

(defun hive-rpc--start-output (proc)
  "Return the last line the starter PROC printed, without \"hive-rpc: \".
That is where \"hive-rpc serve --detach\" says why it failed.
Return nil if it printed nothing."
  (when (buffer-live-p (process-buffer proc))
    (with-current-buffer (process-buffer proc)
      (let* ((start (or (process-get proc 'hive-rpc-output-start) (point-min)))
             (lines (split-string (buffer-substring-no-properties start (point-max))
                                  "\n" t "[ \t\r]+"))
             (last (car (last lines))))
        (when last
          (string-remove-prefix "hive-rpc: " last))))))

(defun hive-rpc--start-failed ()
  "Give up waiting for a starting hub, and retry later."
  (setq hive-rpc--start-timer nil)
  (when (eq hive-rpc--state 'connecting)
    (message "hive-rpc: the hub did not come up; retrying")
    (let ((connected (hive-rpc--hub-connect)))
      ;; No longer `connecting': the starter's sentinel has nothing to add.
      (when (process-live-p hive-rpc--hub-process)
        (delete-process hive-rpc--hub-process))
      (unless connected
        (hive-rpc--start-failed-later)))))

(defun hive-rpc--start-failed-later ()
  "Delay the next start of a hub by `hive-rpc--reconnect' after a failure.
The first wait is `hive-rpc-start-timeout' seconds, and it doubles
with each failed start, up to 5 minutes."
  (let ((delay (if hive-rpc--start-retry
                   (min 300 (* 2 (cdr hive-rpc--start-retry)))
                 hive-rpc-start-timeout)))
    (setq hive-rpc--start-retry (cons (+ (float-time) delay) delay))))


;;; Reconnecting
;;;

(defun hive-rpc--schedule-reconnect ()
  "Try to reconnect every `hive-rpc-reconnect-interval' seconds."
  (unless (timerp hive-rpc--reconnect-timer)
    (setq hive-rpc--reconnect-timer
          (run-at-time hive-rpc-reconnect-interval hive-rpc-reconnect-interval
                       #'hive-rpc--reconnect))))

(defun hive-rpc--reconnect ()
  "Reconnect to the hub if it is back, else start one.
A hub is started with `hive-rpc-program', as when `hive-rpc-mode'
is turned on, unless a hub started earlier still runs, or a start
failed recently (see `hive-rpc--start-retry')."
  (if (not (eq hive-rpc--state 'dead))
      (hive-rpc--cancel-reconnect)
    (let ((start (and hive-rpc-program
                      (not (process-live-p hive-rpc--hub-process))
                      (or (null hive-rpc--start-retry)
                          (>= (float-time) (car hive-rpc--start-retry))))))
      (when (or start (hive-rpc--open-p))
        (hive-rpc--hub-connect start)))))

(defun hive-rpc--open-p ()
  "Return non-nil if the hub's socket file exists."
  (file-exists-p (hive-rpc--socket)))

(defun hive-rpc--cancel-reconnect ()
  "Stop trying to reconnect."
  (hive-rpc--cancel-timer 'hive-rpc--reconnect-timer))


;;; Proving an approver
;;;

(defvar hive-rpc--approver nil
  "The connection on which the hub accepted this Emacs as an approver, or nil.")

(defun hive-rpc--read-token (file)
  "Return the token in FILE, or signal `file-error' if it cannot be read."
  (with-temp-buffer
    (insert-file-contents file)
    (string-trim (buffer-string))))

(defun hive-rpc--prove-approver (connection &optional then)
  "Prove on CONNECTION that this Emacs is an approver, unless not wanted.
Ask `hive/status' for the approver token file, then send its
contents with `hive/proveApprover'.  A file that cannot be read is
said once in the echo area: permission prompts are then refused.
Call THEN, with no argument, once the proof is settled: given,
refused, impossible or not wanted.  `hive-rpc--connect' sends the
answers kept while the hub was away from THEN, so an answer to a
permission prompt is not refused for coming before the proof."
  (let ((settled (lambda (&rest _) (when then (funcall then)))))
    (if (not hive-rpc-prove-approver)
        (funcall settled)
      (jsonrpc-async-request
       connection 'hive/status nil
       :success-fn
       (lambda (status)
         (let ((file (plist-get status :approver_token_file)))
           ;; Never send the hub any other file than an approver token.
           (if (not (and (stringp file)
                         (equal (file-name-nondirectory file) "approver-token")))
               (funcall settled)
             (condition-case err
                 (jsonrpc-async-request
                  connection 'hive/proveApprover
                  (list :token (hive-rpc--read-token file))
                  :success-fn (lambda (_)
                                (setq hive-rpc--approver connection)
                                (funcall settled))
                  :error-fn (lambda (refused)
                              (message "hive-rpc: not an approver: %s"
                                       (hive-rpc--clean (plist-get refused :message)))
                              (funcall settled))
                  :timeout-fn settled)
               (file-error
                (message "hive-rpc: cannot read the approver token (%s); permission prompts will be refused"
                         (error-message-string err))
                (funcall settled))))))
       :error-fn settled
       :timeout-fn settled))))


(defun hive-rpc--hub-connected ()
  "Note that hive-rpc is connected: no retry, and no backoff left."
  (hive-rpc--cancel-reconnect)
  (setq hive-rpc--start-retry nil
        hive-rpc--stopped-said nil))

(defun hive-rpc--hub-stop ()
  "Stop reconnecting and waiting for a starting hub, and forget the backoff.
A starter still running is left to finish: the hub it starts
serves the agents anyway."
  (hive-rpc--cancel-timer 'hive-rpc--reconnect-timer)
  (hive-rpc--cancel-timer 'hive-rpc--start-timer)
  (setq hive-rpc--start-retry nil))

(provide 'hive-rpc-hub)
;;; hive-rpc-hub.el ends here
