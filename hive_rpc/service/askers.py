"""Questions whose asker waits on the call: withdrawn when the asker goes.

Some askers can take an answer only while they wait for it: the permission hook
(``hive-rpc hook claude-code``), a blocking MCP call (``hivemind_ask``,
``request_human_input``, ``approve``).  If that process ends (killed, or it gave up
when the hub died and its agent asked the human itself), an answer given later is
recorded and reaches no one: the human typed ``allow``, the editor said "sent", the
audit trail said ``allow``, and the command never ran.  So such
an ask says ``waits: true`` and the hub binds it to the process the kernel names as
the peer of its connection (``SO_PEERCRED``, relay/consent.py's ``CALLER``), with that
process's start time so a recycled pid is not taken for it.  While the prompt is
pending the hub watches the process through a pidfd (an event, not a poll); when it
ends the prompt is withdrawn from every editor, ``by`` :data:`GONE`.

The binding is kept in the store, so a restarted hub checks it too: an asker gone
meanwhile (the hook exits at once when it loses the hub) has its question withdrawn
before any editor shows it; one still alive (``hive-rpc mcp`` waits for the new hub
and resumes its call) is watched again.  A pid means something only on its own
machine and boot, so a binding names both (the host name and
``/proc/sys/kernel/random/boot_id``): a store shared with hubs elsewhere (NATS)
holds their bindings too, which this hub leaves to them; one of this host from an
earlier boot is gone, its asker with it.  An ask with no process to watch (MCP over
HTTP, served inside the hub) is withdrawn by its tool when the call ends, and at a
restart, since its call ended with the old hub.  Durable asks (``hivemind_ask_async``,
the CLI's ``ask``) never say ``waits`` and stay as they are.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from dataclasses import dataclass
from typing import Any

import trio

from hive_rpc.core.errors import HiveError, StoreUnavailable, StoreWriteFailed
from hive_rpc.relay.proc import open_pidfd, stat
from hive_rpc.runtime.registry import STORE_RETRY_MAX_S, STORE_RETRY_MIN_S, Registry
from hive_rpc.store.base import PromptStore

log = logging.getLogger(__name__)

ASKER = "asker"
"""The store's document kind for a binding (key: the prompt id)."""
GONE = "the asker stopped waiting"
"""The ``by`` of a prompt withdrawn because its asker went."""
WAIT_CHUNK_S = 3600.0
"""How long one wait for the prompt's close lasts before it is asked again."""


def _boot_id() -> str | None:
    """This boot of this machine, as the kernel names it (None without /proc)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip() or None
    except OSError:
        return None


HOST = socket.gethostname()
BOOT = _boot_id()


@dataclass(frozen=True, slots=True)
class Asker:
    """The process that waits for a prompt's answer, as the kernel named it."""

    pid: int | None
    start: int | None
    """``/proc/PID/stat`` starttime when bound: a recycled pid has another."""
    host: str | None = HOST
    boot: str | None = BOOT
    """Where the pid means something: the machine, and its boot."""

    def record(self) -> dict[str, Any]:
        return {"pid": self.pid, "start": self.start, "host": self.host, "boot": self.boot}

    @classmethod
    def from_record(cls, body: dict[str, Any]) -> Asker:
        pid, start = body.get("pid"), body.get("start")
        host, boot = body.get("host"), body.get("boot")
        return cls(
            pid if isinstance(pid, int) and pid > 0 else None,
            start if isinstance(start, int) else None,
            host if isinstance(host, str) else None,
            boot if isinstance(boot, str) else None,
        )

    @classmethod
    def of(cls, pid: int | None) -> Asker:
        found = stat(pid) if pid is not None else None
        return cls(pid, found.start if found is not None else None)

    def elsewhere(self) -> bool:
        """Bound by a hub on another machine (a shared store): not this hub's to judge."""
        return self.host is not None and self.host != HOST

    def earlier_boot(self) -> bool:
        return self.boot is not None and BOOT is not None and self.boot != BOOT


def _open_pidfd(asker: Asker) -> int | None:
    """A pidfd on the asker's process, or None when it is gone (or was never known)."""
    if asker.pid is None or asker.start is None or asker.earlier_boot():
        return None
    return open_pidfd(asker.pid, asker.start)


class Askers:
    """The bindings of waiting askers to their prompts, and one watcher task each."""

    def __init__(self, registry: Registry, store: PromptStore, *, shared: bool = False) -> None:
        self._registry = registry
        self._store = store
        self._shared = shared
        """The store is shared with other hubs (NATS), maybe on other machines."""
        self._nursery: trio.Nursery | None = None
        self._scopes: dict[str, trio.CancelScope] = {}
        """The watcher of each bound prompt, so ``release`` can end it."""

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Own the watchers until cancelled; at start, check the bindings a previous
        run of the hub left (see the module doc)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for body in await self._store.documents(ASKER):
                prompt_id = body.get("prompt_id")
                if isinstance(prompt_id, str):
                    asker = Asker.from_record(body)
                    if self._shared and asker.elsewhere():
                        continue  # its own hub watches it
                    nursery.start_soon(self._watch, prompt_id, asker, True)
            task_status.started()
            await trio.sleep_forever()

    async def bind(self, prompt_id: str, pid: int | None) -> None:
        """Withdraw ``prompt_id`` once the process ``pid`` ends (now, if it already
        has); with no ``pid`` (an ask served inside the hub), at the next start.

        The watch starts at once and the binding is written to the store beside it,
        not before the ask is answered: the prompt is saved by then, and a second
        write in the ask's path would give it a second bound (NATS: an ask with
        ``waits`` could take 10 s) and, when that write failed, refuse as "nothing
        was saved" an ask whose prompt was.  The record only serves a restart; until
        it lands, this hub's watch holds the binding."""
        asker = Asker.of(pid)
        if self._nursery is None:  # a service without the hub's tasks
            await self._record(prompt_id, asker)
            return
        self._nursery.start_soon(self._watch, prompt_id, asker, False)

    async def _record(self, prompt_id: str, asker: Asker) -> None:
        await self._store.put_document(ASKER, prompt_id, {"prompt_id": prompt_id, **asker.record()})

    async def _record_until_saved(self, prompt_id: str, asker: Asker) -> None:
        """Write the binding, trying again while the store refuses (waits doubling
        from 1 s to 60 s, as the registry's refused expiries do); the watch cancels
        it when it ends."""
        wait = STORE_RETRY_MIN_S
        while True:
            try:
                await self._record(prompt_id, asker)
            except HiveError as e:
                log.warning("prompt %s: its asker's binding not saved yet (%s)", prompt_id, e)
            else:
                return
            await trio.sleep(wait)
            wait = min(2 * wait, STORE_RETRY_MAX_S)

    async def release(self, prompt_id: str) -> None:
        """The asker stopped waiting on its call but will collect the answer later (a
        blocking MCP call that returns pending before its client's timeout): keep the
        question when the asker ends (``hive/keep``)."""
        scope = self._scopes.pop(prompt_id, None)
        if scope is not None:
            scope.cancel()  # its watcher deletes the binding as it ends
        else:
            await self._store.delete_document(ASKER, prompt_id)

    async def _watch(self, prompt_id: str, asker: Asker, restarted: bool) -> None:
        """Until the prompt closes or is released: withdraw it when its asker ends.  An
        asker with no process was served by the hub itself, so after a restart it is
        gone too.  The binding is deleted when the watch ends for good (closed,
        withdrawn, released), and kept when the hub stops: the next start checks it
        (before, a stop deleted every binding, so a question whose asker ended while
        the hub was down stayed pending, its answer reaching no one)."""
        fd = _open_pidfd(asker)
        gone = fd is None and (asker.pid is not None or restarted)
        ended = False
        try:
            with trio.CancelScope() as released:
                self._scopes[prompt_id] = released
                if not gone:
                    async with trio.open_nursery() as nursery:
                        if not restarted:
                            nursery.start_soon(self._record_until_saved, prompt_id, asker)
                        nursery.start_soon(self._until_closed, prompt_id, nursery.cancel_scope)
                        if fd is not None:
                            await trio.lowlevel.wait_readable(fd)  # the process ended
                            gone = True
                            nursery.cancel_scope.cancel()
                if gone:
                    await self._withdraw(prompt_id, asker)
            ended = True  # here also when released (its scope caught the cancel)
        finally:
            if self._scopes.get(prompt_id) is released:
                del self._scopes[prompt_id]
            if fd is not None:
                os.close(fd)
            if ended:
                with contextlib.suppress(Exception), trio.CancelScope(shield=True):
                    await self._store.delete_document(ASKER, prompt_id)

    async def _until_closed(self, prompt_id: str, scope: trio.CancelScope) -> None:
        with contextlib.suppress(HiveError):
            while (await self._registry.wait(prompt_id, timeout_s=WAIT_CHUNK_S)).is_pending:
                pass
        scope.cancel()  # answered, cancelled or expired: nothing to withdraw

    async def _withdraw(self, prompt_id: str, asker: Asker) -> None:
        """Cancel the prompt if it is still pending (its asker is gone).  A store that
        refuses the write (NATS out of reach, a full disk) is tried again, waits
        doubling from 1 s to 60 s: before, its refusal was taken for "closed
        meanwhile" and the question stayed pending, its answer reaching no one."""
        wait = STORE_RETRY_MIN_S
        while True:
            try:
                await self._registry.cancel(prompt_id, by=GONE)
            except (StoreUnavailable, StoreWriteFailed) as e:
                log.warning("prompt %s: its asker ended; not withdrawn yet (%s)", prompt_id, e)
            except HiveError as e:  # gone, or closed meanwhile
                log.debug("prompt %s: nothing to withdraw (%s)", prompt_id, e)
                return
            else:
                log.info("prompt %s withdrawn: its asker (pid %s) ended", prompt_id, asker.pid)
                return
            await trio.sleep(wait)
            wait = min(2 * wait, STORE_RETRY_MAX_S)


__all__ = ["ASKER", "GONE", "Asker", "Askers"]
