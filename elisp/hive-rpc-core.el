;;; hive-rpc-core.el --- The state and helpers hive-rpc's files share  -*- lexical-binding: t; -*-

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

;; The bottom of hive-rpc's files: the state (what one hub said, in
;; slots of the connection; what is the human's across reconnects, in
;; variables: see State below), the connection's class with the
;; generic functions that handle the hub's messages and the hooks
;; run on connecting and on every change, the hub's error codes, and
;; the helpers every other file uses.  It requires no other file of
;; hive-rpc, and every other file requires it.  The files depend on
;; each other one way, each on files above it only:
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
;;
;; hive-rpc.el requires this file; load hive-rpc.el, not this file alone.

;;; Code:

(require 'cl-lib)
(require 'jsonrpc)
(require 'subr-x)


;;; Error codes
;;;

;; The hub's codes are those of the Errors table in docs/protocol.md;
;; only the ones hive-rpc acts on are named here.

(defconst hive-rpc-error-method-not-found -32601
  "JSON-RPC code of an unknown method.
The hub answers it to a method it does not have, and Emacs to a
request of the hub nobody handles (see docs/protocol.md, Errors).")

(defconst hive-rpc-error-invalid-params -32602
  "JSON-RPC code of a missing, unknown or mistyped parameter.
See the Errors table of docs/protocol.md.")

(defconst hive-rpc-error-invalid-answer -32004
  "The hub's code for an answer outside the prompt's choices or schema.
`invalid_answer' in the Errors table of docs/protocol.md: the
question is asked again, showing the hub's reason.")

(defconst hive-rpc-error-refused -32020
  "Code with which Emacs refuses a request of the hub.
For example typing into a buffer that is not a terminal: see
Requests from the hub in docs/protocol.md.")

(defconst hive-rpc-error-hub-died -1
  "Code jsonrpc.el gives a request whose connection closed before its reply.
Not a code of the hub (see docs/protocol.md, Errors): jsonrpc.el
fails every request in flight with it, message \"Server died\",
when the hub goes away.  An answer failed so is kept and sent again.")


;;; State: the connection's, and the session's
;;;

;; Two lifetimes.  What one hub told Emacs over one connection lives
;; in the slots of that `hive-rpc-connection', as eglot keeps a
;; server's state on the server object: the pending prompts, the
;; queue of those to ask, and whether that hub raises desktop
;; notifications itself.  A new connection starts empty, and the
;; hub's subscription fills it again, so nothing stale from an
;; earlier hub (or from the same hub before it restarted) survives.
;; The dead connection stays in `hive-rpc--connection' until the next
;; one replaces it, so the questions it brought can still be answered
;; while the hub is away.
;;
;; What is the human's, across reconnects, lives in variables: the
;; state of the session, the answers given while the hub was away
;; (`hive-rpc--outbox', sent on the next connection, so it cannot live
;; on the dead one), the prompts whose typing began
;; (`hive-rpc--typed', told to the next hub too), the prompts already
;; announced (`hive-rpc--announced', so that the replay after a
;; reconnect is no news), and what the human was last told of the
;; store's health (`hive-rpc--degraded', so that a hub still degraded
;; after a reconnect is not announced again, and one that recovered
;; is said to work again).  Turning the mode off drops the connection
;; with what it held, and forgets the typing and the store's health;
;; answers still in the outbox are sent when the mode is on again.

(defclass hive-rpc-connection (jsonrpc-process-connection)
  ((prompts
    :initform (make-hash-table :test #'equal)
    :documentation "The pending prompts this hub sent, by prompt id.
Each record is the hub's JSON object as a plist.")
   (queue
    :initform nil
    :documentation "Ids of the prompts waiting to be asked, oldest first.")
   (queue-tail
    :initform nil
    :documentation "The last cons of the queue, or nil when not known.
It makes `hive-rpc--enqueue' constant time; setting the queue
forgets it.")
   (hub-notifies
    :initform nil
    :documentation "Non-nil when this hub raises desktop notifications itself."))
  :documentation "A JSON-RPC connection to the hive_rpc hub.
Its slots hold what the hub told Emacs over this connection.")

(cl-defmethod jsonrpc-connection-send :around ((connection hive-rpc-connection) &rest _)
  "Send on CONNECTION; a hub that died unseen is left to the sentinel.
A write into a hub that died before Emacs read its socket's end
fails (\"no longer connected to pipe\"), and Emacs marks the process
dead.  Its sentinel then fails the requests in flight with
`hive-rpc-error-hub-died', so an answer is kept for the next hub,
not lost in an error signalled at the human's key."
  (condition-case err
      (cl-call-next-method)
    (error
     (when (process-live-p (jsonrpc--process connection))
       (signal (car err) (cdr err))))))

(defvar hive-rpc--connection nil
  "The session's `hive-rpc-connection', or nil while the mode is off.
It stays after the hub went away, holding the prompts that hub
sent, until the next connection replaces it: whether it is live
is `hive-rpc--connected-p'.")

(defvar hive-rpc--state nil
  "Connection state: nil (off), `connecting', `connected' or `dead'.")

(defvar hive-rpc--outbox nil
  "Answers not yet acknowledged by the hub, oldest first.
Each is a plist (:id ID :answer ANSWER :action ACTION).")

(defvar hive-rpc--typed nil
  "Ids of prompts for which `hive/typing' has been sent.")

(defvar hive-rpc--deferred nil
  "Ids of prompts left after typing while the hub was away.
They are sent as `hive/defer' on the next connection, after the
typing kept in `hive-rpc--typed', so their countdown runs again.")

(defvar hive-rpc--announced nil
  "Ids of the prompts already announced in the echo area, newest first.")

(defvar hive-rpc--degraded nil
  "Why the hub's store is degraded, or nil while it works.
Set from the hub's status on connect and from `hive/health'.")

(defvar hive-rpc--shown nil
  "Ids of the prompts this Emacs told the hub it showed (`hive/shown').")

(defvar hive-rpc--ling-buffers nil
  "Names of the buffers registered as lings from this Emacs.
They are agents' terminals: no question opens by itself over them.")

(defun hive-rpc--prompts (&optional connection)
  "Return the table of pending questions of CONNECTION, by default the session's.
A hash table of the hub's prompt records by id; a new empty one
when there is no connection."
  (let ((conn (or connection hive-rpc--connection)))
    (if conn (oref conn prompts) (make-hash-table :test #'equal))))

(defun hive-rpc--queue ()
  "Return the ids of the questions waiting to be asked, oldest first.
They are the session's connection's.  Set them with `setf': a queue
without a connection is dropped."
  (and hive-rpc--connection (oref hive-rpc--connection queue)))

(defun hive-rpc--set-queue (ids)
  "Make IDS the queue of the session's connection, if any; return IDS."
  (when hive-rpc--connection
    (oset hive-rpc--connection queue ids)
    (oset hive-rpc--connection queue-tail nil))
  ids)

(defun hive-rpc--enqueue (id)
  "Put ID last in the queue of the session's connection, in constant time.
A new subscription sends every pending prompt at once, 100,000 of
them at most: appending each by copying the queue made that
quadratic, and Emacs froze for minutes."
  (when hive-rpc--connection
    (let ((cell (list id))
          (tail (oref hive-rpc--connection queue-tail)))
      (cond
       ((null (oref hive-rpc--connection queue))
        (oset hive-rpc--connection queue cell))
       (t
        (setcdr (or tail (last (oref hive-rpc--connection queue))) cell)))
      (oset hive-rpc--connection queue-tail cell)))
  id)

(gv-define-simple-setter hive-rpc--queue hive-rpc--set-queue)

(defun hive-rpc--hub-notifies ()
  "Return non-nil if the session's hub sends desktop notifications itself.
Such a hub notifies of urgent questions, so Emacs does not."
  (and hive-rpc--connection (oref hive-rpc--connection hub-notifies)))


;;; The hub's messages and the hooks
;;;

(cl-defgeneric hive-rpc-handle-notification (connection method params)
  "Handle notification METHOD with PARAMS from the hub on CONNECTION.
METHOD is a symbol such as `hive/prompt'."
  (:method (_connection _method _params) nil))

(defvar hive-rpc--dispatching nil
  "Non-nil while a notification from the hub is being handled.")

(defvar hive-rpc--later-functions nil
  "Functions to call once the notifications coming in now are handled.
Newest first; each at most once.  See `hive-rpc--later'.")

(defvar hive-rpc--later-timer nil
  "The timer that calls the functions in `hive-rpc--later-functions'.")

(defconst hive-rpc--later-delay 0.1
  "Seconds the work of `hive-rpc--later' waits for more notifications.
A new subscription's snapshot comes as one notification per pending
prompt; the mode line, the hooks and the announcement then run
about ten times a second, not once for each of thousands.")

(defun hive-rpc--dispatch (connection method params)
  "Dispatch notification METHOD with PARAMS received on CONNECTION."
  (let ((hive-rpc--dispatching t))
    (hive-rpc-handle-notification connection method params)))

(defun hive-rpc--later (function)
  "Call FUNCTION once the notifications coming in now are handled.
Outside a notification's handling, call it now.  Within one, it
runs after `hive-rpc--later-delay' seconds, once however many
notifications asked for it, so that a burst of them costs the
work of the whole state once, not once per notification."
  (if (not hive-rpc--dispatching)
      (funcall function)
    (unless (memq function hive-rpc--later-functions)
      (push function hive-rpc--later-functions))
    (unless (timerp hive-rpc--later-timer)
      (setq hive-rpc--later-timer
            (run-at-time hive-rpc--later-delay nil #'hive-rpc--run-later)))))

(defun hive-rpc--run-later ()
  "Call the functions that `hive-rpc--later' put off, oldest first."
  (let ((functions (reverse hive-rpc--later-functions)))
    (setq hive-rpc--later-functions nil
          hive-rpc--later-timer nil)
    (mapc #'funcall functions)))

(cl-defgeneric hive-rpc-handle-request (connection method params)
  "Answer request METHOD with PARAMS from the hub on CONNECTION.
METHOD is a symbol such as `hive/deliver'.  Return the result, or
signal `jsonrpc-error' to refuse.  A METHOD nobody handles is
refused with `hive-rpc-error-method-not-found'."
  (:method (_connection method _params)
           (jsonrpc-error :code hive-rpc-error-method-not-found :message (format "%s is not handled" method))))

(defun hive-rpc--request-dispatch (connection method params)
  "Dispatch request METHOD with PARAMS received on CONNECTION."
  (hive-rpc-handle-request connection method params))

(defvar hive-rpc-connected-functions nil
  "Functions called with the connection each time hive-rpc connects to the hub.
They run after the subscription was requested, on the first
connection and after every reconnection.")

(defvar hive-rpc-update-hook nil
  "Hook run after the pending prompts or the connection state changed.")

(defun hive-rpc--update ()
  "Refresh the mode line, and run `hive-rpc-update-hook'.
Within a notification's handling, once they are all in (`hive-rpc--later')."
  (hive-rpc--later #'hive-rpc--update-now))

(defun hive-rpc--update-now ()
  "Refresh the mode line, and run `hive-rpc-update-hook', now."
  (force-mode-line-update t)
  (run-hooks 'hive-rpc-update-hook))


;;; Helpers
;;;

(defconst hive-rpc--default-ignorable
  '((#x034F . #x034F) (#x115F . #x1160) (#x17B4 . #x17B5) (#x2065 . #x2065)
    (#x3164 . #x3164) (#xFFA0 . #xFFA0) (#xFFF0 . #xFFF8) (#xE0000 . #xE0000)
    (#xE0002 . #xE001F) (#xE0080 . #xE00FF) (#xE01F0 . #xE0FFF)
    (#x180B . #x180D) (#x180F . #x180F) (#xFE00 . #xFE0F) (#xE0100 . #xE01EF))
  "Ranges of Unicode's Default_Ignorable_Code_Point that are not format characters.
Other_Default_Ignorable_Code_Point and Variation_Selector, as
Unicode's PropList.txt has them (Emacs gives categories, not this
property): the grapheme joiner, the Hangul fillers, variation
selectors and the ranges Unicode keeps for more of them.")

(defun hive-rpc--hidden-p (char)
  "Return non-nil if CHAR is invisible to a person.
That is a format character (general category Cf: soft hyphen,
zero-width spaces and joiners, bidi controls, the byte-order
mark, tag characters) or another default-ignorable code point
\(`hive-rpc--default-ignorable'), the rule the hub applies too."
  (or (eq (get-char-code-property char 'general-category) 'Cf)
      (let ((ranges hive-rpc--default-ignorable))
        (while (and ranges (not (<= (caar ranges) char (cdar ranges))))
          (setq ranges (cdr ranges)))
        ranges)))

(defun hive-rpc--visible (s)
  "Return S without its invisible characters (`hive-rpc--hidden-p').
They make two strings that look the same differ, and tag
characters carry text a model reads and a person does not see.
The zero-width joiner goes too, so a joined emoji shows as its
parts."
  (if (string-match-p "\\`[[:ascii:]]*\\'" s)
      s
    (concat (delq nil (mapcar (lambda (c) (unless (hive-rpc--hidden-p c) c)) s)))))

(defun hive-rpc--clean (text)
  "Return TEXT, a string from the network, safe to display.
Line breaks and tabs become spaces; other control characters,
invisible characters (`hive-rpc--visible') and text properties
are removed."
  (let ((s (if (stringp text) (substring-no-properties text) (format "%s" text))))
    (setq s (replace-regexp-in-string "[\n\r\t\u2028\u2029]" " " s))
    (hive-rpc--visible (replace-regexp-in-string "[\0-\37\177\u0080-\u009f]" "" s))))

(defun hive-rpc--duration (seconds)
  "Format SECONDS as a short duration such as 4m12s."
  (let ((s (max 0 (floor seconds))))
    (cond ((>= s 86400) (format "%dd%dh" (/ s 86400) (/ (% s 86400) 3600)))
          ((>= s 3600) (format "%dh%dm" (/ s 3600) (/ (% s 3600) 60)))
          ((>= s 60) (format "%dm%02ds" (/ s 60) (% s 60)))
          (t (format "%ds" s)))))

(defun hive-rpc--key-name (key)
  "Return KEY, a keyword from a JSON object, as a string."
  (substring (symbol-name key) 1))

(defun hive-rpc--connected-p ()
  "Return non-nil if there is a live connection to the hub."
  (and hive-rpc--connection (eq hive-rpc--state 'connected)
       (jsonrpc-running-p hive-rpc--connection)))

(defun hive-rpc--agent-buffer-p (buffer)
  "Return non-nil if BUFFER is a terminal or an agent's buffer.
That is a vterm, eat, term or comint buffer (shell, the buffers of
claude-code.el...), or a buffer registered as a ling: keys typed
there go to a program, maybe an agent, as its input."
  (and (buffer-live-p buffer)
       (or (member (buffer-name buffer) hive-rpc--ling-buffers)
           (with-current-buffer buffer
             (derived-mode-p 'vterm-mode 'eat-mode 'term-mode 'comint-mode)))))

(defun hive-rpc--send-shown (id)
  "Tell the hub, once, that the question ID is before the human now.
The hub then knows that the question was seen, should it expire
\=(`hive/shown').  A hub without the method refuses it silently."
  (when (and (stringp id) (not (member id hive-rpc--shown)) (hive-rpc--connected-p))
    (push id hive-rpc--shown)
    (jsonrpc-async-request hive-rpc--connection 'hive/shown (list :id id)
                           :success-fn #'ignore :error-fn #'ignore :timeout-fn #'ignore)))

(defun hive-rpc--cancel-timer (symbol)
  "Cancel the timer held in variable SYMBOL, and set it to nil."
  (when (timerp (symbol-value symbol))
    (cancel-timer (symbol-value symbol)))
  (set symbol nil))

(provide 'hive-rpc-core)
;;; hive-rpc-core.el ends here
