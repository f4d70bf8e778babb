#!/usr/bin/env bash
# Install Gemini CLI 0.61.0 (`@google/gemini-cli`, runs on Node 20) for the real-agent
# tests in tests/agents/, from the npm registry only. The tests run it offline against a
# scripted Gemini API server (tests/agents/scripted_gemini.py; research.md, "Other
# agents, offline").
#
# Where: $HIVE_GEMINI_CLI_HOME, default ${XDG_CACHE_HOME:-$HOME/.cache}/hive-rpc/gemini-cli-0.61.0.
# Idempotent (a marker written last says the install is whole), atomic (built in a
# temporary directory and renamed into place), under a lock: npm_tool_install in
# scripts/cached-npm-install.sh, shared with the other install-*.sh.
#
# Prints the path of the `gemini` executable on stdout (progress goes to stderr).
# Exit codes: 0 installed; 3 the npm registry is unreachable (the reason on stdout and
# stderr: the tests skip with it); 1 anything else (a failed install fails).
set -euo pipefail

VERSION=0.61.0
NAME=gemini-cli
TARGET="${HIVE_GEMINI_CLI_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/hive-rpc/gemini-cli-$VERSION}"
BIN="$TARGET/node_modules/.bin/gemini"
# shellcheck source=scripts/cached-npm-install.sh
. "$(dirname "${BASH_SOURCE[0]}")/cached-npm-install.sh"

npm_tool_install @google/gemini-cli "^$VERSION\$" node_modules/.bin/gemini --version
