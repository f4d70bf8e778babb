;;; hive-rpc-list.el --- The list of questions pending in the hive_rpc hub  -*- lexical-binding: t; -*-

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

;; `hive-rpc-list' shows the questions pending in the hub in a
;; `tabulated-list-mode' buffer (short id, agent, age, time left, the
;; question with its choices), updated live: RET answers, c withdraws,
;; w copies the full id, g refreshes from the hub.  Below them, the
;; questions that expired before anyone saw them: d clears one, D
;; clears them all.

;;; Code:

(require 'cl-lib)
(require 'hive-rpc)
(require 'tabulated-list)


;;; User options
;;;

(defcustom hive-rpc-list-refresh-interval 1
  "Seconds between refreshes of the times shown by `hive-rpc-list'."
  :type 'number
  :group 'hive-rpc)


;;; Private
;;;

(defvar hive-rpc--list-timer nil
  "Timer refreshing the `hive-rpc-list' buffer.")

(defvar hive-rpc-list-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'hive-rpc-list-answer)
    (define-key map "c" #'hive-rpc-list-cancel)
    (define-key map "w" #'hive-rpc-list-copy-id)
    (define-key map "d" #'hive-rpc-list-clear)
    (define-key map "D" #'hive-rpc-clear-unseen)
    map)
  "Keymap of `hive-rpc-list-mode'.")

(define-derived-mode hive-rpc-list-mode tabulated-list-mode "Hive"
  "Major mode listing the questions pending in the hub.
\\{hive-rpc-list-mode-map}"
  (setq tabulated-list-format
        [("Id" 8 nil) ("Agent" 16 t) ("Age" 7 nil) ("Left" 7 nil) ("Question" 0 nil)])
  (setq tabulated-list-padding 1)
  (add-hook 'tabulated-list-revert-hook #'hive-rpc--list-fetch nil t)
  (tabulated-list-init-header))

(defconst hive-rpc--list-id-length 8
  "Characters of a prompt's id shown in the list.
Enough to tell pending questions apart and to type at the CLI;
\\<hive-rpc-list-mode-map>\\[hive-rpc-list-copy-id] copies the full id.")

(defun hive-rpc--list-answers (record)
  "Return what RECORD accepts, in the CLI's words, or \"\".
Choices in the agent's order, \"  [yes / no]\"; a schema's fields,
\"  {env, replicas}\"."
  (let ((choices (plist-get record :choices))
        (properties (plist-get (plist-get record :schema) :properties)))
    (cond
     ((and choices (> (length choices) 0))
      (format "  [%s]" (mapconcat #'hive-rpc--clean choices " / ")))
     (properties
      (format "  {%s}" (mapconcat #'hive-rpc--clean
                                  (cl-loop for (key _) on properties by #'cddr
                                           collect (hive-rpc--key-name key))
                                  ", ")))
     (t ""))))

(defun hive-rpc--list-entries ()
  "Return the `tabulated-list-entries' of the pending questions."
  (let ((now (float-time)))
    (append
     (mapcar
      (lambda (id)
	(let ((r (gethash id (hive-rpc--prompts))))
          (list id
		(vector (let ((short (hive-rpc--clean id)))
                          (propertize (substring short 0 (min (length short)
                                                              hive-rpc--list-id-length))
                                      'help-echo short))
			(hive-rpc--agent r)
			(hive-rpc--duration (- now (plist-get r :created_at)))
			(hive-rpc--duration (- (plist-get r :deadline_at) now))
			(concat (if (eq (plist-get r :urgent) t) "!" "")
				(if (hive-rpc--permission-p r) "permission: " "")
				(hive-rpc--clean (plist-get r :question))
				(hive-rpc--list-answers r))))))
      (hive-rpc--pending-ids))
     (hive-rpc--list-unseen-entries now))))

(defun hive-rpc--list-unseen-entries (now)
  "Return the list's rows of the questions that expired unseen, as of NOW.
Their Left column reads \"expired\" and their question starts with
\"expired unseen: \", in the face `hive-rpc-urgent'."
  (let (records)
    (maphash (lambda (_id r) (push r records)) hive-rpc--unseen)
    (mapcar
     (lambda (r)
       (let ((id (plist-get r :id)))
         (list (cons 'unseen id)
               (vector (let ((short (hive-rpc--clean id)))
                         (substring short 0 (min (length short) hive-rpc--list-id-length)))
                       (hive-rpc--agent r)
                       (if (numberp (plist-get r :created_at))
                           (hive-rpc--duration (- now (plist-get r :created_at)))
                         "")
                       (propertize "expired" 'face 'hive-rpc-urgent)
                       (concat (propertize "expired unseen: " 'face 'hive-rpc-urgent)
                               (hive-rpc--clean (or (plist-get r :question) "")))))))
     (sort records (lambda (a b) (< (or (plist-get a :created_at) 0)
                                    (or (plist-get b :created_at) 0)))))))

(defun hive-rpc--list-refresh ()
  "Redisplay the list buffer from the known questions."
  (setq tabulated-list-entries (hive-rpc--list-entries))
  (tabulated-list-print t))

(defun hive-rpc--list-update ()
  "Refresh the list buffer, if there is one."
  (let ((buffer (get-buffer "*hive-rpc*")))
    (when (buffer-live-p buffer)
      (with-current-buffer buffer
        (when (derived-mode-p 'hive-rpc-list-mode)
          (hive-rpc--list-refresh))))))

(defun hive-rpc--list-tick ()
  "Refresh the list buffer's times, or stop when it is gone."
  (let ((buffer (get-buffer "*hive-rpc*")))
    (if (buffer-live-p buffer)
        (with-current-buffer buffer (hive-rpc--list-refresh))
      (hive-rpc--cancel-timer 'hive-rpc--list-timer))))

(defvar hive-rpc--list-page-size 1000
  "Records asked for in one `hive/list' page (the hub allows 1 to 1000).
The whole list in one reply may pass the hub's reply limit, so the
list is fetched page by page.")

(defun hive-rpc--list-fetch (&optional cursor fetched)
  "Fetch the pending questions from the hub, page by page, then refresh.
CURSOR is the page to ask for (nil: the first); FETCHED holds the
records of the pages before it, newest page first."
  (when (hive-rpc--connected-p)
    (jsonrpc-async-request
     hive-rpc--connection 'hive/list
     (append (list :limit hive-rpc--list-page-size) (and cursor (list :cursor cursor)))
     :success-fn
     (lambda (page)
       (let ((fetched (cons (plist-get page :prompts) fetched))
             (next (plist-get page :next_cursor)))
         (if next
             (hive-rpc--list-fetch next fetched)
           (clrhash (hive-rpc--prompts))
           (dolist (records (nreverse fetched))
             (mapc (lambda (r) (puthash (plist-get r :id) r (hive-rpc--prompts)))
                   records))
           (hive-rpc--update)))))))

;;;###autoload
(defun hive-rpc-list ()
  "List the questions pending in the hub.
\\<hive-rpc-list-mode-map>\\[hive-rpc-list-answer] answers, \
\\[hive-rpc-list-cancel] cancels, \\[hive-rpc-list-copy-id] copies the \
full id, \\[revert-buffer] refreshes,
\\[hive-rpc-list-clear] clears a question that expired unseen."
  (interactive)
  (hive-rpc--clear-news)
  (pop-to-buffer (hive-rpc--list-show t)))

(defun hive-rpc--list-show (&optional fetch)
  "Return the list buffer, made and up to date; with FETCH, ask the hub too.
It is not displayed: `hive-rpc-list' selects it, the side window
of `hive-rpc-queue-window' only shows it."
  (add-hook 'hive-rpc-update-hook #'hive-rpc--list-update)
  (with-current-buffer (get-buffer-create "*hive-rpc*")
    (unless (derived-mode-p 'hive-rpc-list-mode)
      (hive-rpc-list-mode))
    (hive-rpc--list-refresh)
    (when fetch (hive-rpc--list-fetch))
    (unless (timerp hive-rpc--list-timer)
      (setq hive-rpc--list-timer
            (run-at-time hive-rpc-list-refresh-interval
                         hive-rpc-list-refresh-interval #'hive-rpc--list-tick)))
    (current-buffer)))

(defun hive-rpc-list-answer ()
  "Answer the question at point, then each queued one.
As `hive-rpc-answer-next' does after its first question."
  (interactive)
  (let ((id (tabulated-list-get-id)))
    (unless id (user-error "No question here"))
    (when (consp id)
      (user-error "%s" (substitute-command-keys
                        "This question expired before anyone saw it; \
\\[hive-rpc-list-clear] clears it")))
    (hive-rpc--clear-news)
    (hive-rpc--chain id)))

(defun hive-rpc-list-clear ()
  "Clear the question at point, which expired before anyone saw it."
  (interactive)
  (let ((id (tabulated-list-get-id)))
    (unless (consp id) (user-error "No question that expired unseen here"))
    (remhash (cdr id) hive-rpc--unseen)
    (when (hive-rpc--connected-p)
      (jsonrpc-async-request hive-rpc--connection 'hive/clearUnseen (list :id (cdr id))
                             :success-fn #'ignore :error-fn #'ignore :timeout-fn #'ignore))
    (hive-rpc--update)))

(defun hive-rpc-list-copy-id ()
  "Copy the full id of the question at point to the kill ring."
  (interactive)
  (let ((id (tabulated-list-get-id)))
    (unless id (user-error "No question here"))
    (when (consp id) (setq id (cdr id)))
    (kill-new id)
    (message "%s" id)))

(defun hive-rpc-list-cancel ()
  "Withdraw the question at point, as a coordinator."
  (interactive)
  (let ((id (tabulated-list-get-id)))
    (unless (stringp id) (user-error "No pending question here"))
    (unless (hive-rpc--connected-p) (user-error "Not connected to the hub"))
    (when (y-or-n-p "Withdraw this question? ")
      (jsonrpc-async-request
       hive-rpc--connection 'hive/cancel
       `(:id ,id ,@(when hive-rpc-by (list :by hive-rpc-by)))
       :success-fn (lambda (_r) (message "hive-rpc: withdrawn"))
       :error-fn (lambda (err)
                   (message "hive-rpc: cancel refused: %s"
                            (hive-rpc--clean (plist-get err :message))))))))

(provide 'hive-rpc-list)
;;; hive-rpc-list.el ends here
