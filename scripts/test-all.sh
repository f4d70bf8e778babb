#!/usr/bin/env bash
# Install everything the tests need, then run every test: lint, types, elisp, Python.
# This is the README's second set-up command; .ci/run calls it and nothing else.
# Exits non-zero if any step fails or if pytest ran no test.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests drive for real: Emacs (batch ERT and `emacs -nw` under
# tmux), package-lint, Debian's epc.el as an independent EPC peer, and a session bus
# with a real notification daemon (dunst on Xvfb) for urgent prompts; a real NATS
# server (JetStream) for the shared store, and Chromium for the dashboard test and the
# real VS Code's (code-server, built by scripts/install-code-server.sh: its native modules
# need a toolchain and libkrb5-dev, its search ripgrep), and bubblewrap and socat for
# Claude Code's sandbox on Linux (tests/claude/test_claude_approver.py).
APT_PACKAGES=(emacs-nox elpa-package-lint elpa-epc elpa-vterm tmux dbus dunst xvfb
    nats-server openssl chromium libnotify-bin libkrb5-dev ripgrep build-essential bubblewrap socat)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

# Python: a private virtualenv, so the machine's own packages cannot leak in.
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
export PATH="$PWD/.venv/bin:$PATH"

echo "== ruff"
ruff check hive_rpc tests bench
ruff format --check hive_rpc tests bench
echo "== mypy --strict hive_rpc"
mypy --strict hive_rpc
echo "== elisp (byte-compile, checkdoc, package-lint, ERT)"
bash scripts/test-elisp.sh
echo "== VS Code extension (tsc, eslint, node --test against a real hive-rpc lsp, vsce package)"
# Node.js and npm are the machine's own (Debian's nodejs otherwise); the packages
# come from the npm registry, pinned by vscode-ext/package-lock.json.
if ! command -v npm >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
fi
(
    cd vscode-ext
    npm ci --no-audit --no-fund --loglevel=error
    HIVE_PYTHON="$PWD/../.venv/bin/python" npm test
)
# The real programs the tests drive come from the npm registry, cached between runs
# (scripts/install-*.sh print the path). Only an unreachable registry (exit 3) makes
# their tests skip, with the reason in VARIABLE (printed here and by pytest); any other
# failure to install fails the run.
cached_install() {  # SCRIPT VARIABLE WHAT
    local status=0 said
    said="$(bash "scripts/$1")" || status=$?
    if [ "$status" -eq 3 ]; then
        echo "$3 not installed, its tests will skip: $said"
        export "$2=$said"
    elif [ "$status" -ne 0 ]; then
        exit "$status"
    else
        echo "$said"
    fi
}
echo "== code-server for the real-editor tests (tests/vscode: the .vsix npm test packaged)"
cached_install install-code-server.sh HIVE_CODE_SERVER_UNAVAILABLE code-server
echo "== Claude Code for the real-agent tests (tests/claude)"
cached_install install-claude-code.sh HIVE_CLAUDE_CODE_UNAVAILABLE "Claude Code"
echo "== Codex CLI and Gemini CLI for the real-agent tests (tests/agents)"
cached_install install-codex.sh HIVE_CODEX_UNAVAILABLE "Codex CLI"
cached_install install-gemini-cli.sh HIVE_GEMINI_UNAVAILABLE "Gemini CLI"
echo "== the ACP SDK for the hive-rpc acp tests (tests/acp)"
cached_install install-acp-sdk.sh HIVE_ACP_SDK_UNAVAILABLE "ACP SDK"
echo "== pytest"
# Two files at a time (pytest-xdist): most tests wait on real editors, browsers and
# servers rather than compute, and a module's fixtures (one code-server, one hub)
# stay in one worker. About 15 minutes here instead of 25; the slowest 30 are listed
# at the end, for whoever makes the suite faster.
pytest -q -p no:cacheprovider -n 2 --dist loadfile --durations=30 "$@"
