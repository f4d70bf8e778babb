#!/usr/bin/env bash
# Install Claude Code 2.1.328 (`@anthropic-ai/claude-code`, runs on Node 20) for the
# real-agent tests in tests/claude/, from the npm registry only. The tests run it offline
# against a scripted model server (see docs/claude-code.md and tests/claude/).
#
# Where: $HIVE_CLAUDE_CODE_HOME, default ${XDG_CACHE_HOME:-$HOME/.cache}/hive-rpc/claude-code-2.1.328.
# Idempotent (a marker written last says the install is whole), atomic (built in a
# temporary directory and renamed into place), under a lock: npm_tool_install in
# scripts/cached-npm-install.sh, shared with the other install-*.sh.
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

npm_tool_install @anthropic-ai/claude-code "^$VERSION (Claude Code)" \
    env CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 node_modules/.bin/claude --version
