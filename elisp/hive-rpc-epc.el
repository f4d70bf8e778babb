;;; hive-rpc-epc.el --- Ask humans from Emacs Lisp through hive-rpc's EPC face -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The hive_rpc authors

;; Author: The hive_rpc authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (epc "0.1.1"))
;; Keywords: tools, processes

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

;; A thin client of `hive-rpc epc' for people who already use epc.el, such as
;; agents written in Emacs Lisp.  `hive-rpc-epc-start' runs `hive-rpc epc'
;; (which reaches the hub, starting one when none answers), reads the port it
;; prints, and authenticates with the token from DATA_DIR/epc-token.  The other
;; functions return epc.el's deferred objects, so nothing blocks:
;;
;;   (deferred:$
;;     (hive-rpc-epc-ask "Deploy?" :choices '("yes" "no"))
;;     (deferred:nextc it
;;       (lambda (record) (message "asked %s" (plist-get record :id)))))
;;
;; Results are the hub's prompt records as plists (:id :status :answer ...).
;; Errors carry the hub's code, message and data, as on every other face:
;; `hive-rpc-epc-error' turns what an errorback (or `condition-case' around
;; `epc:call-sync') receives into the plist (:code :message :data), whose
;; :code is one of the Errors table of docs/protocol.md and :data's :kind
;; names the rule:
;;
;;   (deferred:$
;;     (hive-rpc-epc-poll "0123456789abcdef")
;;     (deferred:error it
;;       (lambda (err)
;;         (let ((refusal (hive-rpc-epc-error err)))
;;           (message "%s (%s)" (plist-get refusal :message)
;;                    (plist-get (plist-get refusal :data) :kind))))))
;;
;; To answer questions as a human, use hive-rpc.el instead.

;;; Code:

(require 'epc)
(require 'subr-x)

(defgroup hive-rpc-epc nil
  "Reach the hive-rpc hub through its EPC face."
  :group 'tools
  :prefix "hive-rpc-epc-")

(defcustom hive-rpc-epc-program "hive-rpc"
  "The hive-rpc command, run as PROGRAM epc."
  :type 'string)

(defcustom hive-rpc-epc-extra-args nil
  "More arguments for `hive-rpc epc', such as (\"--socket\" \"/path/hub.sock\")."
  :type '(repeat string))

(defcustom hive-rpc-epc-data-dir nil
  "The hub's data directory, where the EPC token is kept.
Nil means the hub's default: $HIVE_RPC_DATA_DIR, else $XDG_DATA_HOME/hive-rpc,
else ~/.local/share/hive-rpc."
  :type '(choice (const :tag "The hub's default" nil) directory))

(defcustom hive-rpc-epc-agent-id nil
  "The agent id questions are asked as; nil leaves it to the hub (anonymous)."
  :type '(choice (const :tag "None" nil) string))

(defvar hive-rpc-epc--manager nil
  "The epc.el manager of the running `hive-rpc epc', or nil.")

(defun hive-rpc-epc-data-dir ()
  "The data directory whose epc-token file authenticates the connection."
  (file-name-as-directory
   (or hive-rpc-epc-data-dir
       (let ((env (getenv "HIVE_RPC_DATA_DIR")))
         (and env (not (string-empty-p env)) env))
       (expand-file-name "hive-rpc"
                         (let ((xdg (getenv "XDG_DATA_HOME")))
                           (if (and xdg (not (string-empty-p xdg)))
                               xdg
                             (expand-file-name "~/.local/share")))))))

(defun hive-rpc-epc--token ()
  "The token in the data directory's epc-token file."
  (let ((file (expand-file-name "epc-token" (hive-rpc-epc-data-dir))))
    (with-temp-buffer
      (insert-file-contents file)
      (string-trim (buffer-string)))))

(defun hive-rpc-epc-start ()
  "Start `hive-rpc epc', authenticate, and return its epc.el manager.
Reuse the running one when it is alive."
  (interactive)
  (unless (and hive-rpc-epc--manager (epc:live-p hive-rpc-epc--manager))
    (let* ((dir hive-rpc-epc-data-dir)
           (args (append '("epc")
                         (and dir (list "--data-dir" (expand-file-name dir)))
                         hive-rpc-epc-extra-args))
           (manager (epc:start-epc hive-rpc-epc-program args)))
      (condition-case err
          (epc:call-sync manager 'auth (list (hive-rpc-epc--token)))
        (error (epc:stop-epc manager)
               (signal (car err) (cdr err))))
      (setq hive-rpc-epc--manager manager)))
  hive-rpc-epc--manager)

(defun hive-rpc-epc-stop ()
  "Stop the running `hive-rpc epc'; the hub and its questions stay."
  (interactive)
  (when hive-rpc-epc--manager
    (epc:stop-epc hive-rpc-epc--manager)
    (setq hive-rpc-epc--manager nil)))

(defun hive-rpc-epc-call (method params)
  "Call METHOD with the plist PARAMS; return a deferred object of the result."
  (epc:call-deferred (hive-rpc-epc-start) method params))

(defun hive-rpc-epc-error (err)
  "The hub's error in ERR as a plist (:code CODE :message MESSAGE :data DATA).
ERR is what an errorback of a `hive-rpc-epc-call' deferred receives, or
the data `condition-case' binds around `epc:call-sync'.  `hive-rpc epc'
sends every error as that plist; epc.el hands it on printed (with
`format' \"%S\"), so it is read back here, as data only.  Return nil when
ERR holds no such error (a lost connection, say)."
  (cond
   ((stringp err)
    (when (string-prefix-p "(:code " err)
      (let ((value (ignore-errors (car (read-from-string err)))))
        (and (consp value) (integerp (plist-get value :code)) value))))
   ((consp err)
    (or (hive-rpc-epc-error (car err)) (hive-rpc-epc-error (cdr err))))))

(defun hive-rpc-epc--as-agent (params)
  "PARAMS with :agent_id set from `hive-rpc-epc-agent-id' when that is set."
  (if (and hive-rpc-epc-agent-id (not (plist-member params :agent_id)))
      (append params (list :agent_id hive-rpc-epc-agent-id))
    params))

(defun hive-rpc-epc-ask (question &rest params)
  "Ask QUESTION; PARAMS is a plist such as :choices, :urgent, :timeout_s.
Return a deferred object of the pending prompt record."
  (hive-rpc-epc-call 'ask (hive-rpc-epc--as-agent (append (list :question question) params))))

(defun hive-rpc-epc-poll (id)
  "Return a deferred object of prompt ID's record as it is now."
  (hive-rpc-epc-call 'poll (hive-rpc-epc--as-agent (list :id id))))

(defun hive-rpc-epc-await (id timeout)
  "Return a deferred object of prompt ID's record once closed, or after TIMEOUT s."
  (hive-rpc-epc-call 'await (hive-rpc-epc--as-agent (list :id id :timeout_s timeout))))

(defun hive-rpc-epc-respond (id answer)
  "Answer prompt ID with ANSWER; return a deferred object of the record."
  (hive-rpc-epc-call 'respond (list :id id :answer answer)))

(defun hive-rpc-epc-cancel (id)
  "Withdraw prompt ID; return a deferred object of the record."
  (hive-rpc-epc-call 'cancel (hive-rpc-epc--as-agent (list :id id))))

(defun hive-rpc-epc-list (&optional limit cursor)
  "Return a deferred object of the pending prompt records.
With LIMIT or CURSOR, one page: a plist of `:prompts' (at most LIMIT
records, 1 to 1000) and `:next_cursor' (pass it as CURSOR for the next
page; nil after the last).  Without either, every record, which the hub
refuses past its 8 MiB reply limit."
  (hive-rpc-epc-call 'list (hive-rpc-epc--as-agent
                            (append (and limit (list :limit limit))
                                    (and cursor (list :cursor cursor))))))

(provide 'hive-rpc-epc)
;;; hive-rpc-epc.el ends here
