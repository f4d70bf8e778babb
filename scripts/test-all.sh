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
    nats-server chromium libnotify-bin libkrb5-dev ripgrep build-essential bubblewrap socat)
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
echo "== code-server for the real-editor tests (tests/vscode: the .vsix npm test packaged)"
# Cached between runs. Only an unreachable npm registry makes those tests skip (with the
# reason printed here and by pytest); any other failure to install fails the run.
cs_status=0
cs_said="$(bash scripts/install-code-server.sh)" || cs_status=$?
if [ "$cs_status" -eq 3 ]; then
    echo "code-server not installed, the real-editor tests will skip: $cs_said"
    export HIVE_CODE_SERVER_UNAVAILABLE="$cs_said"
elif [ "$cs_status" -ne 0 ]; then
    exit "$cs_status"
else
    echo "$cs_said"
fi
echo "== Claude Code for the real-agent tests (tests/claude)"
# The same pattern: cached, and only an unreachable npm registry makes those tests skip.
cc_status=0
cc_said="$(bash scripts/install-claude-code.sh)" || cc_status=$?
if [ "$cc_status" -eq 3 ]; then
    echo "Claude Code not installed, the real-agent tests will skip: $cc_said"
    export HIVE_CLAUDE_CODE_UNAVAILABLE="$cc_said"
elif [ "$cc_status" -ne 0 ]; then
    exit "$cc_status"
else
    echo "$cc_said"
fi
echo "== Codex CLI and Gemini CLI for the real-agent tests (tests/agents)"
# The same pattern again, one variable each.
cx_status=0
cx_said="$(bash scripts/install-codex.sh)" || cx_status=$?
if [ "$cx_status" -eq 3 ]; then
    echo "Codex CLI not installed, its real-agent tests will skip: $cx_said"
    export HIVE_CODEX_UNAVAILABLE="$cx_said"
elif [ "$cx_status" -ne 0 ]; then
    exit "$cx_status"
else
    echo "$cx_said"
fi
gm_status=0
gm_said="$(bash scripts/install-gemini-cli.sh)" || gm_status=$?
if [ "$gm_status" -eq 3 ]; then
    echo "Gemini CLI not installed, its real-agent tests will skip: $gm_said"
    export HIVE_GEMINI_UNAVAILABLE="$gm_said"
elif [ "$gm_status" -ne 0 ]; then
    exit "$gm_status"
else
    echo "$gm_said"
fi
echo "== the ACP SDK for the hive-rpc acp tests (tests/acp)"
acp_status=0
acp_said="$(bash scripts/install-acp-sdk.sh)" || acp_status=$?
if [ "$acp_status" -eq 3 ]; then
    echo "ACP SDK not installed, the hive-rpc acp end-to-end tests will skip: $acp_said"
    export HIVE_ACP_SDK_UNAVAILABLE="$acp_said"
elif [ "$acp_status" -ne 0 ]; then
    exit "$acp_status"
else
    echo "$acp_said"
fi
echo "== pytest"
# Two files at a time (pytest-xdist): most tests wait on real editors, browsers and
# servers rather than compute, and a module's fixtures (one code-server, one hub)
# stay in one worker. About 6 minutes here instead of 10.
pytest -q -p no:cacheprovider -n 2 --dist loadfile "$@"
