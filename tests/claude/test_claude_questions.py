"""Claude Code's own questions answered from the editor (issue 19): the real Claude
Code 2.1.328 TUI in tmux (``AskUserQuestion`` is offered in the TUI only), the hook
installed as docs/claude-code.md shows it, the scripted model asking, and an
editor-socket client answering the ONE prompt the call becomes.  What the model then
reads is what Claude Code made of the answers (docs/claude-code.md cites it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from ask_user_question import DATABASE, FEATURES
from claude_session import claude_home
from editor import human_editor, next_prompt
from scripted_model import ModelRequest, result_text, scripted_model, text, tool_use
from test_claude_permission_hook import claude_tui, install_hook, needs_tmux
from test_claude_setup import setup_project

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

MENU = "Enter to select"
"""Claude Code's own question menu (2.1.328): "Enter to select · Tab/Arrow keys ..."."""


def asking(*questions: dict[str, Any]) -> Any:
    def script(request: ModelRequest) -> list[dict[str, Any]]:
        asked = any("ask me" in t for t in request.user_texts())
        if asked and request.last_tool_result() is None:
            return [tool_use("AskUserQuestion", {"questions": list(questions)})]
        return [text("done")]

    return script


async def answered_in_the_tui(
    hub_config: HubConfig,
    claude_bin: Path,
    claude_root: Path,
    questions: list[dict[str, Any]],
    answer: dict[str, Any],
    *,
    by_setup: bool = False,
) -> tuple[dict[str, Any], str]:
    """The TUI asked to "ask me", the human answering the one prompt with ``answer``
    (a schema answer); the prompt, and the tool result the model then got.  The hook
    as docs/claude-code.md shows it, or (``by_setup``) as ``hive-rpc setup
    claude-code --project`` writes it."""
    with scripted_model(asking(*questions)) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        if by_setup:
            setup_project(claude, hub_config)
        else:
            install_hook(claude, hub_config.socket, "--timeout", "60")
        async with human_editor(hub_config.socket) as human:
            with claude_tui(claude, claude_root) as tui:
                await trio.to_thread.run_sync(tui.submit, "ask me")
                with trio.fail_after(60):
                    note = await next_prompt(human)
                    # Claude Code shows its own menu too while the hook waits (measured
                    # on 2.1.328: about 0.5 s after the hook starts); the first answer
                    # wins, here the editor's, which the screen then credits to the hook.
                    await human.call("hive/respond", {"id": note.params["id"], "answer": answer})
                screen = await trio.to_thread.run_sync(tui.wait_for, "done")
            assert "Allowed by PermissionRequest hook" in screen
            assert await human.call("hive/list", {}) == []
            asked = [n for n in human.notifications if n.method == "hive/prompt"]
            assert asked == [], "a second prompt was asked"
        result = model.requests[-1].last_tool_result()
    assert result is not None
    return note.params, result_text(result)


@needs_tmux
async def test_set_up_by_setup_the_second_option_picked_in_the_editor_reaches_the_model(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    prompt, result = await answered_in_the_tui(
        hub_config, claude_bin, claude_root, [DATABASE], {"q1": "Postgres"}, by_setup=True
    )
    field = prompt["schema"]["properties"]["q1"]
    assert field["title"] == "Database"
    descriptions = [o.get("description") for o in field["anyOf"]]
    assert descriptions == ["embedded, one file", "the server we already run", None]
    assert result.startswith(
        'Your questions have been answered: "Which database should the cache use?"="Postgres".'
    ), result


@needs_tmux
async def test_a_multi_select_with_two_picks_reaches_the_model_comma_separated(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    _, result = await answered_in_the_tui(
        hub_config, claude_bin, claude_root, [FEATURES], {"q1": ["Alpha", "Gamma"]}
    )
    assert result.startswith(
        'Your questions have been answered: "Which features should ship?"="Alpha, Gamma".'
    ), result


@needs_tmux
async def test_several_questions_one_prompt_and_an_answer_of_ones_own(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """Both questions in one prompt; a typed answer reaches the model as typed, and
    Claude Code then tells the model to read the answers carefully."""
    answer = {"q1": ["Beta"], "q2": "MariaDB on the old box"}
    prompt, result = await answered_in_the_tui(
        hub_config, claude_bin, claude_root, [FEATURES, DATABASE], answer
    )
    assert list(prompt["schema"]["properties"]) == ["q1", "q2"]
    assert result.startswith(
        'The user answered: "Which features should ship?"="Beta", '
        '"Which database should the cache use?"="MariaDB on the old box". '
        "Read the answers carefully"
    ), result


@needs_tmux
def test_the_hub_stopped_leaves_the_question_to_claude_codes_own_menu(
    claude_bin: Path, claude_root: Path
) -> None:
    log = claude_root / "hook.log"
    with scripted_model(asking(DATABASE)) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        install_hook(claude, claude_root / "no-hub.sock", f"2>>{log}")
        with claude_tui(claude, claude_root) as tui:
            tui.submit("ask me")
            screen = tui.wait_for(MENU)
    assert "Which database should the cache use?" in screen
    assert "2. Postgres" in screen
    assert "no hub answers on" in log.read_text()


@needs_tmux
async def test_answered_in_the_terminal_the_editors_question_is_withdrawn(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """Claude Code shows its own menu while the hook waits and takes the first answer,
    but tells the hook nothing (measured on 2.1.328: no signal, no closed pipe, the
    hook ran on to its timeout, the editor's question pending all along). The call's
    result in the transcript withdraws the editor's question."""
    with scripted_model(asking(DATABASE)) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        install_hook(claude, hub_config.socket, "--timeout", "60")
        async with human_editor(hub_config.socket) as human:
            with claude_tui(claude, claude_root) as tui:
                await trio.to_thread.run_sync(tui.submit, "ask me")
                with trio.fail_after(60):
                    note = await next_prompt(human)
                    await trio.to_thread.run_sync(tui.wait_for, MENU)
                    tui.tmux("send-keys", "-t", "0", "Down")
                    await trio.to_thread.run_sync(tui.wait_for, "\u276f 2. Postgres")
                    await trio.sleep(0.5)  # drawn before the menu takes the next key
                    tui.tmux("send-keys", "-t", "0", "Enter")
                    await trio.to_thread.run_sync(tui.wait_for, "done")
                    dismissed = await human.next_notification()
                    while dismissed.method != "hive/dismiss":
                        dismissed = await human.next_notification()
                record = await human.call("hive/poll", {"id": note.params["id"]})
        result = model.requests[-1].last_tool_result()
    assert (record["status"], record["by"]) == ("cancelled", "the terminal")
    assert result is not None
    assert '"Which database should the cache use?"="Postgres"' in result_text(result)
