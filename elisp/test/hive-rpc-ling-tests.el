;;; hive-rpc-ling-tests.el --- Tests for hive-rpc-ling.el  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The hive_rpc authors

;; This file is not part of GNU Emacs.

;;; Commentary:

;; ERT tests of the hub's requests to Emacs (`hive/bufferState',
;; `hive/deliver') against a real comint buffer: the fixture runs a
;; recorder (`cat' appending its input to a file) under comint, and
;; the tests check what the process received, byte for byte.  One test
;; runs a real hub to see Emacs offer itself as a delivery peer on
;; every connection.  Run from the repository's root with
;; scripts/test-elisp.sh.

;;; Code:

(require 'ert)
(require 'comint)
(require 'seq)
(require 'hive-rpc)
(require 'hive-rpc-ling)
(require 'hive-rpc-tests)

(defvar hive-rpc-ling-tests--file nil
  "File the recorder of `hive-rpc-ling-tests--with-recorder' appends to.")

(defun hive-rpc-ling-tests--call-with-recorder (fn)
  "Call FN with a comint buffer whose process records its input.
FN gets the buffer; `hive-rpc-ling-tests--file' names the record,
in a temporary directory that is also `default-directory'."
  (let* ((dir (file-name-as-directory (make-temp-file "hive-rpc-ling" t)))
         (default-directory dir)
         (hive-rpc-ling-tests--file (expand-file-name "record" dir))
         (buffer (generate-new-buffer "*hive-rpc-ling recorder*")))
    (unwind-protect
        (progn
          (make-comint-in-buffer "hive-rpc-ling-recorder" buffer "sh" nil "-c"
                                 "echo recorder ready; exec cat >> record")
          (set-process-query-on-exit-flag (get-buffer-process buffer) nil)
          (hive-rpc-tests--wait-for
           (lambda () (with-current-buffer buffer
                        (string-match-p "recorder ready" (buffer-string)))))
          (funcall fn buffer))
      (let ((proc (get-buffer-process buffer)))
        (when (process-live-p proc) (delete-process proc)))
      (kill-buffer buffer)
      (delete-directory dir t))))

(defmacro hive-rpc-ling-tests--with-recorder (var &rest body)
  "Run BODY with VAR bound to a comint buffer recording its input."
  (declare (indent 1) (debug (symbolp body)))
  `(hive-rpc-ling-tests--call-with-recorder (lambda (,var) ,@body)))

(defun hive-rpc-ling-tests--record ()
  "Return what the recorder received so far."
  (if (file-exists-p hive-rpc-ling-tests--file)
      (with-temp-buffer
        (let ((coding-system-for-read 'utf-8-unix))
          (insert-file-contents hive-rpc-ling-tests--file))
        (buffer-string))
    ""))

(defun hive-rpc-ling-tests--request (method &rest params)
  "Answer request METHOD with PARAMS as the hub's requests are answered.
Return (result . VALUE), or (error CODE MESSAGE) when refused."
  (condition-case err
      (cons 'result (hive-rpc--request-dispatch nil method params))
    (jsonrpc-error
     (list 'error (alist-get 'jsonrpc-error-code (cdr err))
           (alist-get 'jsonrpc-error-message (cdr err))))))

(ert-deftest hive-rpc-ling-tests-strip-control-characters ()
  "Strip control characters, keeping newlines and tabs."
  (should (equal (hive-rpc-ling--strip "a\e[201~b\r\n\tc\0\177\u009bd\C-x")
                 "a[201~b\n\tcd"))
  (should (equal (hive-rpc-ling--strip (propertize "x" 'face 'bold)) "x"))
  (should-not (text-properties-at 0 (hive-rpc-ling--strip (propertize "x" 'face 'bold)))))

(ert-deftest hive-rpc-ling-tests-default-name ()
  "Derive sane ling names from buffer names."
  (should (equal (hive-rpc-ling--default-name "*claude-code: auth*") "claude-code-auth"))
  (should (equal (hive-rpc-ling--default-name "*vterm*<2>") "vterm-2"))
  (should (equal (hive-rpc-ling--default-name "Main.Feature..Auth ") "main.feature.auth"))
  (should (equal (hive-rpc-ling--default-name "***") "ling"))
  (dolist (name '("*claude-code: auth*" "*vterm*<2>" "a -. b" "*claude:/home/me/proj/*"))
    (should (string-match-p hive-rpc-ling--name-regexp (hive-rpc-ling--default-name name)))))

(ert-deftest hive-rpc-ling-tests-unknown-request-is-not-found ()
  "Refuse requests nobody handles with method-not-found."
  (should (equal (hive-rpc-ling-tests--request 'hive/evaluate :form "(kill-emacs)")
                 '(error -32601 "hive/evaluate is not handled"))))

(ert-deftest hive-rpc-ling-tests-buffer-state-of-comint ()
  "Report a comint buffer alive with its tail and unsent input, then dead."
  (skip-unless (executable-find "cat"))
  (hive-rpc-ling-tests--with-recorder buffer
    (let ((state (cdr (hive-rpc-ling-tests--request
                       'hive/bufferState :buffer (buffer-name buffer)))))
      (should (eq (plist-get state :exists) t))
      (should (eq (plist-get state :alive) t))
      (should (equal (plist-get state :mode) "comint"))
      (should (string-match-p "recorder ready" (plist-get state :tail)))
      (should (equal (plist-get state :pid)
                     (process-id (get-buffer-process buffer))))
      (should (equal (plist-get state :draft) "")))
    (with-current-buffer buffer
      (goto-char (point-max))
      (insert "half-typed"))
    (let ((state (cdr (hive-rpc-ling-tests--request
                       'hive/bufferState :buffer (buffer-name buffer)))))
      (should (equal (plist-get state :draft) "half-typed")))
    (delete-process (get-buffer-process buffer))
    (let ((state (cdr (hive-rpc-ling-tests--request
                       'hive/bufferState :buffer (buffer-name buffer)))))
      (should (eq (plist-get state :exists) t))
      (should (eq (plist-get state :alive) :json-false))
      (should (equal (plist-get state :mode) "comint")))))

(ert-deftest hive-rpc-ling-tests-buffer-state-of-others ()
  "Report a missing buffer as not existing, any other buffer as not alive."
  (should (equal (hive-rpc-ling-tests--request 'hive/bufferState :buffer "no such buffer")
                 '(result :exists :json-false :alive :json-false :mode nil :tail ""
                          :pid nil :draft nil)))
  (with-temp-buffer
    (insert "line 1\nline 2\n\n\n")
    (let ((state (cdr (hive-rpc-ling-tests--request
                       'hive/bufferState :buffer (buffer-name)))))
      (should (eq (plist-get state :alive) :json-false))
      (should (equal (plist-get state :mode) "fundamental-mode"))
      (should (equal (plist-get state :tail) "line 1\nline 2"))))
  (should (equal (car (cdr (hive-rpc-ling-tests--request 'hive/bufferState :buffer 7)))
                 -32602)))

(ert-deftest hive-rpc-ling-tests-tail-is-the-last-lines ()
  "Send only the last `hive-rpc-ling-tail-lines' lines."
  (with-temp-buffer
    (dotimes (i 100) (insert (format "line %d\n" i)))
    (let ((hive-rpc-ling-tail-lines 3))
      (should (equal (hive-rpc-ling--tail (current-buffer))
                     "line 97\nline 98\nline 99")))))

(ert-deftest hive-rpc-ling-tests-deliver-to-comint ()
  "Type text into a comint process once, as literal data, and submit it."
  (skip-unless (executable-find "cat"))
  (hive-rpc-ling-tests--with-recorder buffer
    (write-region "keep me" nil "x")
    (let ((text (concat "(delete-file \"x\")\n\\C-x (kill-emacs)\t"
                        "\e[201~\e]0;title\a\r\C-c\C-d\C-u end")))
      (should (equal (hive-rpc-ling-tests--request
                      'hive/deliver :buffer (buffer-name buffer) :text text)
                     '(result :delivered t)))
      (let ((expected (concat "(delete-file \"x\")\n\\C-x (kill-emacs)\t"
                              "[201~]0;title end\n")))
        (hive-rpc-tests--wait-for
         (lambda () (equal (hive-rpc-ling-tests--record) expected)))
        ;; Nothing more arrives: it was typed once.
        (accept-process-output nil 0.3)
        (should (equal (hive-rpc-ling-tests--record) expected)))
      (should (file-exists-p "x"))
      (should (process-live-p (get-buffer-process buffer))))))

(ert-deftest hive-rpc-ling-tests-deliver-keeps-the-users-draft ()
  "Set aside input the user typed but did not send, and put it back."
  (skip-unless (executable-find "cat"))
  (hive-rpc-ling-tests--with-recorder buffer
    (with-current-buffer buffer
      (goto-char (point-max))
      (insert "half-typed"))
    (should (equal (hive-rpc-ling-tests--request
                    'hive/deliver :buffer (buffer-name buffer) :text "from the hub")
                   '(result :delivered t)))
    (hive-rpc-tests--wait-for
     (lambda () (equal (hive-rpc-ling-tests--record) "from the hub\n")))
    (with-current-buffer buffer
      (should (equal (buffer-substring-no-properties
                      (process-mark (get-buffer-process buffer)) (point-max))
                     "half-typed")))))

(ert-deftest hive-rpc-ling-tests-deliver-refusals ()
  "Refuse to type into a missing buffer, a non-terminal, a dead one, or IELM."
  (skip-unless (executable-find "cat"))
  (should (equal (hive-rpc-ling-tests--request 'hive/deliver :buffer "nope" :text "hi")
                 '(error -32020 "no buffer named nope in this Emacs")))
  (with-temp-buffer
    (should (equal (hive-rpc-ling-tests--request
                    'hive/deliver :buffer (buffer-name) :text "hi")
                   (list 'error -32020
                         (format "buffer %s is not a terminal (vterm, eat, term or comint)"
                                 (buffer-name)))))
    (should (equal (buffer-string) "")))
  (should (equal (car (cdr (hive-rpc-ling-tests--request 'hive/deliver :buffer "x")))
                 -32602))
  (require 'ielm)
  (let ((buffer (save-window-excursion (ielm))))
    (unwind-protect
        (progn
          (should (equal (car (hive-rpc-ling-tests--request
                               'hive/deliver :buffer (buffer-name buffer)
                               :text "(setq hive-rpc-ling-tests--evaluated t)"))
                         'error))
          (should-not (boundp 'hive-rpc-ling-tests--evaluated)))
      (let ((kill-buffer-query-functions nil))
        (kill-buffer buffer))))
  (hive-rpc-ling-tests--with-recorder buffer
    (delete-process (get-buffer-process buffer))
    (should (equal (hive-rpc-ling-tests--request
                    'hive/deliver :buffer (buffer-name buffer) :text "hi")
                   (list 'error -32020
                         (format "the process in buffer %s has exited"
                                 (buffer-name buffer)))))))

;; The hub's watch of a buffer.  A stand-in connection (a symbol) takes
;; the notifications: `jsonrpc-notify' and `jsonrpc-running-p' are
;; replaced for the test's extent.

(defvar hive-rpc-ling-tests--sent nil
  "The (CONNECTION METHOD PARAMS) sent by `jsonrpc-notify', newest first.")

(defun hive-rpc-ling-tests--call-with-notes (fn)
  "Call FN with `jsonrpc-notify' recording in `hive-rpc-ling-tests--sent'.
Only the connections `hub' and `other' run."
  (let ((hive-rpc-ling-tests--sent nil))
    (cl-letf (((symbol-function 'jsonrpc-notify)
               (lambda (conn method params)
                 (push (list conn method params) hive-rpc-ling-tests--sent)))
              ((symbol-function 'jsonrpc-running-p)
               (lambda (conn) (memq conn '(hub other)))))
      (funcall fn))))

(defmacro hive-rpc-ling-tests--with-notes (&rest body)
  "Run BODY recording the notifications sent to the hub."
  (declare (indent 0) (debug (body)))
  `(hive-rpc-ling-tests--call-with-notes (lambda () ,@body)))

(defun hive-rpc-ling-tests--watch (conn method buffer)
  "Answer CONN's request METHOD (watch or unwatch) of BUFFER."
  (condition-case err
      (hive-rpc--request-dispatch conn method (list :buffer (buffer-name buffer)))
    (jsonrpc-error (list 'error (alist-get 'jsonrpc-error-code (cdr err))))))

(defun hive-rpc-ling-tests--changes ()
  "Return the notes sent, oldest first, once the current buffer's are sent.
That is once its gathering timer has run: no other is pending then,
so nothing more is sent for the changes made so far."
  (hive-rpc-tests--wait-for (lambda () (null hive-rpc-ling--watch-timer)))
  (reverse hive-rpc-ling-tests--sent))

(ert-deftest hive-rpc-ling-tests-watch-tells-a-burst-of-changes-once ()
  "Send one `hive/bufferChanged' for a burst of changes, and none unwatched."
  (hive-rpc-ling-tests--with-notes
    (with-temp-buffer
      (rename-buffer "*watched*" t)
      (let ((name (buffer-name)))
        (should (equal (hive-rpc-ling-tests--watch 'hub 'hive/watchBuffer (current-buffer))
                       '(:watching t)))
        (should (memq #'hive-rpc-ling--changed after-change-functions))
        (dotimes (i 20) (insert (format "output %d\n" i)))
        (should (equal (hive-rpc-ling-tests--changes)
                       `((hub hive/bufferChanged (:buffer ,name)))))
        (setq hive-rpc-ling-tests--sent nil)
        (insert "more")
        (should (equal (hive-rpc-ling-tests--changes)
                       `((hub hive/bufferChanged (:buffer ,name)))))
        (setq hive-rpc-ling-tests--sent nil)
        (should (equal (hive-rpc-ling-tests--watch 'hub 'hive/unwatchBuffer (current-buffer))
                       '(:watching :json-false)))
        (should-not (memq #'hive-rpc-ling--changed after-change-functions))
        (should-not (memq #'hive-rpc-ling--killed kill-buffer-hook))
        (insert "unwatched")
        (should-not hive-rpc-ling--watch-timer)))))

(ert-deftest hive-rpc-ling-tests-each-watch-is-undone-once ()
  "Keep following a buffer until each of its watches is undone."
  (hive-rpc-ling-tests--with-notes
    (with-temp-buffer
      (let ((name (buffer-name)))
        (hive-rpc-ling-tests--watch 'hub 'hive/watchBuffer (current-buffer))
        (hive-rpc-ling-tests--watch 'hub 'hive/watchBuffer (current-buffer))
        (hive-rpc-ling-tests--watch 'other 'hive/watchBuffer (current-buffer))
        (insert "x")
        ;; One note per connection, however many watches it holds.
        (should (seq-set-equal-p (hive-rpc-ling-tests--changes)
                                 `((hub hive/bufferChanged (:buffer ,name))
                                   (other hive/bufferChanged (:buffer ,name)))))
        (should (= (length hive-rpc-ling-tests--sent) 2))
        (should (equal (hive-rpc-ling-tests--watch 'other 'hive/unwatchBuffer (current-buffer))
                       '(:watching t)))
        (should (equal (hive-rpc-ling-tests--watch 'hub 'hive/unwatchBuffer (current-buffer))
                       '(:watching t)))
        (setq hive-rpc-ling-tests--sent nil)
        (insert "y")
        (should (equal (hive-rpc-ling-tests--changes)
                       `((hub hive/bufferChanged (:buffer ,name)))))
        (should (equal (hive-rpc-ling-tests--watch 'hub 'hive/unwatchBuffer (current-buffer))
                       '(:watching :json-false)))
        ;; One more unwatch than watches: nothing to undo, no error.
        (should (equal (hive-rpc-ling-tests--watch 'hub 'hive/unwatchBuffer (current-buffer))
                       '(:watching :json-false)))))))

(ert-deftest hive-rpc-ling-tests-watch-tells-a-kill ()
  "Tell the hub a watched buffer was killed, once it is gone."
  (hive-rpc-ling-tests--with-notes
    (let* ((buffer (generate-new-buffer "*watched kill*"))
           (name (buffer-name buffer)))
      (hive-rpc-ling-tests--watch 'hub 'hive/watchBuffer buffer)
      (with-current-buffer buffer (insert "last words"))
      (kill-buffer buffer)
      ;; Sent from a timer, the one left: the buffer's own went with it.
      (hive-rpc-tests--wait-for (lambda () hive-rpc-ling-tests--sent))
      (should (equal hive-rpc-ling-tests--sent
                     `((hub hive/bufferChanged (:buffer ,name)))))
      ;; Its unwatch, after: the buffer is gone, so it is watched no more.
      (should (equal (hive-rpc-ling-tests--request 'hive/unwatchBuffer :buffer name)
                     '(result :watching :json-false))))))

(ert-deftest hive-rpc-ling-tests-watch-drops-closed-connections ()
  "Drop the watches of a connection that closed, and the hooks with the last."
  (hive-rpc-ling-tests--with-notes
    (with-temp-buffer
      (hive-rpc-ling-tests--watch 'gone 'hive/watchBuffer (current-buffer))
      (insert "x")
      (should hive-rpc-ling--watch-timer)
      (should (equal (hive-rpc-ling-tests--changes) nil))
      (should-not hive-rpc-ling--watches)
      (should-not (memq #'hive-rpc-ling--changed after-change-functions)))))

(ert-deftest hive-rpc-ling-tests-watch-refusals ()
  "Refuse to watch a missing buffer, or any when delivery is off."
  (should (equal (hive-rpc-ling-tests--request 'hive/watchBuffer :buffer "no such buffer")
                 '(error -32020 "no buffer named no such buffer in this Emacs")))
  (should (equal (car (cdr (hive-rpc-ling-tests--request 'hive/watchBuffer :buffer 7)))
                 -32602))
  (with-temp-buffer
    (let ((hive-rpc-ling-offer-delivery nil))
      (should (equal (car (hive-rpc-ling-tests--request
                           'hive/watchBuffer :buffer (buffer-name)))
                     'error)))
    (should-not hive-rpc-ling--watches)))

(ert-deftest hive-rpc-ling-tests-offer-delivery-off ()
  "Refuse the hub's requests when delivery is turned off."
  (let ((hive-rpc-ling-offer-delivery nil))
    (should (equal (car (hive-rpc-ling-tests--request 'hive/bufferState :buffer "x"))
                   'error))
    (should (equal (car (hive-rpc-ling-tests--request 'hive/deliver :buffer "x" :text "y"))
                   'error))))

(ert-deftest hive-rpc-ling-tests-offer-on-every-connection ()
  "Offer Emacs as a delivery peer on connecting, and again after reconnecting."
  (skip-unless (executable-find "python3"))
  (let ((offers nil))
    (hive-rpc-tests--with-hub ()
      (let ((record (lambda (_conn method &rest _)
                      (when (eq method 'hive/offerDelivery)
                        (push method offers)))))
        (advice-add 'jsonrpc-async-request :before record)
        (unwind-protect
            (progn
              (hive-rpc-tests--connect)
              (hive-rpc-tests--wait-for (lambda () (= (length offers) 1)))
              ;; The hub takes the offer.
              (should (equal (jsonrpc-request hive-rpc--connection 'hive/offerDelivery nil)
                             '(:offered t)))
              (hive-rpc-tests--stop-hub)
              (hive-rpc-tests--wait-for (lambda () (not (eq hive-rpc--state 'connected))))
              (hive-rpc-tests--start-hub "memory")
              (hive-rpc-tests--wait-for (lambda () (eq hive-rpc--state 'connected)) 20)
              (hive-rpc-tests--wait-for (lambda () (= (length offers) 2))))
          (advice-remove 'jsonrpc-async-request record))))))

(ert-deftest hive-rpc-ling-tests-start-names-the-ling ()
  "A spawned ling's program finds its name in HIVE_RPC_LING.
In a term buffer and, when vterm is on the `load-path', in a vterm buffer."
  (dolist (make (cons #'hive-rpc-ling--term
                      (and (require 'vterm nil t) (list #'hive-rpc-ling--vterm))))
    (let* ((dir (file-name-as-directory (make-temp-file "hive-rpc-ling" t)))
           (out (expand-file-name "env" dir))
           (buffer nil))
      (unwind-protect
          (progn
            (setq buffer (hive-rpc-ling--start
                          "main.e" "*ling main.e*"
                          (list "sh" "-c" (format "printf %%s \"$HIVE_RPC_LING\" > %s"
                                                  (shell-quote-argument out)))
                          make))
            (with-timeout (10 (ert-fail (format "%s wrote no %s" make out)))
              (while (not (and (file-exists-p out)
                               (> (file-attribute-size (file-attributes out)) 0)))
                (accept-process-output nil 0.05)))
            (should (equal (with-temp-buffer
                             (insert-file-contents out)
                             (buffer-string))
                           "main.e"))
            (should-not (getenv "HIVE_RPC_LING")))
        (when (buffer-live-p buffer)
          (let ((process (get-buffer-process buffer)))
            (when process (set-process-query-on-exit-flag process nil)))
          (kill-buffer buffer))
        (delete-directory dir t)))))

(ert-deftest hive-rpc-ling-tests-register-needs-a-terminal ()
  "Refuse to register a buffer that is not a terminal, or a bad name."
  (with-temp-buffer
    (should-error (call-interactively #'hive-rpc-register-ling) :type 'user-error))
  (should-error (hive-rpc-register-ling "bad name!" (current-buffer)) :type 'user-error))

(provide 'hive-rpc-ling-tests)
;;; hive-rpc-ling-tests.el ends here
