"""Two hubs on one real nats-server (JetStream KV), as on two machines: an agent asks
through one, the human answers through the other, through the CLI and the editor
socket; hubs and NATS are killed and brought back."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import trio
from nats_support import NATS_SERVER, NatsServer

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import AlreadyAnswered

pytestmark = pytest.mark.skipif(
    NATS_SERVER is None, reason="needs nats-server (Debian: apt-get install nats-server)"
)


class Hub:
    """``hive-rpc serve --store nats://...`` as its own process, on its own socket."""

    def __init__(self, root: Path, name: str, url: str) -> None:
        self.socket = root / name / "hub.sock"
        self.data = root / name / "data"
        self.url = url
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def where(self) -> list[str]:
        return ["--socket", str(self.socket), "--data-dir", str(self.data)]

    def start(self) -> None:
        read_fd, write_fd = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hive_rpc", "serve", "--store", self.url, "--no-notify",
             "--ready-fd", str(write_fd), *self.where],
            pass_fds=(write_fd,),
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as ready:
            assert ready.read(6) == b"ready\n", "the hub did not start"

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hive_rpc", *args, *self.where, "--no-start"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )


@contextmanager
def hubs(root: Path, url: str) -> Iterator[tuple[Hub, Hub]]:
    build, laptop = Hub(root, "build", url), Hub(root, "laptop", url)
    build.start()
    laptop.start()
    try:
        yield build, laptop
    finally:
        build.stop()
        laptop.stop()


async def test_ask_on_one_hub_answer_on_the_other(nats_server: NatsServer, short_tmp: Path) -> None:
    with hubs(short_tmp, nats_server.url) as (build, laptop):
        async with await HubClient.connect(laptop.socket) as editor:
            await editor.call("hive/subscribe", {})
            # the agent on the build server asks through its own hub
            asked = await trio.to_thread.run_sync(
                build.cli, "ask", "Deploy 412?", "--choices", "yes,no", "--agent", "ci", "--json"
            )
            assert asked.returncode == 0, asked.stderr
            prompt = json.loads(asked.stdout)
            # the human's editor, on the laptop's hub, is told
            with trio.fail_after(15):
                note = await editor.next_notification()
            assert (note.method, note.params["id"]) == ("hive/prompt", prompt["id"])
            answered = await editor.call("hive/respond", {"id": prompt["id"], "answer": "yes"})
            assert answered["status"] == "responded"
        # the agent's poll, through the build hub, gets it; a second answer loses
        polled = await trio.to_thread.run_sync(build.cli, "poll", prompt["id"], "--agent", "ci")
        assert (polled.returncode, polled.stdout.strip()) == (0, "yes")
        late = await trio.to_thread.run_sync(build.cli, "answer", prompt["id"], "no")
        assert late.returncode == 1
        assert "first answer wins" in late.stderr


async def test_a_waiting_agent_is_woken_by_an_answer_on_the_other_hub(
    nats_server: NatsServer, short_tmp: Path
) -> None:
    with hubs(short_tmp, nats_server.url) as (build, laptop):
        asked = await trio.to_thread.run_sync(build.cli, "ask", "Name?", "--json")
        prompt_id = json.loads(asked.stdout)["id"]
        got: dict[str, object] = {}
        async with await HubClient.connect(build.socket) as agent, trio.open_nursery() as nursery:

            async def wait() -> None:
                got.update(await agent.call("hive/await", {"id": prompt_id, "timeout_s": 30}))

            nursery.start_soon(wait)
            answer = await trio.to_thread.run_sync(laptop.cli, "answer", prompt_id, "Ada")
            assert answer.returncode == 0, answer.stderr
        assert (got["status"], got["answer"]) == ("responded", "Ada")


async def test_a_killed_hub_comes_back_and_loses_nothing(
    nats_server: NatsServer, short_tmp: Path
) -> None:
    with hubs(short_tmp, nats_server.url) as (build, laptop):
        asked = await trio.to_thread.run_sync(build.cli, "ask", "Still there?", "--json")
        prompt_id = json.loads(asked.stdout)["id"]
        build.kill()  # mid-ask: nobody has answered yet
        build.start()
        listed = await trio.to_thread.run_sync(build.cli, "list", "--json")
        assert [p["id"] for p in json.loads(listed.stdout)] == [prompt_id]
        await trio.to_thread.run_sync(laptop.cli, "answer", prompt_id, "yes")
        polled = await trio.to_thread.run_sync(build.cli, "poll", prompt_id)
        assert polled.stdout.strip() == "yes"


async def test_nats_going_away_is_a_clear_error_and_nothing_is_lost(
    nats_server: NatsServer, short_tmp: Path
) -> None:
    with hubs(short_tmp, nats_server.url) as (build, laptop):
        first = await trio.to_thread.run_sync(build.cli, "ask", "Before?", "--json")
        first_id = json.loads(first.stdout)["id"]
        nats_server.kill()
        refused = await trio.to_thread.run_sync(build.cli, "ask", "During?")
        assert refused.returncode == 4, refused.stderr
        assert "unreachable" in refused.stderr
        assert "nothing was saved" in refused.stderr
        nats_server.start()
        with trio.fail_after(30):
            # NATS's client reconnects on its own, with no event to wait on: retry.
            while (again := await trio.to_thread.run_sync(build.cli, "ask", "After?")).returncode:  # noqa: ASYNC110
                await trio.sleep(0.2)
        assert again.returncode == 0
        listed = await trio.to_thread.run_sync(laptop.cli, "list", "--json")
        questions = sorted(p["question"] for p in json.loads(listed.stdout))
        assert questions == ["After?", "Before?"]
        assert first_id in [p["id"] for p in json.loads(listed.stdout)]


async def _closings(editor: HubClient, prompt_id: str, marker_id: str) -> list[str]:
    """The notifications about ``prompt_id`` that ``editor`` gets before the marker
    prompt's ``hive/prompt``: the marker was asked after the closing, and each hub
    sees the shared store's changes in order, so anything about the first prompt that
    would come is there before it."""
    seen: list[str] = []
    with trio.fail_after(20):
        while True:
            note = await editor.next_notification()
            if note.params.get("id") == marker_id:
                return seen
            if note.params.get("id") == prompt_id:
                seen.append(note.method)


async def _closing_is_seen_once_on_both_hubs(
    build: Hub, laptop: Hub, prompt_id: str, close: Callable[..., Awaitable[None]], event: str
) -> None:
    async with (
        await HubClient.connect(build.socket) as on_build,
        await HubClient.connect(laptop.socket) as on_laptop,
    ):
        for editor in (on_build, on_laptop):
            await editor.call("hive/subscribe", {})
        await close(on_build, on_laptop)
        marker = await trio.to_thread.run_sync(build.cli, "ask", "Marker", "--json")
        marker_id = json.loads(marker.stdout)["id"]
        for editor in (on_build, on_laptop):
            seen = await _closings(editor, prompt_id, marker_id)
            assert seen[-1:] == ["hive/dismiss"], seen
            assert seen.count("hive/dismiss") == 1, seen
            logged = await editor.call("hive/activity", {"limit": 100})
            events = [e["event"] for e in logged if e["key"] == prompt_id]
            assert events.count(event) == 1, events


async def test_both_hubs_see_an_expiry_once_whichever_hub_wins_the_race(
    nats_server: NatsServer, short_tmp: Path
) -> None:
    """Both hubs' deadlines fire at the same moment and race to expire the prompt in
    the store: the loser must still tell its editors and log it, once."""
    with hubs(short_tmp, nats_server.url) as (build, laptop):
        for trial in range(3):
            asked = await trio.to_thread.run_sync(
                build.cli, "ask", f"Soon gone {trial}?", "--timeout", "1", "--json"
            )
            prompt_id = json.loads(asked.stdout)["id"]

            async def expire(*editors: HubClient, prompt_id: str = prompt_id) -> None:
                # the countdown runs out by itself: wait until each hub has it closed
                for editor in editors:
                    closed = await editor.call("hive/await", {"id": prompt_id, "timeout_s": 30})
                    assert closed["status"] == "expired", closed

            await _closing_is_seen_once_on_both_hubs(build, laptop, prompt_id, expire, "expire")


async def test_both_hubs_see_an_answer_once_when_both_humans_answer(
    nats_server: NatsServer, short_tmp: Path
) -> None:
    """Two humans answer at once on two hubs: the one that loses is told who won, and
    both hubs dismiss the question and log the answer, once."""
    with hubs(short_tmp, nats_server.url) as (build, laptop):
        for trial in range(3):
            asked = await trio.to_thread.run_sync(build.cli, "ask", f"Name {trial}?", "--json")
            prompt_id = json.loads(asked.stdout)["id"]

            async def answer_on_both(*editors: HubClient, prompt_id: str = prompt_id) -> None:
                async def answer(editor: HubClient, name: str) -> None:
                    params = {"id": prompt_id, "answer": name, "by": name}
                    with contextlib.suppress(AlreadyAnswered):  # the loser
                        await editor.call("hive/respond", params)

                async with trio.open_nursery() as nursery:
                    for editor, name in zip(editors, ("bob", "alice"), strict=True):
                        nursery.start_soon(answer, editor, name)

            await _closing_is_seen_once_on_both_hubs(
                build, laptop, prompt_id, answer_on_both, "respond"
            )
