#!/usr/bin/env bash
# Install Codex CLI 0.171.0 (`@openai/codex`, a Node launcher around a native binary that
# npm fetches as an optional dependency) for the real-agent tests in tests/agents/, from
# the npm registry only. The tests run it offline against a scripted Responses API server
# (tests/agents/scripted_responses.py; research.md, "Other agents, offline").
#
# Where: $HIVE_CODEX_HOME, default ${XDG_CACHE_HOME:-$HOME/.cache}/hive-rpc/codex-0.171.0.
# Idempotent (a marker written last says the install is whole), atomic (built in a
# temporary directory and renamed into place), under a lock: npm_tool_install in
# scripts/cached-npm-install.sh, shared with the other install-*.sh.
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

# CODEX_HOME too: Codex writes there, and the check's HOME is thrown away after.
# shellcheck disable=SC2016 # $HOME is the check's, expanded by that sh
npm_tool_install @openai/codex "^codex-cli $VERSION\$" \
    sh -c 'CODEX_HOME="$HOME" exec node_modules/.bin/codex --version'
