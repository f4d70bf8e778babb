"""The Agora's lings: the terminals agents run in, registered by the human.

Consent (docs/security.md, "Typing into terminals"): a registration made from inside
the terminal it names (relay/consent.py) is the human's and takes effect at once;
any other (an agent's ``ling_register``, the CLI run elsewhere, the dashboard) is a
*request*: the hub asks the human with a prompt of its own (urgent, approve/deny,
who asked, what runs in the terminal and its last lines), which every editor shows
like any question, and registers the ling only once it is approved.  Requests live
in the store (``ling-request``) so that a restart keeps waiting for the answer.
Either way the ling records which process is its agent (``_agent``)."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import trio

from hive_rpc.agora.events import AgoraEvents
from hive_rpc.agora.state import FOUND_ASKED, LING, LING_REQUEST, log
from hive_rpc.core.conventions import HUB_AGENT
from hive_rpc.core.errors import (
    HiveError,
    InvalidParams,
    LimitReached,
    LingNotFound,
)
from hive_rpc.core.limits import MAX_LING_REQUESTS, MAX_LING_REQUESTS_PER_PEER
from hive_rpc.core.ling import (
    TYPE,
    Agent,
    Ling,
    Place,
    Proc,
    Verdict,
    check_ling_name,
    is_shell,
    new_ling,
    register_again,
    verdict,
    will_exec,
)
from hive_rpc.core.prompt import Action, Ask, Status
from hive_rpc.core.refind import Refound
from hive_rpc.core.terminal_text import strip_controls
from hive_rpc.host.agent_process import ancestry
from hive_rpc.relay.consent import Caller, from_inside, peer_of
from hive_rpc.relay.target import Expected, Refinding, Target, TargetState

APPROVE, DENY = "approve", "deny"
CONSENT_TAIL_LINES = 8
"""How many of the terminal's last lines the consent question shows."""
CONSENT_LINE_CHARS = 200
"""Each of those lines is cut to this many characters (tmux joins wrapped lines)."""


HUB_PEER = "the hub itself"
"""Whose share of the pending ling requests the hub's own take (a pane found in the
place of a gone one, ``found_again``): its own, not that of the clients served
inside the hub (MCP over HTTP), which could otherwise fill it and leave a found
pane unasked, or be refused for the hub's requests."""


class AgoraLings(AgoraEvents):
    """Registering, approving, listing and removing lings (see the module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        made = self._target

        def target(ling: Ling) -> Target:
            """Every target made for a ling knows its approved agent and where its
            pane was, so a check that finds the pane gone looks for it again
            (relay/target.py ``Refinding``, core/refind.py)."""
            found = made(ling)
            if isinstance(found, Refinding):
                others = [o for o in self._lings.values() if o.name != ling.name]
                found.expected = Expected(
                    ling.agent,
                    ling.place,
                    tuple(o.agent for o in others if o.agent is not None),
                    frozenset(o.address for o in others),
                )
            return found

        self._target = target
        self._found_asked: dict[str, tuple[str, int]] = {}
        """Per ling: the pane, and its process's pid, found in the place of its gone
        pane that the human was asked to approve (``found_again``): asked once, also
        across a restart (kept in the store, kind ``FOUND_ASKED``)."""

    async def found_again(self, ling: Ling, found: Refound, reason: str) -> str:
        """``ling``'s pane is gone and ``found`` is another process in its place
        (core/refind.py ``NEW``): nothing was typed, for ``reason``.  The human is
        asked to approve that pane, as a new registration is (once per pane and
        process, tmux only); what the sender is told, in words."""
        pane = found.pane
        assert pane is not None
        old, at, socket = ling.address.partition("@")
        by = (
            f"the hub (ling {ling.name}'s pane {old} is gone, and this pane is in its "
            f"place: {pane.place.describe()})"
        )
        pid = pane.foreground.pid if pane.foreground is not None else 0
        address = pane.address + at + socket
        tmux = ling.kind == "tmux"
        return await self._ask_about(ling, address, pane.place, pid, by, reason, askable=tmux)

    async def restarted_in_place(self, ling: Ling, now: Proc, reason: str) -> str:
        """``ling``'s approved agent exited, and ``now``, a new process of the same
        program, holds its terminal (the agent was restarted there,
        ``core.ling.restarted``): nothing was typed, for ``reason``.  The human is
        asked to approve it, once per process, as for a pane found in a gone one's
        place; what the sender is told."""
        where = {"emacs-buffer": "buffer"}.get(ling.kind, "pane")
        gone = ling.agent.describe() if ling.agent is not None else "its agent"
        by = (
            f"the hub (ling {ling.name}'s agent, {gone}, exited, and a new {now.comm} "
            f"(pid {now.pid}) runs in its {where})"
        )
        return await self._ask_about(ling, ling.address, ling.place, now.pid, by, reason)

    async def _ask_about(
        self,
        ling: Ling,
        address: str,
        place: Place | None,
        pid: int,
        by: str,
        reason: str,
        *,
        askable: bool = True,
    ) -> str:
        """Ask the human, on the hub's own behalf (``by``), to approve the terminal at
        ``address`` whose foreground process ``pid`` is not ``ling``'s approved agent:
        once per terminal and process, also across a restart; not at all unless
        ``askable``.  What the sender of the message that was not typed (for
        ``reason``) is told."""
        request = self._requests.get(ling.name)
        if request is not None and request[0].address == address:
            return f"{reason}; the human is asked to approve it (prompt {request[1]})"
        again = register_again(ling.kind, ling.name)
        asked = (address, pid)
        if not askable or self._found_asked.get(ling.name) == asked:
            return f"{reason}; to approve it, {again}"
        self._found_asked[ling.name] = asked
        record = {"ling": ling.name, "address": address, "pid": pid}
        self._nursery.start_soon(  # not in the sender's path: kept for a restart
            self._on_its_own, lambda: self._store.put_document(FOUND_ASKED, ling.name, record)
        )
        new = dataclasses.replace(ling, address=address, agent=None, place=place)
        try:
            pending = await self._ask_consent(new, self._target(new), None, by, peer=HUB_PEER)
        except HiveError as e:
            return f"{reason}; the hub could not ask the human ({e}): {again}"
        return f"{reason}; the human is asked to approve it (prompt {pending['prompt_id']})"

    async def load(self) -> None:
        """What the store kept, and the registration requests still waiting for the
        human: their answers are waited for again."""
        await super().load()
        for body in await self._store.documents(FOUND_ASKED):
            with contextlib.suppress(KeyError, TypeError, ValueError):  # a broken record
                self._found_asked[str(body["ling"])] = (str(body["address"]), int(body["pid"]))
        for body in await self._store.documents(LING_REQUEST):
            ling, prompt_id = Ling.from_record(body["ling"]), str(body["prompt_id"])
            self._requests[ling.name] = (ling, prompt_id)
            self._nursery.start_soon(self._await_consent, ling, prompt_id)
        from hive_rpc.agora.spawning import resume  # which imports this module

        await resume(self)  # the spawns asked for and not answered yet, likewise

    async def register(
        self,
        name: str,
        kind: str,
        address: str,
        *,
        label: str | None = None,
        allow_shell: bool = False,
        caller: Caller | None = None,
        asked_by: str | None = None,
        owner: bool = False,
        then_exec: bool = False,
    ) -> dict[str, Any]:
        """Register a ling now if the human is the one asking, else ask the human.

        ``owner``: the caller is the hub itself or a test, trusted as the human.
        Otherwise the registration is the human's when ``caller`` runs inside the
        terminal (relay/consent.py) and was not sent on behalf of an agent
        (``asked_by``); any other becomes a request the human approves or denies
        through the hub's own prompt.  The result has ``state``: ``registered`` or
        ``pending`` (with the prompt's ``prompt_id``).

        Either way the ling records which process is its agent (``_agent``): the
        terminal is typed into only while that process holds its foreground.
        ``then_exec``: the caller is about to ``exec`` the agent in its own place
        (``hive-rpc spawn``, ``hive-rpc ling register NAME --tmux -- COMMAND``).
        """
        ling = new_ling(name, kind, address, now=self._now(), label=label, allow_shell=allow_shell)
        try:
            target = self._target(ling)  # the target's own parser checks the address
        except ValueError as e:
            raise InvalidParams(f"address: {e}", param="address") from None
        if owner or (
            asked_by is None
            and await from_inside(ling.kind, ling.address, target, caller, self._peers)
        ):
            state = await target.check()
            pid = caller.pid if caller is not None and not owner else None
            agent = _agent(ling, state, caller_pid=pid, then_exec=then_exec, strict=not owner)
            found = dataclasses.replace(ling, agent=agent, place=state.place)
            return await self._put(found, "ling/registered")
        return await self._ask_consent(ling, target, caller, asked_by)

    def _verdict(self, ling: Ling, target: Target, state: TargetState) -> Verdict:
        """``core.ling.verdict`` for ``ling`` on what ``target`` just showed."""
        return verdict(
            ling.agent,
            self._relay.processes(ling.agent.pid) if ling.agent is not None else None,
            state.foreground,
            kind=target.kind,
            name=ling.name,
            allow_shell=ling.allow_shell,
            no_foreground=state.no_foreground,
        )

    async def _put(self, ling: Ling, event: str, **facts: Any) -> dict[str, Any]:
        async with self._lock:
            await self._store.put_document(LING, ling.name, ling.record())
            self._lings[ling.name] = ling
        self._emit(event, ling=ling.name, kind=ling.kind, address=ling.address, **facts)
        return {**ling.record(), "state": "registered"}

    async def _keep_where(self, ling: Ling, address: str | None, place: Place | None) -> Ling:
        """Keep where ``ling``'s pane is now, as a delivery or a check found it:
        ``address``, the pane the approved agent was found in again (core/refind.py;
        None: not moved), and ``place``, where its pane is (None: unknown).  Stored
        and told (``ling/moved``) when it differs, unless the ling changed meanwhile;
        the ling as it is kept."""
        pane, at, socket = ling.address.partition("@")
        moved = dataclasses.replace(
            ling,
            address=(address or pane) + at + socket,
            place=place or ling.place,
        )
        if moved == ling or self._lings.get(ling.name) != ling:
            return ling
        where = moved.place.describe() if moved.place else "where unknown"
        message = f"{ling.name}'s pane is {moved.address.partition('@')[0]} ({where})"
        log.info("%s", message)
        await self._put(moved, "ling/moved", moved_from=ling.address, message=message)
        return moved

    async def _ask_consent(
        self,
        ling: Ling,
        target: Target,
        caller: Caller | None,
        asked_by: str | None,
        *,
        peer: str | None = None,
    ) -> dict[str, Any]:
        """Ask the human to approve ``ling``'s terminal; ``peer``, whose share of the
        pending requests it takes (default: the caller's, ``peer_of``)."""
        if self._registry is None:
            raise HiveError(
                "this hub cannot ask the human to approve a ling; register it from "
                "inside its terminal (hive-rpc ling register NAME --tmux, run in the pane)"
            )
        per_peer = MAX_LING_REQUESTS_PER_PEER
        if ling.name not in self._requests and len(self._requests) >= MAX_LING_REQUESTS:
            raise LimitReached(
                f"{MAX_LING_REQUESTS} ling registrations already wait for the human's "
                "approval, the limit (ling_requests); wait for answers first",
                limit="ling_requests",
                max=MAX_LING_REQUESTS,
            )
        peer = peer if peer is not None else peer_of(caller)
        theirs = [n for n, p in self._request_peers.items() if p == peer and n != ling.name]
        if len(theirs) >= per_peer:
            raise LimitReached(
                f"{len(theirs)} ling registrations asked through {peer} already wait for "
                f"the human's approval, its limit (ling_requests_per_peer, "
                f"{per_peer}), whatever agent ids they gave; wait for "
                "answers first",
                limit="ling_requests_per_peer",
                max=per_peer,
            )
        state = await target.check()
        agent = _agent(ling, state, caller_pid=None, then_exec=False, strict=False)
        ling = dataclasses.replace(ling, agent=agent, place=state.place)
        where = {"tmux": "tmux pane", "zellij": "Zellij pane", "emacs-buffer": "Emacs buffer"}
        who = asked_by or "a client that gave no agent id"
        if caller is not None and caller.pid is not None:
            who += f" ({caller.describe()})"
        running = state.command or "cannot tell"
        if is_shell(state.command):
            running += " - a SHELL: whatever is typed there runs as a command"
        if agent is None:
            approved = (
                "the hub cannot tell which process holds it"
                + (f" ({state.no_foreground})" if state.alive and state.no_foreground else "")
                + ", so nothing would be typed until it is registered again from inside"
            )
        elif agent.pending_exec is not None:
            approved = (
                f"the program {agent.comm} (pid {agent.pid}) starts in its own place, "
                "once it has, and only while it holds the terminal's foreground"
            )
        else:
            approved = (
                f"{agent.comm} (pid {agent.pid}, {agent.exe or 'executable unknown'}), "
                "and only while it holds the terminal's foreground"
            )
            if is_shell(agent.comm) or is_shell(agent.exe):
                approved += (
                    " - a SHELL: typed into only WITH --allow-shell"
                    if not ling.allow_shell
                    else " - a SHELL: what is typed runs as a command"
                )
        lines = [
            line[:CONSENT_LINE_CHARS]
            for line in strip_controls(state.tail).rstrip().splitlines()[-CONSENT_TAIL_LINES:]
        ]
        question = (
            f"{who} asks to register {where[ling.kind]} {ling.address} as ling {ling.name}"
            + (" WITH --allow-shell (typing even into a shell)" if ling.allow_shell else "")
            + ": other agents' messages would be typed into it and submitted.\n"
            + f"Running there now: {running}\n"
            + f"Approving types only into: {approved}\n"
            + (
                "Its last lines:\n" + "\n".join(f"  | {line}" for line in lines)
                if state.alive and lines
                else f"It cannot be read now: {state.reason or 'nothing shown'}"
            )
            + "\nApprove only a terminal where an agent runs that others may type to."
        )
        prompt = await self._registry.ask(
            Ask(
                agent_id=HUB_AGENT,
                question=question,
                choices=[APPROVE, DENY],
                urgent=True,
                timeout_s=self.consent_timeout_s,
            )
        )
        async with self._lock:
            old = self._requests.pop(ling.name, None)
            self._requests[ling.name] = (ling, prompt.id)
            self._request_peers[ling.name] = peer
            await self._store.put_document(
                LING_REQUEST, ling.name, {"ling": ling.record(), "prompt_id": prompt.id}
            )
        if old is not None:  # asked again: the new request replaces the old one
            await self._withdraw(old[1])
        self._nursery.start_soon(self._await_consent, ling, prompt.id)
        self._emit(
            "ling/requested", ling=ling.name, kind=ling.kind, address=ling.address,
            prompt_id=prompt.id, by=asked_by,
        )  # fmt: skip
        return {**ling.record(), "state": "pending", "prompt_id": prompt.id}

    async def _withdraw(self, prompt_id: str) -> None:
        assert self._registry is not None
        # Answered or gone meanwhile: its waiter sees it is no longer the current one.
        with contextlib.suppress(HiveError):
            await self._registry.cancel(prompt_id, by=HUB_AGENT)

    async def _await_consent(self, ling: Ling, prompt_id: str) -> None:
        """Wait for the human's answer to a registration request and carry it out."""
        assert self._registry is not None
        try:
            prompt = await self._registry.poll(prompt_id)
            while prompt.status is Status.PENDING:
                prompt = await self._registry.wait(prompt_id, timeout_s=3600.0)
        except HiveError as e:
            prompt = None
            log.warning("ling request %s: its prompt %s is gone (%s)", ling.name, prompt_id, e)
        approved = (
            prompt is not None
            and prompt.status is Status.RESPONDED
            and prompt.action is Action.ACCEPT
            and prompt.answer == APPROVE
        )
        if self._requests.get(ling.name, (None, None))[1] != prompt_id:
            return  # replaced by a newer request, or removed
        if approved:  # stored first: until then it is listed as pending, not as nothing
            await self._on_its_own(lambda: self._store.put_document(LING, ling.name, ling.record()))
        async with self._lock:
            current = self._requests.get(ling.name)
            replaced = current is None or current[1] != prompt_id  # while it was stored
            stale = replaced and approved and ling.name not in self._lings
            if not replaced:
                del self._requests[ling.name]
                self._request_peers.pop(ling.name, None)
                if approved:  # registered as it stops being pending: never listed as neither
                    self._lings[ling.name] = ling
        if replaced:
            if stale:
                await self._on_its_own(lambda: self._store.delete_document(LING, ling.name))
            return
        await self._on_its_own(lambda: self._store.delete_document(LING_REQUEST, ling.name))
        if approved:
            self._emit("ling/approved", ling=ling.name, kind=ling.kind, address=ling.address)
            return
        outcome = prompt.status.value if prompt is not None else "gone"
        if prompt is not None and prompt.status is Status.RESPONDED:
            outcome = "denied" if prompt.answer == DENY else f"declined ({prompt.action})"
        self._emit("ling/denied", ling=ling.name, kind=ling.kind, address=ling.address,
                   outcome=outcome)  # fmt: skip

    async def remove(self, name: str) -> dict[str, Any]:
        check_ling_name(name)
        async with self._lock:
            removed = await self._store.delete_document(LING, name)
            self._lings.pop(name, None)
            request = self._requests.pop(name, None)
            self._request_peers.pop(name, None)
            if request is not None:
                await self._store.delete_document(LING_REQUEST, name)
            if self._found_asked.pop(name, None) is not None:
                await self._store.delete_document(FOUND_ASKED, name)
        if request is not None:
            await self._withdraw(request[1])
        return {"name": name, "removed": removed or request is not None}

    def ling_of_process(self, caller: Caller | None) -> Ling | None:
        """The registered ling whose approved agent runs ``caller``: its process or
        the nearest ancestor that is a ling's agent (pid and start time, as /proc
        says), or None (no process to check, or it runs under no ling's agent).  A
        fact the hub verifies, where a request's ``from`` is a name it was given."""
        if caller is None or caller.pid is None:
            return None
        agents = {
            (ling.agent.pid, ling.agent.start): ling
            for ling in self._lings.values()
            if ling.agent is not None
        }
        for pid_start in ancestry(caller.pid):
            if (ling := agents.get(pid_start)) is not None:
                return ling
        return None

    def speaker(self, caller: Caller | None, given: str | None, *, param: str) -> str | None:
        """Who a request speaks as (an event's, an answer's or a turn's ``from``):
        the ling whose agent runs the caller, when the hub can tell; else ``given``.
        A caller the hub knows as one ling naming another registered ling is refused:
        an agent speaks for its own terminal only.  A name that is no ling (the
        agent's own id, ``claude-code-PID``, which MCP fills in) gives way to the
        ling, so an agent need not know its ling's name."""
        own = self.ling_of_process(caller)
        if own is None:
            return given
        if given is not None and given != own.name and given in self._lings:
            raise InvalidParams(
                f"{param}: {given!r} is another ling; the hub sees that you are "
                f"{own.name} (your process runs as its approved agent), and a ling "
                "speaks only for itself: leave it out",
                param=param,
            )
        return own.name

    def _ling(self, name: str) -> Ling:
        ling = self._lings.get(name)
        if ling is None:
            request = self._requests.get(name)
            if request is not None:
                raise LingNotFound(
                    f"no ling named {name!r} is registered yet: its registration waits "
                    f"for the human to approve prompt {request[1]}",
                    name=name,
                )
            raise LingNotFound(
                f"no ling named {name!r} is registered; register its terminal with "
                "`hive-rpc ling register NAME --tmux PANE` (or --zellij / --emacs-buffer)",
                name=name,
            )
        return ling

    async def lings(self, *, check: bool = False) -> list[dict[str, Any]]:
        """Registered lings (``state: registered``) and requests waiting for the human
        (``state: pending``, with ``prompt_id``), by name.  ``check`` tests every
        terminal at once, so one slow terminal (a silent Emacs) delays the answer by
        its own timeout, not by the sum of all."""
        out: list[dict[str, Any]] = [
            {**ling.record(), "state": "registered"} for ling in self._lings.values()
        ]
        out += [
            {**ling.record(), "state": "pending", "prompt_id": prompt_id}
            for ling, prompt_id in self._requests.values()
        ]
        out.sort(key=lambda r: (r["name"], r["state"]))
        if check:

            async def check_one(record: dict[str, Any]) -> None:
                ling = Ling.from_record(record)
                try:
                    target = self._target(ling)
                except ValueError as e:  # kept from before addresses were checked
                    record["alive"], record["reason"], record["command"] = False, str(e), None
                    return
                state = await target.check()
                record["alive"], record["reason"] = state.alive, state.reason
                record["command"] = state.command
                if state.alive and ling.name in self._lings:
                    judged = self._verdict(ling, target, state)
                    if judged.action != TYPE:
                        record["reason"] = judged.reason
                    # Found moved (its approved agent in another pane, or its pane
                    # elsewhere): kept now, as a delivery would keep it.
                    kept = await self._keep_where(ling, state.address, state.place)
                    record.update(address=kept.address, place=kept.record()["place"])

            async with trio.open_nursery() as nursery:
                for record in out:
                    nursery.start_soon(check_one, record)
        return out


NO_AGENT_YET = (
    "no agent runs in this terminal yet: the registering command itself holds its "
    "foreground, and it ends now.  Start the agent through it instead: `hive-rpc ling "
    "register NAME --tmux -- COMMAND` registers the pane, then runs COMMAND in its "
    "place as the approved agent; or run `hive-rpc ling register NAME --tmux` from the "
    "agent (its shell tool), or `hive-rpc spawn NAME -- COMMAND`"
)


def _is_shell_proc(proc: Proc) -> bool:
    return is_shell(proc.comm) or is_shell(proc.exe)


def _agent(
    ling: Ling, state: TargetState, *, caller_pid: int | None, then_exec: bool, strict: bool
) -> Agent | None:
    """The process ``ling``'s registration approves, from what its terminal shows
    (docs/security.md, "Typing into terminals"):

    - with ``allow_shell``, the process the terminal itself runs (the pane's shell);
    - ``then_exec``: the caller, which must hold the foreground and will ``exec`` the
      agent (bound to what it runs once it has: ``Agent.pending_exec``);
    - else the leader of the terminal's foreground process group: the agent that
      ran ``hive-rpc ling register`` from its shell tool, the program Emacs started;
      a ``sh -c`` that may still ``exec`` it is bound once it has.

    ``strict`` (a registration from inside, by the human) refuses with the reason
    when there is no agent to approve; otherwise (a consent request, the hub's own)
    the ling gets no agent, and nothing is typed into it until it is registered again.
    """
    if not state.alive:
        return None
    if ling.allow_shell:
        if state.root is None and strict:
            raise HiveError(
                f"the terminal does not say which process it runs ({state.no_foreground}); "
                "not registered"
            )
        if state.root is None:
            return None
        return Agent.of(state.root, pending_exec=will_exec(state.root))
    front = state.foreground
    if front is None:
        if strict:
            raise HiveError(
                "the terminal does not say which process holds its foreground "
                f"({state.no_foreground}), so the hub cannot record the agent to type "
                "into; not registered"
            )
        return None
    if then_exec:
        if caller_pid is not None and front.pid == caller_pid:
            return Agent.of(front, pending_exec=True)
        if strict:
            raise HiveError(
                f"`-- COMMAND` runs COMMAND as the agent in the registering command's "
                f"place, so that command must hold the terminal's foreground; "
                f"{front.comm} (pid {front.pid}) does: run it at the shell's prompt"
            )
    if strict and caller_pid is not None and front.pid == caller_pid:
        raise HiveError(NO_AGENT_YET)
    if will_exec(front):  # env VAR=1 claude, sh -c '...; exec claude'
        return Agent.of(front, pending_exec=True)
    if strict and _is_shell_proc(front):
        raise HiveError(
            f"a shell ({front.comm}, pid {front.pid}) holds this terminal's "
            "foreground, not an agent: start the agent first, then register from it "
            "(or with `hive-rpc ling register NAME --tmux -- COMMAND`); or add "
            "--allow-shell to approve typing into the shell itself"
        )
    return Agent.of(front)
