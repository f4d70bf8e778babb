;;; hive-rpc-tests.el --- Tests for hive-rpc.el  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The hive_rpc authors

;; This file is not part of GNU Emacs.

;;; Commentary:

;; ERT tests against a real hub: the fixture starts
;; "python3 -m hive_rpc serve" on a socket in a temporary directory,
;; and the tests ask through the `hive-rpc' CLI as an agent would.
;; Run them from the repository's root with scripts/test-elisp.sh,
;; which lints the package first and then runs this suite in batch mode.

;;; Code:

(require 'ert)
(require 'hive-rpc)
(require 'hive-rpc-list)
(require 'hive-rpc-sessions)
(require 'hive-rpc-ling)

(defvar hive-rpc-tests--root
  (file-name-directory
   (directory-file-name
    (file-name-directory
     (directory-file-name
      (file-name-directory (or load-file-name buffer-file-name))))))
  "The repository's root directory, where `python3 -m hive_rpc' works.")

(defvar hive-rpc-tests--socket nil
  "Socket of the hub started by `hive-rpc-tests--with-hub'.")

(defvar hive-rpc-tests--hub nil
  "Process of the hub started by `hive-rpc-tests--with-hub'.")

(defvar hive-rpc-tests--dir nil
  "Temporary directory of `hive-rpc-tests--with-hub'.")

(defun hive-rpc-tests--wait-for (predicate &optional timeout)
  "Process events until PREDICATE gives non-nil, at most TIMEOUT seconds.
Return PREDICATE's value; fail the test on timeout."
  (let ((end (+ (float-time) (or timeout 10)))
        value)
    (while (and (not (setq value (funcall predicate)))
                (< (float-time) end))
      (accept-process-output nil 0.05))
    (or value (ert-fail (list "timed out waiting for" predicate)))))

(defun hive-rpc-tests--start-hub (store)
  "Start a hub with STORE on `hive-rpc-tests--socket'; wait until it listens."
  (let ((default-directory hive-rpc-tests--root))
    (setq hive-rpc-tests--hub
          (make-process
           :name "hive-rpc-test-hub"
           :buffer (get-buffer-create " *hive-rpc-test-hub*")
           :command (list "python3" "-m" "hive_rpc" "serve"
                          "--socket" hive-rpc-tests--socket
                          "--data-dir" (expand-file-name "data" hive-rpc-tests--dir)
                          "--store" store "--no-notify")
           :noquery t)))
  (hive-rpc-tests--wait-for
   (lambda () (with-current-buffer " *hive-rpc-test-hub*"
                (save-excursion
                  (goto-char (point-min))
                  (search-forward "listening on" nil t))))
   15))

(defun hive-rpc-tests--stop-hub ()
  "Kill the test hub and wait until it is gone."
  (when (process-live-p hive-rpc-tests--hub)
    (kill-process hive-rpc-tests--hub)
    (hive-rpc-tests--wait-for (lambda () (not (process-live-p hive-rpc-tests--hub)))))
  (when (get-buffer " *hive-rpc-test-hub*")
    (with-current-buffer " *hive-rpc-test-hub*" (erase-buffer))))

(defun hive-rpc-tests--call-with-hub (fn &optional store)
  "Call FN with a fresh hub (STORE, default \"memory\") and hive-rpc set to it."
  (let* ((hive-rpc-tests--dir (make-temp-file "hive-rpc-ert" t))
         (hive-rpc-tests--socket (expand-file-name "hub.sock" hive-rpc-tests--dir))
         (hive-rpc-tests--hub nil)
         (hive-rpc-socket hive-rpc-tests--socket)
         (hive-rpc-program nil)
         (hive-rpc-reconnect-interval 0.2)
         (hive-rpc-notify-urgent nil)
         (hive-rpc-by "ert")
         (hive-rpc--outbox nil))
    (unwind-protect
        (progn
          (hive-rpc-tests--start-hub (or store "memory"))
          (funcall fn))
      (hive-rpc-mode -1)
      (hive-rpc-tests--stop-hub)
      (delete-directory hive-rpc-tests--dir t))))

(defmacro hive-rpc-tests--with-hub (options &rest body)
  "Run BODY with a fresh hub.  OPTIONS is a plist; :store names the store."
  (declare (indent 1) (debug (sexp body)))
  `(hive-rpc-tests--call-with-hub (lambda () ,@body) ,(plist-get options :store)))

(defun hive-rpc-tests--call-with-offline-connection (fn)
  "Call FN with `hive-rpc--connection' a connection to no hub.
A pipe stands for the hub: the connection's slots hold prompts and
the queue as a live one's do, and nothing is sent anywhere."
  (let* ((proc (make-pipe-process :name "hive-rpc-test-offline" :noquery t))
         (hive-rpc--connection
          (hive-rpc-connection :name "hive-rpc-test-offline" :process proc)))
    (unwind-protect
        (funcall fn)
      (let ((inhibit-message t)
            (message-log-max nil))
        (jsonrpc-shutdown hive-rpc--connection t)))))

(defmacro hive-rpc-tests--with-offline-connection (&rest body)
  "Run BODY with a connection to no hub as the session's connection."
  (declare (indent 0) (debug (body)))
  `(hive-rpc-tests--call-with-offline-connection (lambda () ,@body)))

(defun hive-rpc-tests--cli (&rest args)
  "Run the hive-rpc CLI with ARGS on the test hub; return (EXIT . OUTPUT)."
  (let ((default-directory hive-rpc-tests--root))
    (with-temp-buffer
      (let ((exit (apply #'call-process "python3" nil '(t nil) nil
                         "-m" "hive_rpc"
                         (append args (list "--socket" hive-rpc-tests--socket
                                            "--no-start")))))
        (cons exit (string-trim (buffer-string)))))))

(defun hive-rpc-tests--hub-pid (socket)
  "Return the pid of the hub answering on SOCKET, or nil if none answers."
  (let ((default-directory hive-rpc-tests--root))
    (with-temp-buffer
      (when (eql 0 (call-process "python3" nil '(t nil) nil "-m" "hive_rpc" "status"
                                 "--json" "--socket" socket "--no-start"))
        (plist-get (json-parse-string (buffer-string) :object-type 'plist) :pid)))))

(defun hive-rpc-tests--stop-detached-hub (socket)
  "Stop the hub on SOCKET that hive-rpc started detached; wait until it is gone.
Such a hub is no child of Emacs: it outlives Emacs, and this test."
  (let ((pid (hive-rpc-tests--hub-pid socket)))
    (when pid
      (signal-process pid 'term)
      (hive-rpc-tests--wait-for
       (lambda () (not (memq pid (list-system-processes))))
       15))))

(defun hive-rpc-tests--ask (&rest args)
  "Ask through the CLI with ARGS; return the new prompt's id."
  (let ((result (apply #'hive-rpc-tests--cli "ask" args)))
    (should (eql (car result) 0))
    (cdr result)))

(defun hive-rpc-tests--connect ()
  "Turn on `hive-rpc-mode' and wait until it is connected."
  (hive-rpc-mode 1)
  (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'connected))))

(defun hive-rpc-tests--arrived (id)
  "Wait until prompt ID is known to hive-rpc; return its record."
  (hive-rpc-tests--wait-for (lambda () (gethash id (hive-rpc--prompts)))))

(ert-deftest hive-rpc-tests-default-socket ()
  "Follow the hub's rules for the default socket path."
  (let ((process-environment (copy-sequence process-environment)))
    (setenv "HIVE_RPC_SOCKET" "/x/hub.sock")
    (should (equal (hive-rpc-default-socket) "/x/hub.sock"))
    (setenv "HIVE_RPC_SOCKET" nil)
    (setenv "XDG_RUNTIME_DIR" temporary-file-directory)
    (should (equal (hive-rpc-default-socket)
                   (expand-file-name "hive-rpc/hub.sock" temporary-file-directory)))
    (setenv "XDG_RUNTIME_DIR" nil)
    (let* ((root (make-temp-file "hive-rpc-run" t))
           (hive-rpc--user-runtime-root root)
           (mine (expand-file-name (number-to-string (user-uid)) root)))
      (unwind-protect
          (progn
            ;; No /run/user/UID: the temporary directory.
            (should (equal (hive-rpc-default-socket)
                           (expand-file-name (format "hive-rpc-%d/hub.sock" (user-uid))
                                             temporary-file-directory)))
            ;; The user's own private runtime directory, as the hub takes it.
            (make-directory mine)
            (set-file-modes mine #o700)
            (should (equal (hive-rpc-default-socket)
                           (expand-file-name "hive-rpc/hub.sock" mine)))
            ;; Open to others: not trusted, as the hub does not.
            (set-file-modes mine #o755)
            (should (equal (hive-rpc-default-socket)
                           (expand-file-name (format "hive-rpc-%d/hub.sock" (user-uid))
                                             temporary-file-directory))))
        (delete-directory root t)))))

(ert-deftest hive-rpc-tests-the-hubs-own-question-is-named-as-the-hubs ()
  "The hub's question is the hub's; no agent may ask as hive-rpc."
  (should (equal (hive-rpc--agent '(:agent_id "hive-rpc")) "the hub itself (hive-rpc)"))
  (should (equal (hive-rpc--agent '(:agent_id "deployer")) "deployer"))
  (should (equal (hive-rpc--agent '(:agent_id nil)) "an agent")))

(ert-deftest hive-rpc-tests-auto-ask-is-off-by-default ()
  "No question opens by itself unless the human opts in."
  (should-not (default-value 'hive-rpc-auto-ask))
  (should-not (default-value 'hive-rpc-queue-window))
  (should (eq (lookup-key hive-rpc-command-map "z") #'hive-rpc-defer-all))
  (should (eq (lookup-key hive-rpc-command-map "x") #'hive-rpc-clear-unseen)))

(ert-deftest hive-rpc-tests-origin-follows-the-agent ()
  "A question names where its asker runs after the agent, cleaned."
  (should (equal (hive-rpc--agent-label '(:agent_id "claude-code-3278e209"
                                          :origin "~/src/app"))
                 "claude-code-3278e209 · ~/src/app"))
  (should (equal (hive-rpc--agent-label '(:agent_id "cli" :origin "a\nb\e")) "cli · a b"))
  (should (equal (hive-rpc--agent-label '(:agent_id "cli" :origin nil)) "cli"))
  (should (equal (hive-rpc--agent-label '(:agent_id "cli" :origin "  ")) "cli")))

(ert-deftest hive-rpc-tests-answers-in-words ()
  "The echo after answering says the answer in words, never JSON."
  (should (equal (hive-rpc--answer-text "yes") "yes"))
  (let ((answer (make-hash-table :test #'equal))
        (record '(:schema (:properties (:q1 (:title "Database" :type "string")
                                        :q2 (:title "Features" :type "array")
                                        :replicas (:type "integer")
                                        :ok (:type "boolean"))))))
    (puthash "q1" "Postgres" answer)
    (puthash "q2" ["Alpha" "Beta"] answer)
    (puthash "replicas" 3 answer)
    (puthash "ok" :json-false answer)
    (should (equal (hive-rpc--answer-text answer record)
                   "Database: Postgres; Features: Alpha, Beta; replicas: 3; ok: no"))
    (should-not (string-match-p "[{}\"]" (hive-rpc--answer-text answer)))))

(ert-deftest hive-rpc-tests-claude-questions-are-questions ()
  "Claude Code's questions come as permission prompts but are labelled as questions."
  (let* ((own '(:type "string" :title "Other: type your own answer"))
         (question `(:kind "permission" :agent_id "claude-code-1" :question "Which database?"
                     :schema (:properties
                              (:q1 (:type "string" :title "Database"
                                    :anyOf [(:const "SQLite" :title "SQLite") ,own])))))
         (permission '(:kind "permission" :agent_id "claude-code-1"
                       :question "Claude Code wants to run Bash: ls")))
    (should (hive-rpc--claude-question-p question))
    (should-not (hive-rpc--permission-p question))
    (should-not (string-match-p "permission:" (hive-rpc--prompt-text question)))
    (should (hive-rpc--permission-p permission))
    (should (string-match-p "permission: " (hive-rpc--prompt-text permission)))))

(ert-deftest hive-rpc-tests-mode-line-countdown-and-unseen ()
  "The mode line shows the most urgent countdown, and what expired unseen.
The countdown is in a warning face under 30 s."
  (let ((hive-rpc--connection (make-instance 'hive-rpc-connection
                                             :process (make-pipe-process :name "hive-rpc-t"
                                                                         :noquery t)))
        (hive-rpc--state 'connected)
        (hive-rpc--typed nil)
        (hive-rpc--unseen (make-hash-table :test #'equal))
        (now (float-time)))
    (unwind-protect
        (cl-letf (((symbol-function 'hive-rpc--connected-p) (lambda () t)))
          (puthash "a" (list :id "a" :timeout_s 600 :deadline_at (+ now 300.5)) (hive-rpc--prompts))
          (puthash "b" (list :id "b" :timeout_s 60 :deadline_at (+ now 25.5)) (hive-rpc--prompts))
          (puthash "c" (list :id "c" :timeout_s nil :deadline_at (+ now 9)) (hive-rpc--prompts))
          (let ((line (hive-rpc--mode-line-prompts)))
            (should (equal (substring-no-properties line) " hive:3 0:25"))
            (should (eq (get-text-property 8 'face line) 'hive-rpc-urgent)))
          ;; Typed into: its countdown stopped; the next one shows, unwarned.
          (setq hive-rpc--typed '("b"))
          (let ((line (hive-rpc--mode-line-prompts)))
            (should (equal (substring-no-properties line) " hive:3 5:00"))
            (should-not (get-text-property 8 'face line)))
          (puthash "x" '(:id "x" :status "expired" :unseen t) hive-rpc--unseen)
          (should (equal (substring-no-properties (hive-rpc--mode-line-prompts))
                         " hive:3 5:00, 1 expired unseen"))
          (clrhash (hive-rpc--prompts))
          (should (equal (substring-no-properties (hive-rpc--mode-line-prompts))
                         " hive: 1 expired unseen")))
      (delete-process (jsonrpc--process hive-rpc--connection)))))

(ert-deftest hive-rpc-tests-agent-buffers ()
  "Terminals, comint buffers and registered lings are agents' buffers."
  (with-temp-buffer
    (should-not (hive-rpc--agent-buffer-p (current-buffer)))
    (let ((hive-rpc--ling-buffers (list (buffer-name))))
      (should (hive-rpc--agent-buffer-p (current-buffer))))
    (comint-mode)
    (should (hive-rpc--agent-buffer-p (current-buffer)))))

(ert-deftest hive-rpc-tests-strip-control-characters ()
  "Strip control characters and bidi overrides from network text."
  (should (equal (hive-rpc--clean "a\e[31mb\nc\u202ed\0") "a[31mb cd")))

(ert-deftest hive-rpc-tests-strip-invisible-characters ()
  "Strip invisible characters by category and property, as the hub does.
They once reached the screen: format characters (Cf: soft
hyphen, zero-width space, Arabic letter mark, byte-order mark,
interlinear annotation, tag characters) and the rest of Unicode's
Default_Ignorable_Code_Point (grapheme joiner, Hangul fillers,
variation selectors)."
  (dolist (chars '("\u00ad" "\u034f" "\u061c" "\u115f\u1160\u3164\uffa0"
                   "\u180b\u180e\u180f" "\u200b\u200c\u200d" "\u2065\u206f"
                   "\ufe00\ufe0f" "\ufeff" "\ufff9\ufffa\ufffb"
                   "\U000E0001\U000E0041\U000E007F" "\U000E0100\U000E0FFF"))
    (should (equal (hive-rpc--clean (concat "r" chars "m -rf" chars)) "rm -rf"))
    (should (equal (hive-rpc-ling--strip (concat "a" chars "\nb")) "a\nb")))
  ;; What a person sees stays: letters, marks, emoji, private use, spaces.
  (let ((kept "Grüße, 日本, 🐝, \u0915\u094d\u0937, e\u0301, \ue000, a\u00a0b"))
    (should (equal (hive-rpc--clean kept) kept))))

(ert-deftest hive-rpc-tests-receive-pending-on-subscribe ()
  "Receive the prompts already pending when subscribing."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (let ((id (hive-rpc-tests--ask "Deploy?" "--choices" "yes,no" "--agent" "deployer")))
      (hive-rpc-tests--connect)
      (let ((record (hive-rpc-tests--arrived id)))
        (should (equal (plist-get record :question) "Deploy?"))
        (should (equal (plist-get record :agent_id) "deployer"))
        (should (member id (hive-rpc--queue)))))))

(ert-deftest hive-rpc-tests-receive-new-prompt ()
  "Receive a prompt asked through the CLI after connecting."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (let ((id (hive-rpc-tests--ask "Which branch?" "--agent" "claude-1")))
      (should (equal (plist-get (hive-rpc-tests--arrived id) :question)
                     "Which branch?")))))

(ert-deftest hive-rpc-tests-answer-reaches-agent ()
  "Answer a prompt; the agent's poll returns the answer."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (let ((id (hive-rpc-tests--ask "Ship it?" "--choices" "yes,no")))
      (hive-rpc-tests--arrived id)
      (hive-rpc--respond id "yes")
      (hive-rpc-tests--wait-for (lambda () (null hive-rpc--outbox)))
      (should (equal (hive-rpc-tests--cli "poll" id) '(0 . "yes")))
      (should-not (gethash id (hive-rpc--prompts))))))

(ert-deftest hive-rpc-tests-decline ()
  "Decline a prompt; the agent sees it declined."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (let ((id (hive-rpc-tests--ask "Delete the cache?")))
      (hive-rpc-tests--arrived id)
      (hive-rpc--respond id nil "decline")
      (hive-rpc-tests--wait-for (lambda () (null hive-rpc--outbox)))
      (should (equal (hive-rpc-tests--cli "poll" id) '(7 . "declined by ert"))))))

(ert-deftest hive-rpc-tests-dismiss-removes-queued ()
  "Remove a queued prompt when it is answered elsewhere."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (let ((id (hive-rpc-tests--ask "Rebase?" "--choices" "yes,no")))
      (hive-rpc-tests--arrived id)
      (should (member id (hive-rpc--queue)))
      (should (eql (car (hive-rpc-tests--cli "answer" id "no")) 0))
      (hive-rpc-tests--wait-for (lambda () (not (gethash id (hive-rpc--prompts)))))
      (should-not (member id (hive-rpc--queue))))))

(ert-deftest hive-rpc-tests-mode-line-count ()
  "Show the number of pending prompts in the mode line, nothing at zero."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (should (equal (hive-rpc--mode-line-prompts) ""))
    (let ((a (hive-rpc-tests--ask "One?"))
          (b (hive-rpc-tests--ask "Two?")))
      (hive-rpc-tests--arrived a)
      (hive-rpc-tests--arrived b)
      ;; Both asked by one agent: one session waits on the human.
      (hive-rpc-tests--wait-for
       (lambda () (equal (hive-rpc--mode-line-string) " hive:2 · 1 waiting")))
      ;; `format-mode-line' gives "" in batch: evaluate the lighter instead.
      (should (equal (eval (cadr (cadr (assq 'hive-rpc-mode minor-mode-alist))) t)
                     " hive:2 · 1 waiting"))
      (hive-rpc--respond a "done")
      (hive-rpc-tests--wait-for
       (lambda () (equal (hive-rpc--mode-line-string) " hive:1 · 1 waiting")))
      (should (eql (car (hive-rpc-tests--cli "cancel" b)) 0))
      (hive-rpc-tests--wait-for (lambda () (equal (hive-rpc--mode-line-prompts) ""))))))

(ert-deftest hive-rpc-tests-typing-stops-countdown ()
  "Stop the countdown when the human starts typing."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (let* ((id (hive-rpc-tests--ask "Merge?" "--timeout" "300"))
           (record (hive-rpc-tests--arrived id)))
      (should (< (plist-get record :deadline_at) (plist-get record :max_deadline_at)))
      (should (string-match-p "\\`([0-9]m[0-9]+s) \\'" (hive-rpc--countdown-text record)))
      (hive-rpc--typing id)
      (should (equal (hive-rpc--countdown-text record) ""))
      (hive-rpc-tests--wait-for
       (lambda ()
         (let* ((out (cdr (hive-rpc-tests--cli "poll" id "--json")))
                (polled (json-parse-string out :object-type 'plist :null-object nil)))
           (and (plist-get polled :typing_at)
                (= (plist-get polled :deadline_at)
                   (plist-get polled :max_deadline_at)))))))))

(defun hive-rpc-tests--type-elsewhere (id)
  "Send `hive/typing' for ID from another connection, as another editor does."
  (let ((default-directory hive-rpc-tests--root))
    (should (eql 0 (call-process
                    "python3" nil nil nil "-c"
                    (concat "import sys, trio\n"
                            "from pathlib import Path\n"
                            "from hive_rpc.client.async_client import HubClient\n"
                            "async def main():\n"
                            "    async with await HubClient.connect(Path(sys.argv[1])) as c:\n"
                            "        await c.call('hive/typing', {'id': sys.argv[2]})\n"
                            "trio.run(main)\n")
                    hive-rpc-tests--socket id)))))

(ert-deftest hive-rpc-tests-typing-elsewhere-stops-countdown ()
  "Stop the countdown when another editor starts typing (`hive/update')."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (let* ((id (hive-rpc-tests--ask "Merge?" "--timeout" "300"))
           (record (hive-rpc-tests--arrived id)))
      (should (string-match-p "\\`([0-9]m[0-9]+s) \\'" (hive-rpc--countdown-text record)))
      (hive-rpc-tests--type-elsewhere id)
      (let ((updated (hive-rpc-tests--wait-for
                      (lambda () (plist-get (gethash id (hive-rpc--prompts)) :typing_at)))))
        (should updated))
      (setq record (gethash id (hive-rpc--prompts)))
      (should (= (plist-get record :deadline_at) (plist-get record :max_deadline_at)))
      (should (equal (hive-rpc--countdown-text record) ""))
      (should-not (member id hive-rpc--typed))
      ;; still one question, queued once
      (should (equal (hive-rpc--mode-line-prompts) " hive:1"))
      (should (equal (cl-count id (hive-rpc--queue) :test #'equal) 1)))))

(ert-deftest hive-rpc-tests-ask-from-emacs ()
  "Ask from Emacs; the prompt comes back as `hive/prompt'."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (hive-rpc-ask "Lunch?" '("now" "later"))
    (let ((record (hive-rpc-tests--wait-for
                   (lambda ()
                     (car (seq-filter (lambda (r) (equal (plist-get r :question) "Lunch?"))
                                      (hash-table-values (hive-rpc--prompts))))))))
      (should (equal (plist-get record :agent_id) hive-rpc-agent-id))
      (should (equal (plist-get record :choices) ["now" "later"])))))

(ert-deftest hive-rpc-tests-ask-checks-the-connection-first ()
  "Refuse `hive-rpc-ask' before reading anything when there is no hub.
The error says how to get one."
  (let ((reads 0)
        (hive-rpc-socket "/nonexistent/hive-rpc-ert/hub.sock"))
    (cl-letf (((symbol-function 'read-string)
               (lambda (&rest _) (setq reads (1+ reads)) "typed")))
      ;; The mode is off: turn it on.
      (hive-rpc-mode -1)
      (let ((err (should-error (call-interactively #'hive-rpc-ask) :type 'user-error)))
        (should (string-match-p "M-x hive-rpc-mode" (cadr err))))
      ;; The mode is on but the hub is away: say where hive-rpc looks for it.
      (let ((hive-rpc-mode t)
            (hive-rpc--state 'dead))
        (let ((err (should-error (call-interactively #'hive-rpc-ask) :type 'user-error)))
          (should (string-match-p "No hub answers on /nonexistent/hive-rpc-ert/hub.sock"
                                  (cadr err))))
        (let* ((hive-rpc-program nil)
               (err (should-error (call-interactively #'hive-rpc-ask) :type 'user-error)))
          (should (string-match-p "hive-rpc serve --detach --socket /nonexistent/"
                                  (cadr err)))))
      (should (= reads 0)))))

(ert-deftest hive-rpc-tests-a-hub-stopped-on-purpose-is-named-as-such ()
  "Say the hub was stopped on purpose, and how to start it, not that one starts."
  (let* ((dir (make-temp-file "hive-rpc-ert-stopped" t))
         (hive-rpc-socket (expand-file-name "hub.sock" dir))
         (hive-rpc-mode t)
         (hive-rpc--state 'dead))
    (unwind-protect
        (progn
          (with-temp-file (concat hive-rpc-socket ".start.json")
            (insert "{\"stopped_by\": \"SIGTERM\", \"stopped_at\": 1795000000.5}"))
          (let ((err (should-error (hive-rpc--check-connected) :type 'user-error)))
            (should (string-match-p "stopped on purpose (kill PID at " (cadr err)))
            (should (string-match-p "M-x hive-rpc-start-hub" (cadr err)))
            (should-not (string-match-p "keeps trying" (cadr err)))))
      (delete-directory dir t))))

(ert-deftest hive-rpc-tests-mode-off-is-quiet ()
  "Turn the mode off without jsonrpc's \"Server exited\" message."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (let ((proc (jsonrpc--process hive-rpc--connection))
          (start (with-current-buffer (messages-buffer) (point-max))))
      (hive-rpc-mode -1)
      ;; jsonrpc's sentinel, which says it, has run by now.
      (should-not (process-live-p proc))
      (should (process-get proc 'jsonrpc-sentinel-cleanup-started))
      (let ((said (with-current-buffer (messages-buffer)
                    (buffer-substring-no-properties start (point-max)))))
        (should-not (string-match-p "jsonrpc\\|exited\\|died" said))))))

(ert-deftest hive-rpc-tests-command-map ()
  "Offer the commands on the variable `hive-rpc-command-map', bound nowhere."
  (dolist (binding '(("n" . hive-rpc-answer-next) ("l" . hive-rpc-list)
                     ("a" . hive-rpc-ask) ("d" . hive-rpc-decline)
                     ("m" . hive-rpc-mode) ("e" . hive-rpc-events-buffer)))
    (should (eq (lookup-key hive-rpc-command-map (car binding)) (cdr binding)))
    (should (commandp (cdr binding))))
  (should-not (where-is-internal 'hive-rpc-answer-next (list global-map)))
  ;; Both ways of binding it that docs/emacs.md shows.
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c h") hive-rpc-command-map)
    (should (eq (lookup-key map (kbd "C-c h n")) #'hive-rpc-answer-next)))
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c h") 'hive-rpc-command-map)
    (should (eq (lookup-key map (kbd "C-c h l")) #'hive-rpc-list))))

(ert-deftest hive-rpc-tests-keep-prompt-on-invalid-answer ()
  "Keep a prompt pending and queued when the hub refuses the answer."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (let ((id (hive-rpc-tests--ask "Pick?" "--choices" "a,b")))
      (hive-rpc-tests--arrived id)
      (setf (hive-rpc--queue) nil)
      (hive-rpc--respond id "c")
      (hive-rpc-tests--wait-for (lambda () (null hive-rpc--outbox)))
      (should (gethash id (hive-rpc--prompts)))
      (should (member id (hive-rpc--queue)))
      (should (equal (hive-rpc-tests--cli "poll" id) '(8 . "pending"))))))

(ert-deftest hive-rpc-tests-list-pending ()
  "List pending prompts in `hive-rpc-list', live."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (let ((id (hive-rpc-tests--ask "Listed?" "--agent" "lister" "--timeout" "600"
                                   "--choices" "red,blue,green"))
          (free (hive-rpc-tests--ask "Free?" "--agent" "lister")))
      (hive-rpc-tests--arrived id)
      (hive-rpc-tests--arrived free)
      (unwind-protect
          (with-current-buffer (progn (hive-rpc-list) "*hive-rpc*")
            (should (derived-mode-p 'hive-rpc-list-mode))
            (let ((entry (assoc id tabulated-list-entries)))
              (should entry)
              ;; A short id, unique enough to type at the CLI; the full one is
              ;; the entry's id.
              (should (equal (aref (cadr entry) 0) (substring id 0 8)))
              (should (equal (aref (cadr entry) 1) "lister"))
              (should (string-match-p "\\`[0-9]+m[0-9]+s\\'" (aref (cadr entry) 3)))
              ;; The choices, in the agent's order, as `hive-rpc list' shows them.
              (should (equal (aref (cadr entry) 4) "Listed?  [red / blue / green]")))
            (should (equal (aref (cadr (assoc free tabulated-list-entries)) 4) "Free?"))
            ;; The buffer shows them too, and `w' copies the full id at point.
            (tabulated-list-print)
            (goto-char (point-min))
            (should (search-forward "Listed?  [red / blue / green]" nil t))
            (should (search-backward (substring id 0 8) (line-beginning-position) t))
            (should (equal (get-text-property (point) 'help-echo) id))
            (let ((kill-ring nil))
              (call-interactively (lookup-key hive-rpc-list-mode-map "w"))
              (should (equal (car kill-ring) id)))
            (should (eql (car (hive-rpc-tests--cli "cancel" id)) 0))
            (should (eql (car (hive-rpc-tests--cli "cancel" free)) 0))
            (hive-rpc-tests--wait-for (lambda () (null tabulated-list-entries))))
        (kill-buffer "*hive-rpc*")))))

(ert-deftest hive-rpc-tests-list-fetches-page-by-page ()
  "Fetch `hive-rpc-list' page by page: the whole list may pass the reply limit."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (let ((ids (list (hive-rpc-tests--ask "One?" "--agent" "pager")
                     (hive-rpc-tests--ask "Two?" "--agent" "pager")
                     (hive-rpc-tests--ask "Three?" "--agent" "pager")))
          (hive-rpc--list-page-size 1)
          (sent nil))
      (dolist (id ids) (hive-rpc-tests--arrived id))
      (cl-letf* ((request (symbol-function 'jsonrpc-async-request))
                 ((symbol-function 'jsonrpc-async-request)
                  (lambda (connection method params &rest args)
                    (when (eq method 'hive/list) (push params sent))
                    (apply request connection method params args))))
        (clrhash (hive-rpc--prompts))
        (hive-rpc--list-fetch)
        (hive-rpc-tests--wait-for
         (lambda () (cl-every (lambda (id) (gethash id (hive-rpc--prompts))) ids))))
      (should (= (length sent) 3))
      (should (cl-every (lambda (params) (eql (plist-get params :limit) 1)) sent))
      (should (equal (mapcar (lambda (params) (and (plist-get params :cursor) t))
                             (reverse sent))
                     '(nil t t))))))

(ert-deftest hive-rpc-tests-list-shows-schema-fields ()
  "Show a schema question's fields in `hive-rpc-list'."
  (hive-rpc-tests--with-offline-connection
    (puthash "0123456789abcdef"
             (list :id "0123456789abcdef" :agent_id "d" :question "Deploy?"
                   :created_at (float-time) :deadline_at (+ (float-time) 60)
                   :schema '(:type "object"
                             :properties (:env (:type "string") :replicas (:type "integer"))))
             (hive-rpc--prompts))
    (should (equal (aref (cadr (car (hive-rpc--list-entries))) 4)
                   "Deploy?  {env, replicas}"))))

(ert-deftest hive-rpc-tests-start-hub-when-none-answers ()
  "Start a hub with `hive-rpc-program' when none answers, then connect."
  (skip-unless (executable-find "python3"))
  (let* ((dir (make-temp-file "hive-rpc-ert" t))
         (default-directory hive-rpc-tests--root)
         (hive-rpc-socket (expand-file-name "hub.sock" dir))
         (hive-rpc-program (list "python3" "-m" "hive_rpc" "serve"
                                 "--data-dir" (expand-file-name "data" dir)
                                 "--store" "memory" "--no-notify")))
    (unwind-protect
        (progn
          (hive-rpc-mode 1)
          (should (memq hive-rpc--state '(connecting connected)))
          (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'connected)) 20)
          ;; The starter exits once the hub listens; the hub runs on, in a
          ;; session of its own, so Emacs exiting does not end it.
          (hive-rpc-tests--wait-for (lambda () (not (process-live-p hive-rpc--hub-process))))
          (should (eql (process-exit-status hive-rpc--hub-process) 0))
          (let ((pid (hive-rpc-tests--hub-pid hive-rpc-socket)))
            (should pid)
            (should-not (eql (alist-get 'sess (process-attributes pid))
                             (alist-get 'sess (process-attributes (emacs-pid)))))
            (should-not (eql (alist-get 'ppid (process-attributes pid)) (emacs-pid)))))
      (hive-rpc-mode -1)
      (hive-rpc-tests--stop-detached-hub hive-rpc-socket)
      (delete-directory dir t))))

(ert-deftest hive-rpc-tests-start-failure-says-why ()
  "Say why no hub came up, in the starter's words."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    ;; The fixture's hub holds this data dir: a second hub cannot start on it.
    (let* ((default-directory hive-rpc-tests--root)
           (hive-rpc-socket (expand-file-name "other.sock" hive-rpc-tests--dir))
           (hive-rpc-program (list "python3" "-m" "hive_rpc" "serve" "--data-dir"
                                   (expand-file-name "data" hive-rpc-tests--dir)))
           (start (with-current-buffer (messages-buffer) (point-max))))
      (hive-rpc-mode 1)
      (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'dead)) 20)
      (let ((said (with-current-buffer (messages-buffer)
                    (buffer-substring-no-properties start (point-max)))))
        (should (string-match-p
                 (format "^hive-rpc: could not start a hub on %s: another hub (pid %d) \
already serves this data dir"
                         (regexp-quote hive-rpc-socket)
                         (process-id hive-rpc-tests--hub))
                 said)))
      (should (equal (hive-rpc--mode-line-string) " hive:down")))))

(ert-deftest hive-rpc-tests-survive-missing-program ()
  "Go to the down state, not an error, when the hub program is missing."
  (let* ((dir (make-temp-file "hive-rpc-ert" t))
         (hive-rpc-socket (expand-file-name "hub.sock" dir))
         (hive-rpc-program (list "hive-rpc-tests-no-such-program" "serve")))
    (unwind-protect
        (progn
          (hive-rpc-mode 1)
          (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'dead)))
          (should (equal (hive-rpc--mode-line-string) " hive:down"))
          (should (timerp hive-rpc--reconnect-timer)))
      (hive-rpc-mode -1)
      (should-not hive-rpc--reconnect-timer)
      (delete-directory dir t))))

(ert-deftest hive-rpc-tests-reconnect-and-deliver-kept-answer ()
  "Survive the hub's death: reconnect, and deliver an answer kept meanwhile."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub (:store "sqlite")
    (hive-rpc-tests--connect)
    (let ((id (hive-rpc-tests--ask "Migrate?" "--choices" "yes,no")))
      (hive-rpc-tests--arrived id)
      (hive-rpc-tests--stop-hub)
      (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'dead)))
      (should (equal (hive-rpc--mode-line-string) " hive:down"))
      (should-not hive-rpc--countdown-timer)
      ;; The dead connection keeps the questions it brought until the next.
      (should (gethash id (hive-rpc--prompts)))
      (hive-rpc--respond id "yes")
      (should (equal (mapcar (lambda (e) (plist-get e :id)) hive-rpc--outbox)
                     (list id)))
      (let ((dead hive-rpc--connection))
        (hive-rpc-tests--start-hub "sqlite")
        (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'connected)))
        (should-not (eq hive-rpc--connection dead)))
      (hive-rpc-tests--wait-for (lambda () (null hive-rpc--outbox)))
      (should (equal (hive-rpc-tests--cli "poll" id) '(0 . "yes")))
      (hive-rpc-tests--wait-for (lambda () (equal (hive-rpc--mode-line-prompts) ""))))))

(ert-deftest hive-rpc-tests-defer-while-away-is-sent-when-back ()
  "A question typed into, then left while the hub is away, gets its countdown back."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub (:store "sqlite")
    (hive-rpc-tests--connect)
    (let ((id (hive-rpc-tests--ask "Migrate?" "--timeout" "300")))
      (hive-rpc-tests--arrived id)
      (hive-rpc--typing id)
      (hive-rpc-tests--wait-for
       (lambda () (plist-get (hive-rpc-tests--polled id) :typing_at)))
      (hive-rpc-tests--stop-hub)
      (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'dead)))
      (hive-rpc--defer id)
      (should (equal hive-rpc--deferred (list id)))
      (hive-rpc-tests--start-hub "sqlite")
      (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'connected)))
      (hive-rpc-tests--wait-for
       (lambda ()
         (let ((polled (hive-rpc-tests--polled id)))
           (and (null (plist-get polled :typing_at))
                (< (plist-get polled :deadline_at) (plist-get polled :max_deadline_at))))))
      (should-not hive-rpc--deferred))))

;; The hub dies between the human's key and Emacs reading the socket's end:
;; the write meets a closed socket (EPIPE, and SIGPIPE, which an
;; interactive Emacs ignores and a batch one dies of unless its parent
;; ignores it: scripts/test-elisp.sh does).  Stopping the connection's
;; input keeps Emacs from seeing the end first, so the write is the first
;; to meet it, every run.
(ert-deftest hive-rpc-tests-answer-as-the-hub-dies-is-kept ()
  "An answer sent into a hub that just died is kept, with no error, and sent later."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub (:store "sqlite")
    (hive-rpc-tests--connect)
    (let ((id (hive-rpc-tests--ask "Ship it?" "--timeout" "300"))
          (proc (jsonrpc--process hive-rpc--connection))
          (said nil))
      (hive-rpc-tests--arrived id)
      (stop-process proc)
      (hive-rpc-tests--stop-hub)
      (cl-letf (((symbol-function 'message)
                 (lambda (fmt &rest args)
                   (when fmt (push (apply #'format-message fmt args) said)))))
        (hive-rpc--respond id "yes"))
      (should (hive-rpc--in-outbox-p id))
      (should-not (seq-find (lambda (s) (string-match-p "no longer connected" s)) said))
      (continue-process proc)
      (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'dead)))
      (should (hive-rpc--in-outbox-p id))
      (hive-rpc-tests--start-hub "sqlite")
      (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'connected)))
      (hive-rpc-tests--wait-for (lambda () (null hive-rpc--outbox)))
      (should (equal (hive-rpc-tests--cli "poll" id) '(0 . "yes"))))))

(defun hive-rpc-tests--polled (id)
  "The hub's record of prompt ID, as `hive-rpc poll --json' prints it."
  (json-parse-string (cdr (hive-rpc-tests--cli "poll" id "--json"))
                     :object-type 'plist :null-object nil))

;; The hub dies; hive-rpc starts a new one by itself (the fixture's hub was
;; not started by hive-rpc, so this is the reconnect path, not the mode's).
(ert-deftest hive-rpc-tests-restart-hub-after-death ()
  "Start a new hub when the hub dies, and deliver an answer kept meanwhile."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub (:store "sqlite")
    (let ((default-directory hive-rpc-tests--root)
          (hive-rpc-program (list "python3" "-m" "hive_rpc" "serve"
                                  "--data-dir" (expand-file-name "data" hive-rpc-tests--dir)
                                  "--store" "sqlite" "--no-notify"))
          (hive-rpc--hub-process nil))
      (unwind-protect
          (progn
            (hive-rpc-tests--connect)
            (let ((answered (hive-rpc-tests--ask "Migrate?" "--choices" "yes,no"))
                  (waiting (hive-rpc-tests--ask "Tag it?" "--timeout" "600")))
              (hive-rpc-tests--arrived answered)
              (hive-rpc-tests--arrived waiting)
              ;; The count, and the countdown of the one with a timeout.
              (should (string-match-p "\\` hive:2 9:[45][0-9]\\'"
                                      (hive-rpc--mode-line-prompts)))
              (hive-rpc-tests--stop-hub)
              (hive-rpc-tests--wait-for (lambda () (not (eq hive-rpc--state 'connected))))
              (hive-rpc--respond answered "yes")
              (should (equal (mapcar (lambda (e) (plist-get e :id)) hive-rpc--outbox)
                             (list answered)))
              ;; Nobody restarts the hub here: hive-rpc must.
              (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'connected)) 20)
              (should (hive-rpc-tests--hub-pid hive-rpc-tests--socket))
              (should-not (eql (hive-rpc-tests--hub-pid hive-rpc-tests--socket)
                               (process-id hive-rpc-tests--hub)))
              (hive-rpc-tests--wait-for (lambda () (null hive-rpc--outbox)))
              (should (equal (hive-rpc-tests--cli "poll" answered) '(0 . "yes")))
              (hive-rpc-tests--wait-for
               (lambda () (string-match-p "\\` hive:1 9:[0-5][0-9]\\'"
                                          (hive-rpc--mode-line-prompts))))
              (should (gethash waiting (hive-rpc--prompts)))
              ;; One start only: the reconnect timer is gone and starts no
              ;; other, and the starter has exited.
              (should-not hive-rpc--reconnect-timer)
              (hive-rpc-tests--wait-for (lambda () (not (process-live-p hive-rpc--hub-process))))
              (should (eql (process-exit-status hive-rpc--hub-process) 0))))
        (hive-rpc-mode -1)
        (hive-rpc-tests--stop-detached-hub hive-rpc-tests--socket)))))

(ert-deftest hive-rpc-tests-no-second-notification-when-the-hub-notifies ()
  "Urgent prompts are notified by Emacs only when the hub does not itself."
  (skip-unless (featurep 'dbusbind))
  (require 'notifications)
  (let ((calls 0))
    (cl-letf (((symbol-function 'dbus-ping) (lambda (&rest _) t))
              ((symbol-function 'notifications-notify)
               (lambda (&rest _) (setq calls (1+ calls)))))
      (hive-rpc-tests--with-offline-connection
        (oset hive-rpc--connection hub-notifies nil)
        (hive-rpc--notify '(:agent_id "a" :question "q" :urgent t))
        (should (= calls 1))
        (oset hive-rpc--connection hub-notifies t)
        (hive-rpc--notify '(:agent_id "a" :question "q" :urgent t))
        (should (= calls 1))))))

(ert-deftest hive-rpc-tests-learn-whether-the-hub-notifies ()
  "The status the hub gives on connect sets `hive-rpc--hub-notifies'."
  (hive-rpc-tests--with-hub ()
    ;; The status request is sent, and its reply read only when we wait.
    (hive-rpc-mode 1)
    (should (eq hive-rpc--state 'connected))
    (oset hive-rpc--connection hub-notifies 'unknown)
    (hive-rpc-tests--wait-for (lambda () (not (eq (hive-rpc--hub-notifies) 'unknown))))
    ;; the test hub runs with --no-notify
    (should-not (hive-rpc--hub-notifies))))

;; "(hive-rpc doctor checks it)" is in each message; the hub's "store: " is not.
(ert-deftest hive-rpc-tests-health-shows-in-mode-line-and-messages ()
  "A `hive/health' notification marks the mode line and says so once each way."
  (hive-rpc-tests--with-offline-connection
    (let ((hive-rpc--state 'connected)
          (hive-rpc--degraded nil)
          (said nil))
      (cl-letf (((symbol-function 'message)
                 (lambda (fmt &rest args) (push (apply #'format-message fmt args) said))))
        (puthash "p1" '(:id "p1") (hive-rpc--prompts))
        (puthash "p2" '(:id "p2") (hive-rpc--prompts))
        (should (equal (hive-rpc--mode-line-prompts) " hive:2"))
        (hive-rpc-handle-notification
         nil 'hive/health '(:degraded "store: database or disk is full"))
        (should (equal (hive-rpc--mode-line-prompts) " hive:2!"))
        (should (equal (get-text-property 0 'help-echo (hive-rpc--mode-line-prompts))
                       "hive-rpc: the hub's store is degraded: database or disk is full \
(hive-rpc doctor checks it)"))
        (should (equal said '("hive-rpc: the hub's store is degraded: database or disk is full \
(hive-rpc doctor checks it)")))
        ;; The same state again (a resubscribe, the status on reconnect): no news.
        (hive-rpc-handle-notification
         nil 'hive/health '(:degraded "store: database or disk is full"))
        (should (= (length said) 1))
        (clrhash (hive-rpc--prompts))
        (should (equal (hive-rpc--mode-line-prompts) " hive:!"))
        (hive-rpc-handle-notification nil 'hive/health '(:degraded nil))
        (should (equal (hive-rpc--mode-line-prompts) ""))
        (should (equal (car said) "hive-rpc: the hub's store works again"))
        (should (= (length said) 2))
        ;; Lost hub: its health is unknown, the mode line says down.
        (hive-rpc-handle-notification nil 'hive/health '(:degraded "store: disk I/O error"))
        (let ((hive-rpc--state 'dead))
          (should (equal (hive-rpc--mode-line-string) " hive:down")))))))

(ert-deftest hive-rpc-tests-healthy-hub-after-reconnect-clears-degraded ()
  "A hub that is back healthy after Emacs lost it clears the degraded mark."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (hive-rpc-handle-notification
     hive-rpc--connection 'hive/health '(:degraded "store: database or disk is full"))
    (should (equal (hive-rpc--mode-line-prompts) " hive:!"))
    (hive-rpc-tests--stop-hub)
    (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'dead)))
    (hive-rpc-tests--start-hub "memory")
    ;; Its status on reconnect says degraded null: it sends no hive/health.
    (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'connected)))
    (hive-rpc-tests--wait-for (lambda () (null hive-rpc--degraded)))
    (should (equal (hive-rpc--mode-line-prompts) ""))))

;;; Permission prompts and the approver token

(defconst hive-rpc-tests--ask-permission
  "import sys, trio
from hive_rpc.client.async_client import HubClient
async def ask():
    async with await HubClient.connect(sys.argv[1]) as c:
        print((await c.call('hive/ask', {'question': 'Claude Code wants to run Bash: make',
            'choices': ['allow', 'deny'], 'kind': 'permission',
            'agent_id': 'claude-code-3f2a9c1d'}))['id'])
trio.run(ask)"
  "Python asking a permission prompt, as hive-rpc hook claude-code does.")

(defun hive-rpc-tests--ask-permission ()
  "Ask a permission prompt on the test hub; return its id."
  (let ((default-directory hive-rpc-tests--root))
    (with-temp-buffer
      (should (eql 0 (call-process "python3" nil '(t nil) nil "-c"
                                   hive-rpc-tests--ask-permission
                                   hive-rpc-tests--socket)))
      (string-trim (buffer-string)))))

(ert-deftest hive-rpc-tests-answer-permission-prompt-as-approver ()
  "Answer a permission prompt: Emacs proved it is an approver on connecting."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--approver hive-rpc--connection)))
    (let ((id (hive-rpc-tests--ask-permission)))
      (hive-rpc-tests--arrived id)
      (hive-rpc--respond id "allow")
      (hive-rpc-tests--wait-for (lambda () (null hive-rpc--outbox)))
      (should (equal (hive-rpc-tests--cli "poll" id) '(0 . "allow"))))))

(ert-deftest hive-rpc-tests-kept-permission-answer-waits-for-the-proof ()
  "An answer to a permission prompt kept while the hub was away lands.
After reconnecting Emacs sends it once it has proved it is an
approver again; sent first, the hub refused it and it was lost."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub (:store "sqlite")
    (hive-rpc-tests--connect)
    (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--approver hive-rpc--connection)))
    (let ((id (hive-rpc-tests--ask-permission)))
      (hive-rpc-tests--arrived id)
      (hive-rpc-tests--stop-hub)
      (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'dead)))
      (hive-rpc--respond id "allow")
      (hive-rpc-tests--start-hub "sqlite")
      (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'connected)))
      (hive-rpc-tests--wait-for (lambda () (null hive-rpc--outbox)))
      (should (equal (hive-rpc-tests--cli "poll" id) '(0 . "allow"))))))

(ert-deftest hive-rpc-tests-permission-prompt-refused-without-proof ()
  "Without the proof the hub refuses the answer, and Emacs says why."
  (skip-unless (executable-find "python3"))
  (let ((hive-rpc-prove-approver nil)
        (said nil))
    (hive-rpc-tests--with-hub ()
      (hive-rpc-tests--connect)
      (let ((id (hive-rpc-tests--ask-permission)))
        (hive-rpc-tests--arrived id)
        (cl-letf (((symbol-function 'message)
                   (lambda (fmt &rest args) (push (apply #'format fmt args) said))))
          (hive-rpc--respond id "allow")
          (hive-rpc-tests--wait-for (lambda () (null hive-rpc--outbox))))
        (should (string-prefix-p
                 "hive-rpc: answer refused: only an approver may answer a permission prompt"
                 (car said)))
        (should (equal (car (hive-rpc-tests--cli "poll" id)) 8))))))

;;; Agent sessions

(defun hive-rpc-tests--session (id state &rest more)
  "Return a session record of agent ID in STATE, with MORE fields."
  (append more
          (list :agent_id id :state state :questions 0 :permissions 0 :prompt_ids []
                :in_terminal :json-false :changed_at 0)))

(ert-deftest hive-rpc-tests-sessions-buffer-orders-and-describes ()
  "Waiting sessions first, longest waiting first; then working, idle, gone.
A waiting session says what it waits on; the project is abbreviated."
  (let ((hive-rpc--sessions (make-hash-table :test #'equal))
        (now (float-time))
        (home (expand-file-name "~/src/app")))
    (dolist (s (list
                (hive-rpc-tests--session "claude-code-11" "idle" :agent "claude-code"
                                         :display "Claude Code" :pid 11
                                         :changed_at (- now 50) :project_dir home
                                         :last_event "stop")
                (hive-rpc-tests--session "claude-code-12" "waiting" :agent "claude-code"
                                         :display "Claude Code" :pid 12
                                         :permissions 2 :questions 1
                                         :prompt_ids ["p1" "p2" "q1"]
                                         :changed_at (- now 10))
                (hive-rpc-tests--session "codex-13" "waiting" :agent "codex"
                                         :display "Codex" :in_terminal t
                                         :changed_at (- now 70)
                                         :message "Codex needs your permission")
                (hive-rpc-tests--session "deployer" "working" :changed_at (- now 5))
                (hive-rpc-tests--session "gemini-14" "gone" :changed_at (- now 1))
                (hive-rpc-tests--session "claude-code-15" "idle" :changed_at (- now 20))))
      (puthash (plist-get s :agent_id) s hive-rpc--sessions))
    (let ((entries (hive-rpc--sessions-entries)))
      (should (equal (mapcar #'car entries)
                     '("codex-13" "claude-code-12" "deployer" "claude-code-15"
                       "claude-code-11" "gemini-14")))
      (let ((rows (mapcar (lambda (e) (mapcar #'substring-no-properties (cadr e))) entries)))
        (should (equal (nth 0 rows) '("waiting: its own dialog" "Codex" "" "1m10s"
                                      "Codex needs your permission")))
        (should (equal (nth 1 rows) '("waiting: 2 permissions, 1 question" "Claude Code 12"
                                      "" "10s" "")))
        (should (equal (nth 2 rows) '("working" "deployer" "" "5s" "")))
        (should (equal (nth 4 rows) '("idle" "Claude Code 11" "~/src/app" "50s" "stop")))))
    ;; The mode line counts the two waiting sessions.
    (let ((hive-rpc--state 'connected)
          (hive-rpc--unseen (make-hash-table :test #'equal)))
      (hive-rpc-tests--with-offline-connection
        (should (equal (substring-no-properties (hive-rpc--mode-line-string))
                       " hive: 2 waiting"))
        ;; A click on it lists the sessions.
        (let ((line (hive-rpc--mode-line-string)))
          (should (eq (get-text-property (1- (length line)) 'local-map line)
                      hive-rpc--waiting-mouse-map)))
        (puthash "a" (list :id "a" :deadline_at (+ now 300)) (hive-rpc--prompts))
        (should (equal (substring-no-properties (hive-rpc--mode-line-string))
                       " hive:1 · 2 waiting"))
        (puthash "x" '(:id "x" :status "expired" :unseen t) hive-rpc--unseen)
        (should (equal (substring-no-properties (hive-rpc--mode-line-string))
                       " hive:1, 1 expired unseen · 2 waiting"))
        (clrhash hive-rpc--unseen))
      ;; A hub lost: its sessions are not news.
      (let ((hive-rpc--state 'dead))
        (should (equal (substring-no-properties (hive-rpc--mode-line-string))
                       " hive:down"))))))

(ert-deftest hive-rpc-tests-session-buffer-is-found-by-process-ancestry ()
  "The buffer whose process is an ancestor of the session's pid is its terminal."
  (let* ((buffer (generate-new-buffer " *hive-rpc-test-terminal*"))
         (proc (make-process :name "hive-rpc-test-terminal" :buffer buffer :noquery t
                             :command '("sh" "-c" "sleep 300 & echo $!; wait"))))
    (unwind-protect
        (let ((child (hive-rpc-tests--wait-for
                      (lambda ()
                        (with-current-buffer buffer
                          (and (string-match "\\([0-9]+\\)\n" (buffer-string))
                               (string-to-number (match-string 1 (buffer-string)))))))))
          (should (eq (hive-rpc--session-buffer (list :pid child)) buffer))
          (should (eq (hive-rpc--session-buffer (list :pid (process-id proc))) buffer))
          ;; Emacs's own pid has no terminal buffer above it; no pid, none.
          (should-not (hive-rpc--session-buffer (list :pid (emacs-pid))))
          (should-not (hive-rpc--session-buffer (list :pid nil))))
      (delete-process proc)
      (kill-buffer buffer))))

(ert-deftest hive-rpc-tests-session-jumps-to-its-lings-buffer ()
  "A session with no buffer above its process shows its ling's buffer.
Emacs asks the hub where the ling is; it shows the buffer only if
the human is still where they asked."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (let ((ling (generate-new-buffer "*rec ling*"))
          (from (generate-new-buffer "*asked here*"))
          (session (hive-rpc-tests--session "deployer" "idle" :ling "rec.sessions")))
      (unwind-protect
          (progn
            (make-comint-in-buffer "hive-rpc-test-ling" ling "cat")
            (set-process-query-on-exit-flag (get-buffer-process ling) nil)
            (hive-rpc-register-ling "rec.sessions" ling)
            (hive-rpc-tests--wait-for
             (lambda () (member (buffer-name ling) hive-rpc--ling-buffers)))
            (switch-to-buffer from)
            (should (hive-rpc--jump-to-ling session from))
            (hive-rpc-tests--wait-for (lambda () (eq (window-buffer) ling)))
            ;; Moved on before the hub answered: only the echo area says it.
            (switch-to-buffer "*scratch*")
            (let (said)
              (cl-letf (((symbol-function 'message)
                         (lambda (fmt &rest args) (push (apply #'format fmt args) said))))
                (should (hive-rpc--jump-to-ling session from))
                (hive-rpc-tests--wait-for (lambda () said)))
              (should (equal said '("hive-rpc: ling rec.sessions is buffer *rec ling*"))))
            (should (eq (window-buffer) (get-buffer "*scratch*"))))
        (kill-buffer from)
        (let ((proc (get-buffer-process ling)))
          (when (process-live-p proc) (delete-process proc)))
        (kill-buffer ling)))))

(ert-deftest hive-rpc-tests-sessions-without-a-hub-says-so ()
  "Without a connection the sessions buffer is empty, and the echo area says why."
  (let ((hive-rpc--state nil)
        (hive-rpc--sessions (make-hash-table :test #'equal))
        said)
    (unwind-protect
        (cl-letf (((symbol-function 'message)
                   (lambda (fmt &rest args) (push (apply #'format fmt args) said))))
          (hive-rpc-sessions)
          (should (equal said '("hive-rpc: not connected to the hub; \
the sessions show once it is")))
          (should (eq (window-buffer) (get-buffer hive-rpc--sessions-buffer)))
          (should-not tabulated-list-entries))
      (kill-buffer hive-rpc--sessions-buffer))))

(ert-deftest hive-rpc-tests-own-dialog-is-said-once ()
  "A session that starts waiting in its own terminal's dialog is said once."
  (let ((hive-rpc--sessions (make-hash-table :test #'equal))
        (dialog (hive-rpc-tests--session "claude-code-7" "waiting" :in_terminal t
                                         :display "Claude Code" :project_dir "/srv/app"))
        said)
    (hive-rpc-tests--with-offline-connection
      (cl-letf (((symbol-function 'message)
                 (lambda (fmt &rest args) (push (apply #'format fmt args) said))))
        (hive-rpc--dispatch hive-rpc--connection 'hive/session dialog)
        (hive-rpc--dispatch hive-rpc--connection 'hive/session dialog)
        ;; Waiting on a question of the hub's instead: the question is announced.
        (hive-rpc--dispatch hive-rpc--connection 'hive/session
                            (hive-rpc-tests--session "codex-8" "waiting" :questions 1
                                                     :in_terminal t))))
    (should (equal said (list (substitute-command-keys "hive-rpc: Claude Code in /srv/app \
waits on you in its terminal (\\[hive-rpc-sessions]: sessions)"))))))

(ert-deftest hive-rpc-tests-tmux-pane-of-a-session ()
  "A session's terminal \"tmux:%3@SOCKET\" names a pane and its server."
  (should (equal (hive-rpc--tmux-pane "tmux:%3@/tmp/tmux-1000/default")
                 '("%3" . "/tmp/tmux-1000/default")))
  (should-not (hive-rpc--tmux-pane "zellij:main:3"))
  (should-not (hive-rpc--tmux-pane nil)))

(ert-deftest hive-rpc-tests-sessions-buffer-refreshes-once-and-only-shown ()
  "A burst of session changes makes one refresh; a buffer not shown makes none."
  (let* ((hive-rpc--sessions (make-hash-table :test #'equal))
         (refreshes 0)
         (count (lambda (&rest _) (setq refreshes (1+ refreshes)))))
    (advice-add 'hive-rpc--sessions-refresh :after count)
    (unwind-protect
        (let ((buffer (hive-rpc--sessions-show)))
          (setq refreshes 0)
          (puthash "a" (hive-rpc-tests--session "a" "idle") hive-rpc--sessions)
          (run-hook-with-args 'hive-rpc-sessions-changed-hook "a")
          (hive-rpc-tests--wait-for (lambda () (not (timerp hive-rpc--sessions-pending))))
          (should (= refreshes 0))
          (should-not (buffer-local-value 'tabulated-list-entries buffer))
          (switch-to-buffer buffer)
          (dotimes (i 100)
            (let ((id (format "s%d" i)))
              (puthash id (hive-rpc-tests--session id "working") hive-rpc--sessions)
              (run-hook-with-args 'hive-rpc-sessions-changed-hook id)))
          (hive-rpc-tests--wait-for (lambda () (not (timerp hive-rpc--sessions-pending))))
          (should (= refreshes 1))
          (should (= (length (buffer-local-value 'tabulated-list-entries buffer)) 101)))
      (advice-remove 'hive-rpc--sessions-refresh count)
      (kill-buffer hive-rpc--sessions-buffer))))

(ert-deftest hive-rpc-tests-sessions-follow-the-hub ()
  "A subscribed Emacs keeps the hub's sessions: shown live, counted waiting."
  (skip-unless (executable-find "python3"))
  (hive-rpc-tests--with-hub ()
    (hive-rpc-tests--connect)
    (let ((id (hive-rpc-tests--ask "Deploy?" "--agent" "deployer")))
      (hive-rpc-tests--arrived id)
      (unwind-protect
          ;; Shown, as `hive-rpc-sessions' shows it: a buffer not shown waits.
          (with-current-buffer (switch-to-buffer (hive-rpc--sessions-show t))
            (hive-rpc-tests--wait-for (lambda () (assoc "deployer" tabulated-list-entries)))
            (should (equal (substring-no-properties
                            (aref (cadr (assoc "deployer" tabulated-list-entries)) 0))
                           "waiting: 1 question"))
            ;; Its message: the question RET opens.
            (should (equal (aref (cadr (assoc "deployer" tabulated-list-entries)) 4)
                           "Deploy?"))
            (should (equal (substring-no-properties (hive-rpc--mode-line-string))
                           " hive:1 · 1 waiting"))
            ;; RET opens that question: the session's oldest prompt.
            (goto-char (point-min))
            (should (equal (tabulated-list-get-id) "deployer"))
            (let (asked)
              (cl-letf (((symbol-function 'hive-rpc--chain) (lambda (p) (setq asked p))))
                (hive-rpc-sessions-visit))
              (should (equal asked id)))
            (should (eql (car (hive-rpc-tests--cli "cancel" id)) 0))
            ;; Known only by its prompt, the session leaves the list with it.
            (hive-rpc-tests--wait-for (lambda () (null tabulated-list-entries)))
            (should (equal (hive-rpc--mode-line-string) "")))
        (kill-buffer hive-rpc--sessions-buffer)))))

(ert-deftest hive-rpc-tests-a-snapshot-of-many-questions-is-queued-once-in-order ()
  "A subscription's thousands of `hive/prompt' are queued once each, in order.
The mode line and its hook run once for the whole burst, after it
\(`hive-rpc--later'), not once per question."
  (hive-rpc-tests--with-offline-connection
    (let* ((hive-rpc--later-functions nil)
           (hive-rpc--later-timer nil)
           (hive-rpc--outbox nil)
           (hive-rpc--current nil)
           (runs 0)
           (hive-rpc-update-hook (list (lambda () (setq runs (1+ runs)))))
           (now (float-time))
           (ids (mapcar (lambda (i) (format "%016x" i)) (number-sequence 1 3000))))
      (dolist (id ids)
        (hive-rpc--dispatch hive-rpc--connection 'hive/prompt
                            (list :id id :status "pending" :agent_id "a"
                                  :question "q" :created_at now
                                  :deadline_at (+ now 600))))
      (should (= runs 0))
      (should (equal (hive-rpc--queue) ids))
      (should (= (hash-table-count (hive-rpc--prompts)) 3000))
      ;; The same question again (a reconnect's replay) is not queued twice.
      (hive-rpc--dispatch hive-rpc--connection 'hive/prompt
                          (list :id (car ids) :status "pending" :agent_id "a"
                                :question "q" :created_at now :deadline_at (+ now 600)))
      (should (equal (hive-rpc--queue) ids))
      (should (timerp hive-rpc--later-timer))
      (cancel-timer hive-rpc--later-timer)
      (hive-rpc--run-later)
      (should (= runs 1))
      (should-not hive-rpc--later-functions)
      ;; Outside a notification, an update runs at once, as before.
      (hive-rpc--update)
      (should (= runs 2)))))

(ert-deftest hive-rpc-tests-enqueue-follows-the-queue-however-it-was-set ()
  "`hive-rpc--enqueue' appends to the queue as `setf' last left it."
  (hive-rpc-tests--with-offline-connection
    (hive-rpc--enqueue "a")
    (hive-rpc--enqueue "b")
    (should (equal (hive-rpc--queue) '("a" "b")))
    (setf (hive-rpc--queue) (delete "b" (hive-rpc--queue)))
    (hive-rpc--enqueue "c")
    (should (equal (hive-rpc--queue) '("a" "c")))
    (push "z" (hive-rpc--queue))
    (hive-rpc--enqueue "d")
    (should (equal (hive-rpc--queue) '("z" "a" "c" "d")))
    (setf (hive-rpc--queue) nil)
    (hive-rpc--enqueue "e")
    (should (equal (hive-rpc--queue) '("e")))))

(provide 'hive-rpc-tests)
;;; hive-rpc-tests.el ends here
