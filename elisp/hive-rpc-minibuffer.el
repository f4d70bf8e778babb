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

;; The minibuffer side of `hive-rpc-mode': when a queued question may
;; take the minibuffer, reading its answer (free text, choices, or the
;; fields of a JSON schema), the countdown shown before the prompt,
;; the `hive/typing' notification sent on the first key, the
;; `hive/defer' sent when a question typed into is left unanswered
;; (its countdown then starts again), and the keys of
;; `hive-rpc-minibuffer-map'.
;;
;; The rule: an answer is only what you typed knowing that it answers
;; a question.  So a question opens when you ask for it
;; (`hive-rpc-answer-next', RET in the list buffer); the next queued
;; one then opens at once, in the chain you started, and RET does
;; nothing in its first `hive-rpc-open-grace' seconds (its prompt
;; starts with "(opening)"), so a RET typed ahead for the question
;; before never answers one you have not read.  With
;; `hive-rpc-auto-ask' on (an opt-in, in hive-rpc.el), a question also
;; opens by itself after a pause, and the keys you press in its
;; opening moment close it and go back to your buffer, except RET,
;; which does nothing.
;;
;; The minibuffer keeps Emacs's own editing keys.  The hive keys are
;; on C-c: C-c C-k declines, C-c C-d shows the question's details;
;; C-g defers it and every question queued behind it.  Where the
;; answer is one of the choices, ? with nothing typed shows the
;; details too (`hive-rpc-choice-map'): there ? is the completion
;; help, which the details include, never text of a free answer.  A
;; permission prompt (a Claude Code tool use) says so in its prompt,
;; and its details hold the tool's whole input, the prompt's detail.
;;
;; This file is the UI only: `hive-rpc-minibuffer-read' asks one
;; question and returns what the human did.  hive-rpc.el drives it:
;; which question, when (the pause rule above is kept there), and
;; what becomes of the answer.  This file requires hive-rpc-core.el
;; and hive-rpc-question.el, never hive-rpc.el.
;;
;; hive-rpc.el requires this file; load hive-rpc.el, not this file alone.

;;; Code:

(require 'jsonrpc)
(require 'seq)
(require 'subr-x)
(require 'hive-rpc-core)
(require 'hive-rpc-question)


;;; User options
;;;

(defcustom hive-rpc-idle-delay-after-typing 10
  "Seconds of idleness before a question opens when your last key typed text.
A pause while you write is often a pause to think, not a sign
that you are free: after a key that inserts or deletes text (a
printing character, RET, TAB or DEL), a question opens by itself
only after this many seconds without a key.  After any other
command `hive-rpc-idle-delay' applies.  The larger of the two
always applies."
  :type 'number
  :group 'hive-rpc)

(defcustom hive-rpc-open-grace 1
  "Seconds after a question opened during which RET does not answer it.
This applies to a question that opened without a key of yours for
it: the next one of a chain you started (after you answered the
one before), or one that opened by itself (`hive-rpc-auto-ask').
Meanwhile the prompt starts with \"(opening)\" and RET does
nothing but say so.  In a question that opened by itself, any
other key was meant for the buffer you were in: it closes the
question's minibuffer and goes to that buffer.  In a chain, other
keys type the answer.  The first question you open yourself, with
`hive-rpc-answer-next' or from the list buffer, takes keys at
once.  This many seconds after the last question of a chain
closes, keys typed ahead for questions are dropped, not given to
your buffer.  0 turns all this off."
  :type 'number
  :group 'hive-rpc)

(defcustom hive-rpc-key-hint t
  "Non-nil means a hive prompt ends with a hint of its keys.
The hint names the keys of `hive-rpc-minibuffer-map' that decline
the question and show its details."
  :type 'boolean
  :group 'hive-rpc)


;;; Keymaps
;;;

(defvar hive-rpc-minibuffer-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-k") #'hive-rpc-decline)
    (define-key map (kbd "C-c C-d") #'hive-rpc-details)
    map)
  "Keymap active in the minibuffer while a hive prompt is asked.
Its keys take precedence over the minibuffer's own map.  They are
all after the mode-specific prefix, so that every editing key of
the minibuffer (`kill-word', `backward-kill-word', `kill-line',
`kill-region', `yank', `yank-pop', completion...) keeps its key.")

(defvar hive-rpc-choice-map
  (let ((map (make-sparse-keymap)))
    (define-key map "?" #'hive-rpc-choice-help)
    map)
  "Keymap added to `hive-rpc-minibuffer-map' while a choice is read.
Only there: ? in a free-text answer is text.  In a choice's
minibuffer ? is already `minibuffer-completion-help', not text, and
`hive-rpc-choice-help' still gives it once something is typed.")

(defvar hive-rpc--chain-grace-map
  (let ((map (make-sparse-keymap)))
    (dolist (key (list (kbd "RET") (kbd "C-j") [return] [kp-enter]))
      (define-key map key #'hive-rpc--grace-ret))
    map)
  "Keymap of the opening moment of a question you did not open with a key.
RET does nothing then.  See `hive-rpc-open-grace'.")

(defvar hive-rpc--grace-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map hive-rpc--chain-grace-map)
    (define-key map [t] #'hive-rpc--give-back)
    (define-key map (kbd "C-g") #'abort-recursive-edit)
    map)
  "Keymap catching every key in the first moments of a question opened by itself.
RET does nothing; \\[keyboard-quit] defers it as always; any other
key goes back to the buffer.  See `hive-rpc-open-grace'.")

(defvar hive-rpc--still-map
  (let ((map (make-sparse-keymap)))
    (define-key map [t] #'hive-rpc--grace-ret)
    map)
  "Keymap of the opening moment of a yes-or-no field: every key does nothing.
There y and n answer as RET does elsewhere.")


;;; Internal state
;;;

(defvar hive-rpc--current nil
  "Id of the prompt being asked in the minibuffer, or nil.")

(defvar hive-rpc--exit-reason nil
  "Why the current hive prompt's minibuffer was aborted.
One of nil (the user quit: defer), `decline', `give-back' (a key
came in the opening moment), or (dismiss . MESSAGE) when the
prompt was closed elsewhere.")

(defvar hive-rpc--given-back nil
  "The keys that closed a question in its opening moment.")

(defvar hive-rpc--opening nil
  "How the question about to open came, until its first minibuffer is set up.
nil: you opened it with a key; `chain': it follows the one you just
answered; `auto': it opened by itself (`hive-rpc-auto-ask').  The
last two have an opening moment (`hive-rpc-open-grace').")

(defvar hive-rpc--boolean nil
  "Non-nil while a yes-or-no field is read: y and n answer at once.")

(defvar hive-rpc--grace-timer nil
  "Timer ending the opening moment of the current prompt.")

(defvar hive-rpc--grace-exit nil
  "Function removing `hive-rpc--grace-map', or nil.")

(defvar hive-rpc--countdown-timer nil
  "Timer updating the countdown of the current prompt.")

(defvar hive-rpc--countdown-overlay nil
  "Overlay showing the countdown in the current prompt's minibuffer.")

(defvar hive-rpc--choosing nil
  "Non-nil while the answer being read is one of the prompt's choices.
Let-bound by `hive-rpc--read-choice', so that the minibuffer it opens
gets `hive-rpc-choice-map'.")

(defvar hive-rpc--closed-at nil
  "When the last hive prompt closed, as a `float-time'.")

(defvar hive-rpc--drafts (make-hash-table :test #'equal)
  "Text typed for each question, kept across \\[keyboard-quit].
Keys are (ID . FIELD), FIELD being a schema field's name or nil.")

(defvar hive-rpc--histories (make-hash-table :test #'equal)
  "Minibuffer history of each question, by (ID . FIELD).
No history is shared between questions, so \\`M-p' never offers
the answer to another question.")

(defvar hive-rpc--history nil
  "The minibuffer history of the answer being read.")

(defvar hive-rpc--draft-key nil
  "The (ID . FIELD) whose answer is being read, or nil.")

(defvar hive-rpc--refusals (make-hash-table :test #'equal)
  "Why the hub refused the last answer to each question, by id.")

(defconst hive-rpc--details-buffer "*hive-rpc question*"
  "Name of the buffer where \\[hive-rpc-details] shows a question.")


;;; Minibuffer exits
;;;

(defconst hive-rpc--minibuffer-exits
  '(exit-minibuffer minibuffer-complete-and-exit abort-recursive-edit
    abort-minibuffers keyboard-quit minibuffer-keyboard-quit
    keyboard-escape-quit y-or-n-p-insert-y y-or-n-p-insert-n hive-rpc-decline
    hive-rpc--give-back)
  "Commands that end a minibuffer read.
A hive prompt is read from a timer, so when it ends `this-command'
still names the key that ended it; that is no sign of a command
running.")

;;; Prompts
;;;

(defun hive-rpc--key-hint (&optional choices)
  "Return the hint naming the keys of a hive prompt, or \"\".
CHOICES non-nil: the answer is a choice, whose details are on ?."
  (cond ((not hive-rpc-key-hint) "")
        (choices
         (substitute-command-keys
          " (\\<hive-rpc-minibuffer-map>\\[hive-rpc-decline]: decline, \
\\<hive-rpc-choice-map>\\[hive-rpc-choice-help]: details)"))
        (t
         (substitute-command-keys
          " (\\<hive-rpc-minibuffer-map>\\[hive-rpc-decline]: decline, \
\\[hive-rpc-details]: details)"))))

(defun hive-rpc--prompt-text (record &optional field choices reason)
  "Return the minibuffer prompt for RECORD.
FIELD is the text naming a schema field and its constraints, or
nil; CHOICES the names of the choices, shown in order; REASON why
the last answer was refused, shown on a line of its own above."
  (concat
   (when reason
     (concat (propertize (format "refused: %s" (hive-rpc--clean reason)) 'face 'error)
             "\n"))
   (format "[%s]%s %s%s" (hive-rpc--agent-label record)
           (if (eq (plist-get record :urgent) t) "!" "")
           (if (hive-rpc--permission-p record) "permission: " "")
           (hive-rpc--clean (plist-get record :question)))
   (if field (format " (%s)" field) "")
   (if choices (hive-rpc--choices-text choices) "")
   (hive-rpc--key-hint choices)
   ": "))

(defun hive-rpc--countdown-text (record)
  "Return the countdown shown for RECORD."
  (cond (hive-rpc--grace-exit "(opening) ")
        ((not (eq hive-rpc--state 'connected)) "(hub down) ")
        ((member (plist-get record :id) hive-rpc--typed) "")
        ((plist-get record :typing_at) "")   ; typed into elsewhere
        ((not (numberp (plist-get record :timeout_s))) "")
        (t (format "(%s) " (hive-rpc--duration
                            (- (plist-get record :deadline_at) (float-time)))))))

(defun hive-rpc--restart-countdown ()
  "Redraw the open question's countdown, and tick it again if it is on.
After a reconnection: while the hub was away it read \"(hub down)\"
and its timer was stopped."
  (let ((record (and hive-rpc--current
                     (gethash hive-rpc--current (hive-rpc--prompts)))))
    (when (and record (hive-rpc--hive-minibuffer-p))
      (hive-rpc--show-countdown)
      (hive-rpc--cancel-timer 'hive-rpc--countdown-timer)
      (unless (or (member (plist-get record :id) hive-rpc--typed)
                  (plist-get record :typing_at)
                  (not (numberp (plist-get record :timeout_s))))
        (setq hive-rpc--countdown-timer
              (run-at-time 1 1 #'hive-rpc--show-countdown))))))

(defun hive-rpc--show-countdown ()
  "Update the countdown of the prompt being asked."
  (let ((record (and hive-rpc--current
                     (gethash hive-rpc--current (hive-rpc--prompts)))))
    (when (and record (overlayp hive-rpc--countdown-overlay)
               (overlay-buffer hive-rpc--countdown-overlay))
      (overlay-put hive-rpc--countdown-overlay 'before-string
                   (propertize (hive-rpc--countdown-text record)
                               'face 'minibuffer-prompt)))))


;;; The minibuffer of a question
;;;

(defun hive-rpc--minibuffer-setup (record)
  "Prepare the minibuffer to ask RECORD: keys, countdown, typing, draft."
  (use-local-map (make-composed-keymap
                  (if hive-rpc--choosing
                      (list hive-rpc-choice-map hive-rpc-minibuffer-map)
                    hive-rpc-minibuffer-map)
                  (current-local-map)))
  (if (not hive-rpc--opening)
      (unless hive-rpc--grace-exit (hive-rpc--send-shown (plist-get record :id)))
    (let ((how hive-rpc--opening))
      (setq hive-rpc--opening nil)
      (unless (hive-rpc--start-grace how)
        (hive-rpc--send-shown (plist-get record :id)))))
  (setq hive-rpc--countdown-overlay (make-overlay (point-min) (point-min)))
  (hive-rpc--show-countdown)
  (hive-rpc--cancel-timer 'hive-rpc--countdown-timer)
  (unless (or (member (plist-get record :id) hive-rpc--typed)
              (plist-get record :typing_at)
              (not (numberp (plist-get record :timeout_s))))
    (setq hive-rpc--countdown-timer
          (run-at-time 1 1 #'hive-rpc--show-countdown)))
  (add-hook 'pre-command-hook #'hive-rpc--first-key nil t)
  (add-hook 'post-command-hook #'hive-rpc--save-draft nil t))

(defun hive-rpc--start-grace (how)
  "Begin the opening moment of a question that came HOW; return non-nil if begun.
HOW is `chain' or `auto': see `hive-rpc--opening' and
`hive-rpc-open-grace'."
  (when (and (numberp hive-rpc-open-grace) (> hive-rpc-open-grace 0))
    (hive-rpc--end-grace)
    (setq hive-rpc--grace-timer
          (run-at-time hive-rpc-open-grace nil #'hive-rpc--grace-over))
    ;; The map stays until the moment ends (or a key goes back).
    (setq hive-rpc--grace-exit
          (set-transient-map (cond (hive-rpc--boolean hive-rpc--still-map)
                                   ((eq how 'auto) hive-rpc--grace-map)
                                   (t hive-rpc--chain-grace-map))
                             (lambda () (timerp hive-rpc--grace-timer))))
    t))

(defun hive-rpc--grace-ret ()
  "Do nothing but say why: the question has just opened.
Bound to RET in the opening moment (`hive-rpc-open-grace')."
  (interactive)
  (let ((message-log-max nil))
    (minibuffer-message "(read the question first: RET answers in a moment)")))

(defun hive-rpc--end-grace ()
  "End the opening moment of the current question, if any."
  (hive-rpc--cancel-timer 'hive-rpc--grace-timer)
  (when (functionp hive-rpc--grace-exit)
    (let ((exit hive-rpc--grace-exit))
      (setq hive-rpc--grace-exit nil)
      (funcall exit))))

(defun hive-rpc--grace-over ()
  "End the opening moment: from now on keys answer the question."
  (setq hive-rpc--grace-timer nil)
  (hive-rpc--end-grace)
  (when (hive-rpc--hive-minibuffer-p)
    (hive-rpc--send-shown hive-rpc--current))
  (hive-rpc--show-countdown))

(defun hive-rpc--give-back ()
  "Close a question in its opening moment, giving its key to the buffer.
Bound to every key in `hive-rpc--grace-map'."
  (interactive)
  (let ((keys (this-command-keys-vector)))
    (setq hive-rpc--grace-exit nil)
    (hive-rpc--cancel-timer 'hive-rpc--grace-timer)
    (if (hive-rpc--hive-minibuffer-p)
        (progn
          (setq hive-rpc--given-back keys
                hive-rpc--exit-reason 'give-back)
          (abort-recursive-edit))
      ;; No question is open (it closed meanwhile): the key still
      ;; belongs to the human.
      (hive-rpc--unread keys))))

(defun hive-rpc--unread (keys)
  "Put KEYS back in front of the keyboard's input, as typed."
  (setq unread-command-events
        (append (mapcar (lambda (event) (cons t event)) keys)
                unread-command-events)))

(defun hive-rpc--first-key ()
  "Send `hive/typing' on the first key typed in a hive prompt."
  (unless (memq this-command '(hive-rpc-decline hive-rpc-details hive-rpc-choice-help
                               hive-rpc--give-back hive-rpc--grace-ret
                               abort-recursive-edit minibuffer-keyboard-quit
                               keyboard-quit abort-minibuffers keyboard-escape-quit))
    (remove-hook 'pre-command-hook #'hive-rpc--first-key t)
    (when hive-rpc--current
      (hive-rpc--typing hive-rpc--current))))

(defun hive-rpc--save-draft ()
  "Keep the text of the answer being typed, to offer it again after \\[keyboard-quit]."
  (when (and hive-rpc--draft-key (minibufferp))
    (puthash hive-rpc--draft-key (minibuffer-contents-no-properties) hive-rpc--drafts)))

(defun hive-rpc--typing (id)
  "Tell the hub that the human started typing the answer to prompt ID.
This stops the prompt's countdown."
  (unless (member id hive-rpc--typed)
    (push id hive-rpc--typed)
    (hive-rpc--cancel-timer 'hive-rpc--countdown-timer)
    (hive-rpc--show-countdown)
    (when (hive-rpc--connected-p)
      (jsonrpc-notify hive-rpc--connection 'hive/typing (list :id id)))))

(defun hive-rpc--defer (id)
  "Tell the hub that the human left prompt ID unanswered after typing.
The hub gives the prompt its countdown back, so the agent is not
kept waiting for the hub's maximum lifetime by an answer begun and
abandoned.  A prompt not typed into here is left alone: its
countdown never stopped here.  While the hub is away, it is sent
once the hub is back (`hive-rpc--deferred')."
  (when (member id hive-rpc--typed)
    (setq hive-rpc--typed (delete id hive-rpc--typed))
    (if (hive-rpc--connected-p)
        (jsonrpc-notify hive-rpc--connection 'hive/defer (list :id id))
      (cl-pushnew id hive-rpc--deferred :test #'equal))))

(defun hive-rpc--read (record field prompt reader)
  "Call READER with PROMPT in a minibuffer set up for RECORD.
READER gets PROMPT and the draft of RECORD's FIELD (nil for the
whole answer), and reads with the history `hive-rpc--history',
which is RECORD's FIELD's own.  Quit instead if RECORD was closed
meanwhile (between two schema fields, say)."
  (unless (gethash (plist-get record :id) (hive-rpc--prompts))
    (setq hive-rpc--exit-reason (cons 'dismiss "hive-rpc: that question was closed"))
    (signal 'quit nil))
  (let* ((key (cons (plist-get record :id) field))
         (hive-rpc--draft-key key)
         (hive-rpc--history (gethash key hive-rpc--histories))
         (draft (gethash key hive-rpc--drafts)))
    (unwind-protect
        (minibuffer-with-setup-hook
            (lambda () (hive-rpc--minibuffer-setup record))
          (funcall reader prompt draft))
      (puthash key hive-rpc--history hive-rpc--histories))))

(defun hive-rpc--read-text (prompt draft)
  "Read free text with PROMPT, starting from DRAFT."
  (read-string prompt draft 'hive-rpc--history))

(defun hive-rpc--choice-table (names &optional descriptions)
  "Return a completion table of NAMES, in their order.
DESCRIPTIONS, an alist of (NAME . DESCRIPTION), annotates the
completions (an option's description beside it)."
  (let ((metadata
         `(metadata (display-sort-function . identity)
                    (cycle-sort-function . identity)
                    ,@(when descriptions
                        `((annotation-function
                           . ,(lambda (name)
                                (when-let ((d (cdr (assoc name descriptions))))
                                  (concat "  " d)))))))))
    (lambda (string predicate action)
      (if (eq action 'metadata)
          metadata
        (complete-with-action action names string predicate)))))

(defun hive-rpc--read-choice (record field prompt choices &optional descriptions label)
  "Read one of CHOICES, an alist of (NAME . VALUE), for RECORD's FIELD.
PROMPT is the prompt without a refusal reason; DESCRIPTIONS annotate
the choices (see `hive-rpc--choice-table').  Return the value, or
nil for an empty answer.  The value `hive-rpc--own' (the free-text
entry) asks for the human's own text for the field named LABEL,
returned trimmed, or nil."
  (let* ((names (mapcar #'car choices))
         (value (cdr (assoc (let ((hive-rpc--choosing t))
                              (hive-rpc--read
                               record field prompt
                               (lambda (p draft)
                                 (completing-read
                                  p (hive-rpc--choice-table names descriptions) nil t
                                  draft 'hive-rpc--history))))
                            choices))))
    (if (eq value 'hive-rpc--own) (hive-rpc--read-own record field label) value)))

(defun hive-rpc--read-own (record field label)
  "Read the human's own answer to RECORD's FIELD, named LABEL; nil if empty.
Plain `read-string': every key types, `?' and SPC included."
  (let ((text (string-trim
               (hive-rpc--read record (list field 'own)
                               (hive-rpc--prompt-text
                                record (format "%s: your own answer" (or label field)))
                               #'hive-rpc--read-text))))
    (unless (string-empty-p text) text)))


;;; Reading schema fields
;;;

(defun hive-rpc--read-field (record name property required reason)
  "Read schema field NAME of RECORD described by PROPERTY, once.
REQUIRED non-nil means an empty answer is not accepted; REASON,
if non-nil, says why the last answer was refused.  Return
\(ok . VALUE), VALUE being `skip' for an omitted field, or
\(retry . REASON)."
  (let* ((type (plist-get property :type))
         (label (hive-rpc--clean (or (plist-get property :title) name)))
         (choices (hive-rpc--field-choices property))
         (prompt (hive-rpc--prompt-text record
                                        (hive-rpc--field-text label property required)
                                        (mapcar #'car choices) reason)))
    (cond
     ((equal type "boolean")
      (cons 'ok (if (let ((hive-rpc--boolean t))
                      (hive-rpc--read record name prompt
                                      (lambda (p _draft) (y-or-n-p p))))
                    t :json-false)))
     ((equal type "array")
      (let* ((items (hive-rpc--field-choices (plist-get property :items)))
             (prompt (hive-rpc--prompt-text
                      record (hive-rpc--field-text label property required)
                      (mapcar #'car items) reason))
             (picked (hive-rpc--read
                      record name prompt
                      (lambda (p draft)
                        (completing-read-multiple
                         p (hive-rpc--choice-table
                            (mapcar #'car items)
                            (hive-rpc--enum-descriptions (plist-get property :items)))
                         nil t draft 'hive-rpc--history))))
             (picked (hive-rpc--own-picked record name label items picked))
             (why (hive-rpc--check-bounds label (length picked)
                                          (plist-get property :minItems)
                                          (plist-get property :maxItems) "items")))
        (cond ((and (null picked) (not required)) (cons 'ok 'skip))
              (why (cons 'retry why))
              (t (cons 'ok (vconcat picked))))))
     (choices
      (let ((value (hive-rpc--read-choice record name prompt choices
                                          (hive-rpc--enum-descriptions property) label)))
        (cond (value (cons 'ok value))
              (required (cons 'retry (format "pick one of the choices for '%s' \
\(TAB lists them)" label)))
              (t (cons 'ok 'skip)))))
     (t
      (hive-rpc--parse-field label property required
                             (hive-rpc--read record name prompt #'hive-rpc--read-text))))))

(defun hive-rpc--own-picked (record name label items picked)
  "Return the values of PICKED, names of ITEMS, for RECORD's field NAME.
The free-text entry among them asks for the human's own text for
the field named LABEL, which takes its place (left out if empty)."
  (delq nil (mapcar (lambda (d)
                      (let ((value (cdr (assoc d items))))
                        (if (eq value 'hive-rpc--own)
                            (hive-rpc--read-own record name label)
                          value)))
                    picked)))

(defun hive-rpc--read-schema (record refusal)
  "Read the answer to RECORD, which has a schema, field after field.
REFUSAL says why the hub refused the last answer, or is nil."
  (let* ((schema (plist-get record :schema))
         (answer (make-hash-table :test #'equal))
         (required (mapcar (lambda (r) (format "%s" r)) (plist-get schema :required)))
         (properties (plist-get schema :properties)))
    (while properties
      (let* ((name (hive-rpc--key-name (car properties)))
             (property (cadr properties))
             (reason refusal)
             result)
        (while (not (eq (car (setq result (hive-rpc--read-field
                                           record name property
                                           (member name required) reason)))
                        'ok))
          (setq reason (cdr result)))
        (unless (eq (cdr result) 'skip)
          (puthash name (cdr result) answer)))
      (setq properties (cddr properties)))
    answer))

(defun hive-rpc--read-answer (record)
  "Read an answer to RECORD in the minibuffer and return it."
  (let ((choices (mapcar (lambda (c) (cons (hive-rpc--clean c) c))
                         (append (plist-get record :choices) nil)))
        (refusal (gethash (plist-get record :id) hive-rpc--refusals)))
    (cond
     (choices
      (let ((reason refusal) value)
        (while (not value)
          (setq value (hive-rpc--read-choice
                       record nil
                       (hive-rpc--prompt-text record nil (mapcar #'car choices) reason)
                       choices)
                reason "pick one of the choices (TAB lists them)")
          ;; A no to the confirmation asks again, with no refusal: nothing was sent.
          (when (and value (not (hive-rpc--confirmed-p record value)))
            (setq value nil reason nil)))
        value))
     ((plist-get record :schema) (hive-rpc--read-schema record refusal))
     (t (hive-rpc--read record nil (hive-rpc--prompt-text record nil nil refusal)
                        #'hive-rpc--read-text)))))


(defun hive-rpc--confirm-text (record choice)
  "Return what answering RECORD with CHOICE does, to confirm first; or nil.
RECORD's `:confirm' names the choices whose effect outlasts the
question, each with the asker's words for it: a Claude Code
permission's lasting answers name the rule they save."
  (seq-some (lambda (entry)
              (and (equal (plist-get entry :choice) choice)
                   (stringp (plist-get entry :text))
                   (plist-get entry :text)))
            (plist-get record :confirm)))

(defun hive-rpc--confirmed-p (record choice)
  "Return non-nil if CHOICE may be sent as RECORD's answer.
A choice with nothing to confirm may; one whose effect outlasts the
question (see `hive-rpc--confirm-text') only after the human read
what it does and answered yes.  An empty answer is no, so RET typed
ahead never saves a rule."
  (let ((text (hive-rpc--confirm-text record choice)))
    (or (null text)
        (eq 'yes (hive-rpc--read-choice
                  record 'confirm
                  (format "[%s] %s Send %s?%s: "
                          (hive-rpc--agent-label record) (hive-rpc--clean text)
                          (hive-rpc--clean choice) (hive-rpc--choices-text '("yes" "no")))
                  '(("yes" . yes) ("no" . no)))))))


;;; Asking
;;;

(defun hive-rpc-minibuffer-read (record &optional opening)
  "Ask RECORD, a pending prompt, in the minibuffer; return what the human did.
OPENING says how it opens: nil when the human opened it; `chain'
when it follows the one just answered, so RET does nothing in its
opening moment; `auto' (or any other non-nil value) when it opens
by itself, so that keys pressed in its opening moment go back to
the buffer (see `hive-rpc-open-grace').  The result is one of:
  (answer . VALUE)    \\<hive-rpc-minibuffer-map>RET: VALUE answers RECORD;
  decline             \\[hive-rpc-decline]: the human declines it;
  defer               \\[keyboard-quit]: the human defers it (if
                      he had typed, the hub gets `hive/defer');
  (give-back . KEYS)  KEYS came in the opening moment, not as an answer;
  (dismiss . MESSAGE) RECORD was closed elsewhere meanwhile.
Sending the answer is the caller's business; other errors are signalled."
  (let ((hive-rpc--current (plist-get record :id))
        (hive-rpc--exit-reason nil)
        (hive-rpc--opening (cond ((null opening) nil)
                                 ((eq opening 'chain) 'chain)
                                 (t 'auto))))
    (unwind-protect
        (condition-case nil
            (let ((answer (hive-rpc--read-answer record)))
              (remhash hive-rpc--current hive-rpc--refusals)
              (cons 'answer answer))
          (quit
           (pcase hive-rpc--exit-reason
             ('decline 'decline)
             ('give-back (cons 'give-back hive-rpc--given-back))
             (`(dismiss . ,_) hive-rpc--exit-reason)
             (_ (hive-rpc--defer hive-rpc--current)
                'defer))))
      (setq hive-rpc--closed-at (float-time))
      (hive-rpc--end-grace)
      (hive-rpc--cancel-timer 'hive-rpc--countdown-timer)
      (setq hive-rpc--countdown-overlay nil)
      (when-let ((window (get-buffer-window hive-rpc--details-buffer)))
        (quit-window nil window)))))

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


;;; After an answer
;;;

(defun hive-rpc--answer-sent (entry record)
  "Say that the hub accepted ENTRY of the outbox; RECORD is the closed prompt."
  (let ((id (plist-get entry :id))
        (agent (hive-rpc--agent record)))
    (hive-rpc--forget id)
    (if (equal (plist-get entry :action) "accept")
        (message "hive-rpc: sent %s to %s"
                 (hive-rpc--answer-text (plist-get entry :answer) record) agent)
      (message "hive-rpc: %s %s" (if (equal (plist-get entry :action) "decline")
                                     "declined; told" "cancelled; told")
               agent))))

(defun hive-rpc--answer-refused (id reason)
  "Note that the hub refused the answer to prompt ID because of REASON.
The question shows REASON when it is asked again."
  (puthash id reason hive-rpc--refusals))

(defun hive-rpc--forget (id)
  "Forget the drafts, histories and refusal of prompt ID, which is closed."
  (remhash id hive-rpc--refusals)
  (dolist (table (list hive-rpc--drafts hive-rpc--histories))
    (let (keys)
      (maphash (lambda (key _) (when (equal (car key) id) (push key keys))) table)
      (dolist (key keys) (remhash key table)))))


;;; Commands
;;;

(defun hive-rpc-decline ()
  "Decline the hive prompt in the minibuffer: tell the agent no answer comes."
  (interactive)
  (if (not (hive-rpc--hive-minibuffer-p))
      (user-error "Not in a hive prompt")
    (setq hive-rpc--exit-reason 'decline)
    (abort-recursive-edit)))

(defun hive-rpc-details ()
  "Show the hive prompt in the minibuffer in full, in another window.
The full question, its id, its agent, its choices or fields with
their constraints, and its deadline.  The minibuffer stays."
  (interactive)
  (let ((record (and hive-rpc--current (gethash hive-rpc--current (hive-rpc--prompts)))))
    (unless (and record (hive-rpc--hive-minibuffer-p))
      (user-error "Not in a hive prompt"))
    (hive-rpc--send-shown (plist-get record :id))
    (let ((buffer (get-buffer-create hive-rpc--details-buffer)))
      (with-current-buffer buffer
        (let ((inhibit-read-only t))
          (erase-buffer)
          (insert (hive-rpc--details-text record)
                  (substitute-command-keys
                   "\nIn the minibuffer: \\<hive-rpc-minibuffer-map>RET answers, \
\\[hive-rpc-decline] declines, \\[keyboard-quit] defers (with every \
question queued behind it), \\[hive-rpc-details] shows this")
                  (if (plist-get record :choices)
                      (substitute-command-keys
                       " (so does \\<hive-rpc-choice-map>\\[hive-rpc-choice-help] \
with nothing typed)")
                    "")
                  (substitute-command-keys
                   ", \\[scroll-other-window] scrolls it.\n"))
          (goto-char (point-min)))
        (special-mode))
      ;; A long detail needs scrolling while the answer stays in the
      ;; minibuffer: \[scroll-other-window] there scrolls this window.
      (when-let ((window (display-buffer
                          buffer '(nil (window-height . fit-window-to-buffer)))))
        (setq minibuffer-scroll-window window)))))

(defun hive-rpc-choice-help ()
  "Show the details of the hive prompt whose choice is read, with nothing typed.
Its details hold the question, its detail (a permission's whole
tool input) and every choice.  Once something is typed, do what
this key does in the minibuffer's own map (the completion help),
so it never takes a key from a choice being typed."
  (interactive)
  (if (and (hive-rpc--hive-minibuffer-p)
           (string-empty-p (minibuffer-contents-no-properties)))
      (hive-rpc-details)
    ;; The local map is ours composed over the minibuffer's own map,
    ;; its parent (`hive-rpc--minibuffer-setup').
    (let* ((own-map (keymap-parent (current-local-map)))
           (own (and own-map (lookup-key own-map (this-command-keys-vector)))))
      (if (and (commandp own) (not (eq own #'hive-rpc-choice-help)))
          (call-interactively own)
        (self-insert-command 1)))))

(provide 'hive-rpc-minibuffer)
;;; hive-rpc-minibuffer.el ends here
