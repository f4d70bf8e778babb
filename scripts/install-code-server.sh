#!/usr/bin/env bash
# Install code-server 4.100.3 (VS Code 1.100.3, the newest that runs on Node 20) for the
# real-editor tests in tests/vscode/, from the npm registry only (nothing else is
# reachable on CI), the way /work/shared/docs/real-vscode.md and docs/vscode.md describe:
# its own postinstall cannot run (a nested `npm install` that breaks under npm 11 with -g,
# and a ripgrep download from GitHub), so this script does its steps by hand.
#
# Where: $HIVE_CODE_SERVER_HOME, default ${XDG_CACHE_HOME:-$HOME/.cache}/hive-rpc/code-server-4.100.3.
# Idempotent, atomic and under a lock: the steps shared with scripts/install-claude-code.sh,
# in scripts/cached-npm-install.sh.
#
# Prints the path of the code-server executable on stdout (progress goes to stderr).
# Exit codes: 0 installed; 3 the npm registry is unreachable (the reason on stdout and
# stderr: the real-editor tests skip with it); 1 anything else (a failed build fails).
# Needs: node and npm, a C/C++ toolchain and python3 (node-gyp), apt libkrb5-dev
# (kerberos) and ripgrep (scripts/test-all.sh installs them).
set -euo pipefail

VERSION=4.100.3
NAME=code-server
TARGET="${HIVE_CODE_SERVER_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/hive-rpc/code-server-$VERSION}"
BIN="$TARGET/bin/code-server"
# shellcheck source=scripts/cached-npm-install.sh
. "$(dirname "${BASH_SOURCE[0]}")/cached-npm-install.sh"

command -v flock >/dev/null 2>&1 || { say "missing flock (apt-get install util-linux)"; exit 1; }
install_begin
for tool in node npm rg make g++ python3; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        say "missing $tool (apt-get install nodejs npm ripgrep build-essential python3)"
        exit 1
    fi
done
if [ ! -e /usr/include/krb5.h ] && [ ! -e /usr/include/gssapi/gssapi.h ]; then
    say "missing the Kerberos headers code-server's kerberos module builds against (apt-get install libkrb5-dev)"
    exit 1
fi
require_registry "code-server@$VERSION"

# node-gyp builds against Node's headers from Debian's nodejs (no download); npx may run
# node-gyp without asking (node-pty's build calls it).
export npm_config_nodedir="${npm_config_nodedir:-/usr}" npm_config_yes=true
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
NPM=(npm --no-audit --no-fund --loglevel=error)

say "npm install -g --ignore-scripts code-server@$VERSION into $WORK"
npm_config_prefix="$WORK" "${NPM[@]}" install -g --ignore-scripts "code-server@$VERSION" >&2
PKG="$WORK/lib/node_modules/code-server"
VS="$PKG/lib/vscode"

say "building argon2"
(cd "$PKG" && "${NPM[@]}" rebuild argon2 >&2)

say "installing VS Code's own modules and building the native ones"
(cd "$VS" && "${NPM[@]}" install --omit=dev --ignore-scripts >&2)
(cd "$VS" && "${NPM[@]}" rebuild @parcel/watcher @vscode/deviceid @vscode/spdlog kerberos \
    native-watchdog node-pty >&2)

say "ripgrep from the system (the package's own download is from GitHub)"
mkdir -p "$VS/node_modules/@vscode/ripgrep/bin"
cp "$(command -v rg)" "$VS/node_modules/@vscode/ripgrep/bin/rg"

say "the links code-server's postinstall makes, and the built-in extensions' modules"
ln -sfn node_modules "$VS/node_modules.asar"
ln -sfn code-linux.sh "$VS/bin/remote-cli/code-server"
ln -sfn browser-linux.sh "$VS/bin/helpers/browser.sh"
(cd "$VS/extensions" && "${NPM[@]}" install --omit=dev >&2)

# Check it before declaring it whole (with a config home of its own: code-server writes
# a default config.yaml there on any start).
said="$(XDG_CONFIG_HOME="$WORK/.check" XDG_DATA_HOME="$WORK/.check" "$WORK/bin/code-server" --version 2>&1 || true)"
rm -rf "$WORK/.check"
version="$(echo "$said" | grep -m1 "^$VERSION " || true)"
if [ -z "$version" ]; then
    say "the built code-server does not run; --version said: ${said:-nothing}"
    exit 1
fi

install_done
