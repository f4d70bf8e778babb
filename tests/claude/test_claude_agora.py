"""Agora relays into the real Claude Code's TUI (issue 15, section 4).

The relay promises that a dialogue turn lands in the agent's input and is submitted.
Here the agent is the real ``claude`` (2.1.328), interactive, started the way
docs/agora.md tells a human to start one: ``hive-rpc spawn NAME -- claude ...`` in a
window of a private tmux server (the pane registers itself from inside, so no consent
prompt), or ``hive-rpc spawn NAME --emacs -- claude ...`` in a vterm buffer of a real
``emacs -nw``, with its MCP server registered under its ling name (``hive-rpc mcp
--agent NAME --tools ask,agora``). Each talks to its own scripted model
(scripted_model.py), whose recorded requests show exactly what reached the agent.

- Two sessions reach consensus: each relayed turn reaches its receiver once, whole,
  with the context template, and the model answers with
  ``mcp__hive-rpc__agora_dispatch`` (after ``ToolSearch``: MCP tools are deferred).
- The same into a vterm buffer, through the Emacs delivery path.
- Claude Code's own dialogs (the permission dialog, the AskUserQuestion menu) hold a
  turn until the human has answered them, in tmux and in vterm.
- A turn typed while Claude Code works reaches the model in the running turn.
- A child's question and its parent's answer are each the receiver's prompt."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from claude_session import ClaudeHome, claude_home
from scripted_model import (
    ModelRequest,
    ScriptedModel,
    result_text,
    scripted_model,
    text,
    tool_use,
)
from waiting import logged

from hive_rpc.core import dialogue as dlg
from hive_rpc.core import messages
from hive_rpc.hub import HubConfig
from hive_rpc.runtime.activity import Entry
from hive_rpc.service import HubService

HIVE_RPC = Path(sys.executable).parent / "hive-rpc"
CREATE = "mcp__hive-rpc__agora_create"
DISPATCH = "mcp__hive-rpc__agora_dispatch"
CONTEXT = "AGORA DIALOGUE CONTEXT"
ENDED = "AGORA DIALOGUE ENDED"
TOPIC = "Which cache for the sessions?"
PROPOSAL = "Use Redis: it is already deployed."
COUNTER = "Use SQLite: one file, no server to run."
APPROVAL = "Agreed: SQLite."
TUI_ENV = (
    "HOME",
    "XDG_CONFIG_HOME",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "DISABLE_AUTOUPDATER",
    "PATH",
)

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


# --- what the scripted models read -----------------------------------------------------


def is_prompt(message: dict[str, Any]) -> bool:
    """A user message that is a prompt (typed or pasted into the TUI), not tool results."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, str):
        return True
    blocks = content if isinstance(content, list) else []
    if any(b.get("type") == "tool_result" for b in blocks):
        return False
    return any(b.get("type") == "text" and not is_reminder(b["text"]) for b in blocks)


def is_reminder(words: str) -> bool:
    return words.lstrip().startswith("<system-reminder>")


def prompt_text(message: dict[str, Any]) -> str:
    """What the human (or the relay) submitted in a prompt message."""
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(
        b["text"] for b in content if b.get("type") == "text" and not is_reminder(b["text"])
    )


def prompts(request: ModelRequest) -> list[str]:
    """Every prompt of the conversation so far, oldest first."""
    return [prompt_text(m) for m in request.messages if is_prompt(m)]


def since_prompt(request: ModelRequest) -> tuple[str, int, list[dict[str, Any]]]:
    """The latest prompt, how many replies the model gave since, and the tool results
    since (oldest first)."""
    messages = request.messages
    start = max(i for i, m in enumerate(messages) if is_prompt(m))
    after = messages[start + 1 :]
    steps = len([m for m in after if m.get("role") == "assistant"])
    results = [
        b
        for m in after
        if m.get("role") == "user" and isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    return prompt_text(messages[start]), steps, results


def structured(result: dict[str, Any]) -> dict[str, Any]:
    """An MCP tool's result as the model gets it: its structuredContent as JSON."""
    assert not result.get("is_error"), result
    data: dict[str, Any] = json.loads(result_text(result))
    return data


def dialogue_id_in(words: str) -> str:
    found = re.search(r"^Dialogue ID: (\S+)$", words, re.MULTILINE)
    assert found is not None, words
    return found.group(1)


# --- the terminals ---------------------------------------------------------------------


@dataclass
class Tmux:
    """A private tmux server (its own socket), where the agents' panes live."""

    socket: Path

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(self.socket), *args], capture_output=True, text=True, check=False
        )
        return done.stdout

    def screen(self, pane: str) -> str:
        return self.run("capture-pane", "-p", "-t", pane)

    def wait_for(self, pane: str, words: str, timeout: float = 60) -> str:
        """The pane's screen once it shows ``words`` (tmux gives no event: polled)."""
        deadline = time.monotonic() + timeout
        while words not in (screen := self.screen(pane)):
            assert time.monotonic() < deadline, f"no {words!r} in pane {pane}:\n{screen}"
            time.sleep(0.2)
        return screen

    def wait_for_all(self, pane: str, done: Callable[[str], bool], timeout: float = 60) -> str:
        """The pane's screen once ``done`` holds of it (polled, as ``wait_for``)."""
        deadline = time.monotonic() + timeout
        while not done(screen := self.screen(pane)):
            assert time.monotonic() < deadline, f"pane {pane} never got there:\n{screen}"
            time.sleep(0.2)
        return screen

    def submit(self, pane: str, words: str) -> None:
        """Type ``words`` as a human does, and Enter."""
        self.wait_for(pane, "? for shortcuts")
        self.run("send-keys", "-t", pane, "-l", words)
        time.sleep(0.3)
        self.run("send-keys", "-t", pane, "Enter")


@contextmanager
def tmux_server(root: Path) -> Iterator[Tmux]:
    tmux = Tmux(root / "tmux.sock")
    subprocess.run(
        ["tmux", "-S", str(tmux.socket), "-f", "/dev/null", "new-session", "-d", "-s", "agents",
         "-x", "160", "-y", "45", "sleep", "3600"],
        check=True,
    )  # fmt: skip
    try:
        yield tmux
    finally:
        tmux.run("kill-server")


@dataclass
class Agent:
    """One real Claude Code session: its ling name, model, HOME and pane."""

    name: str
    model: ScriptedModel
    claude: ClaudeHome
    pane: str = ""


def register_mcp(
    claude: ClaudeHome, socket: Path, name: str | None, tools: str = "ask,agora"
) -> None:
    """docs/agora.md's registration: the MCP server under the ling's name (None: under
    none, as docs/agora.md's "Spawning children" has it), with the agora tools."""
    agent = [] if name is None else ["--agent", name]
    done = claude.run(
        "mcp", "add", "hive-rpc", "--", str(HIVE_RPC), "mcp", "--socket", str(socket),
        *agent, "--tools", tools,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def tui_command(claude: ClaudeHome, *claude_args: str) -> list[str]:
    """``claude ...``, the TUI, as a terminal runs it: ``env`` gives it its private HOME
    and model (a human's claude has its own)."""
    env = claude.env()
    return [
        "env", *[f"{k}={env[k]}" for k in TUI_ENV if k in env], "TERM=xterm-256color",
        str(claude.claude), "--permission-mode", "default", *claude_args,
    ]  # fmt: skip


def spawn(tmux: Tmux, agent: Agent, hub_config: HubConfig, *claude_args: str) -> None:
    """``hive-rpc spawn NAME -- claude ...`` (``tui_command``) run in the agent's
    project directory with tmux's ``$TMUX`` naming the private server: a new window
    there, registered from inside as ling NAME, running the TUI."""
    env = agent.claude.env()
    command = tui_command(agent.claude, *claude_args)
    done = subprocess.run(
        [str(HIVE_RPC), "spawn", agent.name, "--socket", str(hub_config.socket),
         "--data-dir", str(hub_config.data_dir), "--no-start", "--json", "--", *command],
        cwd=agent.claude.project,
        env={**env, "TMUX": f"{tmux.socket},0,0"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout, done.stderr)
    agent.pane = json.loads(done.stdout)["pane"]


DIALOGUE_STOPS = {"agora/consensus", "agora/aborted", "agora/max-turns-reached", "agora/paused"}
"""The events of a dialogue that leaves ``active``, each told after it is saved."""


async def stopped(hub: HubService, dialogue_id: str | None = None, *, within_s: float) -> Entry:
    """The event of dialogue ``dialogue_id`` (any, if None) leaving ``active``."""
    return await logged(
        hub.activity,
        lambda e: e.event in DIALOGUE_STOPS and dialogue_id in (None, e.key),
        within_s=within_s,
    )


async def typed_or_failed(
    hub: HubService, dialogue_id: str, turn: int, *, within_s: float
) -> Entry:
    """The relay's word on turn ``turn`` of ``dialogue_id``: typed, or failed."""

    def wanted(e: Entry) -> bool:
        if e.event not in ("relay/delivered", "relay/failed"):
            return False
        facts = e.data["event_facts"]
        return (facts["dialogue_id"], facts["turn"]) == (dialogue_id, turn)

    return await logged(hub.activity, wanted, within_s=within_s)


async def held_on(hub: HubService) -> None:
    """The turn is reported held (``relay/held``), and held still once the relay has
    looked again (``relay/still-held``: after the look as it starts following the
    terminal, one more when it changes or on its schedule, every 2 s)."""
    held = await logged(hub.activity, lambda e: e.event == "relay/held", within_s=60)
    await logged(hub.activity, lambda e: e.event == "relay/still-held", within_s=30, after=held.id)


def dump(agents: list[Agent], tmux: Tmux) -> str:
    """What each agent's model got and what each pane shows, for a failure."""
    out = []
    for agent in agents:
        out.append(f"=== {agent.name} pane {agent.pane}:\n{tmux.screen(agent.pane)}")
        for request in agent.model.requests:
            out.append(f"--- {agent.name} request {request.index}: {prompts(request)!r}")
        out += [f"!!! {agent.name}: {e}" for e in agent.model.errors]
    return "\n".join(out)


def dispatch(dialogue_id: str, to: str, signal: str, message: str) -> dict[str, Any]:
    """The model's call of agora_dispatch."""
    turn = {"dialogue_id": dialogue_id, "to": to, "signal": signal, "message": message}
    return tool_use(DISPATCH, turn)


# --- two agents reach consensus --------------------------------------------------------


def proposer(name: str, other: str) -> Callable[[ModelRequest], list[dict[str, Any]]]:
    """Agent A: told by its human to open the dialogue, it creates it and proposes;
    when B's counter is typed into its TUI it approves it."""

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        prompt, step, results = since_prompt(request)
        if CONTEXT not in prompt:  # the human's prompt
            if step == 0:
                return [tool_use("ToolSearch", {"query": f"select:{CREATE},{DISPATCH}"})]
            if step == 1:
                return [tool_use(CREATE, {"topic": TOPIC, "participants": [name, other]})]
            if step == 2:
                dialogue = structured(results[-1])
                return [dispatch(dialogue["id"], other, "propose", PROPOSAL)]
            return [text("Proposed; waiting for the answer.")]
        if step == 0:
            return [dispatch(dialogue_id_in(prompt), other, "approve", APPROVAL)]
        return [text("Consensus.")]

    return script


def counterer(other: str) -> Callable[[ModelRequest], list[dict[str, Any]]]:
    """Agent B: a turn typed into its TUI; it loads agora_dispatch and counters."""

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        prompt, step, _ = since_prompt(request)
        if CONTEXT not in prompt:
            return [text("Nothing to do.")]
        if step == 0:
            return [tool_use("ToolSearch", {"query": f"select:{DISPATCH}"})]
        if step == 1:
            return [dispatch(dialogue_id_in(prompt), other, "counter", COUNTER)]
        return [text("Countered.")]

    return script


def pasted(prompt: str) -> str:
    """The text of a prompt that is one bracketed paste: Claude Code (2.1.328) hands
    the model a long paste wrapped in ``<pasted_content id=ID>`` tags, whole."""
    found = re.fullmatch(
        r'\s*<pasted_content id="(\w+)">\n(.*)\n</pasted_content id="\1">\s*', prompt, re.DOTALL
    )
    assert found is not None, f"not one paste: {prompt!r}"
    return found.group(2)


PASTE = re.compile(r'<pasted_content id="(\w+)">\n(.*?)\n</pasted_content id="\1">', re.DOTALL)


def pastes(request: ModelRequest) -> list[str]:
    """Every paste the agent was given, oldest first: as a prompt of its own, or,
    typed while it was working, with the next tool result (Claude Code's "The user
    sent a new message while you were working: ...")."""
    found = []
    for message in request.messages:
        content = message.get("content")
        if message.get("role") != "user":
            continue
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks or []:
            if block.get("type") == "text":
                found += [m.group(2) for m in PASTE.finditer(block["text"])]
    return found


def relayed(d: dict[str, Any], number: int) -> str:
    """What the relay typed for turn ``number`` of the dialogue record ``d``."""
    dialogue = dlg.Dialogue.from_record(d)
    return messages.agora_turn(dialogue, dialogue.turns[number - 1])


async def test_two_claude_code_tuis_reach_consensus_through_relays(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """A proposes (its human asked it to open the dialogue), the relay types the turn
    into B's TUI, B counters, the relay types that into A's TUI, A approves:
    consensus, reached by two real agents through their terminals; and the end is typed
    into B's TUI, which had no other way to know (issue 27, item 10)."""
    with ExitStack() as stack:
        agents = []
        for name, script in (
            ("main.a", proposer("main.a", "main.b")),
            ("main.b", counterer("main.a")),
        ):
            model = stack.enter_context(scripted_model(script))
            claude = claude_home(claude_bin, claude_root / name, model.base_url)
            register_mcp(claude, hub_config.socket, name)
            agents.append(Agent(name, model, claude))
        a, b = agents
        tmux = stack.enter_context(tmux_server(claude_root))
        for agent in agents:
            await trio.to_thread.run_sync(
                spawn, tmux, agent, hub_config, "--allowedTools", "mcp__hive-rpc"
            )
        lings = await hub.call("ling/list", {"check": True})
        registered = [(x["name"], x["state"], x["command"]) for x in lings]
        assert registered == [
            ("main.a", "registered", "claude"),
            ("main.b", "registered", "claude"),
        ]
        await trio.to_thread.run_sync(tmux.submit, a.pane, "Open an Agora dialogue with main.b")
        with trio.fail_after(120):
            await stopped(hub, within_s=120)
            found = await hub.call("agora/list", {})
            await trio.to_thread.run_sync(tmux.wait_for, a.pane, "Consensus.")  # A's last reply
            await b.model.request_where(
                lambda r: any(ENDED in paste for paste in pastes(r)), within_s=120
            )
        d = await hub.call("agora/status", {"dialogue_id": found[0]["id"]})
        context = dump(agents, tmux)

    assert a.model.errors == [], context
    assert b.model.errors == [], context
    assert d["status"] == "consensus", d
    assert d["coordinator"] == "main.a"
    turns = [(t["from"], t["to"], t["signal"], t["delivery"]["state"]) for t in d["turns"]]
    assert turns == [
        ("main.a", "main.b", "propose", "delivered"),
        ("main.b", "main.a", "counter", "delivered"),
        ("main.a", "main.b", "approve", "not-relayed"),
    ], d["turns"]
    # Each relayed turn reached its receiver once, whole, with its context template:
    # B's as its first prompt; A's as its next prompt, or, when typed while A was
    # still finishing its turn, with that turn's next tool result.  The end reached
    # B after it; A, whose approval made it, read it in its result.
    to_b = prompts(b.model.requests[-1])[0]
    assert pasted(to_b) == relayed(d, 1)
    ended = dlg.closing_text(dlg.Dialogue.from_record(d))
    assert pastes(b.model.requests[-1]) == [relayed(d, 1), ended], context
    assert f"The dialogue {d['id']} ended in consensus: main.b's counter of turn 2" in ended
    assert pastes(a.model.requests[-1]) == [relayed(d, 2)], context
    assert PROPOSAL in to_b
    assert COUNTER in relayed(d, 2)
    # and each dispatch's result, as Claude Code gave it to the model, said so
    dispatched = [
        structured(r)
        for agent in (a, b)
        for r in agent.model.requests[-1].tool_results()
        if '"outcome"' in result_text(r)
    ]
    assert sorted((x["turn"], x["outcome"], x["delivery"]["state"]) for x in dispatched) == [
        (1, "relay", "delivered"), (2, "relay", "delivered"), (3, "consensus", "not-relayed")
    ]  # fmt: skip


# --- Claude Code in an Emacs vterm buffer ---------------------------------------------

ELISP = Path(__file__).resolve().parents[2] / "elisp"
VTERM_DIRS = sorted(glob.glob("/usr/share/emacs/site-lisp/elpa/vterm-*"))
needs_vterm = pytest.mark.skipif(
    shutil.which("emacs") is None or not VTERM_DIRS,
    reason="needs emacs and vterm (Debian: emacs-nox, elpa-vterm)",
)
VTERM_KEYS = {"Enter": "(vterm-send-return)", "Down": "(vterm-send-down)"}


async def spawn_in_emacs(
    tmux: Tmux, agent: Agent, hub: HubService, hub_config: HubConfig, *claude_args: str
) -> Callable[[str], None]:
    """The "Claude-in-Emacs" case: a real ``emacs -nw`` in a window of ``tmux`` with
    ``hive-rpc-mode`` on and its server running; ``hive-rpc spawn NAME --emacs --
    claude ...`` has it start the TUI in a vterm buffer, ``*ling NAME*``, registered
    from that Emacs. Returns how the human presses a key in that buffer."""
    server = tmux.socket.parent / "emacs-server"
    setup = (
        f"(progn (setq hive-rpc-socket {json.dumps(str(hub_config.socket))}"
        " hive-rpc-program nil vterm-kill-buffer-on-exit nil)"
        " (hive-rpc-mode 1)"
        f' (setq server-socket-dir {json.dumps(str(server))} server-name "t")'
        " (server-start))"
    )
    emacs = ["emacs", "-nw", "-Q", "-L", str(ELISP), "-L", VTERM_DIRS[-1]]
    emacs += ["-l", "hive-rpc", "--eval", setup]
    agent.pane = tmux.run("new-window", "-d", "-P", "-F", "#{pane_id}", *emacs).strip()
    with trio.fail_after(30):
        while len(hub.delivery_peers) == 0 or not (server / "t").exists():  # noqa: ASYNC110
            await trio.sleep(0.1)
    env = agent.claude.env()
    command = [
        "env", *[f"{k}={env[k]}" for k in TUI_ENV if k in env],
        str(agent.claude.claude), "--permission-mode", "default", *claude_args,
    ]  # fmt: skip
    emacs_env = {**os.environ, "EMACS_SOCKET_NAME": str(server / "t")}
    done = await trio.run_process(
        [str(HIVE_RPC), "spawn", agent.name, "--emacs", "--socket", str(hub_config.socket),
         "--no-start", "--", *command],
        cwd=agent.claude.project,
        env=emacs_env,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    # Spawning shows the buffer without selecting it (issue 27, item 5): the human
    # goes to it, as with C-x b, to type there.
    await trio.run_process(
        ["emacsclient", "--eval", f'(switch-to-buffer "*ling {agent.name}*")'],
        env=emacs_env, capture_stdout=True,
    )  # fmt: skip

    def press(key: str) -> None:
        form = f'(with-current-buffer "*ling {agent.name}*" {VTERM_KEYS[key]})'
        subprocess.run(
            ["emacsclient", "--eval", form], env=emacs_env, capture_output=True, check=True
        )

    return press


async def test_a_turn_relayed_while_claude_code_starts_is_submitted(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """A turn relayed at once after ``hive-rpc spawn`` returns, while Claude Code is
    still starting (no input box yet, its bracketed paste not yet on): it took the
    paste as keystrokes and the Enter after it as part of the paste, so the turn sat
    unsent in its input while the sender was told ``delivered``. The relay holds the
    turn until Claude Code's input box shows; then it is the next prompt."""
    with ExitStack() as stack:
        model = stack.enter_context(scripted_model(acknowledges))
        claude = claude_home(claude_bin, claude_root / "main.c", model.base_url)
        agent = Agent("main.c", model, claude)
        tmux = stack.enter_context(tmux_server(claude_root))
        await trio.to_thread.run_sync(spawn, tmux, agent, hub_config)
        d = await hub.call("agora/create", {"topic": TOPIC, "participants": ["main.x", "main.c"]})
        turn = await hub.call(
            "agora/dispatch",
            {"dialogue_id": d["id"], "from": "main.x", "to": "main.c", "signal": "propose",
             "message": PROPOSAL},
        )  # fmt: skip
        try:
            await trio.to_thread.run_sync(tmux.wait_for, agent.pane, "Noted.", 30)
        finally:
            context = dump([agent], tmux)
        d = await hub.call("agora/status", {"dialogue_id": d["id"]})

    assert turn["delivery"]["state"] in {"delivered", "queued"}, turn
    if turn["delivery"]["state"] == "queued":
        assert turn["delivery"]["reason"] == (
            "held: Claude Code shows no input box yet (starting); it is typed once the "
            "program is ready"
        )
    assert d["turns"][0]["delivery"]["state"] == "delivered", d["turns"]
    assert d["turns"][0]["delivery"]["attempts"] > 1, d["turns"]  # held, then typed
    (prompt,) = prompts(model.requests[-1])
    assert pasted(prompt) == relayed(d, 1), context


# --- parents and children -------------------------------------------------------------


def acknowledges(request: ModelRequest) -> list[dict[str, Any]]:
    return [text("Noted.")]


async def test_a_childs_question_and_its_answer_reach_claude_code_as_prompts(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """Seed 004's events between two real sessions, a parent ``main`` and its child
    ``main.kid``: the child's question typed into the parent's TUI, the parent's
    answer into the child's. A short paste is no ``<pasted_content>``: each is the
    receiving model's prompt, exactly the text typed."""
    with ExitStack() as stack:
        agents = []
        for name in ("main", "main.kid"):
            model = stack.enter_context(scripted_model(acknowledges))
            claude = claude_home(claude_bin, claude_root / name, model.base_url)
            agents.append(Agent(name, model, claude))
        parent, child = agents
        tmux = stack.enter_context(tmux_server(claude_root))
        for agent in agents:
            await trio.to_thread.run_sync(spawn, tmux, agent, hub_config)
            await trio.to_thread.run_sync(tmux.wait_for, agent.pane, "? for shortcuts")
        asked = await hub.call(
            "event/post",
            {"kind": "child-question", "from": "main.kid",
             "message": "Should I define the JWT types locally?"},
        )  # fmt: skip
        answered = await hub.call(
            "agent/answer", {"agent": "main.kid", "message": "Yes, locally.", "from": "main"}
        )
        for agent in agents:
            await trio.to_thread.run_sync(tmux.wait_for, agent.pane, "Noted.")
        context = dump(agents, tmux)

    assert asked["delivery"]["state"] == "delivered", asked
    assert answered["delivery"]["state"] == "delivered", answered
    assert prompts(parent.model.requests[-1]) == [asked["text"]], context
    assert asked["text"] == (
        "[QUESTION from kid] Should I define the JWT types locally?\n"
        'Reply with: answer_question agent=main.kid message="..."'
    )
    assert prompts(child.model.requests[-1]) == ["[ANSWER from main] Yes, locally."], context


# --- the dialog guard ------------------------------------------------------------------

PROCEED = "Do you want to proceed?"
"""Claude Code's own permission dialog (2.1.328)."""
QUESTION = "Which database should the cache use?"


@dataclass
class Dialog:
    """One of Claude Code's own dialogs, where Enter picks the highlighted answer,
    and how the test's human answers it."""

    tool: dict[str, Any]
    """The scripted tool call that makes the TUI show it (no hook is configured)."""
    shows: str
    keys: tuple[str, ...]
    answered: str
    """What the tool result says when the human, not the relay, answered."""


def permission(target: Path) -> Dialog:
    """Bash wants to ``touch``: "Do you want to proceed?", the human says 1. Yes."""
    command = {"command": f"touch {target}", "description": "Make it"}
    return Dialog(tool_use("Bash", command), PROCEED, ("Enter",), "")


def question() -> Dialog:
    """AskUserQuestion (the TUI offers it): a menu of the options, the human picks
    the second."""
    options = [
        {"label": "SQLite", "description": "embedded"},
        {"label": "Postgres", "description": "a server"},
    ]
    asked = {"question": QUESTION, "header": "Database", "options": options, "multiSelect": False}
    return Dialog(
        tool_use("AskUserQuestion", {"questions": [asked]}),
        "Enter to select",
        ("Down", "Enter"),
        f'"{QUESTION}"="Postgres"',
    )


def shows_dialog(
    dialog: Dialog, typed: threading.Event
) -> Callable[[ModelRequest], list[dict[str, Any]]]:
    """Asked to do it, the model makes the TUI show ``dialog``; once answered, it
    finishes its turn only after the held turn was ``typed``; a relayed turn it
    acknowledges. The turn is typed once the dialog is gone, and if Claude Code is
    still running the answered tool then, it hands the turn over with the tool result
    (see test_a_turn_typed_while_claude_code_works), else as the next prompt: both
    are the turn, delivered once."""

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        prompt, step, _ = since_prompt(request)
        if CONTEXT in prompt or CONTEXT in json.dumps(request.messages[-1]):
            return [text("Read the turn.")]
        if step == 0:
            return [dialog.tool]
        assert typed.wait(30), "the held turn was never typed"
        return [text("Did it.")]

    return script


@pytest.mark.parametrize("kind", ["permission", "question"])
@pytest.mark.parametrize("terminal", ["tmux", pytest.param("vterm", marks=needs_vterm)])
async def test_a_relay_waits_while_claude_codes_own_dialog_shows(
    hub: HubService,
    hub_config: HubConfig,
    claude_bin: Path,
    claude_root: Path,
    kind: str,
    terminal: str,
) -> None:
    """The TUI shows one of its own dialogs, where Enter picks the highlighted answer:
    "Do you want to proceed?" for a Bash command (Enter: Yes), or the menu of the
    model's AskUserQuestion (Enter: the first option). A turn relayed then is held,
    reported as ``queued``, and nothing is typed: the command does not run, the
    question is not answered, the model hears nothing. Once the human answers the
    dialog, the held turn is typed and reaches the model as its next prompt. In a
    tmux pane and in an Emacs vterm buffer (where the relay reads the buffer's last
    lines, without a cursor to tell which count)."""
    target = claude_root / "made-by-claude"
    dialog = permission(target) if kind == "permission" else question()
    typed = threading.Event()
    with ExitStack() as stack:
        model = stack.enter_context(scripted_model(shows_dialog(dialog, typed)))
        claude = claude_home(claude_bin, claude_root / "main.c", model.base_url)
        agent = Agent("main.c", model, claude)
        tmux = stack.enter_context(tmux_server(claude_root))
        press: Callable[[str], object]
        if terminal == "tmux":
            await trio.to_thread.run_sync(spawn, tmux, agent, hub_config)
            press = partial(tmux.run, "send-keys", "-t", agent.pane)
        else:
            press = await spawn_in_emacs(tmux, agent, hub, hub_config)
        await trio.to_thread.run_sync(tmux.submit, agent.pane, "do it")
        await trio.to_thread.run_sync(tmux.wait_for, agent.pane, dialog.shows)
        d = await hub.call("agora/create", {"topic": TOPIC, "participants": ["main.x", "main.c"]})
        turn = await hub.call(
            "agora/dispatch",
            {"dialogue_id": d["id"], "from": "main.x", "to": "main.c", "signal": "propose",
             "message": PROPOSAL},
        )  # fmt: skip
        await held_on(hub)
        held = tmux.screen(agent.pane)
        assert turn["delivery"]["state"] == "queued", (turn, dump([agent], tmux))
        reason = turn["delivery"]["reason"]  # the sender is told why
        assert re.fullmatch(
            "held: the terminal shows (Claude Code's .*|a 'Do you want to proceed.*); "
            "it is typed once that is answered",
            reason,
        ), reason
        status = await hub.call("agora/status", {"dialogue_id": d["id"]})
        assert status["turns"][0]["delivery"]["state"] == "queued", status["turns"]
        assert dialog.shows in held, held
        assert PROPOSAL not in held, held
        assert not target.exists()  # the relay's Enter did not say Yes for the human
        assert len(model.requests) == 1, dump([agent], tmux)  # the model heard nothing

        for key in dialog.keys:  # the human answers
            press(key)
            await trio.sleep(0.3)
        with trio.fail_after(30):
            await typed_or_failed(hub, d["id"], 1, within_s=30)
            typed.set()
            await trio.to_thread.run_sync(tmux.wait_for, agent.pane, "Read the turn.")
        status = await hub.call("agora/status", {"dialogue_id": d["id"]})
        context = dump([agent], tmux)

    assert target.exists() is (kind == "permission")
    delivery = status["turns"][0]["delivery"]
    assert delivery["state"] == "delivered", delivery
    assert delivery["attempts"] > 1  # checked, held, checked again
    assert model.errors == [], context
    last = model.requests[-1]
    assert prompts(last)[0] == "do it"
    assert pastes(last) == [relayed(status, 1)], context  # once, whole
    (answered,) = last.tool_results()
    assert not answered.get("is_error"), answered  # the human's answer, not the relay's text
    assert dialog.answered in result_text(answered)
    assert CONTEXT not in result_text(answered)


def works(started: threading.Event) -> Callable[[ModelRequest], list[dict[str, Any]]]:
    """Asked to do it, the model runs a Bash command that takes 6 s (allowed: no
    dialog), then answers."""

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        prompt, step, _ = since_prompt(request)
        if step == 0 and CONTEXT not in prompt:
            started.set()
            return [tool_use("Bash", {"command": "sleep 6", "description": "Work"})]
        return [text("Done working.")]

    return script


async def test_a_turn_typed_while_claude_code_works_reaches_it_in_the_running_turn(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """Typed while the agent works (a tool running: no dialog, so nothing holds it),
    a turn is not lost nor split: Claude Code gives it to the model once, whole, with
    the next tool result, as "The user sent a new message while you were working"
    (2.1.328), not as a prompt of its own."""
    started = threading.Event()
    with ExitStack() as stack:
        model = stack.enter_context(scripted_model(works(started)))
        claude = claude_home(claude_bin, claude_root / "main.c", model.base_url)
        agent = Agent("main.c", model, claude)
        tmux = stack.enter_context(tmux_server(claude_root))
        await trio.to_thread.run_sync(spawn, tmux, agent, hub_config, "--allowedTools", "Bash")
        await trio.to_thread.run_sync(tmux.submit, agent.pane, "do it")
        assert await trio.to_thread.run_sync(started.wait, 30)
        await trio.to_thread.run_sync(tmux.wait_for, agent.pane, "esc to interrupt")
        d = await hub.call("agora/create", {"topic": TOPIC, "participants": ["main.x", "main.c"]})
        turn = await hub.call(
            "agora/dispatch",
            {"dialogue_id": d["id"], "from": "main.x", "to": "main.c", "signal": "propose",
             "message": PROPOSAL},
        )  # fmt: skip
        await trio.to_thread.run_sync(tmux.wait_for, agent.pane, "Done working.")
        d = await hub.call("agora/status", {"dialogue_id": d["id"]})
        context = dump([agent], tmux)

    assert turn["delivery"]["state"] == "delivered", turn
    assert model.errors == [], context
    last = model.requests[-1]
    assert prompts(last) == ["do it"], context  # no prompt of its own
    (result,) = last.tool_results()
    assert not result.get("is_error"), result
    assert pastes(last) == [relayed(d, 1)], context
    (told,) = [
        block["text"]
        for block in last.messages[-1]["content"]
        if block.get("type") == "text" and CONTEXT in block["text"]
    ]
    assert told.startswith("The user sent a new message while you were working:"), told


# --- Claude Code in an Emacs vterm buffer, in a dialogue ------------------------------


def approver(other: str) -> Callable[[ModelRequest], list[dict[str, Any]]]:
    """A turn typed into its terminal; it loads agora_dispatch and approves."""

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        prompt, step, _ = since_prompt(request)
        if CONTEXT not in prompt:
            return [text("Nothing to do.")]
        if step == 0:
            return [tool_use("ToolSearch", {"query": f"select:{DISPATCH}"})]
        if step == 1:
            return [dispatch(dialogue_id_in(prompt), other, "approve", APPROVAL)]
        return [text("Approved.")]

    return script


@needs_vterm
async def test_claude_code_in_an_emacs_vterm_buffer_gets_the_turn(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """Claude Code in an Emacs vterm buffer (``spawn_in_emacs``). A turn for main.e
    goes the Emacs way (``hive/bufferState``, ``hive/deliver``), vterm pastes it, and
    it reaches the model as its prompt; the model approves."""
    with ExitStack() as stack:
        model = stack.enter_context(scripted_model(approver("main.x")))
        claude = claude_home(claude_bin, claude_root / "main.e", model.base_url)
        register_mcp(claude, hub_config.socket, "main.e")
        agent = Agent("main.e", model, claude)
        tmux = stack.enter_context(tmux_server(claude_root))
        await spawn_in_emacs(tmux, agent, hub, hub_config, "--allowedTools", "mcp__hive-rpc")
        await trio.to_thread.run_sync(tmux.wait_for, agent.pane, "? for shortcuts")
        (ling,) = await hub.call("ling/list", {"check": True})
        d = await hub.call("agora/create", {"topic": TOPIC, "participants": ["main.x", "main.e"]})
        turn = await hub.call(
            "agora/dispatch",
            {"dialogue_id": d["id"], "from": "main.x", "to": "main.e", "signal": "propose",
             "message": PROPOSAL},
        )  # fmt: skip
        with trio.fail_after(60):
            await stopped(hub, d["id"], within_s=60)
            d = await hub.call("agora/status", {"dialogue_id": d["id"]})
            await trio.to_thread.run_sync(tmux.wait_for, agent.pane, "Approved.")
        context = dump([agent], tmux)

    assert (ling["kind"], ling["address"]) == ("emacs-buffer", "*ling main.e*"), ling
    assert (ling["state"], ling["alive"], ling["command"]) == ("registered", True, "claude")
    assert turn["delivery"]["state"] == "delivered", turn
    assert model.errors == [], context
    assert d["status"] == "consensus", d
    (to_e,) = prompts(model.requests[-1])
    assert pasted(to_e) == relayed(d, 1)
    *_, approved = model.requests[-1].tool_results()
    assert structured(approved)["outcome"] == "consensus"


# --- the human's draft -----------------------------------------------------------------

DRAFT = "HUMAN-DRAFT half typed"


def types_slowly(type_one: Callable[[str], object], words: str) -> None:
    """A human typing ``words`` one key at a time, at a human's pace."""
    for char in words:
        type_one(char)
        time.sleep(0.06)


@pytest.mark.parametrize("terminal", ["tmux", pytest.param("vterm", marks=needs_vterm)])
async def test_a_relay_never_takes_the_humans_draft(
    hub: HubService,
    hub_config: HubConfig,
    claude_bin: Path,
    claude_root: Path,
    terminal: str,
) -> None:
    """The human has typed half a prompt into Claude Code's input box (no Enter) when a
    turn is relayed. Pasted after the draft and submitted, the two went to the model
    as one prompt, sent before the human was done. Now the turn is held: nothing is
    submitted, the draft stays as typed, the sender and ``agora/status`` say
    ``queued`` because the human is typing in main.c, and the hold is on the activity
    stream. Once the human sends the draft (Enter), the turn follows as a prompt of
    its own, pasted whole, once."""
    with ExitStack() as stack:
        model = stack.enter_context(scripted_model(acknowledges))
        claude = claude_home(claude_bin, claude_root / "main.c", model.base_url)
        agent = Agent("main.c", model, claude)
        tmux = stack.enter_context(tmux_server(claude_root))
        press: Callable[[str], object]
        type_one: Callable[[str], object]
        if terminal == "tmux":
            await trio.to_thread.run_sync(spawn, tmux, agent, hub_config)
            press = partial(tmux.run, "send-keys", "-t", agent.pane)
            type_one = partial(tmux.run, "send-keys", "-t", agent.pane, "-l")
        else:
            press = await spawn_in_emacs(tmux, agent, hub, hub_config)
            type_one = partial(vterm_types, agent, tmux)
        await trio.to_thread.run_sync(tmux.wait_for, agent.pane, "? for shortcuts")
        await trio.to_thread.run_sync(types_slowly, type_one, DRAFT)
        await trio.to_thread.run_sync(tmux.wait_for, agent.pane, DRAFT)
        d = await hub.call("agora/create", {"topic": TOPIC, "participants": ["main.x", "main.c"]})
        turn = await hub.call(
            "agora/dispatch",
            {"dialogue_id": d["id"], "from": "main.x", "to": "main.c", "signal": "propose",
             "message": PROPOSAL},
        )  # fmt: skip
        await held_on(hub)
        assert turn["delivery"]["state"] == "queued", (turn, dump([agent], tmux))
        # The turn's delivery says what holds it now. A screen read while Claude Code
        # redraws its input box can miss the box for that one read ("starting", held
        # all the same: seen once on a loaded CI machine); a later check finds the
        # draft, a new reason (``relay/held``), in the turn's delivery once the relay
        # tells the hold again (``relay/still-held``).
        draft = await logged(
            hub.activity,
            lambda e: e.event == "relay/held" and e.data["event_facts"]["hold"] == "draft",
            within_s=30,
        )
        await logged(
            hub.activity, lambda e: e.event == "relay/still-held", within_s=30, after=draft.id
        )
        status = await hub.call("agora/status", {"dialogue_id": d["id"]})
        reason = status["turns"][0]["delivery"]["reason"]
        assert reason.startswith("held: the human is typing in main.c"), reason
        held = tmux.screen(agent.pane)
        assert status["turns"][0]["delivery"]["state"] == "queued", status["turns"]
        activity = await hub.call("hive/activity", {})
        holds = [e["event_facts"] for e in activity if e["event"] == "relay/held"]
        assert [(e["ling"], e["turn"]) for e in holds] == [("main.c", 1)] * len(holds)
        assert {e["hold"] for e in holds} <= {"starting", "draft"}, holds
        assert holds[-1]["reason"] == reason, holds
        assert DRAFT in held, held  # the draft is as the human left it
        assert CONTEXT not in held, held
        assert "Pasted text" not in held, held
        assert model.requests == [], dump([agent], tmux)  # nothing was submitted

        press("Enter")  # the human sends their prompt
        with trio.fail_after(30):
            await typed_or_failed(hub, d["id"], 1, within_s=30)
            await model.request_where(lambda r: r.index == 1, within_s=30)
            # The model's reply to each prompt is on the screen: Claude Code is done
            # with the turn, and sent the model nothing after it.
            await trio.to_thread.run_sync(
                lambda: tmux.wait_for_all(agent.pane, lambda s: s.count("Noted.") >= 2)
            )
        status = await hub.call("agora/status", {"dialogue_id": d["id"]})
        context = dump([agent], tmux)

    delivery = status["turns"][0]["delivery"]
    assert delivery["state"] == "delivered", delivery
    assert delivery["attempts"] > 1, delivery  # held, then typed
    assert model.errors == [], context
    first, *_, last = model.requests
    assert prompts(first) == [DRAFT], context  # the human's prompt alone
    assert prompts(last)[0] == DRAFT, context
    (relay,) = prompts(last)[1:]  # then the turn, a prompt of its own
    assert pasted(relay) == relayed(status, 1), context
    assert pastes(last) == [relayed(status, 1)], context  # once


def vterm_types(agent: Agent, tmux: Tmux, char: str) -> None:
    """One key typed into the agent's vterm buffer in the Emacs of ``spawn_in_emacs``
    (its server socket is next to ``tmux``'s)."""
    server = tmux.socket.parent / "emacs-server" / "t"
    form = f'(with-current-buffer "*ling {agent.name}*" (vterm-send-string {json.dumps(char)}))'
    subprocess.run(
        ["emacsclient", "--eval", form],
        env={**os.environ, "EMACS_SOCKET_NAME": str(server)},
        capture_output=True,
        check=True,
    )
