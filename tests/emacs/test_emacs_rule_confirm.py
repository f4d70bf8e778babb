""" "Always allow in this project" in a real `emacs -nw` under tmux shows the rule it
will save, and asks again, before the answer is sent.  The real `hive-rpc hook
claude-code` asks; the rule's words come from the question itself (its ``confirm``,
written by the hook that saves the rule), so Emacs keeps no copy of how rules are
worded.  An empty answer to the confirmation (RET typed ahead) is a no: nothing is
sent, no rule is saved, the choices are asked again."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import hook_process
import pytest
from emacs_session import EmacsSession, running
from hook_process import permission_event, stopped_at_exit

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)

RULE = (
    "This answer saves a rule: allow Bash(npm test), for every later request in this "
    "project (~/app). Matching requests then run without asking you. Send always allow in "
    "this project? [yes / no]"
)


@pytest.fixture
def emacs(short_tmp: Path) -> Iterator[EmacsSession]:
    yield from running(EmacsSession(short_tmp))


def start_hook(emacs: EmacsSession) -> subprocess.Popen[bytes]:
    event = permission_event(emacs.root, "Bash", {"command": "npm test"})
    return hook_process.start_hook(
        event, socket=emacs.socket, data_dir=emacs.root / "data", home=emacs.root
    )


def rules(emacs: EmacsSession) -> list[dict[str, object]]:
    listed = emacs.cli("rules", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    found: list[dict[str, object]] = json.loads(listed.stdout)
    return found


def pick_always_allow(emacs: EmacsSession) -> None:
    emacs.wait_for(lambda _: "wants to run Bash: npm test" in emacs.wrapped_minibuffer())
    emacs.type("alw")
    emacs.keys("Tab")
    emacs.wait_for(lambda _: "always allow in this project" in emacs.wrapped_minibuffer())
    emacs.keys("Enter")


def test_always_allow_shows_its_rule_and_an_empty_answer_saves_nothing(
    emacs: EmacsSession,
) -> None:
    with stopped_at_exit(start_hook(emacs)) as hook:
        emacs.wait_for(lambda screen: " hive:1" in screen)
        emacs.answer_next()
        pick_always_allow(emacs)
        emacs.wait_for(lambda _: RULE in emacs.wrapped_minibuffer())
        # RET at once, as a hand typing ahead would: a no.  Nothing was sent.
        emacs.keys("Enter")
        emacs.wait_for(
            lambda _: "npm test [allow / allow for this session" in emacs.wrapped_minibuffer()
        )
        assert "refused" not in emacs.wrapped_minibuffer()
        assert hook.poll() is None
        assert rules(emacs) == []
        # The pick is kept as the draft; read, then a deliberate yes: the answer goes,
        # and the rule shown is saved.
        assert emacs.wrapped_minibuffer().endswith("details): always allow in this project")
        emacs.keys("Enter")
        emacs.wait_for(lambda _: RULE in emacs.wrapped_minibuffer())
        emacs.type("yes")
        emacs.keys("Enter")
        out, err = hook.communicate(timeout=30)
    assert hook.returncode == 0, err
    assert json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
    saved = rules(emacs)
    assert [(r["pattern"], r["scope"], r["decision"]) for r in saved] == [
        ("Bash(npm test)", "project", "allow")
    ]
