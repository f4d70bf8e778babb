"""The real Claude Code, run offline: installed (or found in its cache) by
scripts/install-claude-code.sh, with a private HOME and every model call sent to a
scripted model server (scripted_model.py).

Why a private HOME: Claude Code keeps its settings, MCP registrations, trust answers and
transcripts in ``~/.claude.json`` and ``~/.claude/``; the tests must neither read the
machine's nor leave anything there. The ``~/.claude.json`` written here answers the
first-run screens (onboarding, folder trust, "use this API key?") that the TUI would
otherwise show first (research.md, "Claude Code, offline")."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = REPO / "scripts" / "install-claude-code.sh"
API_KEY = "sk-ant-hive-rpc-tests-0123456789abcdefghij"


def claude_binary() -> Path:
    """``claude``, installed or found in its cache. Skips only when the npm registry is
    unreachable (then nothing can install it), with the reason; any other failure to
    install fails."""
    reason = os.environ.get("HIVE_CLAUDE_CODE_UNAVAILABLE")
    if reason:
        pytest.skip(f"no real Claude Code: {reason}")
    done = subprocess.run(
        ["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=900, check=False
    )
    if done.returncode == 3:
        pytest.skip(f"no real Claude Code: {done.stdout.strip()}")
    if done.returncode != 0:
        pytest.fail(f"scripts/install-claude-code.sh failed ({done.returncode}):\n{done.stderr}")
    return Path(done.stdout.strip().splitlines()[-1])


@dataclass
class ClaudeHome:
    """A private HOME and project directory for one Claude Code, and its environment."""

    claude: Path
    home: Path
    project: Path
    base_url: str

    def write_config(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.project.mkdir(parents=True, exist_ok=True)
        # Merged into what is there: a second session in the same HOME keeps the first
        # one's registrations, as on a real machine.
        path = self.home / ".claude.json"
        config = json.loads(path.read_text()) if path.exists() else {}
        config["hasCompletedOnboarding"] = True
        config.setdefault("projects", {}).setdefault(str(self.project), {})[
            "hasTrustDialogAccepted"
        ] = True
        config["customApiKeyResponses"] = {"approved": [API_KEY[-20:]], "rejected": []}
        path.write_text(json.dumps(config, indent=2))

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "CLAUDE", "HIVE_RPC_"))
        }
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            ANTHROPIC_BASE_URL=self.base_url,
            ANTHROPIC_API_KEY=API_KEY,
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            # claude -p sends its first model request without waiting for its MCP
            # servers by default (read from 2.1.328): on a busy machine hive-rpc mcp
            # (about 1 s to start) misses it and the model sees no tools until a later
            # turn. The tests read requests, so Claude Code waits for its servers.
            MCP_CONNECTION_NONBLOCKING="0",
        )
        return env

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``claude ARGS`` in the project directory; its output is returned, not checked."""
        return subprocess.run(
            [str(self.claude), *args],
            cwd=self.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )


def claude_home(claude_bin: Path, root: Path, base_url: str) -> ClaudeHome:
    """A ClaudeHome under ``root`` talking to the model at ``base_url``, configured."""
    home = ClaudeHome(claude_bin, root / "home", root / "project", base_url)
    home.write_config()
    return home
