#!/usr/bin/env bash
# Install Claude Code 2.1.328 (`@anthropic-ai/claude-code`, runs on Node 20) for the
# real-agent tests in tests/claude/, from the npm registry only. The tests run it offline
# against a scripted model server (see docs/claude-code.md and tests/claude/).
#
# Where: $HIVE_CLAUDE_CODE_HOME, default ${XDG_CACHE_HOME:-$HOME/.cache}/hive-rpc/claude-code-2.1.328.
# Idempotent (a marker written last says the install is whole), atomic (built in a
# temporary directory and renamed into place), under a lock: the same pattern as
# scripts/install-code-server.sh.
#
# Prints the path of the `claude` executable on stdout (progress goes to stderr).
# Exit codes: 0 installed; 3 the npm registry is unreachable (the reason on stdout and
# stderr: the tests skip with it); 1 anything else (a failed install fails).
set -euo pipefail

VERSION=2.1.328
TARGET="${HIVE_CLAUDE_CODE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/hive-rpc/claude-code-$VERSION}"
MARKER="$TARGET/.hive-rpc-installed"
BIN="$TARGET/node_modules/.bin/claude"

say() { echo "install-claude-code: $*" >&2; }
unreachable() {
    say "$*"
    echo "$*"
    exit 3
}

if [ -f "$MARKER" ]; then
    echo "$BIN"
    exit 0
fi

for tool in node npm flock; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        say "missing $tool (apt-get install nodejs npm util-linux)"
        exit 1
    fi
done

PARENT="$(dirname "$TARGET")"
mkdir -p "$PARENT"
exec 9>"$PARENT/.$(basename "$TARGET").lock"
flock 9
if [ -f "$MARKER" ]; then # another run finished it while this one waited
    echo "$BIN"
    exit 0
fi

# The one question whose answer is "skip": can the registry be reached at all?
REGISTRY="$(npm config get registry 2>/dev/null || echo 'the npm registry')"
status=0
said="$(timeout 90 npm view "@anthropic-ai/claude-code@$VERSION" version --loglevel=error \
    --fetch-retries=1 --fetch-timeout=30000 2>&1)" || status=$?
if [ "$status" -ne 0 ]; then
    if [ "$status" -eq 124 ]; then
        unreachable "the npm registry is unreachable ($REGISTRY did not answer in 90 s); Claude Code $VERSION cannot be installed"
    fi
    if echo "$said" | grep -qE 'ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|ENETUNREACH|EHOSTUNREACH|ECONNABORTED'; then
        unreachable "the npm registry is unreachable ($(echo "$said" | grep -m1 'FetchError' | sed 's/^npm error //' || echo "$REGISTRY")); Claude Code $VERSION cannot be installed"
    fi
    say "npm view @anthropic-ai/claude-code@$VERSION failed: $said"
    exit 1
fi

WORK="$(mktemp -d "$PARENT/.claude-code-$VERSION.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
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

date -u +%FT%TZ >"$WORK/.hive-rpc-installed"
rm -rf "$TARGET" # only ever an unmarked leftover: a whole install returned above
mv -T "$WORK" "$TARGET"
trap - EXIT
say "Claude Code $VERSION in $TARGET"
echo "$BIN"
