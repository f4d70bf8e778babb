#!/usr/bin/env bash
# Lint the Emacs package, then run its ERT suite against a real hub.
# Exits non-zero if the lint finds anything or any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

EMACS=${EMACS:-emacs}
bash scripts/lint-elisp.sh
# An interactive Emacs ignores SIGPIPE; a batch one dies of it (exit 141) when it
# writes into a hub that died before it read the socket's end, which the tests of
# a lost hub do by design.  Ignore it here as Emacs does for its users, so a write
# fails with EPIPE and the package's handling of it is what is tested.
trap '' PIPE
echo "== ERT elisp/test/hive-rpc-tests.el"
"$EMACS" --batch -Q -L elisp -l elisp/test/hive-rpc-tests.el -f ert-run-tests-batch-and-exit
# The ling suite reuses the hub fixture of hive-rpc-tests.el; run only its own tests,
# with Debian's elpa-vterm on the load-path when installed (its spawned buffers).
echo "== ERT elisp/test/hive-rpc-ling-tests.el"
VTERM=()
for dir in /usr/share/emacs/site-lisp/elpa/vterm-*; do [ -d "$dir" ] && VTERM=(-L "$dir"); done
"$EMACS" --batch -Q -L elisp -L elisp/test "${VTERM[@]}" -l elisp/test/hive-rpc-ling-tests.el \
    --eval '(ert-run-tests-batch-and-exit "\\`hive-rpc-ling-tests-")'
# The minibuffer suite reuses the hub fixture of hive-rpc-tests.el too.
echo "== ERT elisp/test/hive-rpc-minibuffer-tests.el"
"$EMACS" --batch -Q -L elisp -L elisp/test -l elisp/test/hive-rpc-minibuffer-tests.el \
    --eval '(ert-run-tests-batch-and-exit "\\`hive-rpc-minibuffer-tests-")'
