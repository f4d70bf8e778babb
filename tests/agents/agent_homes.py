"""The real Codex CLI and Gemini CLI, run offline: installed (or found in their cache)
by scripts/install-codex.sh and scripts/install-gemini-cli.sh, each with a private HOME
whose config points it at a scripted model server (scripted_responses.py,
scripted_gemini.py) and registers ``hive-rpc mcp`` with the test's hub.

Why a private HOME: Codex keeps its config, sessions and state databases in
``~/.codex/``, Gemini CLI its settings and trusted folders in ``~/.gemini/``; the tests
must neither read the machine's nor leave anything there.

The test's own part of the config (the scripted model provider, Gemini's API-key auth
and trusted folder) is written by hand (``write_codex_config``, ``write_gemini_config``
with no server); hive-rpc's part by ``hive-rpc setup codex|gemini`` run as a process
(``run_setup``), merging into it as into a user's file.  The two functions still take
a server and a hook for test_codex_hook.py and test_gemini_hook.py, which write theirs
by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HIVE_RPC = Path(sys.executable).parent / "hive-rpc"
CODEX_KEY_VAR = "HIVE_RPC_TESTS_CODEX_KEY"
"""The variable the scripted provider's ``env_key`` names: Codex sends its value as the
bearer token (and refuses to start without it)."""
GEMINI_API_KEY = "hive-rpc-tests-gemini-key"


def installed(script: str, unavailable_var: str, what: str) -> Path:
    """The executable ``scripts/SCRIPT`` installed or found in its cache. Skips only when
    the npm registry is unreachable (``unavailable_var`` set by test-all.sh, or the
    script's exit 3), with the reason; any other failure to install fails."""
    reason = os.environ.get(unavailable_var)
    if reason:
        pytest.skip(f"no real {what}: {reason}")
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / script)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode == 3:
        pytest.skip(f"no real {what}: {done.stdout.strip()}")
    if done.returncode != 0:
        pytest.fail(f"scripts/{script} failed ({done.returncode}):\n{done.stderr}")
    return Path(done.stdout.strip().splitlines()[-1])


def hive_rpc_mcp(socket: Path) -> list[str]:
    """The MCP server's command line, as docs/mcp.md registers it, with the test hub's
    socket: an absolute path and ``--socket``, since neither agent passes the test's
    environment through (Codex strips it, see test_codex_mcp)."""
    return [str(HIVE_RPC), "mcp", "--socket", str(socket)]


def env_recording(path: Path, command: list[str]) -> list[str]:
    """``command`` run through a shell that first writes its environment to ``path``
    (``env -0``): what an agent gives the MCP server it starts."""
    return ["/bin/sh", "-c", f'env -0 > "{path}" && exec "$0" "$@"', *command]


def recorded_env(path: Path) -> dict[str, str]:
    """The environment ``env_recording`` wrote."""
    pairs = [entry.partition("=") for entry in path.read_text().split("\0") if entry]
    return {name: value for name, _, value in pairs}


def run_setup(agent: AgentHome, which: str, socket: Path, *extra: str) -> Path:
    """``hive-rpc setup WHICH --socket SOCKET`` in the agent's private HOME, as a user
    runs it (a process, its own environment less the agents' variables); fails the
    test unless it exits 0.  Returns the file it wrote."""
    done = subprocess.run(
        [str(HIVE_RPC), "setup", which, "--socket", str(socket), *extra],
        cwd=agent.project,
        env=agent.base_env("CODEX_", "GEMINI_"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.split(":", 1)[0])
    assert path.is_file(), done.stdout
    return path


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a TOML basic string


def _toml_array(values: list[str]) -> str:
    return "[" + ", ".join(_toml_string(v) for v in values) + "]"


@dataclass
class AgentHome:
    """A private root for one agent run: ``home`` (its HOME), ``project`` (its working
    directory) and ``tmp`` (its TMPDIR)."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    def make(self) -> None:
        for path in (self.home, self.project, self.tmp):
            path.mkdir(parents=True, exist_ok=True)

    def base_env(self, *dropped: str) -> dict[str, str]:
        """The test's environment without the prefixes in ``dropped`` (an agent's own
        variables, so the machine's cannot leak in) and without HIVE_RPC_*, with the
        private HOME. TMPDIR is private too: Codex refuses to create its helper
        binaries (the ``codex-linux-sandbox`` alias its sandbox runs through) when its
        home is under the temp dir, and ``root`` is under /tmp (short socket paths)."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("HIVE_RPC_", "XDG_CONFIG_HOME", *dropped))
        }
        env.update(HOME=str(self.home), TMPDIR=str(self.tmp))
        return env


def write_codex_config(
    agent: AgentHome,
    *,
    base_url: str,
    mcp_command: list[str] | None = None,
    mcp_env: dict[str, str] | None = None,
    hook: str | None = None,
) -> Path:
    """``~/.codex/config.toml``: the scripted model as a custom provider speaking the
    Responses API; ``mcp_command`` registered as the MCP server ``hive-rpc`` (its tools
    come to the model in the namespace ``mcp__hive_rpc``); ``hook`` as a
    PermissionRequest command hook. Returns the file."""
    lines = [
        'model = "scripted"',
        'model_provider = "scripted"',
        "",
        "[model_providers.scripted]",
        'name = "scripted"',
        f"base_url = {_toml_string(base_url)}",
        'wire_api = "responses"',
        f'env_key = "{CODEX_KEY_VAR}"',
    ]
    if mcp_command is not None:
        lines += [
            "",
            '[mcp_servers."hive-rpc"]',
            f"command = {_toml_string(mcp_command[0])}",
            f"args = {_toml_array(mcp_command[1:])}",
            # codex exec runs with approval "never": without this every MCP call fails
            # ("requires approval, but approval policy is never").
            'default_tools_approval_mode = "approve"',
            # Codex sends its first model request without waiting for a server that
            # takes more than about a second to start (hive-rpc mcp may, on a busy
            # machine): the model would see no hive-rpc tools. A required server is
            # waited for (and Codex ends if it fails to start), up to the timeout.
            "required = true",
            "startup_timeout_sec = 60",
        ]
        if mcp_env:
            lines += ["", '[mcp_servers."hive-rpc".env]']
            lines += [f"{k} = {_toml_string(v)}" for k, v in mcp_env.items()]
    if hook is not None:
        lines += [
            "",
            "[[hooks.PermissionRequest]]",
            'matcher = "*"',
            "",
            "[[hooks.PermissionRequest.hooks]]",
            'type = "command"',
            f"command = {_toml_string(hook)}",
            "timeout = 90",
        ]
    path = agent.home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


@dataclass
class Codex:
    """``codex`` with a private HOME."""

    codex: Path
    agent: AgentHome
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = self.agent.base_env("CODEX_", "OPENAI_")
        env[CODEX_KEY_VAR] = "sk-hive-rpc-tests"
        env.update(self.extra_env)
        return env

    def exec(self, *args: str, timeout: float = 50) -> subprocess.CompletedProcess[str]:
        """``codex exec ARGS`` in the project directory (not a git repository, hence
        ``--skip-git-repo-check``); stdin is closed, or exec waits to read more prompt
        from it. Its output is returned, not checked."""
        return subprocess.run(
            [str(self.codex), "exec", "--skip-git-repo-check", *args],
            cwd=self.agent.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )


def write_gemini_config(
    agent: AgentHome, *, mcp_command: list[str] | None = None, trust: bool = True
) -> Path:
    """``~/.gemini/settings.json``: the API-key auth, and ``mcp_command`` registered as
    the MCP server ``hive-rpc`` (its tools come to the model as
    ``mcp_hive-rpc_TOOL``), trusted unless ``trust`` is False (headless, an untrusted
    server's tools are not offered at all). ``~/.gemini/trustedFolders.json`` trusts
    the project directory: headless, Gemini CLI refuses to run in an untrusted folder
    (exit 55). Returns settings.json."""
    settings: dict[str, object] = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    if mcp_command is not None:
        settings["mcpServers"] = {
            "hive-rpc": {"command": mcp_command[0], "args": mcp_command[1:], "trust": trust}
        }
    folder = agent.home / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trustedFolders.json").write_text(
        json.dumps({str(agent.project): "TRUST_FOLDER"}, indent=2)
    )
    path = folder / "settings.json"
    path.write_text(json.dumps(settings, indent=2))
    return path


@dataclass
class Gemini:
    """``gemini`` with a private HOME, its model calls sent to ``base_url``."""

    gemini: Path
    agent: AgentHome
    base_url: str
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = self.agent.base_env("GEMINI_", "GOOGLE_")
        env.update(GOOGLE_GEMINI_BASE_URL=self.base_url, GEMINI_API_KEY=GEMINI_API_KEY)
        env.update(self.extra_env)
        return env

    def run(self, *args: str, timeout: float = 50) -> subprocess.CompletedProcess[str]:
        """``gemini ARGS`` in the project directory; stdin closed (headless reads a
        piped stdin as more prompt). Its output is returned, not checked."""
        return subprocess.run(
            [str(self.gemini), *args],
            cwd=self.agent.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
