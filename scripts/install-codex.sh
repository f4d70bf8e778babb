#!/usr/bin/env bash
# Install Codex CLI 0.171.0 (`@openai/codex`, a Node launcher around a native binary that
# npm fetches as an optional dependency) for the real-agent tests in tests/agents/, from
# the npm registry only. The tests run it offline against a scripted Responses API server
# (tests/agents/scripted_responses.py; research.md, "Other agents, offline").
#
# Where: $HIVE_CODEX_HOME, default ${XDG_CACHE_HOME:-$HOME/.cache}/hive-rpc/codex-0.171.0.
# Idempotent (a marker written last says the install is whole), atomic (built in a
# temporary directory and renamed into place), under a lock: the steps shared with
# scripts/install-claude-code.sh, in scripts/cached-npm-install.sh.
#
# Prints the path of the `codex` executable on stdout (progress goes to stderr).
# Exit codes: 0 installed; 3 the npm registry is unreachable (the reason on stdout and
# stderr: the tests skip with it); 1 anything else (a failed install fails).
set -euo pipefail

VERSION=0.171.0
NAME=codex
TARGET="${HIVE_CODEX_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/hive-rpc/codex-$VERSION}"
BIN="$TARGET/node_modules/.bin/codex"
# shellcheck source=scripts/cached-npm-install.sh
. "$(dirname "${BASH_SOURCE[0]}")/cached-npm-install.sh"

command -v flock >/dev/null 2>&1 || { say "missing flock (apt-get install util-linux)"; exit 1; }
install_begin
for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        say "missing $tool (apt-get install nodejs npm)"
        exit 1
    fi
done
require_registry "@openai/codex@$VERSION"
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

say "npm install @openai/codex@$VERSION into $WORK"
(cd "$WORK" && echo '{"private": true}' >package.json &&
    npm --no-audit --no-fund --loglevel=error install "@openai/codex@$VERSION" >&2)

# Check it before declaring it whole (with a CODEX_HOME of its own: it writes there).
said="$(HOME="$WORK/.check" CODEX_HOME="$WORK/.check" "$WORK/node_modules/.bin/codex" --version 2>&1 || true)"
rm -rf "$WORK/.check"
if ! echo "$said" | grep -q "^codex-cli $VERSION\$"; then
    say "the installed codex does not run; --version said: ${said:-nothing}"
    exit 1
fi
install_done
