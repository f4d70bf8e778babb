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

;; The bottom of hive-rpc's files: the session's state (the
;; connection to the hub, its state, the pending prompts and the
;; queue), the connection's class with the generic functions that
;; handle the hub's messages and the hooks run on connecting and on
;; every change, the hub's error codes, and the helpers every other
;; file uses.  It requires no other file of hive-rpc, and every other
;; file requires it.  The files depend on each other one way, each on
;; files above it only:
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


;;; Session state
;;;

(defvar hive-rpc--connection nil
  "The live `hive-rpc-connection', or nil.")

(defvar hive-rpc--state nil
  "Connection state: nil (off), `connecting', `connected' or `dead'.")

(defvar hive-rpc--prompts (make-hash-table :test #'equal)
  "Pending prompt records known to Emacs, by prompt id.
Each record is the hub's JSON object as a plist.")

(defvar hive-rpc--queue nil
  "Ids of prompts waiting to be asked, oldest first.")

(defvar hive-rpc--typed nil
  "Ids of prompts for which `hive/typing' has been sent.")


;;; The connection and its hooks
;;;

(defclass hive-rpc-connection (jsonrpc-process-connection)
  ()
  :documentation "A JSON-RPC connection to the hive_rpc hub.")

(cl-defgeneric hive-rpc-handle-notification (connection method params)
  "Handle notification METHOD with PARAMS from the hub on CONNECTION.
METHOD is a symbol such as `hive/prompt'."
  (:method (_connection _method _params) nil))

(defun hive-rpc--dispatch (connection method params)
  "Dispatch notification METHOD with PARAMS received on CONNECTION."
  (hive-rpc-handle-notification connection method params))

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
  "Refresh the mode line, and run `hive-rpc-update-hook'."
  (force-mode-line-update t)
  (run-hooks 'hive-rpc-update-hook))


;;; Helpers
;;;

(defun hive-rpc--clean (text)
  "Return TEXT, a string from the network, safe to display.
Line breaks and tabs become spaces; other control characters,
bidi controls and text properties are removed."
  (let ((s (if (stringp text) (substring-no-properties text) (format "%s" text))))
    (setq s (replace-regexp-in-string "[\n\r\t\u2028\u2029]" " " s))
    (replace-regexp-in-string
     "[\0-\37\177\u0080-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]" "" s)))

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

(defun hive-rpc--cancel-timer (symbol)
  "Cancel the timer held in variable SYMBOL, and set it to nil."
  (when (timerp (symbol-value symbol))
    (cancel-timer (symbol-value symbol)))
  (set symbol nil))

(provide 'hive-rpc-core)
;;; hive-rpc-core.el ends here
