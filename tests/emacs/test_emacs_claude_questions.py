"""Claude Code's own questions answered in a real `emacs -nw` (issue 19): the real
Claude Code 2.1.328 TUI in tmux against the scripted model, the real hook installed
as docs/claude-code.md shows it, the ONE prompt the AskUserQuestion call becomes
read in Emacs's minibuffer (the header as the field's name, the options in the
model's order with their descriptions as completion annotations, an entry to type
one's own answer), and what the model reads next."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ask_user_question import DATABASE, FEATURES
from emacs_session import FAST, EmacsSession, running
from test_emacs_permission_detail import minibuffer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "claude"))
from claude_session import claude_binary, claude_home
from scripted_model import (
    ModelRequest,
    ScriptedModel,
    result_text,
    scripted_model,
    text,
    tool_use,
)
from test_claude_permission_hook import Tui, claude_tui, install_hook

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)


@pytest.fixture
def emacs(short_tmp: Path) -> Iterator[EmacsSession]:
    yield from running(EmacsSession(short_tmp, FAST))


def asking(*questions: dict[str, Any]) -> Any:
    def script(request: ModelRequest) -> list[dict[str, Any]]:
        asked = any("ask me" in t for t in request.user_texts())
        if asked and request.last_tool_result() is None:
            return [tool_use("AskUserQuestion", {"questions": list(questions)})]
        return [text("done")]

    return script


def claude_asking(emacs: EmacsSession, model: ScriptedModel) -> Any:
    claude = claude_home(claude_binary(), emacs.root / "cc", model.base_url)
    install_hook(claude, emacs.socket, "--timeout", "60")
    return claude_tui(claude, emacs.root / "cc")


def asks(emacs: EmacsSession, words: str, timeout: float = 15) -> str:
    """The minibuffer once it asks ``words`` and takes keys, its wrapped lines joined."""
    emacs.wait_for(
        lambda screen: words in minibuffer(screen) and "(opening)" not in minibuffer(screen),
        timeout,
    )
    return minibuffer(emacs.screen())


def model_read(model: ScriptedModel, tui: Tui) -> str:
    tui.wait_for("done")
    result = model.requests[-1].last_tool_result()
    assert result is not None
    return result_text(result)


def test_the_second_option_picked_in_emacs_reaches_the_model(emacs: EmacsSession) -> None:
    with scripted_model(asking(DATABASE)) as model, claude_asking(emacs, model) as tui:
        tui.submit("ask me")
        prompt = asks(emacs, "Which database should the cache use? (Database)", 60)
        # Claude Code's question is asked as a question, not as a tool to allow.
        assert "permission:" not in prompt
        assert "[SQLite / Postgres / Other: type your own answer]" in prompt
        emacs.keys("Tab")  # the completions, each option's description beside it
        screen = emacs.wait_for(lambda screen: "the server we already run" in screen)
        assert "Postgres  the server we already run" in screen
        assert "SQLite  embedded, one file" in screen
        emacs.type("Postgres", pace=0.03)
        emacs.keys("Enter")
        read = model_read(model, tui)
        assert "Allowed by PermissionRequest hook" in tui.screen()  # the editor's answer
    assert read.startswith(
        'Your questions have been answered: "Which database should the cache use?"="Postgres".'
    ), read


def test_two_questions_in_turn_two_picks_and_an_answer_of_ones_own(
    emacs: EmacsSession,
) -> None:
    with (
        scripted_model(asking(FEATURES, DATABASE)) as model,
        claude_asking(emacs, model) as tui,
    ):
        tui.submit("ask me")
        prompt = asks(emacs, "(Features: several, comma-separated", 60)
        assert "Claude Code asks 2 questions: Features; Database" in prompt
        assert "[Alpha / Beta / Gamma / Other: type your own answer]" in prompt
        emacs.type("Alpha,Gamma", pace=0.03)
        emacs.keys("Enter")
        asks(emacs, "(Database: Which database should the cache use?)")
        emacs.type("Oth", pace=0.03)
        emacs.keys("Tab")  # completes the entry's name
        asks(emacs, "?: details): Other: type your own answer")
        emacs.keys("Enter")
        asks(emacs, "(Database: your own answer)")
        emacs.type("MariaDB, why not?", pace=0.03)  # SPC and ? are text here
        emacs.keys("Enter")
        read = model_read(model, tui)
    assert read.startswith(
        'The user answered: "Which features should ship?"="Alpha, Gamma", '
        '"Which database should the cache use?"="MariaDB, why not?".'
    ), read
