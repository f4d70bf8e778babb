"""An answer recorded is an answer delivered (issue 26, section 6; service/askers.py).

Seen with a real Claude Code in Emacs: the hub was SIGKILLed while a permission
request waited; the hook exited at once ("lost the hub ... Claude Code asks itself")
and Claude Code showed its own dialog. The restarted hub still held the prompt as
live; the human typed ``allow``, the audit trail recorded ``allow``, and the command
never ran. Here the real hub (autostarted by the CLI, SIGKILLed, started again) and
the real ``hive-rpc hook claude-code`` process: a question whose asker can no longer
take the answer is withdrawn, ``by`` "the asker stopped waiting", and no answer or
allow is recorded for it. A durable ask (the CLI's ``ask``) stays.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
import trio.testing
from cli_support import Shell
from hook_process import permission_event, start_hook, stopped_at_exit
from waiting import until_sync

from hive_rpc.core.errors import StoreUnavailable
from hive_rpc.core.prompt import Ask, Prompt, Status
from hive_rpc.runtime.registry import open_registry
from hive_rpc.service.askers import ASKER, GONE, Asker, Askers
from hive_rpc.store import MemoryStore

WAIT_S = 30.0


def until(shell: Shell, what: str, check: Callable[[], Any]) -> Any:
    """``check()``'s first true value; the hub (another process) gives the CLI no
    event to wait on."""
    return until_sync(check, what, within_s=WAIT_S)


def hook_for(shell: Shell, home: Path) -> subprocess.Popen[bytes]:
    event = permission_event(home, "Bash", {"command": "make deploy"})
    return start_hook(event, socket=shell.socket, data_dir=shell.data_dir, home=home)


def pending(shell: Shell) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = shell.json("list")
    return records


def closed(shell: Shell, prompt_id: str) -> dict[str, Any] | None:
    record: dict[str, Any] = shell.json("poll", prompt_id)
    return None if record["status"] == "pending" else record


def test_a_killed_hook_withdraws_its_question(sh: Shell, tmp_path: Path) -> None:
    assert sh.run("status").returncode == 0  # the hub starts
    with stopped_at_exit(hook_for(sh, tmp_path)) as hook:
        (asked,) = until(sh, "the hook's question", lambda: pending(sh))
        hook.kill()
        hook.communicate()
    record = until(sh, "the question withdrawn", lambda: closed(sh, asked["id"]))
    assert (record["status"], record["by"]) == ("cancelled", GONE)
    refused = sh.run("answer", asked["id"], "allow")
    assert refused.returncode != 0
    assert "cancelled" in refused.stderr


def test_the_hooks_question_is_withdrawn_when_the_hub_restarts_without_it(
    sh: Shell, tmp_path: Path
) -> None:
    assert sh.run("status").returncode == 0
    durable = sh.run("ask", "Name the release", "--agent", "planner").stdout.strip()
    with stopped_at_exit(hook_for(sh, tmp_path)) as hook:
        asked = until(
            sh,
            "the hook's question",
            lambda: [p for p in pending(sh) if p["kind"] == "permission"],
        )[0]
        sh.stop(signal.SIGKILL)
        printed, _ = hook.communicate(timeout=WAIT_S)  # it lost the hub: Claude Code asks
        assert (hook.returncode, printed) == (0, b"")
    assert sh.run("status").returncode == 0  # the hub starts again
    record = until(sh, "the question withdrawn", lambda: closed(sh, asked["id"]))
    assert (record["status"], record["by"], record["answer"]) == ("cancelled", GONE, None)
    # No editor shows it, and the human's late answer records nothing.
    assert [p["id"] for p in pending(sh)] == [durable]
    refused = sh.run("answer", asked["id"], "allow")
    assert refused.returncode != 0
    decisions = sh.json("audit")
    assert [d.get("decision") for d in decisions] == ["none"], decisions


async def run_askers(store: MemoryStore, *, shared: bool) -> tuple[str, str]:
    """Two prompts bound by an earlier run of a hub (their bindings in ``store``): one
    from another machine, one from this machine's earlier boot, its pid this very
    process (alive now, but not the process it named then).  Their status once this
    hub's ``Askers`` has started and settled."""
    async with open_registry(store) as registry:
        other = await registry.ask(Ask(question="on another machine", agent_id="a"))
        before = await registry.ask(Ask(question="before a reboot", agent_id="a"))
        me = Asker.of(os.getpid())
        bindings = {
            other.id: Asker(4242, 1, host="elsewhere.example", boot="its-boot"),
            before.id: Asker(me.pid, me.start, boot="an-earlier-boot"),
        }
        for prompt_id, asker in bindings.items():
            await store.put_document(ASKER, prompt_id, {"prompt_id": prompt_id, **asker.record()})
        async with trio.open_nursery() as nursery:
            await nursery.start(Askers(registry, store, shared=shared).run)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
        return (
            (await registry.poll(other.id)).status.value,
            (await registry.poll(before.id)).status.value,
        )


async def test_a_shared_store_leaves_another_machines_askers_to_their_hub() -> None:
    """A pid means something only on its own machine and boot: a hub sharing NATS with
    hubs elsewhere must not withdraw their questions because it finds no such pid."""
    assert await run_askers(MemoryStore(), shared=True) == ("pending", "cancelled")


async def test_a_local_store_holds_this_machines_bindings_only() -> None:
    """A local store's bindings are this machine's whatever host name they carry (it
    was renamed): the one with a dead pid is gone, as is the earlier boot's."""
    assert await run_askers(MemoryStore(), shared=False) == ("cancelled", "cancelled")


class RefusingDocuments(MemoryStore):
    """A MemoryStore whose first document write is refused (a NATS documents bucket
    whose node is down while the prompts bucket's is not); ``saved`` is set once one
    is taken."""

    def __init__(self) -> None:
        super().__init__()
        self.refused = 0
        self.saved = trio.Event()

    async def put_document(self, kind: str, key: str, body: dict[str, Any]) -> None:
        if not self.refused:
            self.refused += 1
            raise StoreUnavailable("nats://n1", "no answer within 5 s", write=True)
        await super().put_document(kind, key, body)
        self.saved.set()


async def test_a_refused_binding_is_retried_and_serves_the_next_start() -> None:
    """``bind`` returns though the store refuses the binding; the binding is written
    on the next try (1 s later), and kept when the hub stops, so the next start
    withdraws the question of an asker that ended meanwhile.  Before, ``bind`` raised
    the store's error to the asker (whose prompt was saved), and a stopping hub
    deleted every binding."""
    store = RefusingDocuments()
    async with open_registry(store) as registry:
        asker = await trio.lowlevel.open_process(
            [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
        )
        try:
            asked = await registry.ask(Ask(question="Deploy?", agent_id="a"))
            askers = Askers(registry, store)
            async with trio.open_nursery() as nursery:
                await nursery.start(askers.run)
                await askers.bind(asked.id, asker.pid)  # the refusal is not raised here
                with trio.fail_after(WAIT_S):
                    await store.saved.wait()
                assert store.refused == 1
                nursery.cancel_scope.cancel()  # the hub stops
            (binding,) = await store.documents(ASKER)
            assert binding["pid"] == asker.pid
        finally:
            asker.kill()
            await asker.wait()
            assert asker.stdin is not None
            await asker.stdin.aclose()
        assert (await registry.poll(asked.id)).is_pending
        async with trio.open_nursery() as nursery:  # the next start
            await nursery.start(Askers(registry, store).run)
            closed = await registry.wait(asked.id, timeout_s=WAIT_S)
            nursery.cancel_scope.cancel()
        assert (closed.status.value, closed.by) == ("cancelled", GONE)


class RefusingUpdates(MemoryStore):
    """A MemoryStore refusing the next prompt update once ``down`` is set (NATS out of
    reach for a moment: a loaded machine, a node just thawed); ``refused`` counts."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.refused = 0

    async def update(self, prompt: Prompt, *, expected: Status) -> Prompt | None:
        if self.down:
            self.refused += 1
            self.down = False  # back after one refusal
            raise StoreUnavailable("nats://n1", "no answer within 5 s", write=True)
        return await super().update(prompt, expected=expected)


async def test_a_refused_withdrawal_is_tried_again() -> None:
    """The asker ends while the store refuses writes: the withdrawal is tried again
    until it lands.  Before, the refusal was taken for "closed meanwhile" and the
    question stayed pending for good (a loaded run of test_nats_errors.py)."""
    store = RefusingUpdates()
    async with open_registry(store) as registry:
        asked = await registry.ask(Ask(question="Migrate?", agent_id="a"))
        askers = Askers(registry, store)
        async with trio.open_nursery() as nursery:
            await nursery.start(askers.run)
            asker = await trio.lowlevel.open_process(
                [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
            )
            assert asker.stdin is not None
            await askers.bind(asked.id, asker.pid)
            store.down = True
            await asker.stdin.aclose()  # the asker ends
            await asker.wait()
            closed = await registry.wait(asked.id, timeout_s=WAIT_S)  # tried again at 1 s
            nursery.cancel_scope.cancel()
        assert store.refused == 1, closed
        assert (closed.status.value, closed.by) == ("cancelled", GONE)
