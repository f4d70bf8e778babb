"""The harness itself: the real ``claude -p`` talks to the scripted model and prints
what "the model" said; the request it sent is recorded."""

from __future__ import annotations

from pathlib import Path

from claude_session import claude_home
from scripted_model import ModelRequest, scripted_model, text


def test_claude_print_gets_the_scripted_reply(claude_bin: Path, claude_root: Path) -> None:
    def script(request: ModelRequest) -> list[dict[str, object]]:
        return [text("scripted hello from the test model")]

    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        done = claude.run("-p", "hi")
    assert done.returncode == 0, done.stderr
    assert "scripted hello from the test model" in done.stdout
    assert model.errors == []
    assert any("hi" in t for r in model.requests for t in r.user_texts())
