"""Where the hub puts its socket, data and locks, and the checks that keep them private.

Defaults follow the XDG base directories: the socket in ``$XDG_RUNTIME_DIR/hive-rpc/``
(or ``$TMPDIR/hive-rpc-UID/``, usually ``/tmp``, when there is no runtime dir), data in
``$XDG_DATA_HOME/hive-rpc/``.  Directories we create are 0700; a default directory that
exists but belongs to someone else, or is a symlink, is refused rather than trusted.

The defaults must not depend on who started us.  MCP hosts strip the environment of
the servers they spawn (the TypeScript SDK's stdio transport passes only HOME,
LOGNAME, PATH, SHELL, TERM and USER), and a ``hive-rpc mcp`` that computed another
socket than the CLI's would start a second hub where no editor looks.  So without
``XDG_RUNTIME_DIR`` the socket goes where that variable points in every systemd
login session, ``/run/user/UID``, when that directory is there and ours; and without
``XDG_DATA_HOME`` the data dir is its default, ``~/.local/share``.  Values set
elsewhere are carried by the environment only: docs/mcp.md shows the ``env`` block
for such hosts (and an autostart still finds the data dir a hub on the same socket
last used: start_record.py).

One value set elsewhere is found without the environment: a runtime dir other than
``/run/user/UID`` (no systemd, a container, WSL), where the user's hub then listens.
The data dir is found from HOME alone, and the hub's start record in it names the
socket it listens on; a client given neither ``HIVE_RPC_SOCKET`` nor
``XDG_RUNTIME_DIR``, whose own default finds no hub, goes there when that is safe
(``recorded_socket``: our private directories, our socket, our hub answering), rather
than start a second hub where no editor looks.
"""

from __future__ import annotations

import errno
import fcntl
import ipaddress
import os
import stat
from pathlib import Path

SOCKET_ENV = "HIVE_RPC_SOCKET"
DATA_DIR_ENV = "HIVE_RPC_DATA_DIR"
SOCKET_NAME = "hub.sock"
DB_NAME = "prompts.sqlite3"
LOG_NAME = "hub.log"
APPROVER_TOKEN_NAME = "approver-token"
START_RECORD_NAME = "hub.start.json"
"""The hub's start record in the data dir (client/start_record.py): how it was started
and the socket it listens on, which ``recorded_socket`` reads."""
EPC_TOKEN_NAME = "epc-token"
"""The EPC face's token file in the data dir (``hive-rpc epc``): a client that read it
passes ``auth`` and, through that face, answers as an approver."""
HOOK_TOKEN_NAME = "hook-token"
"""The HTTP permission hook's token file in the data dir (faces/hook_http.py): it
opens only ``POST /hook/claude-code`` (ask, and read the decision), never a route
that answers or reads, and no other token opens that route."""


class InsecurePath(RuntimeError):
    """A directory we would trust with the socket is not private to this user."""


class DataDirUnusable(RuntimeError):
    """The hub cannot write its data dir, or its socket's directory (read-only, not
    writable, full) at start: one sentence naming the directory and what to do, not
    a bare ``OSError``."""


FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
"""What a write fails with when the disk (or the user's quota) is full."""


DATA_DIR_CHOICE = "give the hub another data dir (--data-dir or HIVE_RPC_DATA_DIR)"
SOCKET_CHOICE = "give the hub another socket (--socket or HIVE_RPC_SOCKET)"


def cannot_write(
    directory: Path,
    error: OSError,
    what: str = "the data dir",
    choice: str = DATA_DIR_CHOICE,
) -> str:
    """Why ``directory`` (``what``: its role) cannot be written and what to do (fix
    it, or ``choice``), in one sentence, from the ``OSError`` a write in it raised."""
    why = os.strerror(error.errno) if error.errno else str(error)
    if error.errno == errno.EROFS:
        return f"{what} {directory} is read-only ({why}): remount it read-write, or {choice}"
    if error.errno in FULL:
        return f"{what} {directory} is full ({why}): free space on its disk, or {choice}"
    if error.errno in (errno.EACCES, errno.EPERM):
        return (
            f"{what} {directory} cannot be written ({why}; its mode, owner or an "
            f"immutable flag, chattr +i): make it writable, or {choice}"
        )
    return f"{what} {directory} cannot be used ({why}): check it, or {choice}"


def usable_data_dir(path: Path) -> Path:
    """``private_dir(path)`` for the data dir, its failure a ``DataDirUnusable``."""
    try:
        return private_dir(path)
    except OSError as e:
        raise DataDirUnusable(cannot_write(path, e)) from None


def private_dir(path: Path) -> Path:
    """Create ``path`` (and any missing parents) as 0700, or check that the existing
    one is ours and private, tightening its mode if it is ours but open."""
    for missing in [*reversed(path.parents), path]:
        if not missing.exists():
            missing.mkdir(mode=0o700, exist_ok=True)
    st = path.lstat()
    if path.is_symlink() or not path.is_dir():
        raise InsecurePath(f"{path} is not a plain directory; refusing to use it")
    if st.st_uid != os.getuid():
        raise InsecurePath(f"{path} belongs to uid {st.st_uid}, not to you; refusing to use it")
    if st.st_mode & 0o077:
        path.chmod(0o700)
    return path


USER_RUNTIME_ROOT = Path("/run/user")
"""Where pam_systemd makes each user's runtime dir (``/run/user/UID``), the one
``XDG_RUNTIME_DIR`` names in a login session."""


def _own_private_dir(path: Path) -> bool:
    try:
        st = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def runtime_dir() -> Path:
    """``$XDG_RUNTIME_DIR/hive-rpc``; without the variable, the same place in the
    user's systemd runtime dir if it is there (see the module's docstring), else a
    private directory in the temp dir."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and Path(base).is_dir():
        return private_dir(Path(base) / "hive-rpc")
    systemd = USER_RUNTIME_ROOT / str(os.getuid())
    if _own_private_dir(systemd):
        return private_dir(systemd / "hive-rpc")
    import tempfile  # here, not at the top: a one-shot command's start (docs/benchmarks.md)

    return private_dir(Path(tempfile.gettempdir()) / f"hive-rpc-{os.getuid()}")


def default_socket() -> Path:
    """``$HIVE_RPC_SOCKET``, else ``runtime_dir()/hub.sock``; but when neither that
    variable nor ``XDG_RUNTIME_DIR`` is set and no hub answers there, the socket the
    data dir's start record names, if ``recorded_socket`` finds it safe: the user's
    hub under a runtime dir this environment does not name (the module's docstring)."""
    env = os.environ.get(SOCKET_ENV)
    if env:
        return Path(env)
    computed = runtime_dir() / SOCKET_NAME
    if os.environ.get("XDG_RUNTIME_DIR") or not _nothing_listens(computed):
        return computed
    return recorded_socket(default_data_dir()) or computed


RECORD_MAX_BYTES = 64 << 10
"""A start record is a few hundred bytes; anything larger is not ours."""
PROBE_TIMEOUT_S = 2.0
"""How long a connect may wait (a hub too busy to accept) when we only ask whether
one is there."""


def recorded_socket(data_dir: Path) -> Path | None:
    """The socket that the start record in ``data_dir`` names, if a hub of ours
    answers there and no other user could have named it or put it there; else None.

    Another local user must not redirect us (our questions, our approver token) to a
    socket of theirs.  So: the data dir is a private directory of ours (0700, not a
    symlink), which only we can write into; the record is a regular file of ours,
    private (not followed if a symlink); the socket's directory is a private directory
    of ours, so nobody else can put or swap a socket in it; the socket is ours; and
    the process accepting on it runs as us (``SO_PEERCRED``; the client checks that
    again on its own connect, ``SyncHubClient.connect``)."""
    if not _own_private_dir(data_dir):
        return None
    found = _recorded_path(data_dir / START_RECORD_NAME)
    if found is None or not _own_private_dir(found.parent):
        return None
    try:
        st = found.lstat()
    except OSError:
        return None
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        return None
    return found if _our_hub_answers(found) else None


def _recorded_path(record: Path) -> Path | None:
    """The absolute ``socket`` of the record at ``record``, if that is a private
    regular file of ours holding one."""
    try:
        fd = os.open(record, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        raw = f.read(RECORD_MAX_BYTES + 1)
    import json  # here, not at the top: a one-shot command's start (docs/benchmarks.md)

    try:
        body = json.loads(raw) if len(raw) <= RECORD_MAX_BYTES else None
    except ValueError:
        return None
    path = body.get("socket") if isinstance(body, dict) else None
    if not isinstance(path, str) or not os.path.isabs(path):
        return None
    return Path(path)


def _nothing_listens(path: Path) -> bool:
    """No process accepts on ``path``: no socket there, or a stale one.  A hub busy
    enough not to accept, or a socket we may not reach, is not nothing."""
    import socket  # here, not at the top: a one-shot command's start (docs/benchmarks.md)

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(PROBE_TIMEOUT_S)
        try:
            probe.connect(os.fspath(path))
        except OSError as e:
            return e.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK)
    return False


def _our_hub_answers(path: Path) -> bool:
    """A process of ours accepts on ``path``, as the kernel says."""
    import socket  # here, not at the top: a one-shot command's start (docs/benchmarks.md)

    from hive_rpc.host.peercred import peer_credentials

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(PROBE_TIMEOUT_S)
        try:
            probe.connect(os.fspath(path))
        except OSError:
            return False
        peer = peer_credentials(probe)
    return peer is None or peer.uid == os.getuid()


def default_data_dir() -> Path:
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "hive-rpc"


def prepare_socket_dir(socket: Path) -> None:
    """Make the socket's directory if missing (0700).  An existing one is left as is:
    the socket itself is 0600 whatever directory holds it."""
    if not socket.parent.exists():
        private_dir(socket.parent)


class HubLock:
    """An exclusive ``flock`` held for the hub's life; the kernel drops it if we die.

    One lock beside the socket (one hub per socket) and one in the data dir (one hub
    per store) make "a second hub refuses to start" race-free, and tell a stale
    socket file (lock free) from a live one.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        try:  # who holds it, for ``holder``; the lock holds without it (a full disk)
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:
            pass
        self._fd = fd
        return True

    def holder(self) -> str:
        try:
            return self.path.read_text().strip() or "unknown"
        except OSError:
            return "unknown"

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class NotLoopback(ValueError):
    """The MCP endpoint was asked to listen beyond this machine."""


def parse_bind(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) on a loopback address, else NotLoopback."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise NotLoopback(f"--http wants HOST:PORT such as 127.0.0.1:8765, got {text!r}")
    host = host.strip("[]")
    if host != "localhost":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise NotLoopback(
                f"the MCP endpoint listens on loopback only (127.0.0.1, ::1, localhost), "
                f"not {host!r}"
            )
    return host, int(port)


def load_token(data_dir: Path, name: str) -> tuple[str, Path]:
    """A TCP face's secret (``DATA_DIR/NAME``): random, made on first use with mode
    0600; a file others could read, or one holding no usable token, is refused."""
    path = data_dir / name
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return read_token(path), path
    import secrets  # here, not at the top: a one-shot command's start (docs/benchmarks.md)

    token = secrets.token_urlsafe(32)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
    except OSError:  # a full disk: no empty token file left to be refused next time
        path.unlink(missing_ok=True)
        raise
    return token, path


def approver_token_file(data_dir: Path) -> Path:
    """The file holding the secret that makes a connection an approver (one that may
    answer a permission prompt or change answer rules): ``DATA_DIR/approver-token``,
    0600, made by the hub on start.  It is a path of its own so that ``hive-rpc setup
    claude-code`` can name it in an agent's sandbox and deny rules: an agent that can
    read it can approve its own requests."""
    return data_dir / APPROVER_TOKEN_NAME


def load_approver_token(data_dir: Path) -> tuple[str, Path]:
    """The approver token of the hub whose data dir is ``data_dir`` (made if missing)."""
    return load_token(private_dir(data_dir), APPROVER_TOKEN_NAME)


def read_token(path: Path) -> str:
    """The token in ``path``, refused (PermissionError) unless the file is a regular
    0600 file of ours holding one; OSError when it cannot be read at all."""
    st = path.lstat()
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(
            f"{path} must be a regular file of yours with mode 0600; fix or delete it"
        )
    token = path.read_text().strip()
    if len(token) < 32:
        raise PermissionError(f"{path} holds no usable token; delete it to make a new one")
    return token
