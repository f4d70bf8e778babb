"""Spawning a child agent from its parent agent (``ling/spawn``; MCP ``spawn_subtree``
and ``spawn_workers``): exomonad's "Event Registration: Implicit from spawn".

Who the parent is comes from what the hub verifies, never from a name the agent
gives: the MCP relay's peer process (``SO_PEERCRED``, relay/consent.py's ``CALLER``)
runs under the agent, and the parent is the registered ling whose approved agent
(pid and start time, core/ling.py ``Agent``) is that process or one of its
ancestors.  The child is named ``PARENT.CHILD``, so its events reach the parent by
the birth-branch rule alone (``parent_of``), with nothing to subscribe.

Starting a program in a new terminal, into which other agents' messages will be
typed, is the human's to allow: every child is a request the human approves as a
terminal registration is (agora/lings.py ``_ask_consent``: the hub's own urgent
prompt, approve or deny, the same timeout), saying who asks, the child's name, the
exact command, where it runs.  Nothing is started before the approval.  Approved,
the hub opens a window in the parent's tmux session whose pane registers itself from
inside and then ``exec``s the command (host/spawn_pane.py, the path ``hive-rpc
spawn`` takes), so the approved agent of the child's ling is the child process.

The request returns at once (pending, with the prompt's id); what became of it is
typed into the parent's terminal when it is known, as a child's events are
(``[CHILD SPAWNED]``, ``[SPAWN REFUSED]``, ``[SPAWN FAILED]``), and is an event on
the activity stream (``ling/spawn-requested``, ``ling/spawned``,
``ling/spawn-refused``, ``ling/spawn-failed``).  Requests are kept in the store
(``spawn-request``), so a hub restarted before the human answers waits again
(``resume``); only the hub of the same data directory does, since two hubs sharing
a store must not both start one child.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import trio

from hive_rpc.agora.lings import APPROVE, DENY
from hive_rpc.agora.state import log
from hive_rpc.client.spawned_pane import pane_argv
from hive_rpc.core.conventions import HUB_AGENT
from hive_rpc.core.errors import HiveError, InvalidParams, LimitReached, LingNotFound
from hive_rpc.core.limits import (
    MAX_SPAWN_COMMAND_CHARS,
    MAX_SPAWN_COMMAND_WORDS,
    MAX_SPAWN_REQUESTS,
    MAX_SPAWN_REQUESTS_PER_PARENT,
    MAX_SPAWN_WORKERS,
)
from hive_rpc.core.ling import Agent, Ling, check_ling_name, short_name
from hive_rpc.core.prompt import Action, Ask, Prompt, Status
from hive_rpc.host import spawn_pane
from hive_rpc.host.paths import HubLock
from hive_rpc.host.spawn_pane import SpawnError
from hive_rpc.relay.consent import Caller
from hive_rpc.relay.proc import process, working_dir

if TYPE_CHECKING:
    from hive_rpc.agora.dialogues import Agora
    from hive_rpc.agora.lings import AgoraLings

SPAWN_REQUEST = "spawn-request"
"""The store's document kind of a spawn waiting for the human, keyed by the child."""

REGISTER_TIMEOUT_S = 30.0
"""How long the hub waits for an approved child's pane to register itself."""


@dataclass(frozen=True, slots=True)
class Child:
    """One child asked for, checked."""

    name: str
    """Its full ling name, ``PARENT.PART``."""
    command: tuple[str, ...]
    worktree: str | None = None
    label: str | None = None
    where: str = ""
    """How errors name its fields: "" (``spawn_subtree``'s own parameters) or
    ``children[I].`` (one of ``spawn_workers``'s)."""

    @property
    def param(self) -> str:
        """The parameter an error about this child names."""
        return "children" if self.where else "name"

    def record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "command": list(self.command),
            "worktree": self.worktree,
            "label": self.label,
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> Child:
        return cls(str(r["name"]), tuple(map(str, r["command"])), r["worktree"], r["label"])


@dataclass(frozen=True, slots=True)
class Place:
    """Where the children of one parent start, read before the human is asked."""

    parent: Ling
    cwd: Path
    """The parent agent's working directory (``/proc/PID/cwd``)."""
    socket: str | None
    """The parent's tmux server (None: the default one)."""
    session: str
    """The parent pane's tmux session id."""
    session_name: str

    def record(self) -> dict[str, Any]:
        return {
            "parent": self.parent.record(),
            "cwd": str(self.cwd),
            "socket": self.socket,
            "session": self.session,
            "session_name": self.session_name,
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> Place:
        return cls(
            Ling.from_record(r["parent"]),
            Path(r["cwd"]),
            r["socket"],
            str(r["session"]),
            str(r["session_name"]),
        )


def check_child(parent: str, spec: object, index: int | None) -> Child:
    """``spec`` (``{name, command, worktree?, label?}``) as a Child of ``parent``, or
    InvalidParams naming the parameter: its own (``command``) for the one child of
    ``spawn_subtree`` (``index`` None), ``children`` for a worker, whose sentence
    says which (``children[1].command``)."""
    where = "" if index is None else f"children[{index}]."

    def param(field: str) -> str:
        return "children" if where else field

    if not isinstance(spec, dict):
        raise InvalidParams(
            f"{where or 'a child '}must be an object with name and command", param="children"
        )
    unknown = sorted(set(spec) - {"name", "command", "worktree", "label"})
    if unknown:
        raise InvalidParams(f"{where}{unknown[0]}: no such field", param=param(unknown[0]))
    part = spec.get("name")
    if not isinstance(part, str) or "." in part:
        raise InvalidParams(
            f"{where}name: {str(part)[:60]!r} must be one part of a ling name (letters, "
            f"digits, '-' and '_', no dot): the child is named {parent}.NAME",
            param=param("name"),
        )
    full = check_ling_name(f"{parent}.{part}" if part else "", param=param("name"))
    command = spec.get("command")
    if (
        not isinstance(command, list)
        or not command
        or not all(isinstance(w, str) for w in command)
        or not command[0].strip()
    ):
        raise InvalidParams(
            f"{where}command must be a non-empty list of strings, the program first "
            '(["claude", "--model", "opus"]): it is run as given, not by a shell',
            param=param("command"),
        )
    if len(command) > MAX_SPAWN_COMMAND_WORDS or sum(map(len, command)) > MAX_SPAWN_COMMAND_CHARS:
        raise InvalidParams(
            f"{where}command must have at most {MAX_SPAWN_COMMAND_WORDS} words and "
            f"{MAX_SPAWN_COMMAND_CHARS} characters in all",
            param=param("command"),
        )
    if any("\x00" in w for w in command):
        raise InvalidParams(f"{where}command must not contain NUL", param=param("command"))
    worktree = spec.get("worktree")
    if worktree is not None and (why := spawn_pane.check_branch(worktree)) is not None:
        raise InvalidParams(f"{where}worktree: {why}", param=param("worktree"))
    label = spec.get("label")
    if label is not None and (
        not isinstance(label, str)
        or not 0 < len(label) <= 64
        or any(ord(c) < 32 or ord(c) == 127 for c in label)
    ):
        raise InvalidParams(
            f"{where}label must be a string of 1 to 64 characters, no control characters",
            param=param("label"),
        )
    return Child(full, tuple(command), worktree, label, where)


def _as_it_runs(agent: Agent) -> Agent:
    """``agent`` as /proc shows it now, for the human's prompt.  A parent registered
    as it was about to ``exec`` (``hive-rpc spawn main -- claude``:
    ``Agent.pending_exec``) is recorded as the program that registered (python) until
    something is typed into its terminal; the human is asked about the program that
    asks (claude), the same process (pid and start time).  Gone or recycled: as
    recorded."""
    now = process(agent.pid)
    if now is None or now.start != agent.start:
        return agent
    return Agent.of(now)


class Spawner:
    """The spawns one hub's Agora waits on (see the module doc); ``spawner_of``."""

    def __init__(self, agora: Agora, hub_socket: str, data_dir: str) -> None:
        self._agora = agora
        self._hub_socket = hub_socket
        self._data_dir = data_dir
        self._pending: dict[str, tuple[str, str]] = {}
        """Children waiting for the human: full name -> (parent, prompt id)."""

    # --- the request ------------------------------------------------------------------

    async def spawn(
        self, children: object, caller: Caller | None, asked_by: str | None
    ) -> dict[str, Any]:
        """Ask the human to start ``children`` under the caller's ling; at once, the
        request (``parent``, each child's ``state: pending`` and ``prompt_id``).
        ``children``: one child's fields (``spawn_subtree``), or a list of them."""
        if isinstance(children, dict):
            single = True
            children = [children]
        else:
            single = False
        if not isinstance(children, list) or not children:
            raise InvalidParams(
                "children must be a non-empty list of {name, command}", param="children"
            )
        if len(children) > MAX_SPAWN_WORKERS:
            raise LimitReached(
                f"{len(children)} children asked for at once; at most {MAX_SPAWN_WORKERS} "
                "(spawn_workers): each is a prompt on the human's screen",
                limit="spawn_workers",
                max=MAX_SPAWN_WORKERS,
            )
        parent = self.parent_of_caller(caller)
        wanted = [
            check_child(parent.name, c, None if single else i) for i, c in enumerate(children)
        ]
        self._check_free(parent, wanted)
        for child in wanted:  # held from here on, so a request made meanwhile is refused
            self._pending[child.name] = (parent.name, "")
        asked: set[str] = set()
        try:
            return await self._request(parent, wanted, caller, asked_by, asked)
        finally:
            for child in wanted:
                if child.name not in asked:
                    self._pending.pop(child.name, None)

    async def _request(
        self,
        parent: Ling,
        wanted: list[Child],
        caller: Caller | None,
        asked_by: str | None,
        asked: set[str],
    ) -> dict[str, Any]:
        """``spawn``'s work once the names are held; ``asked`` gathers the children
        whose prompts are out (their waiters release their names)."""
        place = await self._place(parent)
        workdirs = [await self._workdir(place, c) for c in wanted]
        requests = []
        for child, workdir in zip(wanted, workdirs, strict=True):
            prompt = await self._ask(place, child, workdir, caller, asked_by)
            kept = {
                "prompt_id": prompt.id,
                "place": place.record(),
                "child": child.record(),
                "hub_socket": self._hub_socket,
                "data_dir": self._data_dir,
            }
            try:
                await self._agora._store.put_document(SPAWN_REQUEST, child.name, kept)
            except BaseException:  # not kept, so not asked: the human is not left a prompt
                registry = self._agora._registry
                assert registry is not None  # _ask needed it
                with contextlib.suppress(HiveError), trio.move_on_after(10, shield=True):
                    await registry.cancel(prompt.id, by=HUB_AGENT)
                raise
            self._pending[child.name] = (parent.name, prompt.id)
            asked.add(child.name)
            self._agora._nursery.start_soon(self._carry_out, place, child, prompt.id)
            self._agora._emit(
                "ling/spawn-requested", ling=child.name, parent=parent.name,
                prompt_id=prompt.id, command=list(child.command), by=asked_by,
            )  # fmt: skip
            requests.append(
                {
                    "name": child.name,
                    "state": "pending",
                    "prompt_id": prompt.id,
                    "command": list(child.command),
                    "workdir": str(workdir),
                    "worktree": child.worktree,
                    "label": child.label,
                }
            )
        return {"parent": parent.name, "children": requests}

    def parent_of_caller(self, caller: Caller | None) -> Ling:
        """The registered ling whose approved agent runs the caller (the caller's
        process or an ancestor: pid and start time), or LingNotFound saying what to do."""
        if caller is None or caller.pid is None:
            raise LingNotFound(
                "spawning needs the hub to see which process asks, and this connection "
                "does not say (MCP over HTTP, the dashboard): use the stdio server, "
                "hive-rpc mcp, started by the agent in its registered terminal",
                name=None,
            )
        ling = self._agora.ling_of_process(caller)
        if ling is not None:
            return ling
        raise LingNotFound(
            f"the process asking ({caller.describe()}) runs under no registered ling's "
            "agent, so the hub cannot tell whose child this would be: register your "
            "terminal first (in your pane: hive-rpc ling register NAME --tmux, from your "
            "shell tool, or -- COMMAND when starting the agent), then spawn again",
            name=None,
        )

    def _check_free(self, parent: Ling, wanted: list[Child]) -> None:
        names = [c.name for c in wanted]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InvalidParams(f"children: {twice[0]} is asked for twice", param="children")
        for child in wanted:
            if child.name in self._agora._lings:
                raise InvalidParams(
                    f"{child.where}name: {child.name} is a registered ling already: remove "
                    "it first (ling_remove) or give the child another name",
                    param=child.param,
                )
            if child.name in self._pending or child.name in self._agora._requests:
                raise InvalidParams(
                    f"{child.where}name: {child.name} already waits for the human's "
                    "approval: wait for the answer or give the child another name",
                    param=child.param,
                )
        if len(self._pending) + len(wanted) > MAX_SPAWN_REQUESTS:
            raise LimitReached(
                f"{len(self._pending)} spawns already wait for the human's approval, and "
                f"at most {MAX_SPAWN_REQUESTS} may (spawn_requests); wait for answers first",
                limit="spawn_requests",
                max=MAX_SPAWN_REQUESTS,
            )
        theirs = sum(1 for p, _ in self._pending.values() if p == parent.name)
        if theirs + len(wanted) > MAX_SPAWN_REQUESTS_PER_PARENT:
            raise LimitReached(
                f"{theirs} spawns asked by {parent.name} already wait for the human's "
                f"approval, and at most {MAX_SPAWN_REQUESTS_PER_PARENT} per parent may "
                "(spawn_requests_per_parent); wait for answers first",
                limit="spawn_requests_per_parent",
                max=MAX_SPAWN_REQUESTS_PER_PARENT,
            )

    async def _place(self, parent: Ling) -> Place:
        """Where ``parent``'s children start: its agent's directory, its tmux session."""
        assert parent.agent is not None  # found by it
        if parent.kind != "tmux":
            raise InvalidParams(
                f"{parent.name} is a {parent.kind} ling; the hub spawns children in tmux "
                "windows, next to a parent registered in a tmux pane (for an Emacs "
                "buffer: M-x hive-rpc-spawn-ling, or hive-rpc spawn NAME --emacs)",
                param="name",
            )
        cwd = working_dir(parent.agent.pid)
        if cwd is None:
            raise HiveError(f"cannot read the working directory of {parent.agent.describe()}")
        pane, _, socket = parent.address.partition("@")
        try:
            shown = await spawn_pane.tmux(
                "display-message", "-p", "-t", pane, "#{session_id}\t#{session_name}",
                socket=socket or None,
            )  # fmt: skip
        except SpawnError as e:
            raise HiveError(f"cannot find the tmux session of {parent.name}: {e}") from None
        session, _, name = shown.strip().partition("\t")
        if not session:
            raise HiveError(f"tmux names no session for {parent.name}'s pane {pane}")
        return Place(parent, Path(cwd), socket or None, session, name)

    async def _workdir(self, place: Place, child: Child) -> Path:
        """Where ``child`` will run: the parent's directory, or its worktree's path
        (read now, so the human is shown it; made only once approved)."""
        if child.worktree is None:
            return place.cwd
        try:
            top = await spawn_pane.git("rev-parse", "--show-toplevel", cwd=place.cwd, check=False)
        except SpawnError as e:
            raise InvalidParams(
                f"{child.where}worktree: {e.message}",
                param="children" if child.where else "worktree",
            ) from None
        if not top.strip():
            raise InvalidParams(
                f"{child.where}worktree: {place.parent.name} works in {place.cwd}, which "
                "is not in a git repository",
                param="children" if child.where else "worktree",
            )
        return spawn_pane.worktree_path(Path(top.strip()), child.worktree)

    async def _ask(
        self, place: Place, child: Child, workdir: Path, caller: Caller | None, asked_by: str | None
    ) -> Prompt:
        registry = self._agora._registry
        if registry is None:
            raise HiveError("this hub cannot ask the human, so it cannot spawn")
        agent = place.parent.agent
        assert agent is not None
        who = f"{place.parent.name} (its agent: {_as_it_runs(agent).describe()}"
        if caller is not None and caller.pid is not None:
            who += f"; asking through {caller.describe()}"
        who += ")"
        where = (
            f"In a new git worktree at {workdir}, on branch {child.worktree} (created if it "
            f"does not exist), beside the repository {place.cwd} is in"
            if child.worktree is not None
            else f"In: {workdir}"
        )
        question = (
            f"{who} asks to start a child agent, ling {child.name}"
            + (f" ({child.label})" if child.label else "")
            + ":\n"
            + f"Command: {shlex.join(child.command)}\n"
            + f"{where}\n"
            + f"In a new window of tmux session {place.session_name}.\n"
            + "Approving starts it now, registers its pane as ling "
            + f"{child.name}, child of {place.parent.name}, and lets other agents' "
            + "messages be typed into it and submitted.\n"
            + "Approve only a command you would run yourself."
        )
        return await registry.ask(
            Ask(
                agent_id=HUB_AGENT,
                question=question,
                choices=[APPROVE, DENY],
                urgent=True,
                timeout_s=self._agora.consent_timeout_s,
            )
        )

    # --- the answer -------------------------------------------------------------------

    async def _carry_out(self, place: Place, child: Child, prompt_id: str) -> None:
        """Wait for the human's answer; start the child if approved; tell the parent."""
        registry = self._agora._registry
        assert registry is not None
        try:
            prompt: Prompt | None = await registry.poll(prompt_id)
            while prompt is not None and prompt.status is Status.PENDING:
                prompt = await registry.wait(prompt_id, timeout_s=3600.0)
        except HiveError:
            prompt = None
        finally:
            self._pending.pop(child.name, None)
        # Forgotten before anything starts: a hub that dies while starting it does not
        # start it twice when it comes back (at most once; the parent hears nothing).
        store = self._agora._store
        await self._agora._on_its_own(lambda: store.delete_document(SPAWN_REQUEST, child.name))
        approved = (
            prompt is not None
            and prompt.status is Status.RESPONDED
            and prompt.action is Action.ACCEPT
            and prompt.answer == APPROVE
        )
        command = shlex.join(child.command)
        parent = place.parent.name
        if not approved:
            if prompt is None:
                why = "its prompt is gone"
            elif prompt.status is Status.RESPONDED:
                why = "the human denied it" if prompt.answer == DENY else "the human declined"
            else:
                why = f"nobody approved it ({prompt.status.value})"
            self._agora._emit(
                "ling/spawn-refused", ling=child.name, parent=parent, prompt_id=prompt_id,
                reason=why,
            )  # fmt: skip
            await self._tell(
                parent,
                f"[SPAWN REFUSED] Agent '{child.label or short_name(child.name)}' "
                f"({child.name}) was not started: {why}. Nothing was started.\n"
                f"Command: {command}",
            )
            return
        try:
            pane, workdir = await self._start(place, child)
        except Exception as e:  # nobody waits on this task: the parent is told instead
            why = e.message if isinstance(e, SpawnError) else f"{type(e).__name__}: {e}"
            if not isinstance(e, SpawnError):
                log.exception("spawn of %s failed", child.name)
            self._agora._emit("ling/spawn-failed", ling=child.name, parent=parent, reason=why)
            await self._tell(
                parent,
                f"[SPAWN FAILED] Agent '{child.label or short_name(child.name)}' "
                f"({child.name}) was approved but did not start: {why}\n"
                f"Command: {command}",
            )
            return
        self._agora._emit(
            "ling/spawned", ling=child.name, parent=parent, address=pane, workdir=str(workdir)
        )
        await self._tell(
            parent,
            f"[CHILD SPAWNED] Agent '{child.label or short_name(child.name)}' on branch "
            f"{child.name} is running in {workdir} (tmux {pane}).\n"
            f"Command: {command}\n"
            "Its events come to you here; answer its questions with: "
            f'answer_question agent={child.name} message="..."',
        )

    async def _start(self, place: Place, child: Child) -> tuple[str, Path]:
        """Open the child's window; its pane, once registered from inside."""
        if child.name in self._agora._lings or child.name in self._agora._requests:
            # Registered since it was asked for: the new pane would move that ling.
            raise SpawnError(f"{child.name} was registered meanwhile, so nothing was started")
        workdir = place.cwd
        if child.worktree is not None:
            workdir = await spawn_pane.add_worktree(child.worktree, place.cwd)
        channel = f"hive-rpc-spawn-{uuid.uuid4().hex}"
        argv = pane_argv(
            child.name, self._hub_socket, self._data_dir, child.label or "", channel,
            list(child.command),
        )  # fmt: skip
        pane = await spawn_pane.open_window(
            argv, workdir, short_name(child.name), socket=place.socket, session=place.session
        )
        signalled = await spawn_pane.wait_for(channel, REGISTER_TIMEOUT_S, socket=place.socket)
        ling = self._agora._lings.get(child.name)
        if ling is None or ling.address.partition("@")[0] != pane:
            why = "its registration failed" if signalled else "it did not register in time"
            raise SpawnError(f"tmux pane {pane} was opened, but {why}: see that pane")
        return ling.address, workdir

    async def _tell(self, parent: str, text: str) -> None:
        """Typed into the parent's terminal, as a child's events are; its delivery is
        recorded like theirs (``relay/delivered``, ``relay/failed``)."""
        try:
            await self._agora._deliver(parent, text)
        except Exception as e:  # nobody waits on this task: the log says it
            log.warning("spawn: telling %s failed: %s", parent, e)


_SPAWNERS: weakref.WeakKeyDictionary[Agora, Spawner] = weakref.WeakKeyDictionary()


async def resume(agora: AgoraLings) -> None:
    """Wait again for the answers to the spawns the store kept (a restarted hub),
    those this hub asked for: made through a hub of this process's data directory,
    whose lock it holds now (hub.py's ``hub.lock`` says its holder's pid).  Another
    hub's, sharing the store, are its own to carry out."""
    full = cast("Agora", agora)  # called from its load(): the whole Agora
    for body in await agora._store.documents(SPAWN_REQUEST):
        try:
            prompt_id, data_dir = str(body["prompt_id"]), str(body["data_dir"])
            place, child = Place.from_record(body["place"]), Child.from_record(body["child"])
            hub_socket = str(body["hub_socket"])
        except (KeyError, TypeError, ValueError) as e:
            log.warning("spawn: skipping a stored request the hub cannot read (%r)", e)
            continue
        if HubLock(Path(data_dir) / "hub.lock").holder() != str(os.getpid()):
            continue
        spawner = spawner_of(full, hub_socket, data_dir)
        spawner._pending[child.name] = (place.parent.name, prompt_id)
        agora._nursery.start_soon(spawner._carry_out, place, child, prompt_id)


def spawner_of(agora: Agora, hub_socket: str | None, data_dir: str | None) -> Spawner:
    """The one Spawner of ``agora``, made on first use: spawning needs the hub's socket
    and data directory, which the child's pane registers through."""
    found = _SPAWNERS.get(agora)
    if found is None:
        if hub_socket is None or data_dir is None:
            raise HiveError("this hub has no socket a spawned child could register through")
        found = _SPAWNERS[agora] = Spawner(agora, hub_socket, data_dir)
    return found


__all__ = [
    "SPAWN_REQUEST",
    "Child",
    "Spawner",
    "check_child",
    "resume",
    "spawner_of",
]
