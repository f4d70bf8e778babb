"""The real Codex CLI (0.171.0) as a human uses it: its interactive TUI in a tmux pane,
with the config ``hive-rpc setup codex`` wrote (run as a process, agent_homes.run_setup)
and the scripted model (scripted_responses.py); and Codex's MCP client cutting a long
call at ``tool_timeout_sec`` (issue 29).

What the tests hold, measured here:

- **Trust, as a human gives it.** The TUI opens on "Hooks need review / 6 hooks are
  new or changed" (setup's PermissionRequest hook and its five session hooks;
  ``1. Review hooks``, ``2. Trust all and continue``, ``3. Continue
  without trusting (hooks won't run)``; "enter confirm · esc skip") once its required
  MCP server is up, for a hook never trusted.  Either way works: ``3.`` (Down, Down,
  Enter; or ``j``, ``j``, Enter), then ``/hooks`` Enter shows the events table with the cursor on
  ``PermissionRequest`` ("t trust all · enter review · esc close"); Enter shows the
  hook ("Trust     New hook - review required"); ``t`` trusts it ("Trust
  Trusted"); Esc (the table again, "5 hooks need review before they can run." for
  the session's), Esc, ``/quit`` Enter.  Or ``2.`` (Down, Enter) on the first screen,
  which trusts all six (one record each, the event in snake_case: ``session_start``,
  ``user_prompt_submit``, ``stop``, ``interrupt``, ``session_end``).
  Keys typed in the first moment one of these lists shows are discarded, and an Esc
  or arrow key then may make Codex exit (``choose``), so the tests steer with ``j``
  and ``k``, away and back, before an Enter.  Codex then writes
  into config.toml ``[hooks.state."<config.toml's path>:permission_request:0:0"]``
  ``trusted_hash = "sha256:<64 hex>"`` (group 0, hook 0 of PermissionRequest; the
  hash is the hook's alone: re-keyed by hand to another place, a record still
  trusted its hook there), and adds ``[tui] screen_reader_detection_done = true``.
- **The session's hooks.** The TUI runs SessionStart at the first prompt, just before
  UserPromptSubmit (not when it opens); Stop when the answer is in; Interrupt when
  the human's Esc ends a turn; SessionEnd at ``/quit``.
  ``hive-rpc setup codex`` run again with the same options changes nothing ("already
  set up", the same bytes), so the trust stays; a later ``codex exec
  --approve-for-me`` runs the hook without ``--dangerously-bypass-hook-trust``.
  Setup run with other options changes the hook's command, and Codex asks again
  ("Unnamed hook · modified", "Modified since last trusted - review required"; the
  hook is skipped until then).  ``setup codex --remove`` moves the records of the
  user's hooks after hive-rpc's with them (left in place, Codex showed the user's
  hook "modified" and skipped it).
- **The TUI's own settings.** ``--no-daemon``: without it the TUI starts a shared
  background app server (``~/.codex/packages/app-server-daemon/.../codex app-server
  --listen unix:// --managed-daemon``) that runs the MCP servers and the hooks and
  outlives the TUI; the test would leave it running.  (By hand, two TUIs sharing it:
  both sessions' questions and the hook's came from one agent, ``codex-<the daemon's
  pid>``.)  ``-a on-request``: in this project directory (no
  git repository, nothing chosen in ``/permissions``) the TUI's policy is "Granular"
  with ``sandbox_approval: false``, so a command asking to leave the sandbox is refused
  to the model with no dialog and no hook.  Nothing else comes first: no login (the
  provider's key is in the environment), no folder trust, no model choice.  The TUI
  also asks the model for a title after the first prompt (a request whose user text
  asks for "a concise, single-line task title"), which the scripted model answers.
- **While the hook waits** the TUI shows "Working (Ns • esc to interrupt) · Running
  hook" and no dialog of its own (Claude Code draws its own at once).  Esc interrupts
  the turn ("Conversation interrupted"): Codex ends the hook, and its question leaves
  the editors ("cancelled by the asker stopped waiting").
- **The hub down.** A hook with no hub prints nothing; Codex then shows its own
  dialog: "Would you like to run the following command?", "Reason: <justification>",
  "$ <command>", "1. Yes, proceed (y)", "2. Yes, and don't ask again for commands that
  start with `...` (p)", "3. No, and tell Codex what to do differently (esc)".  A hub
  stopped on purpose before Codex starts is another matter: setup's server is
  ``required``, ``hive-rpc mcp`` will not start a hub stopped on purpose, and the TUI
  exits at once ("required MCP servers failed to initialize: hive-rpc: handshaking
  with MCP server failed"), so the test stops the hub once Codex runs.
- **The tool timeout.** At ``tool_timeout_sec`` Codex sends the server
  ``notifications/cancelled`` (``{"requestId": N, "reason": "MCP request cancelled by
  caller"}``) and gives the model ``tool call failed for `hive-rpc/hivemind_ask` ...
  timed out awaiting tools/call after 3s``; ``hive-rpc mcp`` withdraws the question
  (by the agent), so a later ``hivemind_poll`` of its id reads ``cancelled``: nothing
  is left to collect.  With ``MCP_TOOL_TIMEOUT`` matching (setup writes both, and
  keeps a ``tool_timeout_sec`` of the user's), the call returns ``pending`` 2 s
  before the cut, Codex sends no cancellation, the question stays, and the model's
  ``hivemind_poll`` collects the human's later answer.  The ``tools/call`` Codex sends
  carries ``_meta`` with ``sessionId``, ``threadId`` and ``x-codex-turn-metadata``
  (its ``session_id``, ``turn_id``, ``sandbox_mode``).

The screen is another process's, with no event to follow: the tests poll tmux's
``capture-pane`` with a deadline (waiting.until), and press a key only once the screen
shows what the key is for.  The pane stays after Codex exits (``remain-on-exit``), so
a failure shows Codex's last words."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
import tomlkit
import trio
from agent_homes import AgentHome, Codex, run_setup, write_codex_config
from agent_runs import answered_run
from cli_support import Shell
from editor import human_editor, next_prompt
from scripted_responses import (
    Item,
    ResponsesRequest,
    Script,
    function_call,
    in_turns,
    message,
    output_text,
    scripted_responses,
)
from test_codex_mcp import mcp_result
from tmux_tui import SCREEN_S, TmuxTui, in_tmux
from waiting import logged, until

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

NAMESPACE = "mcp__hive_rpc"
QUESTION = "Which database should the cache use?"
MARK = "\u203a"
"""U+203A, Codex's mark before the prompt line and before the chosen option."""
REVIEW = "Hooks need review"
READY = "Ask Codex to do anything"
DIALOG = "Would you like to run the following command?"
TITLE = "single-line task title"
"""In the TUI's own request for a title, after the first prompt."""


class CodexTui(TmuxTui):
    """The interactive ``codex`` in the only pane of a private tmux server."""

    async def idle(self) -> None:
        """Codex's turn is over: its "esc to interrupt" line has gone."""
        await self.gone("esc to interrupt", "Codex's turn to end")


_servers = itertools.count()


def codex_tui(codex: Codex, root: Path, *args: str) -> AbstractContextManager[CodexTui]:
    """``codex --no-daemon -a on-request ARGS`` (see the module's docstring) in its
    pane (tmux_tui.in_tmux), its environment Codex's (agent_homes.Codex.env)."""
    # A server of its own each time: a killed one may still be going away.
    tui = CodexTui(root / f"tmux-{next(_servers)}.sock", "Codex", MARK)
    argv = [str(codex.codex), "--no-daemon", "-a", "on-request", *args]
    return in_tmux(tui, codex.agent.project, codex.env(), argv)


MOVED_S = 2.0
"""How long a key in one of Codex's trust lists may take to show its effect before
it is taken as dropped and pressed again (``choose``, ``press_until``)."""
START = ("1. Review hooks", "2. Trust all and continue", "3. Continue without trusting")
"""The first screen's options, in order."""
EVENTS = ("PreToolUse", "PermissionRequest", "PostToolUse")
"""The first rows of ``/hooks``' events table."""


def _cursor(screen: str, rows: Sequence[str]) -> int:
    """Which of ``rows`` (a list's labels, in order) the cursor is on."""
    for i, row in enumerate(rows):
        if re.search(rf"^ *{MARK} {re.escape(row)}", screen, re.MULTILINE):
            return i
    raise AssertionError(f"the cursor is on none of {rows}:\n{screen}")


async def _steer(tui: CodexTui, rows: Sequence[str], to: int) -> None:
    """The cursor moved to ``rows[to]`` (see ``choose``)."""
    with trio.fail_after(SCREEN_S):
        while (at := _cursor(await trio.to_thread.run_sync(tui.screen), rows)) != to:
            tui.keys("j" if at < to else "k")

            async def moved(at: int = at) -> bool:
                return _cursor(await trio.to_thread.run_sync(tui.screen), rows) != at

            with trio.move_on_after(MOVED_S):
                await until(moved, "the cursor to move", within_s=SCREEN_S)


async def choose(tui: CodexTui, rows: Sequence[str], row: str) -> None:
    """``row`` of a list on Codex's screen (the first screen, ``/hooks``), chosen with
    ``j``/``k`` (Down/Up) and Enter.  Codex discards what is typed in the moment such
    a list shows (so typed-ahead keys cannot answer a trust question), and nothing on
    the screen says when that moment is over.  A key sent as an escape sequence
    (Esc, the arrows) then may even make it exit ("Error: timed out discarding
    buffered terminal input": a sequence it has begun to read must end within a
    second, which under load it did not); ``j``, ``k`` and Enter are one byte each,
    and are at worst dropped.  So the cursor is steered: a key, then the screen
    looked at; a key that moved nothing within ``MOVED_S`` is pressed again, and a
    late one that went too far is undone by the other.  Enter only once the cursor
    was seen to move (away and back, for the row it starts on), so input is taken by
    then."""
    to = rows.index(row)
    if _cursor(await trio.to_thread.run_sync(tui.screen), rows) == to:
        await _steer(tui, rows, 1 if to == 0 else to - 1)
    await _steer(tui, rows, to)
    tui.keys("Enter")


async def choose_at_start(tui: CodexTui, number: int) -> None:
    """Option ``number`` of the first screen ("Hooks need review")."""
    await tui.shows(REVIEW)
    await choose(tui, START, START[number - 1])


async def press_until(tui: CodexTui, key: str, words: str) -> str:
    """The screen once ``key`` brought ``words``, the key pressed again when it
    brought nothing within ``MOVED_S`` (taken as discarded, see ``choose``): only for
    a key that does nothing once it has done its work."""
    with trio.fail_after(SCREEN_S):
        while True:
            tui.keys(key)
            with trio.move_on_after(MOVED_S):
                return await tui.shows(words)


HOOKS_LIST = "t trust all \u00b7 enter review \u00b7 esc close"
"""The foot of ``/hooks``' events table."""
EMPTY = "(the empty prompt)"


async def slash(tui: CodexTui, command: str, done: Callable[[str], bool]) -> str:
    """``command`` (``/hooks``) typed and entered until the screen is one
    ``done`` accepts.  In a clean-clone run under load Codex once took ``/hooks`` and
    showed its empty prompt again, nothing else: then the command is typed again
    (only then: once it acted, keys would go to what it opened).  Polled: the screen
    is another process's (the module's docstring)."""

    async def look() -> str | None:
        screen = await trio.to_thread.run_sync(tui.screen)
        if done(screen):
            return screen
        return EMPTY if f"{MARK} {READY}" in screen else None

    async def acted() -> str | None:
        found = await look()
        return None if found == EMPTY else found

    with trio.fail_after(SCREEN_S):
        while True:
            await tui.type_in(command)
            with trio.move_on_after(MOVED_S):
                return await until(acted, f"{command} to act", within_s=SCREEN_S)
            found = await until(look, f"{command} to act, or the prompt", within_s=SCREEN_S)
            if found != EMPTY:
                return found
            with trio.move_on_after(MOVED_S):  # still empty a moment later: it was lost
                return await until(acted, f"{command} to act", within_s=SCREEN_S)


def making_files(project: Path) -> Script:
    """The model: for the prompt ``make NAME``, ``touch PROJECT/NAME`` outside the
    sandbox, then "made NAME" once its output came back; a title for the TUI's own
    title request."""

    def script(request: ResponsesRequest) -> list[Item]:
        texts = request.user_texts()
        if any(TITLE in t for t in texts):
            return [message("Make a file")]
        name = [t for t in texts if t.startswith("make ")][-1].split()[-1]
        calls = [
            i
            for i in request.input
            if i.get("type") == "function_call" and str(project / name) in i.get("arguments", "")
        ]
        if calls and request.output_for(calls[-1]) is not None:
            return [message(f"made {name}")]
        return [
            function_call(
                "exec_command",
                {
                    "cmd": f"touch {project / name}",
                    "sandbox_permissions": "require_escalated",
                    "justification": "Make the file",
                },
            )
        ]

    return script


def set_up(agent: AgentHome, base_url: str, socket: Path) -> Path:
    """The user's config.toml (the scripted provider), then ``hive-rpc setup codex``
    merged into it.  Returns the file."""
    write_codex_config(agent, base_url=base_url)
    return run_setup(agent, "codex", socket)


async def test_a_hook_trusted_in_hooks_runs_without_the_bypass_and_setup_again_keeps_it(
    hub: HubService, hub_config: HubConfig, codex_bin: Path, agent_home: AgentHome
) -> None:
    """The human trusts the hook with the keys of the module's docstring and quits;
    the trust is in config.toml; setup run again leaves the file as it was; and
    ``codex exec --approve-for-me`` (no bypass) asks the editor, whose allow runs the
    command."""
    target = agent_home.project / "trusted"
    with scripted_responses(making_files(agent_home.project)) as model:
        codex = Codex(codex_bin, agent_home)
        path = set_up(agent_home, model.base_url, hub_config.socket)
        with codex_tui(codex, agent_home.root) as tui:
            await choose_at_start(tui, 3)  # continue without trusting: /hooks
            await tui.shows(READY)
            listed = await slash(tui, "/hooks", lambda screen: HOOKS_LIST in screen)
            assert re.search(rf"{MARK} PermissionRequest +1 +0 +1 ", listed), listed
            await choose(tui, EVENTS, "PermissionRequest")
            await tui.shows("Trust     New hook - review required")
            detail = await press_until(tui, "t", "Trust     Trusted")
            assert "hive-rpc hook codex" in detail
            tui.keys("Escape")
            # The session's five hooks, left untrusted, still need review.
            listed = await tui.shows("5 hooks need review before they can run.")
            assert re.search(r"PermissionRequest +1 +1 +0 ", listed), listed
            tui.keys("Escape")
            await tui.shows(READY)
            await tui.type_in("/quit")
            await tui.exited()
        trusted = path.read_text()
        state: Any = tomlkit.parse(trusted)["hooks"]["state"]  # type: ignore[index]
        assert list(state) == [f"{path}:permission_request:0:0"], trusted
        trust = state[f"{path}:permission_request:0:0"]["trusted_hash"]
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", trust), trusted

        backups = sorted(path.parent.glob("config.toml.hive-rpc-*.bak"))
        assert run_setup(agent_home, "codex", hub_config.socket) == path
        # "already set up": nothing written, no new backup
        assert path.read_text() == trusted
        assert sorted(path.parent.glob("config.toml.hive-rpc-*.bak")) == backups

        async with human_editor(hub_config.socket) as human:
            done, prompt = await answered_run(
                human,
                lambda: codex.exec("--approve-for-me", f"make {target.name}"),
                {"answer": "allow"},
            )
    assert model.errors == [], model.errors
    assert done.returncode == 0, done.stderr
    assert "hook: PermissionRequest Completed" in done.stderr
    assert target.exists()
    assert prompt["kind"] == "permission"
    assert prompt["question"].endswith(f"wants to run Bash: touch {target}"), prompt
    # the automatic reviewer was not asked: only the touch and the answer to it
    assert len(model.requests) == 2


async def trust_all_at_start(tui: CodexTui) -> None:
    """The first screen's ``2. Trust all and continue``, as a human picks it."""
    await choose_at_start(tui, 2)
    await tui.shows(READY)


async def test_the_tui_asks_the_editor_and_with_the_hub_down_shows_its_own_dialog(
    sh: Shell, codex_bin: Path, agent_home: AgentHome
) -> None:
    """One TUI session, the hook trusted at start: the editor's allow runs the first
    command; then the hub is stopped (``hive-rpc stop``, as a user stops it), and the
    second command's request, the hook having no hub to ask, comes to Codex's own
    dialog, where the human's ``y`` runs it."""
    first, second = agent_home.project / "first", agent_home.project / "second"
    started = sh.run("serve", "--detach")
    assert started.returncode == 0, started.stderr
    with scripted_responses(making_files(agent_home.project)) as model:
        codex = Codex(codex_bin, agent_home)
        set_up(agent_home, model.base_url, sh.socket)
        with codex_tui(codex, agent_home.root) as tui:
            await trust_all_at_start(tui)
            async with human_editor(sh.socket) as human:
                await tui.type_in(f"make {first.name}")
                with trio.fail_after(SCREEN_S):
                    prompt = (await next_prompt(human)).params
                await human.call("hive/respond", {"id": prompt["id"], "answer": "allow"})
                await tui.shows(f"made {first.name}")
            assert first.exists()
            assert prompt["question"].endswith(f"wants to run Bash: touch {first}"), prompt

            stopped = sh.run("stop")
            assert stopped.returncode == 0, stopped.stderr
            await tui.type_in(f"make {second.name}")
            dialog = await tui.shows(DIALOG)
            assert f"$ touch {second}" in dialog
            assert "Reason: Make the file" in dialog
            assert not second.exists()
            tui.keys("y")  # 1. Yes, proceed (y)
            await tui.shows(f"made {second.name}")
    assert second.exists()
    assert model.errors == [], model.errors


async def test_while_nobody_answers_the_tui_waits_on_the_hook_and_esc_withdraws_it(
    hub: HubService, hub_config: HubConfig, codex_bin: Path, agent_home: AgentHome
) -> None:
    """The editor shows the question and nobody answers: Codex shows no dialog of its
    own meanwhile, only "Running hook"; the human's Esc in the terminal interrupts the
    turn, Codex ends the hook, and the question leaves the editor."""
    target = agent_home.project / "waited"
    with scripted_responses(making_files(agent_home.project)) as model:
        codex = Codex(codex_bin, agent_home)
        set_up(agent_home, model.base_url, hub_config.socket)
        with codex_tui(codex, agent_home.root) as tui:
            await trust_all_at_start(tui)
            async with human_editor(hub_config.socket) as human:
                await tui.type_in(f"make {target.name}")
                with trio.fail_after(SCREEN_S):
                    prompt = (await next_prompt(human)).params
                waiting = await tui.shows("Running hook")
                tui.keys("Escape")
                await tui.shows("Conversation interrupted")
                with trio.fail_after(SCREEN_S):
                    dismissed = await human.next_notification()
                    while dismissed.method != "hive/dismiss":
                        dismissed = await human.next_notification()
    assert model.errors == [], model.errors
    assert DIALOG not in waiting
    assert "esc to interrupt" in waiting
    assert not target.exists()
    assert dismissed.params["id"] == prompt["id"]
    assert (dismissed.params["status"], dismissed.params["by"]) == (
        "cancelled",
        "the asker stopped waiting",
    )


def wire_recorded(path: Path, wire: Path, tool_timeout_s: int | None = None) -> dict[str, Any]:
    """The hive-rpc server entry of setup's ``path`` run through a shell that copies
    what Codex sends it to ``wire`` (``tee``), and given ``tool_timeout_s`` by hand
    when set (as a user edits it).  Returns the entry as it now stands."""
    doc = tomlkit.parse(path.read_text())
    entry: Any = doc["mcp_servers"]["hive-rpc"]  # type: ignore[index]
    command = [entry["command"], *entry["args"]]
    entry["command"] = "/bin/sh"
    entry["args"] = ["-c", f'tee "{wire}" | "$0" "$@"', *command]
    if tool_timeout_s is not None:
        entry["tool_timeout_sec"] = tool_timeout_s
    path.write_text(tomlkit.dumps(doc))
    return dict(entry.unwrap())


def sent(wire: Path) -> list[dict[str, Any]]:
    """The JSON-RPC messages Codex sent its MCP server, in order."""
    return [json.loads(line) for line in wire.read_text().splitlines() if line.strip()]


async def test_a_call_cut_by_tool_timeout_sec_is_cancelled_and_its_question_withdrawn(
    hub: HubService, hub_config: HubConfig, codex_bin: Path, agent_home: AgentHome
) -> None:
    """``tool_timeout_sec`` set to 3 by hand after setup (``MCP_TOOL_TIMEOUT`` left at
    setup's 600000, so ``hive-rpc mcp`` does not know the limit): the blocking
    ``hivemind_ask`` is cut at 3 s, Codex sends ``notifications/cancelled``, the model
    reads Codex's error, the question leaves the editor (withdrawn by the agent), and
    the model's next call, a ``hivemind_poll`` of its id, finds it cancelled."""
    wire = agent_home.root / "wire"
    ask = function_call("hivemind_ask", {"question": QUESTION}, namespace=NAMESPACE)
    withdrawn = threading.Event()
    seen: dict[str, Any] = {}

    def cut(request: ResponsesRequest) -> list[Item]:
        seen["cut"] = output_text(request.output_for(ask) or {})
        assert withdrawn.wait(40), "the question was never withdrawn"
        seen["poll"] = function_call(
            "hivemind_poll", {"ask_id": seen["ask_id"]}, namespace=NAMESPACE
        )
        return [seen["poll"]]

    def polled(request: ResponsesRequest) -> list[Item]:
        seen["polled"] = mcp_result(request, seen["poll"])
        return [message("done")]

    with scripted_responses(in_turns([ask], cut, polled)) as model:
        codex = Codex(codex_bin, agent_home)
        path = set_up(agent_home, model.base_url, hub_config.socket)
        entry = wire_recorded(path, wire, tool_timeout_s=3)
        assert entry["env"]["MCP_TOOL_TIMEOUT"] == "600000"
        async with human_editor(hub_config.socket, approver=False) as human:
            runs: list[subprocess.CompletedProcess[str]] = []
            async with trio.open_nursery() as nursery:

                async def run() -> None:
                    runs.append(await trio.to_thread.run_sync(codex.exec, "Ask."))
                    assert withdrawn.is_set(), f"codex ended first:\n{runs[0].stderr}"

                nursery.start_soon(run)
                with trio.fail_after(50):
                    prompt = (await next_prompt(human)).params
                    seen["ask_id"] = prompt["id"]
                    note = await human.next_notification()
                    while note.method != "hive/dismiss":
                        note = await human.next_notification()
                withdrawn.set()
    assert model.errors == [], model.errors
    assert runs[0].returncode == 0, runs[0].stderr
    assert "tool call failed for `hive-rpc/hivemind_ask`" in seen["cut"], seen["cut"]
    assert "timed out awaiting tools/call after 3s" in seen["cut"], seen["cut"]
    messages = sent(wire)
    (call,) = [m for m in messages if m.get("params", {}).get("name") == "hivemind_ask"]
    assert {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": call["id"], "reason": "MCP request cancelled by caller"},
            } in messages  # fmt: skip
    # Codex names its session in every call's _meta (not read by hive-rpc today).
    assert call["params"]["_meta"]["sessionId"]
    assert note.params["id"] == prompt["id"]
    assert (note.params["status"], note.params["by"]) == ("cancelled", prompt["agent_id"])
    assert seen["polled"]["status"] == "cancelled"


async def test_with_the_timeouts_matched_a_long_ask_comes_back_pending_and_is_collected(
    hub: HubService, hub_config: HubConfig, codex_bin: Path, agent_home: AgentHome
) -> None:
    """``tool_timeout_sec`` set to 4 by hand, then setup run again: it keeps the 4 and
    sets ``MCP_TOOL_TIMEOUT`` to 4000, so ``hivemind_ask`` returns ``pending`` before
    Codex's limit; Codex cancels nothing, the question stays in the editor, the human
    answers it after the call returned, and the model's ``hivemind_poll`` collects the
    answer."""
    wire = agent_home.root / "wire"
    ask = function_call("hivemind_ask", {"question": QUESTION}, namespace=NAMESPACE)
    returned, answered = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def pending(request: ResponsesRequest) -> list[Item]:
        seen["asked"] = mcp_result(request, ask)
        returned.set()
        assert answered.wait(40), "the human never answered"
        seen["poll"] = function_call(
            "hivemind_poll", {"ask_id": seen["asked"]["ask_id"]}, namespace=NAMESPACE
        )
        return [seen["poll"]]

    def collected(request: ResponsesRequest) -> list[Item]:
        seen["answer"] = mcp_result(request, seen["poll"])
        return [message("done")]

    with scripted_responses(in_turns([ask], pending, collected)) as model:
        codex = Codex(codex_bin, agent_home)
        path = set_up(agent_home, model.base_url, hub_config.socket)
        doc: Any = tomlkit.parse(path.read_text())
        doc["mcp_servers"]["hive-rpc"]["tool_timeout_sec"] = 4
        path.write_text(tomlkit.dumps(doc))
        run_setup(agent_home, "codex", hub_config.socket)
        entry = wire_recorded(path, wire)
        assert (entry["tool_timeout_sec"], entry["env"]["MCP_TOOL_TIMEOUT"]) == (4, "4000")
        async with human_editor(hub_config.socket, approver=False) as human:
            runs: list[subprocess.CompletedProcess[str]] = []
            async with trio.open_nursery() as nursery:

                async def run() -> None:
                    runs.append(await trio.to_thread.run_sync(codex.exec, "Ask."))
                    assert answered.is_set(), f"codex ended first:\n{runs[0].stderr}"

                nursery.start_soon(run)
                with trio.fail_after(50):
                    prompt = (await next_prompt(human)).params
                    await trio.to_thread.run_sync(returned.wait, 40)
                await human.call("hive/respond", {"id": prompt["id"], "answer": "Postgres"})
                answered.set()
    assert model.errors == [], model.errors
    assert runs[0].returncode == 0, runs[0].stderr
    assert (seen["asked"]["status"], seen["asked"]["ask_id"]) == ("pending", prompt["id"])
    assert (seen["answer"]["status"], seen["answer"]["decision"]) == ("responded", "Postgres")
    assert not [m for m in sent(wire) if m.get("method") == "notifications/cancelled"]


async def test_setup_remove_keeps_the_users_own_hook_trusted(
    hub: HubService, hub_config: HubConfig, codex_bin: Path, agent_home: AgentHome
) -> None:
    """The user adds a PermissionRequest hook of their own below setup's, trusts both
    at start, and later takes hive-rpc out (``setup codex --remove``): their hook,
    now first, still runs in ``codex exec`` (Codex keys trust by position; setup moved
    its record, tests/cli/test_setup_codex.py)."""
    target = agent_home.project / "allowed-by-mine"
    allow = {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                    "decision": {"behavior": "allow"}}}  # fmt: skip
    with scripted_responses(making_files(agent_home.project)) as model:
        codex = Codex(codex_bin, agent_home)
        path = set_up(agent_home, model.base_url, hub_config.socket)
        doc: Any = tomlkit.parse(path.read_text())
        mine = tomlkit.table()
        mine.update({"type": "command", "command": f"echo '{json.dumps(allow)}'"})
        group = tomlkit.table()
        group.update({"matcher": "*", "hooks": tomlkit.aot()})
        group["hooks"].append(mine)
        doc["hooks"]["PermissionRequest"].append(group)
        path.write_text(tomlkit.dumps(doc))
        with codex_tui(codex, agent_home.root) as tui:
            await trust_all_at_start(tui)
            await tui.type_in("/quit")
            await tui.exited()
        state: Any = tomlkit.parse(path.read_text())["hooks"]["state"]  # type: ignore[index]
        keys = [f"{path}:permission_request:{group}:0" for group in (0, 1)]
        assert sorted(k for k in state if ":permission_request:" in k) == keys
        theirs = state[keys[1]]["trusted_hash"]

        run_setup(agent_home, "codex", hub_config.socket, "--remove")
        done = await trio.to_thread.run_sync(
            lambda: codex.exec("--approve-for-me", f"make {target.name}")
        )
    # Without the record moved, Codex skipped the user's hook as "modified" and asked
    # its automatic reviewer (a third model request).
    assert "hook: PermissionRequest Completed" in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert target.exists()
    assert len(model.requests) == 2  # no automatic reviewer: the hook allowed it
    assert model.errors == [], model.errors
    state = tomlkit.parse(path.read_text())["hooks"]["state"]  # type: ignore[index]
    assert dict(state.unwrap()) == {keys[0]: {"trusted_hash": theirs}}


async def test_setup_with_other_options_has_codex_ask_for_trust_again(
    hub: HubService, hub_config: HubConfig, codex_bin: Path, agent_home: AgentHome
) -> None:
    """The hook trusted, then setup run again with another option: the hook's command
    changed, so Codex asks again (its trust covers the command, by hash), as setup's
    last line tells the user."""
    with scripted_responses(making_files(agent_home.project)) as model:
        codex = Codex(codex_bin, agent_home)
        set_up(agent_home, model.base_url, hub_config.socket)
        with codex_tui(codex, agent_home.root) as tui:
            await trust_all_at_start(tui)
            await tui.type_in("/quit")
            await tui.exited()
        data_dir = agent_home.root / "hub-data"
        run_setup(agent_home, "codex", hub_config.socket, "--data-dir", str(data_dir))
        with codex_tui(codex, agent_home.root) as tui:
            first = await tui.shows(REVIEW)
            await choose_at_start(tui, 1)  # 1. Review hooks
            await tui.shows("t trust all · enter review · esc close")
            await choose(tui, EVENTS, "PermissionRequest")
            detail = await tui.shows("Trust     Modified since last trusted - review required")
    assert model.errors == [], model.errors
    assert "6 hooks are new or changed." in first  # PermissionRequest and the session's
    assert "Unnamed hook · modified" in detail
    assert f"--data-dir {data_dir}" in detail


async def test_a_hub_stopped_on_purpose_stops_codex_unless_its_server_is_optional(
    sh: Shell, codex_bin: Path, agent_home: AgentHome
) -> None:
    """The hub stopped (``hive-rpc stop``) before Codex starts: setup's ``required``
    server cannot start (``hive-rpc mcp`` starts no hub stopped on purpose), and Codex
    exits once past the first screen.  Started with the server made optional, Codex
    runs, and the trusted hook, finding no hub, leaves the command to Codex's own
    dialog at once."""
    target = agent_home.project / "no-hub"
    for command in (("serve", "--detach"), ("stop",)):
        done = sh.run(*command)
        assert done.returncode == 0, done.stderr
    with scripted_responses(making_files(agent_home.project)) as model:
        codex = Codex(codex_bin, agent_home)
        path = set_up(agent_home, model.base_url, sh.socket)
        with codex_tui(codex, agent_home.root) as tui:
            await choose_at_start(tui, 2)  # trust all and continue
            await tui.exited()
            ended = tui.screen(history=True)
        assert "required MCP servers failed to initialize: hive-rpc" in ended
        assert "trusted_hash" in path.read_text()  # the first screen's choice was kept
        with codex_tui(codex, agent_home.root, "-c", "mcp_servers.hive-rpc.required=false") as tui:
            await tui.shows(READY)
            await tui.type_in(f"make {target.name}")
            dialog = await tui.shows(DIALOG)
    assert model.errors == [], model.errors
    assert f"$ touch {target}" in dialog
    assert not target.exists()


SESSION_HOOKS = ("session_start", "user_prompt_submit", "stop", "interrupt", "session_end")
"""The session events setup hooks, as Codex spells them in its trust records."""


def chatting(request: ResponsesRequest) -> list[Item]:
    """The model: a title for the TUI's title request, else "said: PROMPT"."""
    texts = request.user_texts()
    if any(TITLE in t for t in texts):
        return [message("Chat")]
    return [message(f"said: {texts[-1]}")]


async def session_event(hub: HubService, event: str, after: int = 0) -> tuple[int, str, str]:
    """The next session entry after id ``after`` that a Codex hook reported as
    ``event``: its id, agent id and state."""
    entry = await logged(
        hub.activity,
        lambda e: e.kind == "session" and e.event == event and e.key.startswith("codex-"),
        within_s=SCREEN_S,
        after=after,
    )
    return entry.id, entry.key, entry.data["state"]


async def test_a_tui_session_is_idle_working_idle_on_the_hub_and_esc_makes_it_idle(
    hub: HubService, hub_config: HubConfig, codex_bin: Path, agent_home: AgentHome
) -> None:
    """All of setup's hooks trusted at start (``2. Trust all and continue``, one
    record per hook, the session's events in snake_case): Codex starts its session
    (SessionStart: idle) at the first prompt, just before UserPromptSubmit (working);
    the session is idle again when the answer is in (Stop); a
    turn the human interrupts with Esc (Codex's Interrupt hook) is idle too, and
    /quit makes it gone.  One agent id throughout: ``codex-PID`` of the TUI's own
    process (``--no-daemon``)."""
    answer_second = threading.Event()

    def model(request: ResponsesRequest) -> list[Item]:
        texts = request.user_texts()
        if texts and texts[-1] == "wait" and not any(TITLE in t for t in texts):
            answer_second.wait(SCREEN_S)  # until the human has pressed Esc
        return chatting(request)

    with scripted_responses(model) as scripted:
        codex = Codex(codex_bin, agent_home)
        path = set_up(agent_home, scripted.base_url, hub_config.socket)
        with codex_tui(codex, agent_home.root) as tui:
            await trust_all_at_start(tui)
            await tui.type_in("hello")
            # Codex starts its session (SessionStart) at the first prompt.
            last, agent, state = await session_event(hub, "start")
            assert state == "idle"
            last, prompted, state = await session_event(hub, "prompt", last)
            assert (prompted, state) == (agent, "working")
            await tui.shows("said: hello")
            last, stopped, state = await session_event(hub, "stop", last)
            assert (stopped, state) == (agent, "idle")
            # The turn ends once the Stop hook has returned: a prompt typed before
            # that is queued as the turn's steer, and Esc would submit it.
            await tui.idle()

            await tui.type_in("wait")
            last, _, state = await session_event(hub, "prompt", last)
            assert state == "working"
            await tui.shows("esc to interrupt")
            tui.keys("Escape")
            await tui.shows("Conversation interrupted")
            last, interrupted, state = await session_event(hub, "stop", last)
            assert (interrupted, state) == (agent, "idle")
            answer_second.set()

            await tui.type_in("/quit")
            await tui.exited()
            _, ended, state = await session_event(hub, "end", last)
            assert (ended, state) == (agent, "gone")
    assert scripted.errors == [], scripted.errors
    assert re.fullmatch(r"codex-\d+", agent), agent
    state_table: Any = tomlkit.parse(path.read_text())["hooks"]["state"]  # type: ignore[index]
    assert sorted(state_table) == sorted(
        f"{path}:{event}:0:0" for event in ("permission_request", *SESSION_HOOKS)
    )
