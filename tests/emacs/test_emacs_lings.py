"""End to end: the hub types into terminal buffers of a real interactive Emacs.

An `emacs -nw -Q` under tmux loads elisp/hive-rpc.el, connects `hive-rpc-mode` to a
hub running in this process (the ``hub`` fixture), and runs a recorder program in
(a) a comint buffer and (b) a vterm buffer.  The test then drives delivery as the
relay does, through ``EmacsBufferTarget`` over the hub's ``delivery_peers``, and
reads what the recorder received, byte for byte.
"""

from __future__ import annotations

import glob
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
from emacs_session import ELISP, new_tmux_session

from hive_rpc.cli.exits import EXIT_REFUSED
from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.core.errors import HiveError
from hive_rpc.relay.emacs import EmacsBufferTarget
from hive_rpc.relay.target import DeliveryError, TargetState
from hive_rpc.service import HubService

VTERM_DIRS = sorted(glob.glob("/usr/share/emacs/site-lisp/elpa/vterm-*"))
NEEDS_VTERM = pytest.mark.skipif(not VTERM_DIRS, reason="needs vterm (Debian package elpa-vterm)")

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)

RECORDER = r'''
"""Append every byte read from stdin to RECORD; PID goes to PIDFILE."""
import os, sys
record, pidfile = sys.argv[1], sys.argv[2]
with open(pidfile, "w") as f:
    f.write(str(os.getpid()))
if "paste" in sys.argv[3:]:
    sys.stdout.write("\x1b[?2004h")  # ask the terminal for bracketed paste
sys.stdout.write("recorder ready\n")
sys.stdout.flush()
while True:
    data = os.read(0, 65536)
    if not data:
        break
    with open(record, "ab") as f:
        f.write(data)
'''

HOSTILE = (
    "hello \x1b[201~ world\r\x1b]0;pwned\x07\n"
    '(delete-file "victim") \\C-x\t\x03\x04\x15 end \x1b[31mred\x1b[0m \x9b2J'
)
"""Raw text with an early end-of-paste, a carriage return, an OSC title, C0 keys
that a terminal would act on, SGR colours and a C1 CSI; Emacs must make it inert."""
CLEAN = 'hello [201~ world]0;pwned\n(delete-file "victim") \\C-x\t end [31mred[0m 2J'
"""What Emacs types: the same text without its control characters."""


class LingEmacs:
    """`emacs -nw` in a detached tmux session, connected to the in-process hub."""

    def __init__(self, root: Path, socket: Path) -> None:
        self.root = root
        self.socket = socket
        self.name = f"hive-ling-{uuid.uuid4().hex[:8]}"
        self.recorder = root / "recorder.py"
        self.recorder.write_text(RECORDER)

    def start(self, setup: str, load_path: list[str]) -> None:
        elisp = (
            f"(progn (setq hive-rpc-socket {json.dumps(str(self.socket))}"
            " hive-rpc-program nil)"
            " (hive-rpc-mode 1)"
            f" {setup})"
        )
        args = ["emacs", "-nw", "-Q", "-L", str(ELISP)]
        for d in load_path:
            args += ["-L", d]
        args += ["-l", "hive-rpc", "--eval", elisp]
        new_tmux_session(self.name, self.root, 150, 45, args)

    def recorder_command(self, tag: str, *extra: str) -> list[str]:
        return [
            sys.executable,
            str(self.recorder),
            str(self.root / f"{tag}.record"),
            str(self.root / f"{tag}.pid"),
            *extra,
        ]

    def record(self, tag: str) -> bytes:
        path = self.root / f"{tag}.record"
        return path.read_bytes() if path.exists() else b""

    def pid(self, tag: str) -> int:
        return int((self.root / f"{tag}.pid").read_text())

    def screen(self) -> str:
        return subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name],
            capture_output=True,
            text=True,
            check=False,
        ).stdout

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True, check=False)


async def wait_until(done: Callable[[], bool], what: str, emacs: LingEmacs) -> None:
    """Poll ``done`` for up to 20 seconds; fail with the screen."""
    for _ in range(400):
        if done():
            return
        await trio.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}; the screen was:\n{emacs.screen()}")


async def check_until(
    target: EmacsBufferTarget, done: Callable[[TargetState], bool]
) -> TargetState:
    """``target.check()`` until ``done`` holds of its state, for up to 20 seconds."""
    for _ in range(200):
        state = await target.check()
        if done(state):
            break
        await trio.sleep(0.1)
    return state


def lisp_list(words: list[str]) -> str:
    return " ".join(json.dumps(w) for w in words)


async def check_buffer(
    hub: HubService, emacs: LingEmacs, buffer: str, mode: str, tag: str, expected: bytes
) -> None:
    """The full story for one buffer: state, hostile delivery, once, then death."""
    target = EmacsBufferTarget(hub.delivery_peers, buffer)

    state = await check_until(target, lambda s: s.alive and "recorder ready" in s.tail)
    assert state.alive, (state, emacs.screen())
    assert "recorder ready" in state.tail
    assert target.mode == mode

    (emacs.root / "victim").write_text("keep me")
    await target.type_text(HOSTILE)
    await wait_until(lambda: emacs.record(tag) == expected, f"{tag} to receive the text", emacs)
    # Typed once, nothing after it: a second text, typed the same way, comes next.
    after = expected.replace(CLEAN.encode(), b"AFTER")
    await target.type_text("AFTER")
    await wait_until(lambda: emacs.record(tag).endswith(after), f"{tag} to receive AFTER", emacs)
    assert emacs.record(tag) == expected + after
    assert (emacs.root / "victim").read_text() == "keep me"

    os.kill(emacs.pid(tag), signal.SIGTERM)
    state = await check_until(target, lambda s: not s.alive)
    assert not state.alive
    assert state.reason == f"the process in Emacs buffer {buffer} ({mode}) has exited"
    with pytest.raises(DeliveryError) as refused:
        await target.type_text("too late")
    assert refused.value.message == f"the process in buffer {buffer} has exited"


async def test_comint_buffer_receives_text_as_data(hub: HubService, ling_emacs: LingEmacs) -> None:
    assert len(hub.delivery_peers) == 0
    command = ling_emacs.recorder_command("comint")
    ling_emacs.start(
        f'(make-comint-in-buffer "rec" "*rec comint*" {json.dumps(command[0])} nil'
        f" {lisp_list(command[1:])})",
        load_path=[],
    )
    await wait_until(lambda: len(hub.delivery_peers) == 1, "Emacs to offer delivery", ling_emacs)
    with trio.fail_after(90):
        await check_buffer(
            hub, ling_emacs, "*rec comint*", "comint", "comint", (CLEAN + "\n").encode()
        )
        missing = await EmacsBufferTarget(hub.delivery_peers, "*nothing*").check()
        assert missing.reason == "no connected Emacs has a buffer named *nothing*"


@NEEDS_VTERM
async def test_vterm_buffer_receives_one_bracketed_paste(
    hub: HubService, ling_emacs: LingEmacs
) -> None:
    shell = shlex.join(ling_emacs.recorder_command("vterm", "paste"))
    ling_emacs.start(
        "(progn (require 'vterm) (setq vterm-kill-buffer-on-exit nil)"
        f' (let ((vterm-shell {json.dumps(shell)})) (vterm "*rec vterm*")))',
        load_path=VTERM_DIRS[-1:],
    )
    await wait_until(lambda: len(hub.delivery_peers) == 1, "Emacs to offer delivery", ling_emacs)
    # One paste: the recorder asked for bracketed paste, so vterm wraps the text in
    # exactly one ESC[200~ ... ESC[201~ pair; the ESC[201~ inside the text was inert.
    expected = b"\x1b[200~" + CLEAN.encode() + b"\x1b[201~\n"
    with trio.fail_after(90):
        await check_buffer(hub, ling_emacs, "*rec vterm*", "vterm", "vterm", expected)


def keys(emacs: LingEmacs, *keys: str) -> None:
    subprocess.run(["tmux", "send-keys", "-t", emacs.name, *keys], check=True)


COMINT, COMINT_LING = "*rec comint*", "rec-comint"
"""The comint buffer ``show_comint_recorder`` makes, and the ling name Emacs offers
for it."""


async def show_comint_recorder(hub: HubService, emacs: LingEmacs) -> None:
    """Start ``emacs`` showing ``COMINT``, a comint buffer running the recorder (its
    record: ``comint``); return once that Emacs offers delivery and the recorder is
    ready."""
    command = emacs.recorder_command("comint")
    emacs.start(
        f'(make-comint-in-buffer "rec" "{COMINT}" {json.dumps(command[0])} nil'
        f' {lisp_list(command[1:])}) (switch-to-buffer "{COMINT}")',
        load_path=[],
    )
    # The screen and the hub's peers are another process's state: polled.
    await wait_until(lambda: len(hub.delivery_peers) == 1, "Emacs to offer delivery", emacs)
    await wait_until(lambda: "recorder ready" in emacs.screen(), "the recorder", emacs)


async def register_shown_buffer(emacs: LingEmacs, default_name: str) -> None:
    """M-x hive-rpc-register-ling in the buffer shown, taking the name it offers."""
    keys(emacs, "M-x", "hive-rpc-register-ling", "Enter")
    await wait_until(
        lambda: f"Ling name (default {default_name}):" in emacs.screen(), "the prompt", emacs
    )
    keys(emacs, "Enter")


async def comint_ling_with_a_draft(hub: HubService, emacs: LingEmacs) -> None:
    """``COMINT`` registered from Emacs as ling ``COMINT_LING`` (confirmed in the echo
    area), the human's draft "half a thought" typed in it and not sent: what a turn
    for that ling is held on."""
    await show_comint_recorder(hub, emacs)
    await register_shown_buffer(emacs, COMINT_LING)
    await wait_until(
        lambda: f"ling {COMINT_LING} is buffer {COMINT}" in emacs.screen(),
        "the confirmation",
        emacs,
    )
    keys(emacs, "-l", "half a thought")  # the human's draft, not sent
    await wait_until(lambda: "half a thought" in emacs.screen(), "the draft", emacs)


async def test_register_and_unregister_ling_from_emacs(
    hub: HubService, ling_emacs: LingEmacs
) -> None:
    """M-x hive-rpc-register-ling in a terminal buffer registers it with the hub under a
    name derived from the buffer's; an Agora turn dispatched to that ling is typed into
    the buffer; M-x hive-rpc-unregister-ling removes it."""
    await show_comint_recorder(hub, ling_emacs)
    await register_shown_buffer(ling_emacs, COMINT_LING)

    async def lings() -> list[tuple[str, str, str]]:
        return [(r["name"], r["kind"], r["address"]) for r in await hub.call("ling/list", {})]

    expected = ("rec-comint", "emacs-buffer", "*rec comint*")
    for _ in range(200):
        if expected in await lings():
            break
        await trio.sleep(0.1)
    assert expected in await lings(), ling_emacs.screen()
    await wait_until(
        lambda: "ling rec-comint is buffer *rec comint*" in ling_emacs.screen(),
        "the confirmation",
        ling_emacs,
    )
    checked = await hub.call("ling/list", {"check": True})
    assert [(r["name"], r["alive"]) for r in checked] == [("rec-comint", True)]

    # the whole path: a turn for this ling reaches its Emacs buffer
    d = await hub.call("agora/create", {"topic": "Ship?", "participants": ["main", "rec-comint"]})
    turn = await hub.call(
        "agora/dispatch",
        {"dialogue_id": d["id"], "from": "main", "to": "rec-comint", "signal": "propose",
         "message": "Ship it today."},
    )  # fmt: skip
    assert turn["delivery"]["state"] == "delivered", turn
    await wait_until(
        lambda: b"Ship it today." in ling_emacs.record("comint"), "the turn's text", ling_emacs
    )
    assert b"AGORA DIALOGUE CONTEXT" in ling_emacs.record("comint")
    keys(ling_emacs, "M-x", "hive-rpc-unregister-ling", "Enter")
    await wait_until(
        lambda: "Remove ling (default rec-comint):" in ling_emacs.screen(), "the prompt", ling_emacs
    )
    keys(ling_emacs, "Enter")
    for _ in range(200):
        if expected not in await lings():
            break
        await trio.sleep(0.1)
    assert expected not in await lings()


@pytest.mark.parametrize(
    ("terminal", "load_path"),
    [("term", []), pytest.param("vterm", VTERM_DIRS[-1:], marks=NEEDS_VTERM)],
)
async def test_spawn_a_ling_from_emacs(
    hub: HubService, ling_emacs: LingEmacs, terminal: str, load_path: list[str]
) -> None:
    """M-x hive-rpc-spawn-ling (what `hive-rpc spawn --emacs` would be, done by the
    human in Emacs): asked for a name, a command and a directory, it starts the
    command in a new terminal buffer (vterm when installed, else term), registers it
    at once, and a message for that ling is typed into it."""
    ling_emacs.start("(setq vterm-kill-buffer-on-exit nil)", load_path=load_path)
    await wait_until(lambda: len(hub.delivery_peers) == 1, "Emacs to offer delivery", ling_emacs)
    keys(ling_emacs, "M-x", "hive-rpc-spawn-ling", "Enter")
    await wait_until(lambda: "Ling name:" in ling_emacs.screen(), "the name prompt", ling_emacs)
    keys(ling_emacs, "-l", "main.kid")
    keys(ling_emacs, "Enter")
    await wait_until(lambda: "Command:" in ling_emacs.screen(), "the command prompt", ling_emacs)
    keys(ling_emacs, "-l", shlex.join(ling_emacs.recorder_command("spawn")))
    keys(ling_emacs, "Enter")
    await wait_until(lambda: "In directory:" in ling_emacs.screen(), "the directory", ling_emacs)
    keys(ling_emacs, "Enter")
    await wait_until(lambda: "recorder ready" in ling_emacs.screen(), "the ling", ling_emacs)
    mode_line = {"term": "(Term: char run)", "vterm": "(VTerm"}[terminal]
    await wait_until(lambda: mode_line in ling_emacs.screen(), f"a {terminal} buffer", ling_emacs)
    assert "*ling main.kid*" in ling_emacs.screen()  # shown: the human asked for it
    expected = {"name": "main.kid", "kind": "emacs-buffer", "address": "*ling main.kid*"}

    async def registered() -> bool:
        return any(expected.items() <= r.items() for r in await hub.call("ling/list", {}))

    for _ in range(300):
        if await registered():
            break
        await trio.sleep(0.1)
    assert await registered(), ling_emacs.screen()
    (checked,) = await hub.call("ling/list", {"check": True})
    assert (checked["name"], checked["alive"]) == ("main.kid", True), checked
    answered = await hub.call(
        "agent/answer", {"agent": "main.kid", "message": "Use the cache.", "from": "main"}
    )
    assert answered["delivery"]["state"] == "delivered", answered
    await wait_until(
        lambda: b"Use the cache." in ling_emacs.record("spawn"), "the answer typed", ling_emacs
    )


async def test_hive_rpc_spawn_emacs_opens_the_buffer_in_the_running_emacs(
    hub: HubService, ling_emacs: LingEmacs
) -> None:
    """`hive-rpc spawn NAME --emacs -- COMMAND` from a shell: emacsclient asks the
    human's running Emacs (its server) to do M-x hive-rpc-spawn-ling; the CLI answers
    once the ling is registered, and a message for it is typed into the buffer."""
    server = ling_emacs.root / "emacs-server"
    ling_emacs.start(
        f'(progn (setq server-socket-dir {json.dumps(str(server))} server-name "t")'
        " (server-start))",
        load_path=[],
    )
    await wait_until(lambda: len(hub.delivery_peers) == 1, "Emacs to offer delivery", ling_emacs)
    await wait_until(lambda: (server / "t").exists(), "the Emacs server", ling_emacs)
    done = await trio.run_process(
        [
            sys.executable, "-m", "hive_rpc", "spawn", "main.kid", "--emacs",
            "--socket", str(ling_emacs.socket), "--no-start", "--",
            *ling_emacs.recorder_command("spawned"), "with \"quotes\" and \\",
        ],
        env={**os.environ, "EMACS_SOCKET_NAME": str(server / "t")},
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().startswith("main.kid: Emacs buffer *ling main.kid* running ")
    (ling,) = await hub.call("ling/list", {"check": True})
    assert (ling["name"], ling["kind"], ling["address"], ling["alive"]) == (
        "main.kid", "emacs-buffer", "*ling main.kid*", True,
    )  # fmt: skip
    await wait_until(lambda: "recorder ready" in ling_emacs.screen(), "the ling", ling_emacs)
    answered = await hub.call("agent/answer", {"agent": "main.kid", "message": "Go on."})
    assert answered["delivery"]["state"] == "delivered", answered
    await wait_until(lambda: b"Go on." in ling_emacs.record("spawned"), "the answer", ling_emacs)


async def test_hive_rpc_spawn_emacs_without_an_emacs_server_says_what_to_do(
    hub: HubService, ling_emacs: LingEmacs
) -> None:
    done = await trio.run_process(
        [
            sys.executable, "-m", "hive_rpc", "spawn", "main.kid", "--emacs",
            "--socket", str(ling_emacs.socket), "--no-start", "--", "true",
        ],
        env={**os.environ, "EMACS_SOCKET_NAME": str(ling_emacs.root / "no-emacs")},
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )  # fmt: skip
    assert done.returncode == EXIT_REFUSED, done.stderr.decode()
    said = done.stderr.decode()
    assert "Emacs did not start it:" in said, said
    assert "M-x server-start" in said
    assert await hub.call("ling/list", {}) == []


async def test_an_emacs_that_does_not_offer_delivery_asks_for_approval(
    hub: HubService, ling_emacs: LingEmacs
) -> None:
    """When the hub cannot tell the buffer is this Emacs's (it takes no delivery
    requests), the registration waits for the human's approval: the hub's question
    shows in Emacs like any other, urgent, with approve / deny."""
    command = ling_emacs.recorder_command("comint")
    ling_emacs.start(
        "(setq hive-rpc-ling-offer-delivery nil)"
        f' (make-comint-in-buffer "rec" "*rec comint*" {json.dumps(command[0])} nil'
        f' {lisp_list(command[1:])}) (switch-to-buffer "*rec comint*")',
        load_path=[],
    )
    await wait_until(lambda: "recorder ready" in ling_emacs.screen(), "the recorder", ling_emacs)
    keys(ling_emacs, "M-x", "hive-rpc-register-ling", "Enter")
    await wait_until(
        lambda: "Ling name (default rec-comint):" in ling_emacs.screen(), "the prompt", ling_emacs
    )
    keys(ling_emacs, "Enter")
    # Announced; the human opens it (nothing opens by itself).  The mode line's count
    # stays; the echo area's announcement may already be replaced by the
    # registration's own message when the screen is read.
    await wait_until(
        lambda: " hive:1" in ling_emacs.screen(), "the hub's question counted", ling_emacs
    )
    keys(ling_emacs, "M-x", "hive-rpc-answer-next", "Enter")
    await wait_until(
        lambda: (
            "asks to register Emacs buffer *rec comint* as ling rec-comint" in ling_emacs.screen()
        ),
        "the hub's question in Emacs",
        ling_emacs,
    )
    assert "[approve / deny]" in ling_emacs.screen()
    (listed,) = await hub.call("ling/list", {})
    assert (listed["name"], listed["state"]) == ("rec-comint", "pending")
    (prompt,) = await hub.call("hive/list", {})
    assert prompt["id"] == listed["prompt_id"]
    assert prompt["urgent"] is True
    # Approved (here over the socket, as an editor answers, with the human's
    # credential: an approver): the ling is registered.
    async with await HubClient.connect(Path(str(hub.info.socket))) as editor:
        assert await prove_approver(editor.call) is None
        await editor.call("hive/respond", {"id": prompt["id"], "answer": "approve"})
    for _ in range(200):
        (listed,) = await hub.call("ling/list", {})
        if listed["state"] == "registered":
            break
        await trio.sleep(0.1)
    assert listed["state"] == "registered", ling_emacs.screen()
    assert (await hub.call("hive/poll", {"id": prompt["id"]}))["answer"] == "approve"


async def test_an_agent_restarted_in_its_buffer_is_typed_into_once_the_human_approves(
    hub: HubService, ling_emacs: LingEmacs
) -> None:
    """The agent in a registered comint buffer exits and the human starts it again in
    the same buffer: a new process nobody approved, so nothing is typed, and the hub
    asks the human about it (once), as for a tmux pane.  Approved, it is the ling's
    agent.  Before, the sender was told to register the buffer again, and nothing
    asked the human."""
    emacs = ling_emacs
    await show_comint_recorder(hub, emacs)
    await register_shown_buffer(emacs, COMINT_LING)
    await wait_until(
        lambda: f"ling {COMINT_LING} is buffer {COMINT}" in emacs.screen(), "registered", emacs
    )
    sent = await hub.call("agent/answer", {"agent": COMINT_LING, "message": "one"})
    assert sent["delivery"]["state"] == "delivered", sent

    os.kill(emacs.pid("comint"), signal.SIGTERM)
    await wait_until(lambda: "Process rec terminated" in emacs.screen(), "the exit", emacs)
    command = emacs.recorder_command("again")
    form = (
        f'(make-comint-in-buffer "rec" "{COMINT}" {json.dumps(command[0])} nil'
        f" {lisp_list(command[1:])})"
    )
    keys(emacs, "M-:")
    await wait_until(lambda: "Eval:" in emacs.screen(), "the Eval prompt", emacs)
    keys(emacs, "-l", form)
    keys(emacs, "Enter")
    await wait_until(lambda: (emacs.root / "again.pid").exists(), "the new recorder", emacs)

    refused = (await hub.call("agent/answer", {"agent": COMINT_LING, "message": "two"}))["delivery"]
    assert refused["state"] == "failed", refused
    assert "has exited; not typed" in refused["reason"], refused
    (prompt,) = await hub.call("hive/list", {})
    assert f"the human is asked to approve it (prompt {prompt['id']})" in refused["reason"]
    assert "exited, and a new python" in prompt["question"]
    assert f"(pid {emacs.pid('again')}) runs in its buffer" in prompt["question"]
    async with await HubClient.connect(Path(str(hub.info.socket))) as editor:
        assert await prove_approver(editor.call) is None
        await editor.call("hive/respond", {"id": prompt["id"], "answer": "approve"})
    for _ in range(200):
        (listed,) = await hub.call("ling/list", {})
        if listed["agent"] and listed["agent"]["pid"] == emacs.pid("again"):
            break
        await trio.sleep(0.1)
    assert listed["agent"]["pid"] == emacs.pid("again"), listed
    sent = await hub.call("agent/answer", {"agent": COMINT_LING, "message": "three"})
    assert sent["delivery"]["state"] == "delivered", sent
    await wait_until(lambda: b"three" in emacs.record("again"), "the text", emacs)
    assert b"two" not in emacs.record("again")


async def test_a_shell_in_a_registered_emacs_buffer_gets_nothing(
    hub: HubService, ling_emacs: LingEmacs
) -> None:
    """M-x hive-rpc-register-ling in a buffer whose process is bash: a shell holds its
    foreground, not an agent, so there is nothing to approve (issue 26): refused,
    saying so, and the relay types nothing."""
    ling_emacs.start(
        '(make-comint-in-buffer "sh" "*sh*" "bash" nil "--norc" "--noprofile" "-i")'
        ' (switch-to-buffer "*sh*")',
        load_path=[],
    )
    await wait_until(lambda: len(hub.delivery_peers) == 1, "Emacs to offer delivery", ling_emacs)
    keys(ling_emacs, "M-x", "hive-rpc-register-ling", "Enter")
    await wait_until(
        lambda: "Ling name (default sh):" in ling_emacs.screen(), "the prompt", ling_emacs
    )
    keys(ling_emacs, "Enter")
    await wait_until(
        lambda: "cannot register ling sh: a shell (bash, pid" in ling_emacs.screen(),
        "the refusal",
        ling_emacs,
    )
    assert await hub.call("ling/list", {}) == []
    planted = ling_emacs.root / "planted"
    with pytest.raises(HiveError, match="no ling named 'sh' is registered"):
        await hub.call("agent/answer", {"agent": "sh", "message": f"ok\ntouch {planted}"})
    assert "touch" not in ling_emacs.screen()
    assert not planted.exists()


async def test_a_turn_waits_while_the_human_types_in_a_comint_buffer(
    hub: HubService, ling_emacs: LingEmacs
) -> None:
    """Issue 19: the human has typed into the agent's comint buffer and not sent it
    (text after the process mark, which Emacs reports as ``draft``). A turn relayed
    then is held, ``queued`` because the human is typing, and nothing is typed: the
    draft stays as it was. Once the human sends it (RET), the turn follows, as an
    input of its own."""
    await show_comint_recorder(hub, ling_emacs)
    assert hub.agora is not None
    await hub.agora.register("rec", "emacs-buffer", "*rec comint*", owner=True)
    keys(ling_emacs, "-l", "half typed")
    await wait_until(lambda: "half typed" in ling_emacs.screen(), "the draft", ling_emacs)
    d = await hub.call("agora/create", {"topic": "Ship?", "participants": ["main", "rec"]})
    turn = await hub.call(
        "agora/dispatch",
        {"dialogue_id": d["id"], "from": "main", "to": "rec", "signal": "propose",
         "message": "Ship it today."},
    )  # fmt: skip
    assert turn["delivery"]["state"] == "queued", turn
    assert turn["delivery"]["reason"].startswith("held: the human is typing in rec"), turn
    assert ling_emacs.record("comint") == b""  # nothing typed, nothing sent
    assert "half typed" in ling_emacs.screen()
    keys(ling_emacs, "Enter")  # the human sends it
    await wait_until(
        lambda: b"Ship it today." in ling_emacs.record("comint"), "the turn's text", ling_emacs
    )
    first, rest = ling_emacs.record("comint").split(b"\n", 1)
    assert first == b"half typed"  # the human's input alone, then the turn
    assert rest.startswith(b"---\nAGORA DIALOGUE CONTEXT"), rest
