;;; hive-rpc-question.el --- A hive question in words, and its schema's checks  -*- lexical-binding: t; -*-

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

;; A question as the human reads it: its agent, its choices, its full
;; description (what `hive-rpc-details' shows), and what its JSON
;; schema asks of each field, as the minibuffer shows it (the field's
;; type, bounds, length and format, in words) and as Emacs checks it
;; before sending (numbers, bounds, lengths, in the hub's own words),
;; so that a wrong answer is asked again at once instead of after a
;; round trip to the hub.  Pure functions of the question and of the
;; text typed; hive-rpc-minibuffer.el does the asking.
;;
;; It requires only hive-rpc-core.el.  hive-rpc.el requires this file
;; (through hive-rpc-minibuffer.el); load hive-rpc.el, not this file
;; alone.

;;; Code:

(require 'seq)
(require 'subr-x)
(require 'hive-rpc-core)


;;; Schemas
;;;

(defun hive-rpc--enum (property)
  "Return the allowed values of schema PROPERTY, or nil.
The result is an alist of (DISPLAY . VALUE) in the schema's order,
DISPLAY being the value's name from enumNames, or the title of its
oneOf/anyOf entry, or the value itself, as text safe to show."
  (let* ((options (or (plist-get property :oneOf) (plist-get property :anyOf)))
         (values (or (append (plist-get property :enum) nil)
                     (mapcar (lambda (o) (plist-get o :const)) options)))
         (names (or (append (plist-get property :enumNames) nil)
                    (mapcar (lambda (o) (plist-get o :title)) options))))
    (let (result)
      (while values
        (let ((value (pop values))
              (name (pop names)))
          (when value
            (push (cons (hive-rpc--clean (format "%s" (or name value))) value) result))))
      (nreverse result))))

(defun hive-rpc--own-entry (property)
  "Return the title of PROPERTY's free-text entry, or nil if it has none.
That entry of an anyOf, {\"type\": \"string\"} beside the consts,
lets the human type an answer of their own (Claude Code's questions
offer one; see docs/claude-code.md)."
  (let ((own (seq-find (lambda (o) (and (not (plist-member o :const))
                                        (equal (plist-get o :type) "string")))
                       (plist-get property :anyOf))))
    (when own
      (hive-rpc--clean (or (plist-get own :title) "Other: type your own answer")))))

(defun hive-rpc--field-choices (property)
  "Return the choices of PROPERTY as an alist of (DISPLAY . VALUE).
They are `hive-rpc--enum''s, then the free-text entry, if any, whose
VALUE is the symbol `hive-rpc--own': picking it asks for the text."
  (let ((own (hive-rpc--own-entry property)))
    (append (hive-rpc--enum property)
            (and own (list (cons own 'hive-rpc--own))))))

(defun hive-rpc--enum-descriptions (property)
  "Return an alist of (DISPLAY . DESCRIPTION) of PROPERTY's described options.
DISPLAY is as in `hive-rpc--enum'; the descriptions, from the
oneOf/anyOf entries, annotate the completions."
  (let (result)
    (dolist (o (append (or (plist-get property :oneOf) (plist-get property :anyOf)) nil))
      (let ((value (plist-get o :const))
            (description (plist-get o :description)))
        (when (and value (stringp description) (not (string-empty-p description)))
          (push (cons (hive-rpc--clean (format "%s" (or (plist-get o :title) value)))
                      (hive-rpc--clean description))
                result))))
    (nreverse result)))

(defun hive-rpc--number-text (n)
  "Return the number N as a schema writes it."
  (if (and (floatp n) (= n (ffloor n)) (< (abs n) 1e15))
      (format "%d" (truncate n))
    (format "%s" n)))

(defun hive-rpc--bounds-text (low high unit)
  "Describe the bounds LOW and HIGH (numbers or nil) of a count of UNIT.
UNIT is nil or (SINGULAR . PLURAL): \"at least 1 choice\", \"at
least 2 choices\"."
  (let ((u (lambda (n)
             (cond ((null unit) "")
                   ((equal n 1) (concat " " (car unit)))
                   (t (concat " " (cdr unit)))))))
    (cond ((and low high) (format "%s to %s%s" (hive-rpc--number-text low)
                                  (hive-rpc--number-text high) (funcall u high)))
          (low (format "at least %s%s" (hive-rpc--number-text low) (funcall u low)))
          (high (format "at most %s%s" (hive-rpc--number-text high) (funcall u high))))))

(defconst hive-rpc--formats
  '(("email" . "an email address")
    ("uri" . "a URI such as https://...")
    ("date" . "a date: YYYY-MM-DD")
    ("date-time" . "a date and time: YYYY-MM-DDTHH:MM:SS"))
  "What each string format of a schema asks for, in words.")

(defun hive-rpc--constraints (property required)
  "Return the words describing schema PROPERTY's constraints, as a list.
REQUIRED nil adds \"optional\"."
  (let ((type (plist-get property :type))
        (number-p (member (plist-get property :type) '("integer" "number")))
        (words nil))
    (when (and number-p (not (hive-rpc--enum property)))
      (push type words))
    (when number-p
      (push (hive-rpc--bounds-text (plist-get property :minimum)
                                   (plist-get property :maximum) nil)
            words))
    (when (equal type "string")
      (push (hive-rpc--bounds-text (plist-get property :minLength)
                                   (plist-get property :maxLength)
                                   '("character" . "characters"))
            words)
      (push (cdr (assoc (plist-get property :format) hive-rpc--formats)) words))
    (when (equal type "array")
      (push "several, comma-separated" words)
      (push (hive-rpc--bounds-text (plist-get property :minItems)
                                   (plist-get property :maxItems) '("choice" . "choices"))
            words))
    (unless required (push "optional" words))
    (when-let ((description (plist-get property :description)))
      (push (hive-rpc--clean description) words))
    (delq nil (nreverse words))))

(defun hive-rpc--field-text (label property required)
  "Return the prompt's text naming field LABEL of PROPERTY and its constraints.
REQUIRED nil marks the field optional."
  (let ((words (hive-rpc--constraints property required)))
    (if words (format "%s: %s" label (string-join words ", ")) label)))

(defun hive-rpc--check-bounds (label n low high unit)
  "Return why N is outside LOW..HIGH for field LABEL (counting UNIT), or nil.
The words are the hub's own."
  (let ((suffix (if unit (concat " " unit) "")))
    (cond ((and (numberp low) (< n low))
           (format "'%s' must be at least %s%s" label (hive-rpc--number-text low) suffix))
          ((and (numberp high) (> n high))
           (format "'%s' must be at most %s%s" label (hive-rpc--number-text high) suffix)))))

(defun hive-rpc--parse-field (name property required text)
  "Parse TEXT, typed for field NAME described by PROPERTY.
REQUIRED non-nil means an empty answer is not accepted.  Return
\(ok . VALUE), VALUE being `skip' for an omitted field, or
\(retry . REASON)."
  (let ((type (plist-get property :type))
        (text (string-trim text)))
    (cond
     ((string-empty-p text)
      (if required
          (cons 'retry (format "'%s' is required" name))
        (cons 'ok 'skip)))
     ((member type '("integer" "number"))
      (let ((n (cond ((string-match-p "\\`[-+]?[0-9]+\\'" text) (string-to-number text))
                     ((and (equal type "number")
                           (string-match-p
                            "\\`[-+]?[0-9]*\\.?[0-9]+\\(?:[eE][-+]?[0-9]+\\)?\\'" text))
                      (string-to-number text)))))
        (if (not n)
            (cons 'retry (format "'%s' must be %s" name
                                 (if (equal type "integer") "an integer" "a number")))
          (let ((why (hive-rpc--check-bounds name n (plist-get property :minimum)
                                             (plist-get property :maximum) nil)))
            (if why (cons 'retry why) (cons 'ok n))))))
     (t
      (let ((why (hive-rpc--check-bounds name (length text)
                                         (plist-get property :minLength)
                                         (plist-get property :maxLength) "chars")))
        (if why (cons 'retry why) (cons 'ok text)))))))

;;; A question in words
;;;

(defun hive-rpc--agent (record)
  "Return the name of RECORD's agent, safe to display.
The hub's own questions (agent \"hive-rpc\", a name no agent may
ask under) are named as the hub's, so a question an agent wrote
cannot pass for one of them."""
  (let ((agent (plist-get record :agent_id)))
    (cond ((equal agent "hive-rpc") "the hub itself (hive-rpc)")
          ((stringp agent) (hive-rpc--clean agent))
          (t "an agent"))))

(defun hive-rpc--agent-label (record)
  "Return RECORD's agent followed by its origin (where the asker is), if known.
For example \"claude-code-3278e209 · ~/src/app\": a question names
its project or buffer, as a permission prompt does in its text."
  (let ((origin (plist-get record :origin)))
    (if (and (stringp origin) (not (string-empty-p (string-trim origin))))
        (format "%s · %s" (hive-rpc--agent record)
                (truncate-string-to-width (hive-rpc--clean origin) 60 nil nil "..."))
      (hive-rpc--agent record))))

(defun hive-rpc--choices-text (names)
  "Return NAMES, the choices in the agent's order, as shown in a prompt."
  (format " [%s]" (mapconcat #'identity names " / ")))

(defun hive-rpc--descriptions-text (descriptions)
  "Return DESCRIPTIONS, an alist of (CHOICE . DESCRIPTION), a line each."
  (mapconcat (lambda (d) (format "    - %s: %s\n" (car d) (cdr d))) descriptions ""))

(defun hive-rpc--value-text (value)
  "Return VALUE, one answer or one field's, in words."
  (cond ((stringp value) value)
        ((eq value t) "yes")
        ((eq value :json-false) "no")
        ((null value) "nothing")
        ((numberp value) (format "%s" value))
        ((vectorp value) (mapconcat #'hive-rpc--value-text value ", "))
        ((hash-table-p value)
         (let (parts)
           (maphash (lambda (k v) (push (format "%s: %s" k (hive-rpc--value-text v)) parts))
                    value)
           (string-join (nreverse parts) "; ")))
        (t (format "%s" value))))

(defun hive-rpc--field-titles (record)
  "Return an alist of RECORD's schema field names and their titles."
  (let ((properties (plist-get (plist-get record :schema) :properties))
        titles)
    (while properties
      (let ((title (plist-get (cadr properties) :title)))
        (when (stringp title)
          (push (cons (hive-rpc--key-name (car properties)) title) titles)))
      (setq properties (cddr properties)))
    titles))

(defun hive-rpc--answer-text (answer &optional record)
  "Return ANSWER as a short text in words for a message, never JSON.
A schema's answer is \"FIELD: VALUE; ...\", FIELD being the field's
title in RECORD's schema when it has one."
  (let ((titles (and record (hive-rpc--field-titles record))))
    (truncate-string-to-width
     (hive-rpc--clean
      (if (hash-table-p answer)
          (let (parts)
            (maphash (lambda (k v)
                       (push (format "%s: %s" (or (cdr (assoc k titles)) k)
                                     (hive-rpc--value-text v))
                             parts))
                     answer)
            (string-join (nreverse parts) "; "))
        (hive-rpc--value-text answer)))
     80 nil nil "...")))

(defconst hive-rpc--own-answer-title "Other: type your own answer"
  "Title of the free-text entry ending each field of Claude Code's questions.")

(defun hive-rpc--claude-question-p (record)
  "Return non-nil if RECORD asks Claude Code's own questions (AskUserQuestion).
The hook asks them as a permission prompt (only an approver answers
what an agent goes on with) whose schema has fields q1, q2...,
each ending with the human's own answer: a question to read as
one, not a tool to allow."
  (let ((properties (plist-get (plist-get record :schema) :properties))
        (index 1)
        (ok (equal (plist-get record :kind) "permission")))
    (unless properties (setq ok nil))
    (while (and ok properties)
      (let* ((field (cadr properties))
             (choices (append (or (plist-get (plist-get field :items) :anyOf)
                                  (plist-get field :anyOf))
                              nil))
             (last (car (last choices))))
        (unless (and (equal (hive-rpc--key-name (car properties)) (format "q%d" index))
                     (equal (plist-get last :title) hive-rpc--own-answer-title))
          (setq ok nil)))
      (setq index (1+ index)
            properties (cddr properties)))
    ok))

(defun hive-rpc--permission-p (record)
  "Return non-nil if RECORD is a permission prompt.
It decides what an agent may do (a Claude Code permission
request), so its kind is shown and its detail is one key away.
Claude Code's own questions come as permission prompts too, but
they are questions (`hive-rpc--claude-question-p'): not this."
  (and (equal (plist-get record :kind) "permission")
       (not (hive-rpc--claude-question-p record))))

(defun hive-rpc--indented (text)
  "Return TEXT, from the network, line by line, each cleaned and indented."
  (mapconcat (lambda (line) (concat "  " (hive-rpc--clean line)))
             (split-string (format "%s" text) "\n")
             "\n"))

(defun hive-rpc--edit-diff (detail)
  "Return Claude Code's Edit request in DETAIL as a unified diff, or nil.
DETAIL is the tool's input as JSON; an Edit's has `old_string' and
`new_string'.  Read as `diff -u' of the two, not as their JSON, so
the human sees what changes (a `diff' program runs on two private
temporary files).  Nil for any other detail, or when no diff runs."
  (when-let* (((stringp detail))
              (input (ignore-errors (json-parse-string detail :object-type 'plist)))
              ((consp input))
              (old (plist-get input :old_string))
              (new (plist-get input :new_string))
              ((and (stringp old) (stringp new)))
              (program (executable-find "diff")))
    (let ((file (let ((path (plist-get input :file_path)))
                  (if (stringp path) path "(no file_path)")))
          (before (make-temp-file "hive-rpc-before"))
          (after (make-temp-file "hive-rpc-after")))
      (unwind-protect
          (progn
            (let ((coding-system-for-write 'utf-8-unix))
              (write-region (concat old "\n") nil before nil 'silent)
              (write-region (concat new "\n") nil after nil 'silent))
            (with-temp-buffer
              (let ((coding-system-for-read 'utf-8-unix))
                (call-process program nil t nil "-u"
                              "--label" (concat file " (now)")
                              "--label" (concat file " (after the edit)")
                              before after))
              (concat (if (eq (plist-get input :replace_all) t)
                          "Edit (every occurrence):\n"
                        "Edit:\n")
                      (string-trim-right (buffer-string)))))
        (delete-file before)
        (delete-file after)))))

(defun hive-rpc--details-text (record)
  "Return the text describing RECORD in full, keys aside.
A prompt's detail (a permission's whole tool input) comes right
after its question, before the times and the choices."
  (let* ((now (float-time))
         (created (plist-get record :created_at))
         (deadline (plist-get record :deadline_at))
         (choices (append (plist-get record :choices) nil))
         (schema (plist-get record :schema))
         (detail (plist-get record :detail)))
    (concat
     (format "%s asks %s(question %s)%s:\n\n"
             (hive-rpc--agent record)
             (cond ((hive-rpc--permission-p record) "a permission ")
                   ((hive-rpc--claude-question-p record) "Claude Code's questions ")
                   (t ""))
             (hive-rpc--clean (plist-get record :id))
             (if (eq (plist-get record :urgent) t) ", urgently" ""))
     (hive-rpc--indented (plist-get record :question))
     "\n\n"
     (cond ((hive-rpc--edit-diff detail)
            (concat (hive-rpc--indented (hive-rpc--edit-diff detail)) "\n\n"))
           ((stringp detail)
            (concat "Detail:\n" (hive-rpc--indented detail) "\n\n"))
           (t ""))
     (if (numberp created)
         (format "Asked:    %s ago\n" (hive-rpc--duration (- now created)))
       "")
     (if (and (numberp deadline) (numberp (plist-get record :timeout_s)))
         (format "Expires:  in %s\n" (hive-rpc--duration (- deadline now)))
       "Expires:  no timeout\n")
     (if (stringp (plist-get record :origin))
         (format "Origin:   %s\n" (hive-rpc--clean (plist-get record :origin)))
       "")
     (if (stringp (plist-get record :task_id))
         (format "Task:     %s\n" (hive-rpc--clean (plist-get record :task_id)))
       "")
     (if choices
         (format "Choices:  %s\n" (mapconcat #'hive-rpc--clean choices " / "))
       "")
     (if schema
         (let ((required (mapcar (lambda (r) (format "%s" r)) (plist-get schema :required)))
               (properties (plist-get schema :properties))
               (lines nil))
           (while properties
             (let* ((name (hive-rpc--key-name (car properties)))
                    (property (cadr properties))
                    (enum (hive-rpc--enum (if (equal (plist-get property :type) "array")
                                              (plist-get property :items)
                                            property))))
               (push (format "  %s%s%s\n%s"
                             (hive-rpc--field-text
                              (hive-rpc--clean (or (plist-get property :title) name))
                              property (member name required))
                             (if (equal (plist-get property :type) "boolean") " (y or n)" "")
                             (if enum (hive-rpc--choices-text (mapcar #'car enum)) "")
                             (hive-rpc--descriptions-text
                              (hive-rpc--enum-descriptions
                               (if (equal (plist-get property :type) "array")
                                   (plist-get property :items)
                                 property))))
                     lines))
             (setq properties (cddr properties)))
           (concat "Fields, asked one after another:\n" (apply #'concat (nreverse lines))))
       ""))))

(provide 'hive-rpc-question)
;;; hive-rpc-question.el ends here
