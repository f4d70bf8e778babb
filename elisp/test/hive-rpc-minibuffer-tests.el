;;; hive-rpc-minibuffer-tests.el --- Tests for hive-rpc-minibuffer.el  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The hive_rpc authors

;; This file is not part of GNU Emacs.

;;; Commentary:

;; ERT tests of the logic of hive-rpc-minibuffer.el: what a prompt
;; shows (choices in the agent's order, a field's constraints, the
;; reason of a refusal), when a question may open by itself, the keys
;; of a hive prompt, and what happens once the hub accepted or refused
;; an answer (against a real hub, with the fixture of
;; hive-rpc-tests.el).  Reading from a minibuffer needs a terminal:
;; tests/emacs/ drives a real `emacs -nw' under tmux for that.  Run
;; from the repository's root with scripts/test-elisp.sh.

;;; Code:

(require 'ert)
(require 'hive-rpc)
(require 'hive-rpc-tests)

(defun hive-rpc-minibuffer-tests--record (&rest props)
  "Return a prompt record made of PROPS over sensible defaults."
  (append props (list :id "3f9c0a51d2e84b17" :agent_id "deployer"
                      :question "Deploy?" :created_at (float-time)
                      :deadline_at (+ (float-time) 300) :timeout_s nil)))

(defun hive-rpc-minibuffer-tests--last-message ()
  "Return the last line of *Messages* (`current-message' is nil in batch)."
  (with-current-buffer (messages-buffer)
    (save-excursion
      (goto-char (point-max))
      (skip-chars-backward "\n")
      (buffer-substring-no-properties (line-beginning-position) (point)))))

(ert-deftest hive-rpc-minibuffer-tests-choices-in-prompt-in-order ()
  "Show the choices in the prompt, in the agent's order."
  (let ((hive-rpc-key-hint nil)
        (record (hive-rpc-minibuffer-tests--record)))
    (should (equal (hive-rpc--prompt-text record nil '("yes" "no" "later"))
                   "[deployer] Deploy? [yes / no / later]: "))))

(ert-deftest hive-rpc-minibuffer-tests-prompt-hint-names-the-keys ()
  "End the prompt with the keys that decline and show details."
  (let ((hive-rpc-key-hint t))
    (should (string-suffix-p " (C-c C-k: decline, C-c C-d: details): "
                             (hive-rpc--prompt-text (hive-rpc-minibuffer-tests--record))))))

(ert-deftest hive-rpc-minibuffer-tests-refusal-above-prompt ()
  "Show the reason of a refusal on a line above the prompt."
  (let* ((hive-rpc-key-hint nil)
         (text (hive-rpc--prompt-text (hive-rpc-minibuffer-tests--record :urgent t)
                                      "replicas: integer, at least 1" nil
                                      "'replicas' must be at least 1")))
    (should (equal (substring-no-properties text)
                   "refused: 'replicas' must be at least 1
[deployer]! Deploy? (replicas: integer, at least 1): "))))

(ert-deftest hive-rpc-minibuffer-tests-choice-table-keeps-order ()
  "Complete choices without sorting them."
  (let ((table (hive-rpc--choice-table '("yes" "no" "later"))))
    (should (eq (completion-metadata-get (completion-metadata "" table nil)
                                         'display-sort-function)
                #'identity))
    (should (eq (completion-metadata-get (completion-metadata "" table nil)
                                         'cycle-sort-function)
                #'identity))
    (should (equal (all-completions "" table) '("yes" "no" "later")))
    (should (equal (try-completion "n" table) "no"))))

(ert-deftest hive-rpc-minibuffer-tests-constraints ()
  "Describe each field's type and bounds in words."
  (should (equal (hive-rpc--field-text "replicas" '(:type "integer" :minimum 1) t)
                 "replicas: integer, at least 1"))
  (should (equal (hive-rpc--field-text "ratio" '(:type "number" :minimum 0 :maximum 1.0) t)
                 "ratio: number, 0 to 1"))
  (should (equal (hive-rpc--field-text "name" '(:type "string" :maxLength 20) nil)
                 "name: at most 20 characters, optional"))
  (should (equal (hive-rpc--field-text "when" '(:type "string" :format "date") t)
                 "when: a date: YYYY-MM-DD"))
  (should (equal (hive-rpc--field-text "env" '(:type "string" :enum ["a" "b"]) t)
                 "env"))
  (should (equal (hive-rpc--field-text
                  "tags" '(:type "array" :minItems 1 :items (:enum ["x" "y"])) t)
                 "tags: several, comma-separated, at least 1 choice"))
  (should (equal (hive-rpc--field-text
                  "tags" '(:type "array" :minItems 1 :maxItems 3 :items (:enum ["x" "y"])) t)
                 "tags: several, comma-separated, 1 to 3 choices"))
  (should (equal (hive-rpc--field-text "pin" '(:type "string" :maxLength 1) t)
                 "pin: at most 1 character"))
  (should (equal (hive-rpc--field-text "note" '(:type "string" :description "why") nil)
                 "note: optional, why")))

(ert-deftest hive-rpc-minibuffer-tests-enum-names ()
  "Name enum values by enumNames or their oneOf titles, in the schema's order."
  (should (equal (hive-rpc--enum '(:enum ["stg" "prd"] :enumNames ["Staging" "Production"]))
                 '(("Staging" . "stg") ("Production" . "prd"))))
  (should (equal (hive-rpc--enum '(:oneOf [(:const 2 :title "two") (:const 1)]))
                 '(("two" . 2) ("1" . 1)))))

(defconst hive-rpc-minibuffer-tests--claude-question
  '(:type "string" :title "Database"
    :anyOf [(:const "SQLite" :title "SQLite" :description "embedded")
            (:const "Postgres" :title "Postgres" :description "a server")
            (:type "string" :title "Other: type your own answer")])
  "A field as Claude Code's own question becomes (core/claude_questions.py).")

(ert-deftest hive-rpc-minibuffer-tests-own-answer-entry ()
  "Offer a free-text anyOf entry as a choice of its own, after the options."
  (let ((field hive-rpc-minibuffer-tests--claude-question))
    (should (equal (hive-rpc--enum field) '(("SQLite" . "SQLite") ("Postgres" . "Postgres"))))
    (should (equal (hive-rpc--own-entry field) "Other: type your own answer"))
    (should (equal (hive-rpc--field-choices field)
                   '(("SQLite" . "SQLite") ("Postgres" . "Postgres")
                     ("Other: type your own answer" . hive-rpc--own))))
    (should-not (hive-rpc--own-entry '(:oneOf [(:const 1)])))))

(ert-deftest hive-rpc-minibuffer-tests-own-answer-among-picks ()
  "Put the human's own text in place of the free-text entry among several picks."
  (let ((items '(("Alpha" . "Alpha") ("Beta" . "Beta")
                 ("Other: type your own answer" . hive-rpc--own)))
        (asked nil))
    (cl-letf (((symbol-function 'hive-rpc--read-own)
               (lambda (_record name label) (push (list name label) asked) "mine")))
      (should (equal (hive-rpc--own-picked nil "q1" "Features" items
                                           '("Beta" "Other: type your own answer"))
                     '("Beta" "mine")))
      (should (equal asked '(("q1" "Features")))))
    (cl-letf (((symbol-function 'hive-rpc--read-own) (lambda (&rest _) nil)))
      (should (equal (hive-rpc--own-picked nil "q1" "Features" items
                                           '("Other: type your own answer" "Alpha"))
                     '("Alpha"))))))

(ert-deftest hive-rpc-minibuffer-tests-option-descriptions-annotate ()
  "Show each option's description beside it in the completions."
  (let* ((field hive-rpc-minibuffer-tests--claude-question)
         (table (hive-rpc--choice-table '("SQLite" "Postgres")
                                        (hive-rpc--enum-descriptions field)))
         (annotate (completion-metadata-get (completion-metadata "" table nil)
                                            'annotation-function)))
    (should (equal (hive-rpc--enum-descriptions field)
                   '(("SQLite" . "embedded") ("Postgres" . "a server"))))
    (should (equal (funcall annotate "Postgres") "  a server"))
    (should-not (funcall annotate "Other"))
    (should-not (completion-metadata-get
                 (completion-metadata "" (hive-rpc--choice-table '("a")) nil)
                 'annotation-function))))

(ert-deftest hive-rpc-minibuffer-tests-parse-field ()
  "Check numbers and lengths in Emacs, with the hub's words."
  (let ((replicas '(:type "integer" :minimum 1 :maximum 9)))
    (should (equal (hive-rpc--parse-field "replicas" replicas t "3") '(ok . 3)))
    (should (equal (hive-rpc--parse-field "replicas" replicas t " 0 ")
                   '(retry . "'replicas' must be at least 1")))
    (should (equal (hive-rpc--parse-field "replicas" replicas t "12")
                   '(retry . "'replicas' must be at most 9")))
    (should (equal (hive-rpc--parse-field "replicas" replicas t "2.5")
                   '(retry . "'replicas' must be an integer")))
    (should (equal (hive-rpc--parse-field "replicas" replicas t "")
                   '(retry . "'replicas' is required")))
    (should (equal (hive-rpc--parse-field "replicas" replicas nil "") '(ok . skip))))
  (should (equal (hive-rpc--parse-field "ratio" '(:type "number") t "2.5") '(ok . 2.5)))
  (should (equal (hive-rpc--parse-field "name" '(:type "string" :minLength 3) t "ab")
                 '(retry . "'name' must be at least 3 chars"))))

(ert-deftest hive-rpc-minibuffer-tests-typing-keys ()
  "Tell keys that type text from commands."
  (dolist (event (list ?a ?\s ?\r ?\t ?\d ?é 'return 'backspace))
    (should (hive-rpc--typing-event-p event)))
  (dolist (event (list ?\C-a ?\C-x ?\M-f 'f1 'up nil))
    (should-not (hive-rpc--typing-event-p event))))

(ert-deftest hive-rpc-minibuffer-tests-longer-pause-after-typing ()
  "Wait for the longer pause when the last key typed text."
  (let ((hive-rpc-idle-delay 3)
        (hive-rpc-idle-delay-after-typing 10)
        (this-command nil))
    (let ((last-command-event ?a))
      (should (= (hive-rpc--pause-needed) 10)))
    (let ((last-command-event ?\C-e))
      (should (= (hive-rpc--pause-needed) 3)))
    ;; RET that closed a hive prompt typed nothing in a buffer.
    (let ((last-command-event ?\r)
          (this-command 'exit-minibuffer))
      (should (= (hive-rpc--pause-needed) 3)))))

(ert-deftest hive-rpc-minibuffer-tests-defaults ()
  "Open questions only after a pause of at least 2 seconds by default."
  (should (>= (default-value 'hive-rpc-idle-delay) 2))
  (should (>= (default-value 'hive-rpc-idle-delay-after-typing)
              (default-value 'hive-rpc-idle-delay)))
  (should (> (default-value 'hive-rpc-open-grace) 0)))

(ert-deftest hive-rpc-minibuffer-tests-no-editing-key-shadowed ()
  "Leave every standard editing key of the minibuffer alone."
  (dolist (key '("M-d" "M-DEL" "C-k" "C-w" "M-y" "C-y" "C-a" "C-e" "M-f" "M-b"
                 "C-/" "C-_" "TAB" "C-d" "DEL" "M-p" "M-n" "C-g" "RET" "C-t" "M-t"
                 "M-u" "M-l" "M-c" "C-SPC" "C-x u" "M-r" "M-s" "C-s" "C-r"))
    ;; nil: unbound; a number: its prefix is unbound.
    (let ((binding (lookup-key hive-rpc-minibuffer-map (kbd key))))
      (should (or (null binding) (numberp binding)))))
  (should (eq (lookup-key hive-rpc-minibuffer-map (kbd "C-c C-k")) #'hive-rpc-decline))
  (should (eq (lookup-key hive-rpc-minibuffer-map (kbd "C-c C-d")) #'hive-rpc-details)))

(ert-deftest hive-rpc-minibuffer-tests-defer-leaves-the-queue ()
  "Leave every queued question pending, unasked, on one defer."
  (hive-rpc-tests--with-offline-connection
    (setf (hive-rpc--queue) (list "b" "c"))
    (let ((hive-rpc--idle-timer (run-with-idle-timer 1000 t #'ignore))
          (hive-rpc--pause-timer nil))
      (dolist (id '("a" "b" "c"))
        (puthash id (hive-rpc-minibuffer-tests--record) (hive-rpc--prompts)))
      (hive-rpc--defer-all)
      (should-not (hive-rpc--queue))
      (should-not hive-rpc--idle-timer)
      (should (= (hash-table-count (hive-rpc--prompts)) 3))
      (should (string-prefix-p "hive-rpc: deferred; 3 questions are pending"
                               (hive-rpc-minibuffer-tests--last-message))))))

(ert-deftest hive-rpc-minibuffer-tests-details ()
  "Describe the whole question: id, agent, fields and their constraints."
  (let ((text (hive-rpc--details-text
               (hive-rpc-minibuffer-tests--record
                :question "Deploy?\nThe build is green."
                :schema '(:type "object"
                                :properties (:replicas (:type "integer" :minimum 1)
                                                       :env (:type "string"
                                                                   :enum ["stg" "prd"]))
                                :required ["replicas"])))))
    (should (string-match-p "deployer asks (question 3f9c0a51d2e84b17)" text))
    (should (string-match-p "^  The build is green\\.$" text))
    (should (string-match-p "^  replicas: integer, at least 1$" text))
    (should (string-match-p "^  env: optional \\[stg / prd\\]$" text))))

;;; Permission prompts: kind and detail
;;;

(defconst hive-rpc-minibuffer-tests--tool-input
  "{\n  \"command\": \"npm test\\nrm -rf build\",\n  \"description\": \"Run the tests\"\n}"
  "A permission prompt's detail: the tool input as the hook sends it.")

(defun hive-rpc-minibuffer-tests--permission ()
  "Return a permission prompt record, as `hive-rpc hook claude-code' asks it."
  (hive-rpc-minibuffer-tests--record
   :kind "permission" :urgent t
   :question "Claude Code in ~/src/app (session 3f2a) wants to run Bash: \
npm test rm -rf build (see detail)"
   :detail hive-rpc-minibuffer-tests--tool-input
   :choices ["allow" "allow for this session" "always allow in this project" "deny"]))

(ert-deftest hive-rpc-minibuffer-tests-permission-kind-in-prompt ()
  "Say in the prompt that a permission prompt is one, and put its details on ?."
  (let* ((hive-rpc-key-hint t)
         (record (hive-rpc-minibuffer-tests--permission))
         (text (hive-rpc--prompt-text record nil '("allow" "deny"))))
    (should (string-prefix-p "[deployer]! permission: Claude Code in ~/src/app" text))
    (should (string-suffix-p " [allow / deny] (C-c C-k: decline, ?: details): " text)))
  (let ((hive-rpc-key-hint nil))
    (should (equal (hive-rpc--prompt-text (hive-rpc-minibuffer-tests--record))
                   "[deployer] Deploy?: "))))

(ert-deftest hive-rpc-minibuffer-tests-details-hold-the-detail-whole ()
  "Show a permission's detail line by line, every line of it, after the question."
  (let ((text (hive-rpc--details-text (hive-rpc-minibuffer-tests--permission))))
    (should (string-match-p "deployer asks a permission (question 3f9c0a51d2e84b17), \
urgently:" text))
    (should (string-match-p "^Detail:\n  {\n    \"command\": \"npm test\\\\nrm -rf build\",\n\
    \"description\": \"Run the tests\"\n  }$" text))
    (should (< (string-match "wants to run Bash" text) (string-match "^Detail:" text)
               (string-match "^Choices:" text)))))

(ert-deftest hive-rpc-minibuffer-tests-an-edit-shows-as-a-diff ()
  "Show Claude Code's Edit request as a diff of its two strings, not their JSON."
  (skip-unless (executable-find "diff"))
  (let* ((detail (json-encode
                  '((file_path . "/src/app/main.py")
                    (old_string . "def main():\n    run(debug=True)\n    return 0")
                    (new_string . "def main():\n    run(debug=False)\n    return 0"))))
         (text (hive-rpc--details-text
                (hive-rpc-minibuffer-tests--record :kind "permission" :detail detail))))
    (should (string-match-p "^  Edit:$" text))
    (should (string-match-p "^  --- /src/app/main.py (now)$" text))
    (should (string-match-p "^  \\+\\+\\+ /src/app/main.py (after the edit)$" text))
    (should (string-match-p "^  -    run(debug=True)$" text))
    (should (string-match-p "^  \\+    run(debug=False)$" text))
    (should (string-match-p "^   def main():$" text))
    (should-not (string-match-p "old_string" text)))
  ;; Anything else is shown as it came.
  (should (string-match-p "^Detail:\n  {\"command\"" (hive-rpc--details-text
                          (hive-rpc-minibuffer-tests--record
                           :kind "permission" :detail "{\"command\": \"ls\"}")))))

(ert-deftest hive-rpc-minibuffer-tests-confirm-text-is-the-askers ()
  "Find what a choice does in the question's confirm, as the hub sent it."
  (let ((record (hive-rpc-minibuffer-tests--record
                 :choices ["allow" "always allow"]
                 :confirm (vector (list :choice "always allow"
                                        :text "This answer saves a rule.")))))
    (should (equal (hive-rpc--confirm-text record "always allow")
                   "This answer saves a rule."))
    (should-not (hive-rpc--confirm-text record "allow"))
    (should-not (hive-rpc--confirm-text (hive-rpc-minibuffer-tests--record) "allow"))
    ;; A choice with nothing to confirm is sent without a second question.
    (should (hive-rpc--confirmed-p record "allow"))))

(ert-deftest hive-rpc-minibuffer-tests-detail-is-cleaned ()
  "Show no control character of a detail, which comes from the agent."
  (let ((text (hive-rpc--details-text
               (hive-rpc-minibuffer-tests--record
                :detail "echo \e[2Jgone\u202e\nnext"))))
    (should (string-match-p "^  echo \\[2Jgone$" text))
    (should (string-match-p "^  next$" text))
    (should-not (string-match-p "[\e\u202e]" text))))

(ert-deftest hive-rpc-minibuffer-tests-question-mark-only-where-a-choice-is-read ()
  "Bind ? only in the choice map: in a free-text answer it stays text."
  (should (eq (lookup-key hive-rpc-choice-map "?") #'hive-rpc-choice-help))
  (should-not (lookup-key hive-rpc-minibuffer-map "?"))
  ;; In completing-read's own maps ? is the completion help, not text.
  (should (eq (lookup-key minibuffer-local-must-match-map "?")
              #'minibuffer-completion-help)))

(ert-deftest hive-rpc-minibuffer-tests-sent-confirms ()
  "Say the answer was sent, to whom, once the hub accepted it."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (let ((id (hive-rpc-tests--ask "Ship it?" "--choices" "yes,no" "--agent" "shipper")))
      (hive-rpc-tests--arrived id)
      (puthash (cons id nil) "ye" hive-rpc--drafts)
      (hive-rpc--respond id "yes")
      (hive-rpc-tests--wait-for (lambda () (null hive-rpc--outbox)))
      (should (equal (hive-rpc-minibuffer-tests--last-message)
                     "hive-rpc: sent yes to shipper"))
      (should-not (gethash (cons id nil) hive-rpc--drafts)))))

(ert-deftest hive-rpc-minibuffer-tests-refusal-kept-for-the-prompt ()
  "Keep the hub's reason for refusing an answer, to show when asking again."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (let ((id (hive-rpc-tests--ask
               "Scale?" "--schema"
               "{\"type\":\"object\",\"properties\":{\"when\":{\"type\":\"string\",\"format\":\"date\"}},\"required\":[\"when\"]}")))
      (hive-rpc-tests--arrived id)
      (setf (hive-rpc--queue) nil)
      (let ((answer (make-hash-table :test #'equal)))
        (puthash "when" "tomorrow" answer)
        (hive-rpc--respond id answer))
      (hive-rpc-tests--wait-for (lambda () (null hive-rpc--outbox)))
      (should (member id (hive-rpc--queue)))
      (should (string-match-p "'when' must be a valid date"
                              (gethash id hive-rpc--refusals)))
      ;; Closed elsewhere: the reason and the drafts go.
      (should (eql (car (hive-rpc-tests--cli "cancel" id)) 0))
      (hive-rpc-tests--wait-for (lambda () (not (gethash id (hive-rpc--prompts)))))
      (should-not (gethash id hive-rpc--refusals)))))

(provide 'hive-rpc-minibuffer-tests)
;;; hive-rpc-minibuffer-tests.el ends here
