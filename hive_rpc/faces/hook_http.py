"""Claude Code's permission hook served by the hub itself: ``POST /hook/claude-code``.

Claude Code (2.1.328, measured: docs/research.md) runs hooks of ``"type": "http"``:
it POSTs the JSON a command hook reads on stdin, and the JSON body of a 200 reply
decides as the command hook's stdout does.  The command hook (``hive-rpc hook
claude-code``, cli/hook.py) is a process per request, most of its ~67 ms spent
starting Python; this route is the same decision with no process
(bench/http_hook.py).  It decides as the command hook does, from the same code
(core/permission_hook.py, core/claude_code.py, core/claude_questions.py): an answer
rule, else the human's answer to the same urgent question (or Claude Code's own
``AskUserQuestion`` as one prompt), a lasting answer saving its rule.  No decision
(nobody answered in time, a decline) is a 200 with ``{}``: Claude Code then asks in
its own dialog.  Nothing is ever allowed by default.

Who may call it.  Its own credential, the hook token (``DATA_DIR/hook-token``, 0600,
host/paths.py ``HOOK_TOKEN_NAME``), as ``Authorization: Bearer``: it asks permission
questions and reads their decision, nothing else.  The agent's MCP token and the
human's approver token are refused here (403, naming what each is for), and the hook
token everywhere else (the Guard, faces/mcp/http.py, knows only those two).  A
``Host`` that is not this server on loopback is refused (421) and a foreign
``Origin`` (403), as on every route; a request without ``Origin`` is taken, since
Claude Code sends none and no browser can add the bearer header cross-origin.

Who asks.  Not a name from the body: the process at the other end of the TCP
connection, read from /proc (``peer_agent``): the connection's socket in
``/proc/net/tcp{,6}`` gives its inode and owner, and the one process of ours whose
``comm`` is ``claude`` holding ``socket:[inode]`` is the Claude Code that asks,
``claude-code-PID``, the agent its MCP server and its command hook are
(core/agents.py).  The session id names it only where /proc says nothing.

The request dying.  Claude Code closes the request when its hook times out, when it
is killed, or when the human answered in its own dialog; the server's ``receive()``
then says ``http.disconnect`` and the question is withdrawn from every editor at once,
``by`` service/askers.py's ``GONE``.  It is asked bound to no process
(``Askers.bind``), so a hub restarted meanwhile withdraws it too: the request died
with the old hub.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import ipaddress
import json
import logging
import os
import socket
import stat
import struct
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import trio

from hive_rpc.core.agents import CLAUDE_CODE
from hive_rpc.core.claude_code import (
    PermissionRequest,
    answered,
    permission_ask,
    permission_prompt_tool,
    rule_check_params,
    rule_decision,
)
from hive_rpc.core.claude_questions import TOOL_NAME, parse_questions, questions_ask
from hive_rpc.core.claude_transcript import SettledWatch
from hive_rpc.core.errors import HiveError
from hive_rpc.core.permission_hook import (
    HOOK_PATH,
    SETTLED_BY,
    NotAHookEvent,
    agent_of,
    check_permission_event,
    decision_output,
    questions_output,
    read_event,
    settle,
)
from hive_rpc.core.prompt import Ask
from hive_rpc.faces.mcp.approve_tool import hub_rules
from hive_rpc.host.paths import HOOK_TOKEN_NAME, load_token
from hive_rpc.relay.consent import CALLER, Caller
from hive_rpc.service.askers import GONE

if TYPE_CHECKING:
    from hive_rpc.service import HubService

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY = 4 << 20
"""The largest event taken (4 MiB): a Write of a large file carries the file, and
the question shows only its head; a larger body is refused (413) and Claude Code asks
in its own dialog."""
WAIT_S = 540.0
"""How long the route waits for the human by default: the command hook's
``--timeout`` (cli/parser.py HOOK_TIMEOUT_S), under the 600 s setup gives the hook,
so the hub withdraws its question and Claude Code asks itself before it gives up on
the request.  ``?timeout=SECONDS`` sets it per hook entry."""
WITHDRAW_S = 5.0
"""How long withdrawing an unanswered question may take once the wait is over."""
POLL_S = 0.25
"""How often the session's transcript is read for the call's result (Claude Code
writes it about 0.5 s after an answer in its own dialog)."""
TAIL_BYTES = 256 * 1024
"""Where the first read of the transcript starts, back from its end."""
NO_DECISION: dict[str, Any] = {}
"""The body that decides nothing: Claude Code's own dialog asks."""


class Doors(Protocol):
    """What the Guard knows about this server: the Host and Origin values that name it
    (faces/mcp/http.py ``Guard.allow_port`` fills them once the port is known)."""

    hosts: set[str]
    origins: set[str]


@dataclass(frozen=True)
class Refusal(Exception):
    """A request this route does not serve: its HTTP status and the precise reason."""

    status: int
    message: str
    headers: tuple[tuple[bytes, bytes], ...] = ()


# --- who asks: the TCP peer's process, from /proc ---------------------------------------


def _address(text: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    """``0100007F:1F90`` (/proc/net/tcp: the address as the kernel's 32-bit words in
    host order, the port in hex) as an address and a port."""
    host, _, port = text.partition(":")
    words = [int(host[i : i + 8], 16) for i in range(0, len(host), 8)]
    raw = b"".join(struct.pack("=I", w) for w in words)
    address = ipaddress.ip_address(raw)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped, int(port, 16)
    return address, int(port, 16)


def _normal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    address = ipaddress.ip_address(host.strip("[]"))
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def socket_of(client: tuple[str, int], server: tuple[str, int]) -> tuple[int, int] | None:
    """The inode and owner uid of the client's end of a loopback TCP connection, or
    None when the kernel shows no such socket: asked by its four-tuple through
    NETLINK_SOCK_DIAG (one lookup, ~10 us), else read from ``/proc/net/tcp{,6}``
    (the kernel formats every socket there: 4-5 ms on the machine of
    docs/benchmarks.md, so only where netlink is refused)."""
    try:
        return _diag_lookup(client, server)
    except OSError:
        return _proc_lookup(client, server)


NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLMSG_ERROR = 2
_NO_COOKIE = 0xFFFFFFFF


def _diag_lookup(client: tuple[str, int], server: tuple[str, int]) -> tuple[int, int] | None:
    """``socket_of`` through sock_diag: an ``inet_diag_req_v2`` naming the client's
    socket (source: the client, destination: the server); the reply's
    ``inet_diag_msg`` carries its uid and inode.  OSError when netlink cannot ask."""
    local, remote = _normal(client[0]), _normal(server[0])
    family = socket.AF_INET if local.version == 4 else socket.AF_INET6
    request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF)
    request += struct.pack("!HH", int(client[1]), int(server[1]))
    request += local.packed.ljust(16, b"\0") + remote.packed.ljust(16, b"\0")
    request += struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE)
    header = struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, 1, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as link:
        link.settimeout(1.0)
        link.send(header + request)
        reply = link.recv(65536)
    if len(reply) < 16:
        raise OSError("sock_diag: a short reply")
    kind = struct.unpack_from("=H", reply, 4)[0]
    if kind == NLMSG_ERROR:
        error = struct.unpack_from("=i", reply, 16)[0]
        if error == -errno.ENOENT:
            return None  # no such socket (it closed meanwhile)
        raise OSError(-error, "sock_diag refused the lookup")
    if len(reply) < 16 + 4 + 48 + 20:
        raise OSError("sock_diag: a short reply")
    uid, inode = struct.unpack_from("=II", reply, 16 + 4 + 48 + 12)
    return inode, uid


def _proc_lookup(client: tuple[str, int], server: tuple[str, int]) -> tuple[int, int] | None:
    """``socket_of`` from ``/proc/net/tcp`` or ``tcp6``: the row whose local address
    is the client's and remote the server's."""
    local = (_normal(client[0]), int(client[1]))
    remote = (_normal(server[0]), int(server[1]))
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10:
                continue
            try:
                if _address(fields[1]) == local and _address(fields[2]) == remote:
                    return int(fields[9]), int(fields[7])
            except ValueError:
                continue
    return None


_AGENTS: set[int] = set()
"""Processes last seen with an agent's ``comm``, tried first (``holder_of``)."""


def holder_of(inode: int, uid: int, names: tuple[str, ...]) -> int | None:
    """The process of ``uid`` whose ``comm`` is one of ``names`` and that holds the
    socket ``inode``, or None.  Bounded: only such processes' descriptors are read,
    never every process's; those seen before first (one Claude Code asks again and
    again: a walk of /proc is ~3 ms, its descriptors ~0.1 ms), newest descriptor
    first (the request's connection is among the last opened)."""
    link = f"socket:[{inode}]"
    for pid in sorted(_AGENTS):
        if _holds(pid, uid, names, link):
            return pid
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return None
    _AGENTS.clear()
    found = None
    for name in entries:
        pid = int(name)
        if _is_agent(pid, uid, names):
            _AGENTS.add(pid)
            if found is None and _holds(pid, uid, names, link, checked=True):
                found = pid
    return found


def _is_agent(pid: int, uid: int, names: tuple[str, ...]) -> bool:
    """Whether ``pid`` is a process of ``uid`` named one of ``names``: its comm read
    first, its owner only for a name that matches (one read per process of the walk,
    not three)."""
    try:
        fd = os.open(f"/proc/{pid}/comm", os.O_RDONLY)
        try:
            comm = os.read(fd, 64).decode("utf-8", "replace").strip()
        finally:
            os.close(fd)
        return comm in names and os.stat(f"/proc/{pid}").st_uid == uid
    except OSError:
        return False  # gone meanwhile, or not ours to read


def _holds(pid: int, uid: int, names: tuple[str, ...], link: str, *, checked: bool = False) -> bool:
    """Whether ``pid`` (an agent of ``uid``; checked again unless ``checked``: a pid
    may have been reused) holds the socket ``link``."""
    if not checked and not _is_agent(pid, uid, names):
        _AGENTS.discard(pid)
        return False
    try:
        fds = sorted((int(n) for n in os.listdir(f"/proc/{pid}/fd")), reverse=True)
    except (OSError, ValueError):
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") == link:
                return True
    return False


@dataclass(frozen=True)
class Peer:
    """What /proc says about the process that sent a request."""

    pid: int | None
    """The agent process holding the client socket, or None (none of that name)."""
    known: bool
    """Whether /proc showed the connection at all."""


def peer_agent(client: tuple[str, int] | None, server: tuple[str, int] | None) -> Peer:
    """The Claude Code process at the other end of a connection, as the kernel says:
    refused (403) when the connection belongs to another user."""
    if client is None or server is None:
        return Peer(None, known=False)
    try:
        found = socket_of(client, server)
    except ValueError:
        return Peer(None, known=False)
    if found is None:
        return Peer(None, known=False)
    inode, uid = found
    if uid != os.getuid():
        raise Refusal(403, f"the asking connection belongs to uid {uid}, not this hub's user")
    return Peer(holder_of(inode, uid, CLAUDE_CODE.process_names), known=True)


def prompt_tool_of(pid: int) -> str | None:
    """The ``--permission-prompt-tool`` the Claude Code ``pid`` runs with, or None: that
    tool decides, so this hook decides nothing (as the command hook does)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return permission_prompt_tool(raw.decode("utf-8", "replace").split("\0"))


# --- the decision ------------------------------------------------------------------------


async def _call(service: HubService, method: str, params: dict[str, Any]) -> Any:
    """The hub's ``method`` with ``params`` as the wire would carry them (a tuple,
    ``Ask.choices``, as a list; no None), as ``HiveMcp.call`` does."""
    wire = {k: list(v) if isinstance(v, tuple) else v for k, v in params.items() if v is not None}
    return await service.call(method, wire)


class Asking:
    """One request's question: asked, waited for, withdrawn if still pending at the end
    (``by`` GONE when the request died, else the agent: the hook's time ran out)."""

    def __init__(self, service: HubService) -> None:
        self.service = service
        self.gone = False
        """Claude Code closed the request."""
        self.asked = trio.Event()
        """Set once the question is asked: ``prompt_id`` and ``agent_id`` then say which."""
        self.prompt_id = ""
        self.agent_id = ""

    async def ask_and_wait(self, ask: Ask, wait_s: float) -> dict[str, Any]:
        service = self.service
        record: dict[str, Any] = await _call(service, "hive/ask", ask.params())
        if service.askers is not None:  # served by the hub: gone with it at a restart
            await service.askers.bind(record["id"], None)
        self.prompt_id, self.agent_id = record["id"], ask.agent_id
        self.asked.set()
        try:
            with trio.move_on_after(wait_s):
                while record["status"] == "pending":
                    params = {"id": record["id"], "timeout_s": wait_s, "agent_id": ask.agent_id}
                    record = await _call(service, "hive/await", params)
        finally:
            if record["status"] == "pending":
                by = GONE if self.gone else ask.agent_id
                with (
                    trio.CancelScope(shield=True),
                    trio.move_on_after(WITHDRAW_S),
                    contextlib.suppress(HiveError),
                ):
                    await service.registry.cancel(record["id"], by=by, agent_id=ask.agent_id)
        return record

    async def decide(
        self, event: Mapping[str, Any], agent: str, wait_s: float
    ) -> dict[str, Any] | None:
        """The hook's output: a rule's decision, else the human's (saving the rule a
        lasting answer asks for), else None.  Claude Code's ``AskUserQuestion`` is
        asked as one prompt and answered in its input."""
        if event["tool_name"] == TOOL_NAME:
            questions = parse_questions(event["tool_input"])
            if questions is None:
                return None
            ask = questions_ask(questions, agent_id=agent, timeout_s=wait_s)
            record = await self.ask_and_wait(ask, wait_s)
            return (
                questions_output(event, questions, record.get("answer"))
                if answered(record)
                else None
            )
        request = PermissionRequest.from_hook_event(event, agent_id=agent)
        tool = request.tool_name
        params = rule_check_params(request)
        if params is not None:
            checked = await _call(self.service, "rule/check", params)
            if checked is not None:
                return decision_output(rule_decision(checked, tool))
        ask = permission_ask(request, timeout_s=wait_s, home=os.environ.get("HOME"))
        record = await self.ask_and_wait(ask, wait_s)
        settled = settle(request, record)
        if settled.decision is None:
            return None
        if settled.unsaved is not None:
            log.warning("allowed once: %s", settled.unsaved)
        if settled.rule is not None:
            why = await hub_rules(self.service)(settled.rule)
            if why is not None:
                pattern = settled.rule["pattern"]
                log.warning("allowed once: the rule %s was not saved: %s", pattern, why)
        return decision_output(settled.decision)


# --- the route ---------------------------------------------------------------------------


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if bytes(key).lower() == name:
            return bytes(value)
    return None


def _wait_of(scope: Scope) -> float:
    for part in bytes(scope.get("query_string", b"")).decode("latin-1").split("&"):
        key, _, value = part.partition("=")
        if key == "timeout":
            try:
                seconds = float(value)
            except ValueError:
                raise Refusal(
                    400, f"?timeout= must be a number of seconds, not {value[:40]!r}"
                ) from None
            if not 0 < seconds <= 86_400:
                raise Refusal(400, "?timeout= must be more than 0 and at most 86400 seconds")
            return seconds
    return WAIT_S


async def _send_json(
    send: Send, status: int, body: Any, extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    data = json.dumps(body).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


class HookRoute:
    """ASGI app in front of the Guard: ``HOOK_PATH`` is served here, with the hook
    token; every other request goes to ``inner`` (the Guard), which refuses the hook
    token as it refuses any token it does not know."""

    def __init__(
        self,
        inner: App,
        doors: Doors,
        service: HubService,
        data_dir: Path,
        *,
        other_tokens: Mapping[str, str] | None = None,
    ) -> None:
        self.inner = inner
        self.doors = doors
        self.service = service
        token, self.token_file = load_token(data_dir, HOOK_TOKEN_NAME)
        self._token = token.encode()
        self._others = {k.encode(): v for k, v in (other_tokens or {}).items() if k}
        self.asking = 0
        """Requests waiting on a decision now (``statistics``)."""

    def statistics(self) -> dict[str, int]:
        return {"asking": self.asking}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != HOOK_PATH:
            await self.inner(scope, receive, send)
            return
        try:
            await self._serve(scope, receive, send)
        except Refusal as e:
            await _send_json(send, e.status, {"error": {"message": e.message}}, e.headers)

    def _check(self, scope: Scope) -> None:
        """The doors of the route, in the Guard's order: Origin, Host, credential."""
        origin = _header(scope, b"origin")
        if origin is not None and origin.decode("latin-1") not in self.doors.origins:
            raise Refusal(403, f"Origin {origin.decode('latin-1')[:80]!r} is not allowed")
        host = (_header(scope, b"host") or b"").decode("latin-1")
        if host not in self.doors.hosts:
            raise Refusal(421, "Invalid Host header")
        auth = _header(scope, b"authorization") or b""
        given = auth[7:] if auth.startswith(b"Bearer ") else b""
        if given and hmac.compare_digest(given, self._token):
            return
        for other, what in self._others.items():
            if given and hmac.compare_digest(given, other):
                raise Refusal(
                    403,
                    f"that is {what}, which never opens {HOOK_PATH}: send the hook token, "
                    f"the contents of {self.token_file}",
                )
        raise Refusal(
            401,
            f"missing or wrong bearer token: {HOOK_PATH} takes the hook token, the contents "
            f"of {self.token_file} (`hive-rpc setup claude-code` writes it into the hook)",
            ((b"www-authenticate", b'Bearer realm="hive-rpc hook"'),),
        )

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if str(scope.get("method", "")).upper() != "POST":
            raise Refusal(405, f"{HOOK_PATH} takes POST only", ((b"allow", b"POST"),))
        self._check(scope)
        media = (_header(scope, b"content-type") or b"").split(b";")[0].strip().lower()
        if media != b"application/json":
            raise Refusal(415, "send the hook event as application/json")
        wait_s = _wait_of(scope)
        raw = await _body(receive)
        try:
            event = read_event(raw, "the body")
            check_permission_event(event)
        except NotAHookEvent as e:
            raise Refusal(400, str(e)) from None
        # In the loop, not a worker thread: a netlink lookup and one agent's descriptors
        # (~0.1-0.5 ms) cost less than a thread's round trip on a busy machine.
        peer = peer_agent(scope.get("client"), scope.get("server"))
        if peer.pid is not None and prompt_tool_of(peer.pid) is not None:
            await _send_json(send, 200, NO_DECISION)  # that run's prompt tool decides
            return
        agent = agent_of(CLAUDE_CODE, peer.pid, event.get("session_id"))
        asking = Asking(self.service)
        output: dict[str, Any] | None = None
        self.asking += 1
        caller = CALLER.set(Caller(pid=peer.pid)) if peer.pid is not None else None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_watch_disconnect, receive, asking, nursery.cancel_scope)
                transcript = transcript_of(event)
                if transcript is not None:
                    watch = SettledWatch(event["tool_name"], event["tool_input"], time.time())
                    nursery.start_soon(_watch_transcript, transcript, watch, asking)
                try:
                    output = await asking.decide(event, agent, wait_s)
                except HiveError as e:  # a refusal (the agent's share full ...): no decision
                    log.warning("hook: no decision for %s: %s", agent, e.message)
                nursery.cancel_scope.cancel()
        finally:
            self.asking -= 1
            if caller is not None:
                CALLER.reset(caller)
        if asking.gone:
            return  # nobody to answer
        await _send_json(send, 200, NO_DECISION if output is None else output)


async def _body(receive: Receive) -> bytes:
    """The whole request body, refused (413) past MAX_BODY."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Refusal(400, "the client left before sending the whole body")
        chunk = bytes(message.get("body", b""))
        size += len(chunk)
        if size > MAX_BODY:
            raise Refusal(413, f"the hook event is larger than {MAX_BODY} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def transcript_of(event: Mapping[str, Any]) -> Path | None:
    """The session's transcript the event names, if it is one the hub may read: an
    absolute ``.jsonl`` path (Claude Code's JSON lines).  The hub reads only whether
    the call was settled there, and tells the caller nothing of it."""
    text = event.get("transcript_path")
    if not isinstance(text, str) or not text.endswith(".jsonl"):
        return None
    path = Path(text)
    return path if path.is_absolute() else None


async def _watch_transcript(path: Path, watch: SettledWatch, asking: Asking) -> None:
    """Claude Code shows its own dialog while the hook waits and takes the first
    answer, and an answer there leaves the request open (measured on 2.1.328, as for
    the command hook: core/claude_transcript.py): the call's result in the session's
    transcript withdraws the question, ``by`` SETTLED_BY.  Read every POLL_S (a file
    gives no event); a transcript that cannot be read only ends the watch."""
    await asking.asked.wait()
    opened = None
    while opened is None:
        try:
            opened = await trio.open_file(path, "rb")
        except FileNotFoundError:  # a new session's file may come a moment later
            await trio.sleep(POLL_S)
        except OSError:
            return
    async with opened as transcript:
        try:
            st = os.fstat(transcript.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                return
            await transcript.seek(max(0, st.st_size - TAIL_BYTES))
            while not watch.feed(await transcript.read()):  # noqa: ASYNC110 (a file: no event)
                await trio.sleep(POLL_S)
        except OSError:
            return
    with contextlib.suppress(HiveError):
        await asking.service.registry.cancel(
            asking.prompt_id, by=SETTLED_BY, agent_id=asking.agent_id
        )


async def _watch_disconnect(receive: Receive, asking: Asking, scope: trio.CancelScope) -> None:
    """Until Claude Code closes the request: then the question is withdrawn (the
    decision's own ``finally``), ``by`` GONE."""
    while (await receive())["type"] != "http.disconnect":
        pass
    asking.gone = True
    scope.cancel()
