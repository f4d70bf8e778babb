;;; hive-rpc-minibuffer.el --- Asking hive_rpc questions in the minibuffer  -*- lexical-binding: t; -*-

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

;; The minibuffer side of `hive-rpc-mode': asking each queued question
;; when Emacs is idle, the countdown shown before the prompt, the
;; `hive/typing' notification sent on the first key, reading answers
;; (free text, choices, or the fields of a JSON schema), and
;; `hive-rpc-decline' in `hive-rpc-minibuffer-map'.
;;
;; hive-rpc.el requires this file; load hive-rpc.el, not this file alone.

;;; Code:

(require 'jsonrpc)
(require 'subr-x)

;; Defined in hive-rpc.el, which requires this file.
(defvar hive-rpc-auto-ask)
(defvar hive-rpc-idle-delay)
(defvar hive-rpc--connection)
(defvar hive-rpc--state)
(defvar hive-rpc--prompts)
(defvar hive-rpc--queue)
(defvar hive-rpc--typed)

(declare-function hive-rpc--cancel-timer "hive-rpc" (symbol))
(declare-function hive-rpc--clean "hive-rpc" (text))
(declare-function hive-rpc--connected-p "hive-rpc" ())
(declare-function hive-rpc--duration "hive-rpc" (seconds))
(declare-function hive-rpc--key-name "hive-rpc" (key))
(declare-function hive-rpc--respond "hive-rpc" (id answer &optional action))


;;; Keymaps
;;;

(defvar hive-rpc-minibuffer-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "M-d") #'hive-rpc-decline)
    map)
  "Keymap active in the minibuffer while a hive prompt is asked.
Its keys take precedence over the minibuffer's own map.")


;;; Internal state
;;;

(defvar hive-rpc--current nil
  "Id of the prompt being asked in the minibuffer, or nil.")

(defvar hive-rpc--exit-reason nil
  "Why the current hive prompt's minibuffer was aborted.
One of nil (the user quit: defer), `decline', or (dismiss . MESSAGE)
when the prompt was closed elsewhere.")

(defvar hive-rpc--countdown-timer nil
  "Timer updating the countdown of the current prompt.")

(defvar hive-rpc--countdown-overlay nil
  "Overlay showing the countdown in the current prompt's minibuffer.")

(defvar hive-rpc--idle-timer nil
  "Idle timer asking queued prompts.")


;;; Asking in the minibuffer
;;;

(defconst hive-rpc--minibuffer-exits
  '(exit-minibuffer minibuffer-complete-and-exit abort-recursive-edit
    abort-minibuffers keyboard-quit minibuffer-keyboard-quit
    keyboard-escape-quit y-or-n-p-insert-y y-or-n-p-insert-n hive-rpc-decline)
  "Commands that end a minibuffer read.
A hive prompt is read from a timer, so when it ends `this-command'
still names the key that ended it; that is no sign of a command
running.")

(defun hive-rpc--idle-p ()
  "Return non-nil if a hive prompt may take the minibuffer now."
  (not (or noninteractive
           hive-rpc--current
           (minibufferp)
           (active-minibuffer-window)
           executing-kbd-macro
           defining-kbd-macro
           (and this-command
                (not (memq this-command hive-rpc--minibuffer-exits))))))

(defun hive-rpc--schedule-ask ()
  "Ask the next queued prompt now if Emacs is idle, else when it is."
  (when (and hive-rpc-auto-ask hive-rpc--queue (not noninteractive))
    (if (hive-rpc--idle-p)
        (run-at-time 0 nil #'hive-rpc--ask-queued)
      (message "hive-rpc: %d question(s) waiting" (length hive-rpc--queue)))
    (unless (timerp hive-rpc--idle-timer)
      (setq hive-rpc--idle-timer
            (run-with-idle-timer hive-rpc-idle-delay t #'hive-rpc--ask-queued)))))

(defun hive-rpc--ask-queued ()
  "Ask the oldest queued prompt, if Emacs is idle."
  (cond
   ((null hive-rpc--queue) (hive-rpc--cancel-timer 'hive-rpc--idle-timer))
   ((and hive-rpc-auto-ask (hive-rpc--idle-p))
    (hive-rpc--ask (car hive-rpc--queue)))))

(defun hive-rpc--prompt-text (record &optional field)
  "Return the minibuffer prompt for RECORD, or for its schema FIELD."
  (format "[%s]%s %s%s: "
          (hive-rpc--clean (plist-get record :agent_id))
          (if (eq (plist-get record :urgent) t) "!" "")
          (hive-rpc--clean (plist-get record :question))
          (if field (format " %s" (hive-rpc--clean field)) "")))

(defun hive-rpc--countdown-text (record)
  "Return the countdown shown for RECORD."
  (cond ((not (eq hive-rpc--state 'connected)) "(hub down) ")
        ((member (plist-get record :id) hive-rpc--typed) "")
        ((not (numberp (plist-get record :timeout_s))) "")
        (t (format "(%s) " (hive-rpc--duration
                            (- (plist-get record :deadline_at) (float-time)))))))

(defun hive-rpc--show-countdown ()
  "Update the countdown of the prompt being asked."
  (let ((record (and hive-rpc--current
                     (gethash hive-rpc--current hive-rpc--prompts))))
    (when (and record (overlayp hive-rpc--countdown-overlay)
               (overlay-buffer hive-rpc--countdown-overlay))
      (overlay-put hive-rpc--countdown-overlay 'before-string
                   (propertize (hive-rpc--countdown-text record)
                               'face 'minibuffer-prompt)))))

(defun hive-rpc--minibuffer-setup (record)
  "Prepare the minibuffer to ask RECORD: keys, countdown, typing."
  (use-local-map (make-composed-keymap hive-rpc-minibuffer-map (current-local-map)))
  (setq hive-rpc--countdown-overlay (make-overlay (point-min) (point-min)))
  (hive-rpc--show-countdown)
  (hive-rpc--cancel-timer 'hive-rpc--countdown-timer)
  (unless (or (member (plist-get record :id) hive-rpc--typed)
              (not (numberp (plist-get record :timeout_s))))
    (setq hive-rpc--countdown-timer
          (run-at-time 1 1 #'hive-rpc--show-countdown)))
  (add-hook 'pre-command-hook #'hive-rpc--first-key nil t))

(defun hive-rpc--first-key ()
  "Send `hive/typing' on the first key typed in a hive prompt."
  (unless (memq this-command '(hive-rpc-decline abort-recursive-edit
                               minibuffer-keyboard-quit keyboard-quit
                               abort-minibuffers keyboard-escape-quit))
    (remove-hook 'pre-command-hook #'hive-rpc--first-key t)
    (when hive-rpc--current
      (hive-rpc--typing hive-rpc--current))))

(defun hive-rpc--typing (id)
  "Tell the hub that the human started typing the answer to prompt ID.
This stops the prompt's countdown."
  (unless (member id hive-rpc--typed)
    (push id hive-rpc--typed)
    (hive-rpc--cancel-timer 'hive-rpc--countdown-timer)
    (hive-rpc--show-countdown)
    (when (hive-rpc--connected-p)
      (jsonrpc-notify hive-rpc--connection 'hive/typing (list :id id)))))

(defun hive-rpc--read (record prompt reader)
  "Call READER with PROMPT in a minibuffer set up for RECORD.
Quit instead if RECORD was closed meanwhile (between two schema
fields, say)."
  (unless (gethash (plist-get record :id) hive-rpc--prompts)
    (setq hive-rpc--exit-reason (cons 'dismiss "hive-rpc: that question was closed"))
    (signal 'quit nil))
  (minibuffer-with-setup-hook
      (lambda () (hive-rpc--minibuffer-setup record))
    (funcall reader prompt)))

(defun hive-rpc--enum (property)
  "Return the allowed values of schema PROPERTY, or nil.
The result is an alist of (DISPLAY . VALUE), DISPLAY being VALUE
as text safe to show."
  (let ((items (or (append (plist-get property :enum) nil)
                   (mapcar (lambda (o) (plist-get o :const))
                           (or (plist-get property :oneOf)
                               (plist-get property :anyOf))))))
    (delq nil (mapcar (lambda (v)
                        (and v (cons (hive-rpc--clean (format "%s" v)) v)))
                      items))))

(defun hive-rpc--read-number (record prompt label type required)
  "Read a number for RECORD with PROMPT; LABEL names the field.
TYPE is \"integer\" or \"number\".  REQUIRED nil allows an empty
answer, which gives the symbol `skip'."
  (let (value)
    (while (not value)
      (let ((text (string-trim (hive-rpc--read record prompt #'read-string))))
        (cond ((and (string-empty-p text) (not required))
               (setq value 'skip))
              ((string-match-p "\\`[-+]?[0-9]+\\'" text)
               (setq value (string-to-number text)))
              ((and (equal type "number")
                    (string-match-p
                     "\\`[-+]?[0-9]*\\.?[0-9]+\\(?:[eE][-+]?[0-9]+\\)?\\'" text))
               (setq value (string-to-number text)))
              (t (message "hive-rpc: %s wants %s" label
                          (if (equal type "integer") "an integer" "a number"))
                 (sit-for 1)))))
    value))

(defun hive-rpc--read-field (record name property required)
  "Read schema field NAME of RECORD described by PROPERTY.
REQUIRED non-nil means an empty answer is not accepted.  Return
the value, or the symbol `skip' for an omitted optional field."
  (let* ((type (plist-get property :type))
         (label (hive-rpc--clean (or (plist-get property :title) name)))
         (prompt (hive-rpc--prompt-text record (format "(%s)" label)))
         (choices (hive-rpc--enum property)))
    (cond
     ((equal type "boolean")
      (if (hive-rpc--read record prompt #'y-or-n-p) t :json-false))
     ((equal type "array")
      (let* ((items (hive-rpc--enum (plist-get property :items)))
             (picked (hive-rpc--read
                      record prompt
                      (lambda (p) (completing-read-multiple p items nil t)))))
        (if (and (null picked) (not required))
            'skip
          (vconcat (mapcar (lambda (d) (cdr (assoc d items))) picked)))))
     (choices
      (let (value)
        (while (not value)
          (let ((text (hive-rpc--read record prompt
                                      (lambda (p) (completing-read p choices nil t)))))
            (setq value (if (and (string-empty-p text) (not required))
                            'skip
                          (cdr (assoc text choices))))))
        value))
     ((member type '("integer" "number"))
      (hive-rpc--read-number record prompt label type required))
     (t
      (let ((text (hive-rpc--read record prompt #'read-string)))
        (if (and (string-empty-p text) (not required)) 'skip text))))))

(defun hive-rpc--read-answer (record)
  "Read an answer to RECORD in the minibuffer and return it."
  (let ((choices (append (plist-get record :choices) nil))
        (schema (plist-get record :schema))
        (prompt (hive-rpc--prompt-text record)))
    (cond
     (choices
      (let* ((table (mapcar (lambda (c) (cons (hive-rpc--clean c) c)) choices))
             (picked (hive-rpc--read record prompt
                                     (lambda (p) (completing-read p table nil t)))))
        (or (cdr (assoc picked table)) picked)))
     (schema
      (let ((answer (make-hash-table :test #'equal))
            (required (mapcar (lambda (r) (format "%s" r))
                              (plist-get schema :required)))
            (properties (plist-get schema :properties)))
        (while properties
          (let* ((name (hive-rpc--key-name (car properties)))
                 (value (hive-rpc--read-field record name (cadr properties)
                                              (member name required))))
            (unless (eq value 'skip)
              (puthash name value answer)))
          (setq properties (cddr properties)))
        answer))
     (t (hive-rpc--read record prompt #'read-string)))))

(defun hive-rpc--ask (id)
  "Ask prompt ID in the minibuffer and send the answer.
\\<hive-rpc-minibuffer-map>\\[hive-rpc-decline] declines; \\[keyboard-quit] \
defers."
  (let ((record (gethash id hive-rpc--prompts)))
    (setq hive-rpc--queue (delete id hive-rpc--queue))
    (unless hive-rpc--queue (hive-rpc--cancel-timer 'hive-rpc--idle-timer))
    (when record
      (let ((hive-rpc--current id)
            (hive-rpc--exit-reason nil))
        (unwind-protect
            (condition-case err
                (hive-rpc--respond id (hive-rpc--read-answer record))
              (quit
               (pcase hive-rpc--exit-reason
                 ('decline
                  (hive-rpc--respond id nil "decline")
                  (message "hive-rpc: declined"))
                 (`(dismiss . ,text) (message "%s" text))
                 (_ (message "%s" (substitute-command-keys
                                   "hive-rpc: deferred; \\[hive-rpc-answer-next] \
answers it later")))))
              (error
               (message "hive-rpc: could not ask %s: %s" (hive-rpc--clean id)
                        (error-message-string err))))
          (hive-rpc--cancel-timer 'hive-rpc--countdown-timer)
          (setq hive-rpc--countdown-overlay nil)))
      (hive-rpc--schedule-ask))))

(defun hive-rpc--hive-minibuffer-p ()
  "Return non-nil if the innermost active minibuffer asks a hive prompt."
  (and hive-rpc--current
       (overlayp hive-rpc--countdown-overlay)
       (active-minibuffer-window)
       (eq (overlay-buffer hive-rpc--countdown-overlay)
           (window-buffer (active-minibuffer-window)))))

(defun hive-rpc--abort-current (id status by)
  "Abort the minibuffer asking ID, closed with STATUS by BY."
  (when (and (equal id hive-rpc--current) (hive-rpc--hive-minibuffer-p))
    (setq hive-rpc--exit-reason
          (cons 'dismiss
                (format "hive-rpc: that question was %s%s"
                        (if (equal status "responded") "answered" status)
                        (if (stringp by) (format " by %s" (hive-rpc--clean by)) ""))))
    (abort-recursive-edit)))

(defun hive-rpc-decline ()
  "Decline the hive prompt in the minibuffer: tell the agent no answer comes."
  (interactive)
  (if (not (hive-rpc--hive-minibuffer-p))
      (user-error "Not in a hive prompt")
    (setq hive-rpc--exit-reason 'decline)
    (abort-recursive-edit)))

(provide 'hive-rpc-minibuffer)
;;; hive-rpc-minibuffer.el ends here
