"""``HubService``: the hub's methods over one registry, independent of any transport.

Every face (the editor socket's JSON-RPC, EPC for epc.el, MCP for agents, the
dashboard) calls ``HubService.call(method, params)`` and gets a JSON-ready result or
a ``HiveError`` with the code and words to send back.  ``call`` checks the params
against the method's row (protocol/methods.py) and runs the handler attached to that
name (table.py ``HANDLERS``; a test holds them to the hub-scoped rows).

Identity: a request that carries ``agent_id`` acts for that agent and sees, answers
and cancels only its own prompts; a request without it acts as a coordinator (the
editors, the CLI, an agent explicitly coordinating, which names itself in ``by``) and
reaches every prompt.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hive_rpc.core.agents import claimed_process
from hive_rpc.core.errors import InvalidParams, MethodNotFound
from hive_rpc.core.limits import check_name
from hive_rpc.core.prompt import Prompt
from hive_rpc.host.agent_process import agent_ancestor, is_running
from hive_rpc.relay.consent import CALLER, Caller
from hive_rpc.relay.emacs import DeliveryPeers
from hive_rpc.runtime.activity import ActivityLog
from hive_rpc.runtime.registry import Registry, Watch
from hive_rpc.runtime.sessions import SessionTable
from hive_rpc.service.table import HANDLERS, check_params

if TYPE_CHECKING:
    from hive_rpc.agora import Agora
    from hive_rpc.agora.pull_requests import PullRequestWatcher
    from hive_rpc.service.askers import Askers
    from hive_rpc.service.audit import AuditTrail


def acting_agent(p: dict[str, Any]) -> str | None:
    """The agent a request acts for, or None for a coordinator.  Blank is refused, not
    read as "everyone": an agent that lost its name must not see others' prompts.  An
    id naming an agent's process (``codex-51007``) is the hub's own name for that
    process's sessions and hook: only a connection that runs under that process may
    act as it (``check_process_claim``)."""
    value = p.get("agent_id")
    if value is None:
        return None
    name = check_name(value, "agent_id")
    check_process_claim(name, CALLER.get())
    return name


def check_process_claim(name: str, caller: Caller | None) -> None:
    """Refuse ``name`` when it names a living agent process (core/agents.py
    ``claimed_process``: ``codex-51007`` while pid 51007 is a ``codex``) that the
    caller does not run under: its ``SO_PEERCRED`` pid's nearest ancestor of the
    agent's name must be that pid, which is how the hub names an MCP session and how
    ``hive-rpc hook`` finds it, or be that pid itself (the HTTP hook, where the hub
    found the agent process holding the connection: faces/hook_http.py).  A name of
    that form whose pid is no such process (``codex-2``, a user's second Codex), or a
    dead one, is a name like any other: an
    agent killed mid-call leaves its MCP server, no longer under it, to withdraw its
    questions in its name.  Checked on every request: a process that outlived its
    agent is no longer under it, and an agent that starts under a pid someone named
    takes the name over."""
    claim = claimed_process(name)
    if claim is None:
        return
    agent, pid = claim
    if not is_running(pid, agent.process_names):
        return  # no such agent process, or a dead one (a zombie not yet reaped)
    shown = f"agent_id {name[:80]!r} names {agent.display}'s process {pid}"
    if caller is None or caller.pid is None:
        raise InvalidParams(
            f"{shown}, which the hub can check only for a client of its Unix socket; "
            "ask there, or under a name of your own",
            param="agent_id",
        )
    if caller.pid != pid and agent_ancestor(caller.pid, agent.process_names) != pid:
        raise InvalidParams(
            f"{shown}, and this client (pid {caller.pid}) does not run under it: only "
            f"that {agent.display} and what it runs may act as it; ask under a name of "
            "your own",
            param="agent_id",
        )


@dataclass
class HubInfo:
    """Facts about the running hub that ``hive/status`` reports."""

    socket: str | None = None
    data_dir: str | None = None
    store: str = "memory"
    pid: int = field(default_factory=os.getpid)
    http_url: str | None = None
    token_file: str | None = None
    approver_token_file: str | None = None
    """The file holding the approver token (service/approver.py); never the token."""
    notifications: str = "off"
    """How the hub raises desktop notifications itself: ``dbus``, ``notify-send`` or
    ``off`` (editors that notify on their own skip it when the hub does)."""


def dismissal(prompt: Prompt) -> dict[str, Any]:
    """Params of ``hive/dismiss``: which prompt to take off the screen, and why."""
    return {
        "id": prompt.id,
        "status": prompt.status.value,
        "by": prompt.by,
        "action": prompt.action.value if prompt.action else None,
        "unseen": prompt.unseen,
    }


class HubService:
    """Transport-neutral method table over one registry."""

    def __init__(
        self,
        registry: Registry,
        info: HubInfo | None = None,
        *,
        activity: ActivityLog | None = None,
    ) -> None:
        self.registry = registry
        self.info = info or HubInfo(store=registry.store.kind)
        self.delivery_peers = DeliveryPeers()
        """Editor connections that type into Emacs buffers for the relay."""
        self.activity = activity or ActivityLog(registry.now)
        """Every change, for GET /activity and the dashboard (fed by hub.py)."""
        self.agora: Agora | None = None
        """Set by the hub once its nursery runs (hub._serve)."""
        self.audit: AuditTrail | None = None
        """The permission decisions' trail (service/audit.py), made on first use."""
        self.approver_token: str | None = None
        """What a connection sends to prove it is an approver (service/approver.py);
        set by the hub from its token file.  None: nobody can prove it."""
        self.sessions = SessionTable(registry.now)
        """The agents' sessions and their state (runtime/sessions.py), fed by the hub."""
        self.askers: Askers | None = None
        """Waiting askers bound to their prompts (service/askers.py); set by the hub
        once its nursery runs.  None: ``waits`` binds nothing."""
        self.pull_requests: PullRequestWatcher | None = None
        """The watch of the children's pull requests (agora/pull_requests.py), when
        the hub runs it: ``hive/status`` says how it goes."""

    def require_agora(self) -> Agora:
        """The Agora, for its methods' handlers; refused on a hub without one."""
        if self.agora is None:
            raise MethodNotFound("this hub runs without the Agora (dialogues and lings)")
        return self.agora

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        """Check ``params`` and run ``method``.  Subscriptions belong to the transport."""
        check_params(method, params)
        handler = HANDLERS.get(method)
        if handler is None:
            raise MethodNotFound(f"{method} needs a streaming transport", method=method)
        return await handler(self, params)

    @staticmethod
    async def notifications(watch: Watch) -> AsyncGenerator[tuple[str, dict[str, Any]]]:
        """What a subscriber is sent: every pending prompt first (``snapshot``), then
        each change (``changes``)."""
        for note in HubService.snapshot(watch):
            yield note
        async for note in HubService.changes(watch):
            yield note

    @staticmethod
    def snapshot(watch: Watch) -> Iterator[tuple[str, dict[str, Any]]]:
        """A subscription's first notifications: a ``hive/prompt`` for every prompt
        pending when it began, oldest first.  Plain, not async: a face writes many
        of them at once (the editor socket, faces/editor_socket.py)."""
        for prompt in watch.pending:
            yield "hive/prompt", prompt.to_record()

    @staticmethod
    async def changes(watch: Watch) -> AsyncGenerator[tuple[str, dict[str, Any]]]:
        """Each new prompt after the snapshot (``hive/prompt``), each change of a
        prompt still pending (``hive/update``, the new record: typing moved its
        deadline, so every editor's countdown stops, not only the typist's) and each
        closed one (``hive/dismiss``, which says whether it expired unseen); and when
        the human clears an unseen expiry's trace, ``hive/unseenCleared``.  The update
        has its own name because clients take a second ``hive/prompt`` for a new
        question (Emacs notifies an urgent one again)."""
        async for change in watch:
            if change.event == "ask":
                yield "hive/prompt", change.record
            elif change.prompt.is_pending:
                yield "hive/update", change.record
            elif change.event == "clear":
                yield "hive/unseenCleared", {"id": change.prompt.id}
            else:
                yield "hive/dismiss", dismissal(change.prompt)
