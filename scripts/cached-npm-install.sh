# Shared by the scripts/install-*.sh that install from the npm registry (sourced, not
# run): the steps of a cached, atomic install.
#
# The caller sets NAME (for messages), VERSION, TARGET (the install directory) and BIN
# (the executable printed on success). A plain npm package (install-claude-code.sh,
# install-codex.sh, install-gemini-cli.sh, install-acp-sdk.sh) then calls
# npm_tool_install, which does all of it; one that needs more (install-code-server.sh)
# calls the steps itself, in order:
#   install_begin       returns (exit 0, BIN printed) if TARGET is already whole;
#                       otherwise takes the lock and makes WORK, a temporary directory
#                       next to TARGET that is removed unless install_done renames it;
#   require_registry P  exit 3 (the reason on stdout and stderr: the tests skip with it)
#                       if the npm registry cannot be reached, exit 1 if `npm view P`
#                       fails otherwise;
#   install_done        the marker written last, WORK renamed to TARGET, BIN printed.
# Idempotent (the marker says the install is whole), atomic (built in WORK, renamed into
# place), under a lock (two test runs at once build it once).

say() { echo "install-$NAME: $*" >&2; }

# The registry is unreachable: say why, on stdout too (where the path goes otherwise).
unreachable() {
    say "$*"
    echo "$*"
    exit 3
}

install_begin() {
    MARKER="$TARGET/.hive-rpc-installed"
    if [ -f "$MARKER" ]; then
        echo "$BIN"
        exit 0
    fi
    PARENT="$(dirname "$TARGET")"
    mkdir -p "$PARENT"
    exec 9>"$PARENT/.$(basename "$TARGET").lock"
    flock 9
    if [ -f "$MARKER" ]; then # another run finished it while this one waited
        echo "$BIN"
        exit 0
    fi
    WORK="$(mktemp -d "$PARENT/.$NAME-$VERSION.XXXXXX")"
    trap 'rm -rf "$WORK"' EXIT
}

# The one question whose answer is "skip": can the registry be reached at all? Any other
# failure (no such version, a broken build) is a failure.
require_registry() {
    local package="$1" registry said status=0
    registry="$(npm config get registry 2>/dev/null || echo 'the npm registry')"
    said="$(timeout 90 npm view "$package" version --loglevel=error --fetch-retries=1 \
        --fetch-timeout=30000 2>&1)" || status=$?
    if [ "$status" -eq 0 ]; then
        return 0
    fi
    if [ "$status" -eq 124 ]; then
        unreachable "the npm registry is unreachable ($registry did not answer in 90 s); $NAME $VERSION cannot be installed"
    fi
    if echo "$said" | grep -qE 'ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|ENETUNREACH|EHOSTUNREACH|ECONNABORTED'; then
        unreachable "the npm registry is unreachable ($(echo "$said" | grep -m1 'FetchError' | sed 's/^npm error //' || echo "$registry")); $NAME $VERSION cannot be installed"
    fi
    say "npm view $package failed: $said"
    exit 1
}

install_done() {
    date -u +%FT%TZ >"$WORK/.hive-rpc-installed"
    rm -rf "$TARGET" # only ever an unmarked leftover: a whole install returned early
    mv -T "$WORK" "$TARGET"
    trap - EXIT
    say "$NAME $VERSION in $TARGET"
    echo "$BIN"
}

# The whole install of one pinned npm package (PACKAGE@VERSION into TARGET/node_modules),
# checked before it is declared whole: CHECK... runs in WORK with HOME=WORK/.check (the
# agents write to their HOME; it is removed after) and its output must match the grep
# pattern EXPECTED, else exit 1. Usage: npm_tool_install PACKAGE EXPECTED CHECK...
npm_tool_install() {
    local package="$1" expected="$2" said tool
    shift 2
    command -v flock >/dev/null 2>&1 || { say "missing flock (apt-get install util-linux)"; exit 1; }
    install_begin
    for tool in node npm; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            say "missing $tool (apt-get install nodejs npm)"
            exit 1
        fi
    done
    require_registry "$package@$VERSION"
    export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

    say "npm install $package@$VERSION into $WORK"
    (cd "$WORK" && echo '{"private": true}' >package.json &&
        npm --no-audit --no-fund --loglevel=error install "$package@$VERSION" >&2)

    said="$(cd "$WORK" && HOME="$WORK/.check" "$@" 2>&1 || true)"
    rm -rf "$WORK/.check"
    if ! echo "$said" | grep -q "$expected"; then
        say "the installed $package does not pass its check ($*): it said ${said:-nothing}"
        exit 1
    fi
    install_done
}
