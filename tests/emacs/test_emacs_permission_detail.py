"""A Claude Code permission request answered in a real `emacs -nw` under tmux: the
real `hive-rpc hook claude-code` asks it, the minibuffer says it is a permission, `?`
shows the tool's whole input (the prompt's detail) in a help window while the
minibuffer keeps the answer, and the answer goes back to the hook.  `?` in a free-text
answer stays text."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import hook_process
import pytest
from emacs_session import FAST, EmacsSession, running, tag
from emacs_session import wrapped_minibuffer as minibuffer
from hook_process import permission_event, stopped_at_exit

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)

COMMAND = "npm test\nrm -rf build/cache-only-in-the-detail"
"""Two lines: the head shows them as one and says "(see detail)"."""


@pytest.fixture
def emacs(short_tmp: Path) -> Iterator[EmacsSession]:
    yield from running(EmacsSession(short_tmp, FAST))


def start_hook(emacs: EmacsSession) -> subprocess.Popen[bytes]:
    event = permission_event(
        emacs.root, "Bash", {"command": COMMAND, "description": "Run the tests"}
    )
    return hook_process.start_hook(
        event, socket=emacs.socket, data_dir=emacs.root / "data", home=emacs.root
    )


def test_question_mark_shows_the_tool_input_then_the_answer_goes_back(
    emacs: EmacsSession,
) -> None:
    with stopped_at_exit(start_hook(emacs)) as hook:
        screen = emacs.wait_for(
            lambda screen: "details):" in minibuffer(screen) and "(opening)" not in screen
        )
        prompt = minibuffer(screen)
        assert (
            f"{tag('claude-code-3f2a9c1d')}! permission: Claude Code in ~/app (session 3f2a)"
            in prompt
        )
        assert "npm test rm -rf build/cache-only-in-the-detail (see detail)" in prompt
        assert prompt.rstrip().endswith("(C-c C-k: decline, ?: details):")
        assert "Detail:" not in screen
        emacs.keys("?")
        screen = emacs.wait_for(lambda screen: "Detail:" in screen)
        # The input as it runs, its two lines apart, in the help window.
        assert '"command": "npm test\\nrm -rf build/cache-only-in-the-detail",' in screen
        assert '"description": "Run the tests"' in screen
        assert "asks a permission (question" in screen
        # The minibuffer still asks, nothing typed into it.
        assert minibuffer(screen) == prompt
        emacs.keys("deny", "Enter")
        out, err = hook.communicate(timeout=30)
    assert hook.returncode == 0, err
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"
    emacs.wait_for(lambda screen: "Detail:" not in screen)  # the help window went with it


def test_question_mark_in_a_free_text_answer_is_text(emacs: EmacsSession) -> None:
    prompt_id = emacs.ask("Which branch?", "--agent", "merger")
    emacs.wait_prompt(f"{tag('merger')} Which branch? (C-c")
    emacs.keys("why?", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 0)
    assert emacs.cli("poll", prompt_id).stdout.strip() == "why?"
