"""``hive-rpc lsp``: the real process on stdio, against a real hub, driven by a plain
JSON-RPC client (the VS Code side's own tests use vscode-jsonrpc, in vscode-ext/)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import HiveError, StoreWriteFailed
from hive_rpc.hub import HubConfig
from hive_rpc.protocol.framing import encode_frame
from hive_rpc.protocol.jsonrpc import (
    Endpoint,
    ErrorResponse,
    Notification,
    Request,
    Response,
    dumps,
)
from hive_rpc.service import HubService

TIMEOUT_S = 20


class LspPeer:
    """An editor window: requests, notifications, and answers to the server's requests
    (``window/workDoneProgress/create`` is answered ``null``, as VS Code does)."""

    def __init__(self, proc: trio.Process) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        self.proc = proc
        self.stdin, self.stdout = proc.stdin, proc.stdout
        self.endpoint = Endpoint()
        self.pending: dict[int | str, tuple[trio.Event, list[Any]]] = {}
        self.send_notes, self.notes = trio.open_memory_channel[Notification | Request](1000)
        self.server_requests: list[Request] = []
        self.send_lock = trio.Lock()

    async def send(self, frame: bytes) -> None:
        async with self.send_lock:
            await self.stdin.send_all(frame)

    async def read(self) -> None:
        while data := await self.stdout.receive_some(65536):
            for msg in self.endpoint.receive_data(data):
                if isinstance(msg, Response | ErrorResponse) and msg.id in self.pending:
                    event, box = self.pending[msg.id]
                    box.append(msg)
                    event.set()
                elif isinstance(msg, Request):
                    self.server_requests.append(msg)
                    await self.send(self.endpoint.result(msg.id, None))
                    await self.send_notes.send(msg)
                elif isinstance(msg, Notification):
                    await self.send_notes.send(msg)
                else:
                    raise AssertionError(f"unexpected message {msg!r}")
        self.send_notes.close()

    async def request(self, method: str, params: Any = None) -> Any:
        msg = await self.request_message(method, params)
        if isinstance(msg, ErrorResponse):
            raise HiveError.from_wire(msg.code, msg.message, msg.data)
        return msg.result

    async def request_message(self, method: str, params: Any = None) -> Response | ErrorResponse:
        msg_id, frame = self.endpoint.request(method, params)
        if params is None:  # LSP's shutdown has no params at all
            frame = encode_frame(dumps({"jsonrpc": "2.0", "id": msg_id, "method": method}))
        return await self.exchange(msg_id, frame)

    async def exchange(self, msg_id: int | str, frame: bytes) -> Response | ErrorResponse:
        event: trio.Event = trio.Event()
        box: list[Any] = []
        self.pending[msg_id] = (event, box)
        await self.send(frame)
        with trio.fail_after(TIMEOUT_S):
            await event.wait()
        del self.pending[msg_id]
        msg: Response | ErrorResponse = box[0]
        return msg

    async def notify(self, method: str, params: Any) -> None:
        if params is None:  # LSP's exit has no params at all
            frame = encode_frame(dumps({"jsonrpc": "2.0", "method": method}))
        else:
            frame = self.endpoint.notify(method, params)
        await self.send(frame)

    async def next(self, method: str) -> Notification | Request:
        """The next notification (or server request) with this method; others skipped."""
        with trio.fail_after(TIMEOUT_S):
            async for msg in self.notes:
                if msg.method == method:
                    return msg
        raise AssertionError(f"the server closed before sending {method}")

    async def initialize(self, *, progress: bool = False, options: Any = None) -> Any:
        caps = {"window": {"workDoneProgress": progress}}
        params = {"processId": os.getpid(), "rootUri": None, "capabilities": caps}
        if options is not None:
            params["initializationOptions"] = options
        result = await self.request("initialize", params)
        await self.notify("initialized", {})
        return result


@contextlib.asynccontextmanager
async def lsp(config: HubConfig, *extra: str) -> AsyncIterator[LspPeer]:
    args = [sys.executable, "-m", "hive_rpc", "lsp", "--socket", str(config.socket)]
    args += ["--data-dir", str(config.data_dir), *extra]
    async with trio.open_nursery() as nursery:
        proc = await trio.lowlevel.open_process(
            args, stdin=-1, stdout=-1, stderr=None, env=dict(os.environ)
        )
        peer = LspPeer(proc)
        nursery.start_soon(peer.read)
        try:
            yield peer
        finally:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await peer.stdin.aclose()
            with trio.move_on_after(10):
                await proc.wait()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            nursery.cancel_scope.cancel()


async def test_initialize_subscribe_answer_and_dismiss(
    hub: HubService, hub_config: HubConfig, client: HubClient
) -> None:
    early = await client.call("hive/ask", {"question": "Asked before?", "agent_id": "a1"})
    async with lsp(hub_config, "--no-start") as window:
        init = await window.initialize()
        assert init["serverInfo"]["name"] == "hive-rpc"
        assert await window.request("hive/subscribe", {}) == {"subscribed": True, "pending": 1}
        assert (await window.next("hive/prompt")).params["id"] == early["id"]
        # idempotent, like the editor socket
        assert await window.request("hive/subscribe", {}) == {"subscribed": True, "pending": None}

        asked = await client.call(
            "hive/ask", {"question": "Deploy?", "choices": ["yes", "no"], "agent_id": "a1"}
        )
        shown = await window.next("hive/prompt")
        assert shown.params["question"] == "Deploy?"
        answered = await window.request(
            "hive/respond", {"id": asked["id"], "answer": "yes", "by": "vscode"}
        )
        assert (answered["status"], answered["answer"]) == ("responded", "yes")
        dismissed = await window.next("hive/dismiss")
        assert dismissed.params == {
            "id": asked["id"],
            "status": "responded",
            "by": "vscode",
            "action": "accept",
            "unseen": False,
        }
        polled = await client.call("hive/poll", {"id": asked["id"], "agent_id": "a1"})
        assert (polled["answer"], polled["by"]) == ("yes", "vscode")

        # answered elsewhere: the window is told to close its box
        await client.call("hive/respond", {"id": early["id"], "answer": "cli", "by": "shell"})
        assert (await window.next("hive/dismiss")).params["by"] == "shell"

        # the hub's refusals come back with the hub's own code and words
        with pytest.raises(HiveError) as refused:
            await window.request("hive/respond", {"id": asked["id"], "answer": "no"})
        assert refused.value.code == -32002
        assert "already answered" in refused.value.message
        assert (await window.request("hive/list", {})) == []
        assert await window.request("hive/unsubscribe", {}) == {
            "subscribed": False,
            "was_subscribed": True,
        }


async def test_a_window_that_asks_for_sessions_gets_them(
    hub: HubService, hub_config: HubConfig, client: HubClient
) -> None:
    """``hive/subscribe`` with ``sessions`` through ``hive-rpc lsp`` (issue 30): the
    agent sessions' ``hive/session`` reach the window as they change, with no poll."""
    async with lsp(hub_config, "--no-start") as window:
        await window.initialize()
        await window.request("hive/subscribe", {"sessions": True})
        await client.call("hive/ask", {"question": "Ship?", "agent_id": "deployer"})
        session = await window.next("hive/session")
        assert (session.params["agent_id"], session.params["state"]) == ("deployer", "waiting")
        (prompt,) = hub.registry.list_pending()
        await client.call("hive/respond", {"id": prompt.id, "answer": "yes"})
        removed = await window.next("hive/sessionRemoved")
        assert removed.params == {"agent_id": "deployer"}


async def test_typing_notification_stops_the_countdown(
    hub: HubService, hub_config: HubConfig, client: HubClient
) -> None:
    async with lsp(hub_config, "--no-start") as window:
        await window.initialize()
        await window.request("hive/subscribe", {})
        with hub.registry.watch() as watch:
            asked = await client.call("hive/ask", {"question": "Name?", "timeout_s": 3})
            await window.next("hive/prompt")
            await window.notify("hive/typing", {"id": asked["id"]})
            with trio.fail_after(TIMEOUT_S):
                async for change in watch:
                    if change.event == "typing":
                        break
            assert change.prompt.deadline_at == change.prompt.max_deadline_at
        # Past the original deadline it is still pending: a question asked after it
        # with the same countdown has expired, so that deadline has passed too.
        later = await client.call("hive/ask", {"question": "Later?", "timeout_s": 3})
        closed = await client.call("hive/await", {"id": later["id"], "timeout_s": 30})
        assert closed["status"] == "expired"
        polled = await client.call("hive/poll", {"id": asked["id"]})
        assert polled["status"] == "pending"
        assert polled["deadline_at"] == polled["max_deadline_at"]


async def test_typing_elsewhere_reaches_the_window_as_an_update(
    hub: HubService, hub_config: HubConfig, client: HubClient
) -> None:
    """Another editor's ``hive/typing`` reaches the window as ``hive/update`` with the
    new record (its countdown stops too), after a replayed prompt and a live one."""
    before = await client.call("hive/ask", {"question": "Old?", "timeout_s": 300})
    async with lsp(hub_config, "--no-start") as window:
        await window.initialize()
        assert (await window.request("hive/subscribe", {}))["pending"] == 1
        assert (await window.next("hive/prompt")).params["id"] == before["id"]
        asked = await client.call("hive/ask", {"question": "Name?", "timeout_s": 300})
        assert (await window.next("hive/prompt")).params["id"] == asked["id"]
        for prompt in (asked, before):
            await client.call("hive/typing", {"id": prompt["id"]})
            update = await window.next("hive/update")
            assert update.params["id"] == prompt["id"]
            assert update.params["typing_at"] is not None
            assert update.params["deadline_at"] == update.params["max_deadline_at"]
        await client.call("hive/cancel", {"id": before["id"]})
        assert (await window.next("hive/dismiss")).params["id"] == before["id"]


async def test_pending_prompts_show_as_work_done_progress(
    hub: HubService, hub_config: HubConfig, client: HubClient
) -> None:
    async with lsp(hub_config, "--no-start") as window:
        await window.initialize(progress=True)
        await window.request("hive/subscribe", {})
        asked = await client.call("hive/ask", {"question": "Merge?", "agent_id": "bot-7"})
        create = await window.next("window/workDoneProgress/create")
        token = create.params["token"]
        begin = await window.next("$/progress")
        assert begin.params["token"] == token
        assert begin.params["value"]["kind"] == "begin"
        assert begin.params["value"]["title"] == "bot-7 needs input"
        assert begin.params["value"]["message"] == "Merge?"
        await client.call("hive/cancel", {"id": asked["id"]})
        end = await window.next("$/progress")
        assert (end.params["token"], end.params["value"]["kind"]) == (token, "end")


async def test_progress_can_be_turned_off(
    hub: HubService, hub_config: HubConfig, client: HubClient
) -> None:
    async with lsp(hub_config, "--no-start") as window:
        await window.initialize(progress=True, options={"progress": False})
        await window.request("hive/subscribe", {})
        await client.call("hive/ask", {"question": "Quiet?"})
        await window.next("hive/prompt")
        # a round trip after the prompt: anything the prompt caused was sent before
        await window.request("hive/list", {})
        assert window.server_requests == []


async def test_cancel_request_withdraws_a_waiting_await(
    hub: HubService, hub_config: HubConfig, client: HubClient
) -> None:
    async with lsp(hub_config, "--no-start") as window:
        await window.initialize()
        asked = await client.call("hive/ask", {"question": "Wait for me?"})
        msg_id, frame = window.endpoint.request("hive/await", {"id": asked["id"], "timeout_s": 600})
        async with trio.open_nursery() as nursery:
            replies: list[Response | ErrorResponse] = []

            async def wait() -> None:
                replies.append(await window.exchange(msg_id, frame))

            nursery.start_soon(wait)
            # another request is answered meanwhile: the await holds nothing up
            assert (await window.request("hive/poll", {"id": asked["id"]}))["status"] == "pending"
            await window.notify("$/cancelRequest", {"id": msg_id})
        (reply,) = replies
        assert isinstance(reply, ErrorResponse)
        assert (reply.code, reply.message) == (-32800, "hive/await was cancelled by the client")


async def test_bad_input_gets_precise_errors_and_the_window_keeps_working(
    hub: HubService, hub_config: HubConfig
) -> None:
    async with lsp(hub_config, "--no-start") as window:
        await window.initialize()
        # not JSON: answered with id null, as JSON-RPC says
        not_json = await window.exchange(
            None,  # type: ignore[arg-type]
            encode_frame(b'{"jsonrpc": "2.0", "id": 91, "method": '),
        )
        # wrong parameters for a hub method
        bad_params = await window.request_message("hive/ask", {"question": 7})
        # a method nobody offers, in and out of the hive/ namespace
        unknown_hive = await window.request_message("hive/frobnicate", {})
        unknown_lsp = await window.request_message("textDocument/frobnicate", {})
        # a method of the table that another face runs (the editor socket's delivery
        # offer): refused here, never passed on to make this face's hub link a peer
        elsewhere = await window.request_message("hive/offerDelivery", {})
        # a connection-scoped method is checked like any other
        subscribe_extra = await window.request_message("hive/subscribe", {"x": 1})
        # far too large
        big = {"question": "x" * (2 << 20)}
        _, frame = window.endpoint.request("hive/ask", big)
        oversized = await window.exchange(None, frame)  # type: ignore[arg-type]
        assert isinstance(not_json, ErrorResponse)
        assert not_json.code == -32700
        assert "invalid JSON" in not_json.message
        assert isinstance(bad_params, ErrorResponse)
        assert bad_params.code == -32602
        assert "question" in bad_params.message
        assert isinstance(unknown_hive, ErrorResponse)
        assert unknown_hive.code == -32601
        assert isinstance(unknown_lsp, ErrorResponse)
        assert unknown_lsp.code == -32601
        assert isinstance(elsewhere, ErrorResponse)
        assert elsewhere.code == -32601
        assert elsewhere.message == "hive/offerDelivery is not offered here (only: socket)"
        assert isinstance(subscribe_extra, ErrorResponse)
        assert subscribe_extra.code == -32602
        assert len(hub.delivery_peers) == 0  # the hub took no delivery peer from it
        assert isinstance(oversized, ErrorResponse)
        assert oversized.code == -32010
        assert "limit" in oversized.message
        # and the window still works
        assert await window.request("hive/list", {}) == []


async def test_exit_of_one_window_leaves_the_hub_and_other_windows(
    hub: HubService, hub_config: HubConfig, client: HubClient
) -> None:
    async with lsp(hub_config, "--no-start") as one, lsp(hub_config, "--no-start") as two:
        await one.initialize()
        await two.initialize()
        await two.request("hive/subscribe", {})
        assert await one.request("shutdown") is None
        await one.notify("exit", None)
        with trio.fail_after(TIMEOUT_S):
            assert await one.proc.wait() == 0
        # the hub and the other window did not notice
        asked = await client.call("hive/ask", {"question": "Still here?"})
        assert (await two.next("hive/prompt")).params["id"] == asked["id"]
        await two.request("hive/respond", {"id": asked["id"], "answer": "yes"})


async def test_exit_without_shutdown_exits_1(hub: HubService, hub_config: HubConfig) -> None:
    async with lsp(hub_config, "--no-start") as window:
        await window.initialize()
        await window.notify("exit", None)
        with trio.fail_after(TIMEOUT_S):
            assert await window.proc.wait() == 1


@pytest.mark.parametrize(
    "flags",
    [("--stdio",), ("--stdio", "--clientProcessId=4242"), ("--clientProcessId", "4242", "--stdio")],
    ids=["stdio", "stdio-clientProcessId=N", "clientProcessId-N-stdio"],
)
async def test_the_flags_lsp_clients_add_are_accepted(
    hub: HubService, hub_config: HubConfig, client: HubClient, flags: tuple[str, ...]
) -> None:
    """vscode-languageclient appends ``--stdio`` (TransportKind.stdio) and
    ``--clientProcessId=N``; other clients pass them too. The server must start and
    speak LSP on stdio with them, not exit 2 on an unknown argument."""
    async with lsp(hub_config, "--no-start", *flags) as window:
        init = await window.initialize()
        assert init["serverInfo"]["name"] == "hive-rpc"
        await window.request("hive/subscribe", {})
        asked = await client.call("hive/ask", {"question": "Over stdio?", "agent_id": "a1"})
        assert (await window.next("hive/prompt")).params["id"] == asked["id"]
        assert await window.request("shutdown") is None
        await window.notify("exit", None)
        with trio.fail_after(TIMEOUT_S):
            assert await window.proc.wait() == 0


async def test_text_sync_of_an_unopened_document_is_no_error(
    hub: HubService, hub_config: HubConfig
) -> None:
    """The server keeps no documents and says so (``textDocumentSync`` kind None), but
    clients (Neovim's vim.lsp among them) send didChange anyway, even for a document
    they never opened: no "Error in server: KeyError" may pop up in the editor."""
    uri = "file:///never/opened.py"
    async with lsp(hub_config, "--no-start") as window:
        init = await window.initialize()
        sync = init["capabilities"]["textDocumentSync"]
        assert sync in (0, {"openClose": False, "change": 0, "save": False})
        change = {"range": _range(0, 0, 0, 0), "text": "x"}
        await window.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change]},
        )
        await window.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        await window.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": "a\n"}
        await window.notify("textDocument/didOpen", {"textDocument": doc})
        await window.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [change]},
        )
        await window.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        await window.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": "b"}]},
        )
        assert await window.request("hive/list", {}) == []  # all of the above was read
        assert await window.request("shutdown") is None
        await window.notify("exit", None)
        with trio.fail_after(TIMEOUT_S):
            assert await window.proc.wait() == 0
        said = []
        while True:
            try:
                said.append(window.notes.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                break
    errors = [m for m in said if m.method in ("window/showMessage", "window/logMessage")]
    assert errors == []


def _range(line: int, char: int, end_line: int, end_char: int) -> dict[str, Any]:
    return {
        "start": {"line": line, "character": char},
        "end": {"line": end_line, "character": end_char},
    }


async def test_two_windows_race_and_one_wins(
    hub: HubService, hub_config: HubConfig, client: HubClient
) -> None:
    async with lsp(hub_config, "--no-start") as one, lsp(hub_config, "--no-start") as two:
        for window in (one, two):
            await window.initialize()
            await window.request("hive/subscribe", {})
        asked = await client.call("hive/ask", {"question": "Who?"})
        await one.next("hive/prompt")
        await two.next("hive/prompt")
        results: list[Response | ErrorResponse] = []

        async def answer(window: LspPeer, text: str) -> None:
            results.append(
                await window.request_message("hive/respond", {"id": asked["id"], "answer": text})
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer, one, "one")
            nursery.start_soon(answer, two, "two")
        won = [r for r in results if isinstance(r, Response)]
        lost = [r for r in results if isinstance(r, ErrorResponse)]
        assert len(won) == 1
        assert len(lost) == 1
        assert lost[0].code == -32002
        polled = await client.call("hive/poll", {"id": asked["id"]})
        assert polled["answer"] == won[0].result["answer"]


async def test_no_hub_and_no_start_is_a_clear_failure(short_tmp: Path) -> None:
    socket = short_tmp / "run" / "hub.sock"
    args = [sys.executable, "-m", "hive_rpc", "lsp", "--no-start", "--socket", str(socket)]
    result = await trio.run_process(
        [*args, "--data-dir", str(short_tmp / "data")],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        stdin=b"",
    )
    assert result.returncode == 4
    assert result.stdout == b""  # stdout belongs to the LSP stream
    assert b"no hub" in result.stderr or b"hub" in result.stderr


async def test_the_window_follows_the_hub_through_a_crash(short_tmp: Path) -> None:
    """The lsp started the hub itself; the hub is killed; the relay starts a new one,
    says so with hive/connection, and the pending prompt (durable) is shown again."""
    config = HubConfig(socket=short_tmp / "run" / "hub.sock", data_dir=short_tmp / "data")
    lock = config.socket.with_name("hub.sock.lock")
    try:
        async with lsp(config) as window:
            await window.initialize()
            await window.request("hive/subscribe", {})
            asked = await window.request("hive/ask", {"question": "Survive?"})
            assert (await window.next("hive/prompt")).params["id"] == asked["id"]
            first_hub = int(lock.read_text())
            os.kill(first_hub, signal.SIGKILL)
            lost = await window.next("hive/connection")
            assert lost.params["connected"] is False
            back = await window.next("hive/connection")
            assert back.params == {"connected": True, "message": ""}
            again = await window.next("hive/prompt")
            assert again.params["id"] == asked["id"]
            assert int(lock.read_text()) != first_hub
            done = await window.request("hive/respond", {"id": asked["id"], "answer": "yes"})
            assert done["status"] == "responded"
    finally:
        with contextlib.suppress(ValueError, ProcessLookupError, FileNotFoundError):
            os.kill(int(lock.read_text()), signal.SIGTERM)


async def test_prompts_gone_with_a_lost_hub_are_dismissed(short_tmp: Path) -> None:
    """A memory-store hub dies with its prompts; the window's relay gets a new hub and
    takes the vanished prompt off the screen (status "unknown")."""
    config = HubConfig(socket=short_tmp / "run" / "hub.sock", data_dir=short_tmp / "data")
    lock = config.socket.with_name("hub.sock.lock")
    read_fd, write_fd = os.pipe()
    serve = [sys.executable, "-m", "hive_rpc", "serve", "--store", "memory", "--ready-fd"]
    serve += [str(write_fd), "--socket", str(config.socket), "--data-dir", str(config.data_dir)]
    hub_proc = await trio.lowlevel.open_process(serve, pass_fds=(write_fd,))
    os.close(write_fd)
    try:
        with os.fdopen(read_fd, "rb") as ready:
            assert await trio.to_thread.run_sync(ready.read, 6) == b"ready\n"
        async with lsp(config) as window:
            await window.initialize()
            await window.request("hive/subscribe", {})
            asked = await window.request("hive/ask", {"question": "Gone?"})
            await window.next("hive/prompt")
            hub_proc.kill()
            dismissed = await window.next("hive/dismiss")
            assert dismissed.params == {
                "id": asked["id"],
                "status": "unknown",
                "by": None,
                "action": None,
                "unseen": False,
            }
    finally:
        hub_proc.kill()
        await hub_proc.wait()
        with contextlib.suppress(ValueError, ProcessLookupError, FileNotFoundError):
            os.kill(int(lock.read_text()), signal.SIGTERM)


async def test_the_store_health_reaches_the_window(hub: HubService, hub_config: HubConfig) -> None:
    """``hive/health`` from the hub is passed on as it is (docs/protocol.md): the
    store failing (a checkpoint, reported as the SQLite store reports it), then back."""
    async with lsp(hub_config, "--no-start") as window:
        await window.initialize()
        await window.request("hive/subscribe", {})
        hub.registry.store_trouble("checkpoint", StoreWriteFailed("test", "disk I/O error"))
        degraded = await window.next("hive/health")
        assert degraded.params == {"degraded": "store: disk I/O error"}
        hub.registry.store_trouble("checkpoint", None)
        assert (await window.next("hive/health")).params == {"degraded": None}
