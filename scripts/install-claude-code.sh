#!/usr/bin/env bash
# Install Claude Code 2.1.328 (`@anthropic-ai/claude-code`, runs on Node 20) for the
# real-agent tests in tests/claude/, from the npm registry only. The tests run it offline
# against a scripted model server (see docs/claude-code.md and tests/claude/).
#
# Where: $HIVE_CLAUDE_CODE_HOME, default ${XDG_CACHE_HOME:-$HOME/.cache}/hive-rpc/claude-code-2.1.328.
# Idempotent (a marker written last says the install is whole), atomic (built in a
# temporary directory and renamed into place), under a lock: the steps shared with
# scripts/install-code-server.sh, in scripts/cached-npm-install.sh.
#
# Prints the path of the `claude` executable on stdout (progress goes to stderr).
# Exit codes: 0 installed; 3 the npm registry is unreachable (the reason on stdout and
# stderr: the tests skip with it); 1 anything else (a failed install fails).
set -euo pipefail

VERSION=2.1.328
NAME=claude-code
TARGET="${HIVE_CLAUDE_CODE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/hive-rpc/claude-code-$VERSION}"
BIN="$TARGET/node_modules/.bin/claude"
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
require_registry "@anthropic-ai/claude-code@$VERSION"
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

say "npm install @anthropic-ai/claude-code@$VERSION into $WORK"
(cd "$WORK" && echo '{"private": true}' >package.json &&
    npm --no-audit --no-fund --loglevel=error install "@anthropic-ai/claude-code@$VERSION" >&2)

# Check it before declaring it whole (with a HOME of its own: it writes there).
said="$(HOME="$WORK/.check" CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    "$WORK/node_modules/.bin/claude" --version 2>&1 || true)"
rm -rf "$WORK/.check"
if ! echo "$said" | grep -q "^$VERSION (Claude Code)"; then
    say "the installed claude does not run; --version said: ${said:-nothing}"
    exit 1
fi
install_done
