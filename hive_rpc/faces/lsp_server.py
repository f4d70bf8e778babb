"""``hive-rpc lsp``: the hub's methods and notifications as a stdio language server.

VS Code (through vscode-languageclient) and any LSP-capable editor start one
``hive-rpc lsp`` per window.  It is a client of the hub, like ``hive-rpc mcp``: it
starts the hub when none answers and keeps it when it exits, so one window's
``shutdown``/``exit`` ends that window's server process and nothing else.

What the editor gets, under the editor socket's own names (docs/protocol.md):

* every ``hive/*`` request (``hive/ask``, ``hive/respond``, ``hive/list`` ...) is sent
  to the hub with the same parameters, and its result or error comes back as is;
  ``hive/typing`` also works as a notification;
* ``hive/subscribe`` makes this server forward the hub's ``hive/prompt``,
  ``hive/dismiss`` and ``hive/health`` notifications (with ``sessions``, the agent
  sessions' ``hive/session`` too), and keep doing so across hub
  restarts: it reconnects (starting a hub), subscribes again, and dismisses what
  closed meanwhile (a new hub sends ``hive/health`` only if it is degraded);
* ``hive/connection`` (``{"connected": bool, "message": str}``), a notification of
  this face only, says when the hub is lost and back;
* while a prompt is pending, a work-done progress (``window/workDoneProgress/create``
  then ``$/progress`` begin ... end) shows it in clients that display progress,
  unless ``initializationOptions`` has ``{"progress": false}``.

How pygls runs under trio: pygls owns the LSP side (``initialize`` and the server's
capabilities, ``shutdown``/``exit``, the responses to our ``workDoneProgress/create``,
its progress helper), but its transports are asyncio's.  Its protocol object is
nearly sans-IO, so this module feeds it: trio reads stdin, our framing decoder cuts
frames and our strict JSON reader decodes them; LSP messages go to
``protocol.handle_message`` (synchronously, on the trio thread), and pygls writes
through a writer that queues whole frames for the one task that writes stdout.  The
``hive/*`` namespace never enters pygls: those requests run as trio tasks (a long
``hive/await`` must not hold anything up), with ``$/cancelRequest`` cancelling them.
pygls handlers that need asyncio (``async def``) are never registered here.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import trio
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from hive_rpc import __version__
from hive_rpc.client.hub_connection import HubConnection
from hive_rpc.core.errors import HiveError, HubUnreachable
from hive_rpc.core.terminal_text import one_line
from hive_rpc.faces.backends import RemoteBackend, open_remote_backend
from hive_rpc.faces.connection_scope import connection_handlers, refuse_elsewhere
from hive_rpc.protocol.framing import FrameDecoder, FramingError, Oversized
from hive_rpc.protocol.jsonrpc import (
    MESSAGE_TOO_LARGE,
    PARSE_ERROR,
    Endpoint,
    ErrorResponse,
    Notification,
    Request,
    Response,
    RpcError,
    loads,
    parse_object,
)
from hive_rpc.rpc.dispatch import dispatch, error_for
from hive_rpc.service import METHODS, check_params
from hive_rpc.service.table import LSP_NAMESPACE

log = logging.getLogger(__name__)

NAMESPACE = LSP_NAMESPACE
"""The requests this face takes for the hub rather than pygls (the method table
derives which methods ``hive-rpc lsp`` offers from it)."""
REQUEST_CANCELLED = -32800
"""LSP's RequestCancelled, for a ``hive/*`` request withdrawn by ``$/cancelRequest``."""
MAX_BODY = 1 << 20
OUT_BUFFER = 4096
"""Frames queued for stdout; a client that stops reading that long is dropped."""
RECONNECT_FIRST_S = 0.5
RECONNECT_MAX_S = 30.0
"""Back-off between attempts to get a hub back when it cannot be reached or started.
A retry delay, not a poll: with start allowed, the first attempt starts a hub."""
PROGRESS_PREFIX = "hive-prompt/"
DOCUMENT_SYNC = ("textDocument/", "notebookDocument/")
"""Notifications about documents (didOpen, didChange, didSave, didClose ...): this
server keeps no documents and advertises no sync, but clients send them anyway
(Neovim's vim.lsp, for a buffer it attached before the server said so); they are
dropped unread, never handed to pygls, whose workspace raised KeyError for a
didChange of a document it was never told was opened."""


class _FirstResult:
    """The hub's answer to the relay's first ``hive/subscribe``, for the request
    that started the relay: a result, or the exception that stopped it."""

    def __init__(self) -> None:
        self.ready = trio.Event()
        self.value: Any = None

    def set(self, value: Any) -> None:
        if not self.ready.is_set():
            self.value = value
            self.ready.set()


class _Writer:
    """What pygls writes through: whole frames onto the stdout queue."""

    def __init__(self, send: trio.MemorySendChannel[bytes]) -> None:
        self._send = send

    def write(self, data: bytes) -> None:
        try:
            self._send.send_nowait(data)
        except trio.WouldBlock:
            raise BrokenPipeError("the LSP client stopped reading") from None

    def close(self) -> None:
        """pygls calls this on ``exit``; stdout is closed when the server returns."""


def build_server() -> LanguageServer:
    """The pygls server: no document sync, nothing but the LSP lifecycle.

    pygls registers its own workspace handlers for didOpen/didChange/didClose (of
    text and notebook documents) and advertises ``openClose`` because they exist;
    they are removed, so ``initialize`` answers ``textDocumentSync`` with nothing to
    sync (``openClose`` false, ``change`` None)."""
    server = LanguageServer(
        "hive-rpc", __version__, text_document_sync_kind=types.TextDocumentSyncKind.None_
    )
    builtin = server.protocol.fm.builtin_features
    for name in [n for n in builtin if n.startswith(DOCUMENT_SYNC)]:
        del builtin[name]
    return server


class LspSession:
    """One editor window: its stdin/stdout, its pygls server, its link to the hub."""

    def __init__(
        self, server: LanguageServer, backend: RemoteBackend, out: trio.MemorySendChannel[bytes]
    ) -> None:
        self.server = server
        self.protocol = server.protocol
        self.backend = backend
        self.exit_code: int | None = None
        self._out = out
        self._endpoint = Endpoint(max_body=MAX_BODY)
        self._requests: dict[int | str, trio.CancelScope] = {}
        self._subscription: trio.CancelScope | None = None
        self._subscribe_params: dict[str, Any] = {}
        """What the client's ``hive/subscribe`` asked for, sent with each subscription."""
        self._shown: dict[str, str | None] = {}
        """Pending prompts told to the client -> their progress token (or None)."""
        self._progress = True
        self._progress_seq = 0
        self._shutdown = False
        self.protocol.set_writer(_Writer(out))

        @server.feature(types.INITIALIZE)
        def _initialize(params: types.InitializeParams) -> None:
            options = params.initialization_options
            if isinstance(options, dict) and options.get("progress") is False:
                self._progress = False

        @server.feature(types.SHUTDOWN)
        def _on_shutdown(params: None) -> None:
            self._shutdown = True

    # --- input -------------------------------------------------------------------------

    async def serve(self, stdin: trio.abc.ReceiveStream) -> None:
        """Read and dispatch until ``exit`` or end of input."""
        decoder = FrameDecoder(MAX_BODY)
        async with trio.open_nursery() as nursery:
            while self.exit_code is None and (data := await stdin.receive_some(65536)):
                decoder.receive_data(data)
                while self.exit_code is None:
                    try:
                        event = decoder.next_event()
                    except FramingError as e:
                        self._send(self._endpoint.error(None, PARSE_ERROR, str(e)))
                        self.exit_code = 1
                        break
                    if event is None:
                        break
                    if isinstance(event, Oversized):
                        self._send(
                            self._endpoint.error(
                                None,
                                MESSAGE_TOO_LARGE,
                                f"message of {event.length} bytes is over the {event.limit}-"
                                "byte limit; it was discarded",
                            )
                        )
                        continue
                    self._dispatch(event.body, nursery)
            if self.exit_code is None:
                self.exit_code = 0 if self._shutdown else 1
            nursery.cancel_scope.cancel()

    def _dispatch(self, body: bytes, nursery: trio.Nursery) -> None:
        try:
            raw = loads(body)
            msg = parse_object(raw)
        except RpcError as e:
            if not e.notification:
                self._send(self._endpoint.error(e.id, e.code, e.message, e.data))
            return
        if isinstance(msg, Notification) and msg.method.startswith(DOCUMENT_SYNC):
            return  # no documents kept here: see DOCUMENT_SYNC
        if isinstance(msg, Request) and msg.method.startswith(NAMESPACE):
            scope = trio.CancelScope()
            self._requests[msg.id] = scope
            nursery.start_soon(self._hive_request, msg, scope)
        elif isinstance(msg, Notification) and msg.method.startswith(NAMESPACE):
            nursery.start_soon(self._hive_notification, msg)
        elif (
            isinstance(msg, Notification)
            and msg.method == types.CANCEL_REQUEST
            and isinstance(msg.params.get("id"), int | str)
            and msg.params["id"] in self._requests
        ):
            self._requests[msg.params["id"]].cancel()
        else:
            self._to_pygls(raw, msg)

    def _to_pygls(
        self, raw: dict[str, Any], msg: Request | Notification | Response | ErrorResponse
    ) -> None:
        """An LSP message for pygls, handled synchronously on this thread."""
        try:
            self.protocol.handle_message(self.protocol.structure_message(raw))
        except SystemExit as e:  # pygls's ``exit``: end this window's server only
            self.exit_code = e.code if isinstance(e.code, int) else 1
        except JsonRpcException as e:
            if isinstance(msg, Request):
                err = e.to_response_error()
                self._send(self._endpoint.error(msg.id, err.code, err.message, err.data))
        except Exception as e:
            # pygls (or a feature of ours) failed on this message: answer it, go on.
            if isinstance(msg, Request):
                failed = error_for(msg.method, e)
                self._send(self._endpoint.error(msg.id, failed.code, failed.message, failed.data))
            else:
                log.exception("internal error in %s", getattr(msg, "method", "a response"))

    # --- the hive/* namespace ------------------------------------------------------------

    async def _hive_request(self, req: Request, scope: trio.CancelScope) -> None:
        try:
            with scope:
                try:
                    result = await dispatch(self._call, req.method, req.params)
                except HiveError as e:  # dispatch's tiers: a refusal, a lost hub, a bug
                    self._send(self._endpoint.error(req.id, e.code, e.message, e.data))
                else:
                    self._send(self._endpoint.result(req.id, result))
                return
        finally:
            self._requests.pop(req.id, None)
        self._send(
            self._endpoint.error(
                req.id, REQUEST_CANCELLED, f"{req.method} was cancelled by the client"
            )
        )

    async def _call(self, method: str, params: dict[str, Any]) -> Any:
        """A ``hive/*`` request: the connection-scoped ones here, the rest at the hub
        (unless the method table says this face does not offer it)."""
        own = _CONNECTION_METHODS.get(method)
        if own is not None:
            return await own(self, check_params(method, params))
        refuse_elsewhere("lsp", method)
        return await self.backend.call(method, params)

    async def _hive_notification(self, note: Notification) -> None:
        row = METHODS.get(note.method)
        if row is None or not row.notification_ok or "lsp" not in row.faces:
            return  # JSON-RPC: a notification is never answered, even when wrong
        with contextlib.suppress(HiveError):  # nobody to tell; a bug was logged
            await dispatch(self.backend.call, note.method, note.params)

    async def _unsubscribe(self, _params: dict[str, Any]) -> dict[str, Any]:
        was = self._subscription is not None
        if self._subscription is not None:
            self._subscription.cancel()
            self._subscription = None
        for prompt_id in list(self._shown):
            self._end_progress(prompt_id)
        self._shown.clear()
        return {"subscribed": False, "was_subscribed": was}

    async def _subscribe(self, params: dict[str, Any]) -> Any:
        if self._subscription is not None:
            return {"subscribed": True, "pending": None}
        # Passed on as the client asked (agent sessions: hive/session), on each
        # subscription to a new hub too.
        self._subscribe_params = {k: params[k] for k in ("sessions",) if k in params}
        scope = self._subscription = trio.CancelScope()
        first = _FirstResult()
        # The relay lives as long as the subscription, not as this request: it runs in
        # the backend's nursery, which outlives every request.
        self.backend.nursery.start_soon(self._relay, scope, first)
        await first.ready.wait()
        if isinstance(first.value, BaseException):
            if self._subscription is scope:
                self._subscription = None
            raise first.value
        return first.value

    async def _relay(self, scope: trio.CancelScope, first: _FirstResult) -> None:
        """Forward the hub's notifications, across hub restarts, until unsubscribed."""
        delay = RECONNECT_FIRST_S
        lost_message = ""
        try:
            with scope:
                while True:
                    try:
                        conn = await self.backend.connection()
                        async with conn.notifications() as notes:
                            result = await conn.call("hive/subscribe", self._subscribe_params)
                            if not first.ready.is_set():
                                first.set(result)
                            elif lost_message:
                                self._notify("hive/connection", {"connected": True, "message": ""})
                            lost_message, delay = "", RECONNECT_FIRST_S
                            await self._forward(conn, notes, result.get("pending") or 0)
                        lost_message = "lost the hub; reconnecting"
                    except (HubUnreachable, HiveError) as e:
                        if not first.ready.is_set():  # no hub at all: the request fails
                            first.set(e)
                            return
                        lost_message = f"{one_line(str(e))}; retrying in {delay:g}s"
                    self._notify("hive/connection", {"connected": False, "message": lost_message})
                    await trio.sleep(delay)
                    delay = min(delay * 2, RECONNECT_MAX_S)
        finally:
            # Unsubscribed before the hub answered: the subscribe request says so.
            first.set({"subscribed": False, "pending": None})

    async def _forward(
        self, conn: HubConnection, notes: trio.MemoryReceiveChannel[Any], replay: int
    ) -> None:
        """Pass notifications on; after the first ``replay`` prompts (the hub's snapshot),
        dismiss what the client was shown that is no longer pending."""
        snapshot: set[str] = set()
        if replay == 0:
            await self._reconcile(conn, snapshot)
        async for note in notes:
            params = note.params
            if note.method == "hive/prompt" and isinstance(params.get("id"), str):
                if params["id"] not in self._shown:
                    self._shown[params["id"]] = self._begin_progress(params)
                self._notify("hive/prompt", params)
                if replay:
                    snapshot.add(params["id"])
                    replay -= 1
                    if replay == 0:
                        await self._reconcile(conn, snapshot)
            elif note.method == "hive/dismiss" and isinstance(params.get("id"), str):
                self._end_progress(params["id"])
                self._shown.pop(params["id"], None)
                self._notify("hive/dismiss", params)
            else:
                self._notify(note.method, params)

    async def _reconcile(self, conn: HubConnection, snapshot: set[str]) -> None:
        for prompt_id in [p for p in self._shown if p not in snapshot]:
            try:
                record = await conn.call("hive/poll", {"id": prompt_id})
                params = {k: record.get(k) for k in ("id", "status", "by", "action", "unseen")}
            except HiveError:
                params = {
                    "id": prompt_id,
                    "status": "unknown",
                    "by": None,
                    "action": None,
                    "unseen": False,
                }
            self._end_progress(prompt_id)
            self._shown.pop(prompt_id, None)
            self._notify("hive/dismiss", params)

    # --- progress ------------------------------------------------------------------------

    def _client_shows_progress(self) -> bool:
        window = self.protocol.client_capabilities.window
        return self._progress and bool(window and window.work_done_progress)

    def _begin_progress(self, record: dict[str, Any]) -> str | None:
        if not self._client_shows_progress():
            return None
        self._progress_seq += 1
        token = f"{PROGRESS_PREFIX}{record['id']}/{self._progress_seq}"
        agent = one_line(str(record.get("agent_id") or "an agent"))
        begin = types.WorkDoneProgressBegin(
            title=f"{agent} needs input",
            message=one_line(str(record.get("question", "")))[:200],
            cancellable=False,
        )

        def created(_: Any) -> None:
            if self._shown.get(record["id"]) == token:
                self.server.work_done_progress.begin(token, begin)

        try:
            self.server.work_done_progress.create(token, created)
        except Exception:  # a client that refuses progress must not lose the prompt
            log.exception("could not create a progress for %s", record["id"])
            return None
        return token

    def _end_progress(self, prompt_id: str) -> None:
        token = self._shown.get(prompt_id)
        if token is not None:
            self._shown[prompt_id] = None
            progress = self.server.work_done_progress
            if token in progress.tokens:  # begun: the client answered the create
                progress.end(token, types.WorkDoneProgressEnd())
                progress.tokens.pop(token, None)

    # --- output --------------------------------------------------------------------------

    def _send(self, frame: bytes) -> None:
        try:
            self._out.send_nowait(frame)
        except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
            log.warning("the LSP client stopped reading; closing")
            self.exit_code = 1

    def _notify(self, method: str, params: Any) -> None:
        self._send(self._endpoint.notify(method, params))


_CONNECTION_METHODS = connection_handlers(
    "lsp", {"hive/subscribe": LspSession._subscribe, "hive/unsubscribe": LspSession._unsubscribe}
)
"""The connection-scoped methods of the method table this face runs itself."""


async def _write_out(frames: trio.MemoryReceiveChannel[bytes], stdout: trio.abc.SendStream) -> None:
    """The one writer of stdout; when the client is gone, the queue is closed so that
    the session notices (its next send fails) instead of blocking."""
    async with frames:
        try:
            async for frame in frames:
                await stdout.send_all(frame)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            log.info("stdout closed: the LSP client went away")


@contextlib.asynccontextmanager
async def _stdio() -> AsyncIterator[tuple[trio.lowlevel.FdStream, trio.lowlevel.FdStream]]:
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    async with stdin, stdout:
        yield stdin, stdout


async def run_lsp(socket: Path, data_dir: Path, *, start: bool = True) -> int:
    """``hive-rpc lsp``: serve one editor window on stdin/stdout; the exit code."""
    server = build_server()
    send, receive = trio.open_memory_channel[bytes](OUT_BUFFER)
    async with (
        _stdio() as (stdin, stdout),
        # An editor window's face: it proves itself an approver when it can read the
        # hub's approver token (docs/security.md), so VS Code answers permission prompts.
        open_remote_backend(socket, data_dir, start=start, approver=True) as backend,
    ):
        session = LspSession(server, backend, send)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_write_out, receive, stdout)
            await session.serve(stdin)
            send.close()  # the writer drains what is queued, then ends
    return session.exit_code if session.exit_code is not None else 1
