#!/usr/bin/env bash
# Install the Agent Client Protocol's TypeScript SDK 2.4.0 (`@agentclientprotocol/sdk`,
# runs on Node 20) for the end-to-end tests of `hive-rpc acp` in tests/acp/, from the npm
# registry only: the tests' ACP client and scripted ACP agent are Node scripts on it, so
# the proxy is checked against the SDK's own reading of the protocol, not ours.
#
# Where: $HIVE_ACP_SDK_HOME, default ${XDG_CACHE_HOME:-$HOME/.cache}/hive-rpc/acp-sdk-2.4.0.
# Idempotent (a marker written last says the install is whole), atomic (built in a
# temporary directory and renamed into place), under a lock: npm_tool_install in
# scripts/cached-npm-install.sh, shared with the other install-*.sh.
#
# Prints the install directory on stdout (its node_modules holds the SDK: the tests set
# NODE_PATH to it); progress goes to stderr.
# Exit codes: 0 installed; 3 the npm registry is unreachable (the reason on stdout and
# stderr: the tests skip with it); 1 anything else (a failed install fails).
set -euo pipefail

VERSION=2.4.0
NAME=acp-sdk
TARGET="${HIVE_ACP_SDK_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/hive-rpc/acp-sdk-$VERSION}"
BIN="$TARGET"
# shellcheck source=scripts/cached-npm-install.sh
. "$(dirname "${BASH_SOURCE[0]}")/cached-npm-install.sh"

# Node loads it and it has both sides.
npm_tool_install @agentclientprotocol/sdk '^function function$' node --input-type=module -e \
    'import * as acp from "@agentclientprotocol/sdk"; console.log(typeof acp.client, typeof acp.agent)'
