"""The ACP proxy's moving part: the agent as a child in its own session, two pumps
copying lines between it and the client, a task per permission request, in one
nursery.

What a line becomes is decided by wire.py and permission.py; here only the I/O.  Each
side has one writer and a lock, because a pump and the permission tasks both write
to it.  The agent is started with ``start_new_session``: it leads a process group
of its own, which the proxy ends whole when it ends (Gemini CLI 0.61.0, measured:
killing ``gemini --acp`` alone left its child and its MCP servers running).  A bad
line from either side is passed on and named on stderr; it never ends the proxy.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from hive_rpc.acp import wire
from hive_rpc.acp.guard import DONE
from hive_rpc.acp.permission import (
    AcpPermission,
    NotAPermissionRequest,
    Unanswered,
    answer_option,
    deny_option,
    permission_ask,
    rule_option,
    rule_params,
)
from hive_rpc.client.async_client import HubClient, ask_until_closed, prove_approver
from hive_rpc.core.errors import HiveError
from hive_rpc.core.prompt import Ask
from hive_rpc.core.terminal_text import strip_controls

READ_BYTES = 65536
STOP_GRACE_S = 5.0
"""How long the agent has to exit after its stdin closed, or after SIGTERM, before its
process group is killed."""
CLEANUP_S = 5.0
"""How long telling the guard the group is ended may take once the proxy ends."""
HUB_CALL_S = 30.0
"""How long one hub call may take (the long wait for the human aside)."""


def say(what: str) -> None:
    """One line on stderr, which the ACP client keeps as the agent's log."""
    print(f"hive-rpc acp: {strip_controls(what, keep_newlines=False)}", file=sys.stderr, flush=True)


@dataclass
class ProxyConfig:
    argv: list[str]
    """The agent's command line."""
    socket: Path
    agent_id: str
    """Who asks the hub: the permission prompts' agent, and the MCP server's."""
    timeout_s: float
    """How long the human has to answer from an editor."""
    unanswered: Unanswered
    mcp_entry: dict[str, Any] | None
    """The MCP server added to each session, or None to add none."""
    home: str | None = None


class Writer:
    """One side's input: whole lines written under a lock, so lines never mix."""

    def __init__(self, stream: trio.abc.SendStream) -> None:
        self.stream = stream
        self.lock = trio.Lock()
        self.closed = False

    async def send(self, data: bytes) -> None:
        async with self.lock:
            if self.closed:
                return
            try:
                await self.stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.closed = True  # the reader went away; its own end is noticed there

    async def close(self) -> None:
        async with self.lock:
            self.closed = True
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await self.stream.aclose()


@dataclass
class Proxy:
    config: ProxyConfig
    to_client: Writer
    to_agent: Writer
    sessions: wire.Sessions = field(default_factory=wire.Sessions)
    asking: dict[str, set[trio.CancelScope]] = field(default_factory=lambda: defaultdict(set))
    """Per session, the permission requests being asked: a ``session/cancel`` ends them."""

    async def from_client(self, stream: trio.abc.ReceiveStream) -> None:
        """Client to agent, until the client's end closes; then the agent's stdin."""
        lines = wire.Lines()
        async for data in stream:
            for line, whole in lines.feed(data):
                await self.to_agent.send(self.client_line(line) if whole else line)
        if rest := lines.end():
            await self.to_agent.send(self.client_line(rest))
        await self.to_agent.close()

    def client_line(self, line: bytes) -> bytes:
        """A line from the client as it goes to the agent."""
        try:
            message = wire.parse(line)
        except wire.Malformed as e:
            if line.strip():
                say(f"passed on a line from the client that is {e}")
            return line
        self.sessions.from_client(message)
        if wire.is_notification(message, wire.SESSION_CANCEL):
            params = message.get("params")
            session = params.get("sessionId") if isinstance(params, Mapping) else None
            for scope in self.asking.get(str(session), ()):
                scope.cancel()
        entry = self.config.mcp_entry
        if entry is not None and (
            wire.is_request(message, wire.SESSION_NEW)
            or wire.is_request(message, wire.SESSION_LOAD)
        ):
            params = message.get("params")
            added = wire.with_mcp_server(params, entry) if isinstance(params, Mapping) else None
            if added is not None:
                return wire.encode({**message, "params": added})
        return line

    async def from_agent(self, nursery: trio.Nursery, stream: trio.abc.ReceiveStream) -> None:
        """Agent to client, until the agent's stdout closes."""
        lines = wire.Lines()
        async for data in stream:
            for line, whole in lines.feed(data):
                await self.agent_line(nursery, line) if whole else await self.to_client.send(line)
        if rest := lines.end():
            await self.agent_line(nursery, rest)

    async def agent_line(self, nursery: trio.Nursery, line: bytes) -> None:
        try:
            message = wire.parse(line)
        except wire.Malformed as e:
            if line.strip():
                say(f"passed on a line from the agent that is {e}")
            await self.to_client.send(line)
            return
        self.sessions.from_agent(message)
        if wire.is_request(message, wire.REQUEST_PERMISSION):
            try:
                permission = AcpPermission.from_params(message.get("params"))
            except NotAPermissionRequest as e:
                say(f"left a permission request to the client: {e}")
            else:
                nursery.start_soon(self.answer, message["id"], permission, line)
                return
        await self.to_client.send(line)

    async def answer(self, request_id: object, permission: AcpPermission, line: bytes) -> None:
        """Answer one permission request: a rule's or the human's option, else as
        ``--unanswered`` says; ``cancelled`` when the client cancels the turn."""
        scope = trio.CancelScope()
        self.asking[permission.session_id].add(scope)
        option: str | None = None
        try:
            with scope:
                option = await self.decide(permission)
        finally:
            self.asking[permission.session_id].discard(scope)
        if scope.cancelled_caught:
            await self.to_agent.send(wire.cancelled(request_id))
        elif option is not None:
            await self.to_agent.send(wire.selected(request_id, option))
        elif self.config.unanswered == "client":
            await self.to_client.send(line)  # as it came: the client's own dialog asks
        else:
            reject = deny_option(permission)
            refusal = wire.cancelled(request_id) if reject is None else None
            await self.to_agent.send(refusal or wire.selected(request_id, str(reject)))

    async def decide(self, permission: AcpPermission) -> str | None:
        """The option a rule or the human selects, or None (no hub, no answer in time,
        a decline, any error: said on stderr)."""
        cwd = self.sessions.cwd.get(permission.session_id)
        agent = self.config.agent_id
        try:
            async with await HubClient.connect(self.config.socket) as hub:
                hub.timeout_s = HUB_CALL_S
                checked = await check_rules(hub, rule_params(permission, agent=agent, cwd=cwd))
                option = rule_option(permission, checked)
                if option is not None:
                    return option
                ask = permission_ask(
                    permission,
                    agent=agent,
                    cwd=cwd,
                    home=self.config.home,
                    timeout_s=self.config.timeout_s,
                )
                record = await ask_and_wait(hub, ask, self.config.timeout_s)
        except Exception as e:  # fail safe: the request goes where --unanswered says
            say(f"no answer from the hub ({type(e).__name__}: {e}); --unanswered decides")
            return None
        option = answer_option(permission, record)
        if option is None:
            say(f"no answer from an editor (prompt {record.get('id')} {record.get('status')})")
        return option


async def check_rules(hub: HubClient, params: dict[str, Any]) -> dict[str, Any] | None:
    """The rule that answers the request (``rule/check``), or None: ask the human.
    A hub without rules (older than ``rule/check``) answers None."""
    try:
        checked: dict[str, Any] | None = await hub.call("rule/check", params)
    except HiveError as e:
        if e.kind == "method_not_found":
            return None
        raise
    return checked


async def ask_and_wait(hub: HubClient, ask: Ask, wait_s: float) -> dict[str, Any]:
    """The question asked and waited for (``ask_until_closed``: withdrawn if still
    pending when the wait ends).  The proxy is the human's tool, run outside the
    agent's sandbox: proved, its question finds the room the hub keeps for the
    human's tools (as the hook's)."""
    await prove_approver(hub.call)
    return await ask_until_closed(hub.call, ask, wait_s)


def kill_group(pgid: int, sig: signal.Signals) -> None:
    """Signal the agent's whole process group; none left is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def stop_agent(process: trio.Process) -> bool:
    """End the agent's process tree: SIGTERM to its group, ``STOP_GRACE_S`` for the
    agent to exit, then SIGKILL to whatever of the group is left (its children, its
    MCP servers), whether the agent went or not.  Whether the agent had to be told."""
    with trio.CancelScope(shield=True):
        told = process.returncode is None
        if told:
            kill_group(process.pid, signal.SIGTERM)
            with trio.move_on_after(STOP_GRACE_S):
                await process.wait()
        kill_group(process.pid, signal.SIGKILL)
        await process.wait()
    return told


async def open_guard(pgid: int) -> trio.Process | None:
    """The guard that ends the agent's group should this process die first (killed
    with SIGKILL: guard.py), in a session of its own; None, said, if it cannot start."""
    try:
        return await trio.lowlevel.open_process(
            [sys.executable, "-m", "hive_rpc.acp.guard", str(pgid)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,  # it must not hold the client's pipes open
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as e:
        say(f"no guard for the agent's process group ({e}): killed, this proxy leaves it")
        return None


async def release_guard(guard: trio.Process | None) -> None:
    """Tell the guard the group is ended (``done``), and let it exit."""
    if guard is None or guard.stdin is None:
        return
    with trio.CancelScope(shield=True), trio.move_on_after(CLEANUP_S):
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await guard.stdin.send_all(DONE + b"\n")
            await guard.stdin.aclose()
        await guard.wait()


async def run_proxy(
    config: ProxyConfig,
    client_in: trio.abc.ReceiveStream,
    client_out: trio.abc.SendStream,
) -> int:
    """Serve one ACP client until either side ends; the agent's exit code (0 when
    the client ended first and the agent was stopped)."""
    process = await trio.lowlevel.open_process(
        config.argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,  # its own process group, ended whole (stop_agent)
    )
    assert process.stdin is not None
    assert process.stdout is not None
    guard = await open_guard(process.pid)
    proxy = Proxy(config, Writer(client_out), Writer(process.stdin))
    try:
        async with trio.open_nursery() as nursery:

            async def client_side() -> None:
                await proxy.from_client(client_in)
                with trio.move_on_after(STOP_GRACE_S):  # a closed stdin asks it to go
                    await process.wait()
                nursery.cancel_scope.cancel()

            async def agent_side() -> None:
                assert process.stdout is not None
                await proxy.from_agent(nursery, process.stdout)
                # nothing more can reach the client: an agent that closed its stdout
                # and stays is stopped as one whose client went
                with trio.move_on_after(STOP_GRACE_S):
                    await process.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(client_side)
            nursery.start_soon(agent_side)
    finally:
        told = await stop_agent(process)
        await release_guard(guard)
        await proxy.to_client.close()
    code = process.returncode or 0
    if told:
        return 0  # ended by the proxy, its client gone (or the proxy told to stop)
    return code if code >= 0 else 128 - code
