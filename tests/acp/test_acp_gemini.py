"""``hive-rpc acp`` in front of the real Gemini CLI (0.61.0) in ACP mode (issue 29):
a client on the real ACP SDK (gemini_client.mjs) starts ``hive-rpc acp -- gemini
--acp``; Gemini's model is the scripted Gemini API server (tests/agents), and an
editor-socket client of a real hub plays the human.

Facts these tests hold about ``gemini --acp`` (measured):

- A shell command's permission request has the command as its ``title`` (kind
  ``execute``) and, as its one content item, ``[current working directory CWD]
  (DESCRIPTION)``; a file write's title is ``Writing to NAME`` (kind ``edit``), its
  content a ``diff`` with the whole new text (``oldText`` ``""`` for a new file, not
  null) and its ``locations`` the path; an MCP tool's title is ``TOOL (SERVER MCP
  Server)`` (kind ``other``) and its content the arguments as JSON.  None has a
  ``rawInput`` or a ``name``.
- The options: ``proceed_always`` "Allow for this session" (allow_always) first, then
  ``proceed_once`` "Allow" and ``cancel`` "Reject" (an MCP tool's: "Allow all server
  tools for this session", "Allow tool for this session", then the same two).
- A rejected tool call reaches the model as the ``functionResponse`` error ``Tool
  "NAME" was canceled by the user.``, and the turn goes on; a ``cancelled`` outcome
  (the client's ``session/cancel``) ends the turn, stop reason ``cancelled``, without
  calling the model again.
- Gemini offers the tools of an MCP server named in ``session/new`` to the model
  (``mcp_hive-rpc_TOOL``), but does not trust it: each call of one of its tools is a
  permission request first, until one of the allow-always options is picked.
- With an MCP server connected (the proxy's is), Gemini does not exit when its stdin
  closes: the proxy ends it once its grace (5 s) has passed.  Without one it exits.
- Gemini runs as two node processes (the second started with a larger heap), and its
  shell commands in a process group of their own; SIGTERM to its group ends them all,
  the command included.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from agent_homes import AgentHome, Gemini, write_gemini_config
from cli_support import exited
from editor import human_editor, next_prompt
from scripted_gemini import (
    GeminiRequest,
    Part,
    Script,
    ScriptedGemini,
    function_call,
    in_turns,
    scripted_gemini,
    text,
)
from waiting import until

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

HERE = Path(__file__).parent
AGENT = "gemini-acp"
SHELL = "run_shell_command"
MCP = "mcp_hive-rpc_"
QUESTION = "Which database should the cache use?"
WITHIN_S = 60
"""The deadline for one whole run (Gemini starts in about 3 s)."""
GONE_WITHIN_S = 20
"""How long the run's processes have to end once the proxy has (its grace is 5 s)."""


@pytest.fixture
def agent_home(short_tmp: Path) -> AgentHome:
    """Gemini's private HOME, project and TMPDIR, beside the hub's socket (removed with
    ``short_tmp``), its settings the API-key auth and the project trusted."""
    agent = AgentHome(short_tmp / "g")
    agent.make()
    write_gemini_config(agent)
    return agent


def all_processes(home: Path | None = None) -> dict[int, str]:
    """Every live process (whose HOME is ``home``, if given) as pid -> command line.
    A zombie shows no environment nor command line, so it is not listed."""
    marker = b"\0HOME=" + bytes(home) + b"\0" if home is not None else b""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes() if marker else b""
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if cmdline and marker in b"\0" + environ:
            found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace")
    return found


def processes_of(home: Path) -> dict[int, str]:
    """The run's processes, those whose HOME is ``home`` (its private one): the client,
    the proxy, its guard, Gemini's processes, their MCP servers and shell commands."""
    return all_processes(home)


def roles(processes: dict[int, str], hub_config: HubConfig) -> dict[str, list[int]]:
    """The run's processes by what they are."""
    out: dict[str, list[int]] = {"proxy": [], "guard": [], "gemini": [], "mcp": [], "other": []}
    for pid, cmdline in processes.items():
        if "gemini_client.mjs" in cmdline:
            continue
        if " -m hive_rpc acp " in cmdline:
            out["proxy"].append(pid)
        elif " -m hive_rpc.acp.guard " in cmdline:
            out["guard"].append(pid)
        elif "gemini --acp" in cmdline:
            out["gemini"].append(pid)
        elif f"hive-rpc mcp --socket {hub_config.socket} " in cmdline:
            out["mcp"].append(pid)
        else:
            out["other"].append(pid)
    return out


async def all_gone(home: Path) -> None:
    """No process of the run is left.  Polled: they are no children of the test, and
    the SIGKILL the proxy or its guard sends their group gives no event to follow."""
    await until(
        lambda: not processes_of(home), "the run's processes to end", within_s=GONE_WITHIN_S
    )


class ClientRun:
    """One client run: what the client printed (one JSON object a line)."""

    def __init__(self, done: subprocess.CompletedProcess[bytes]) -> None:
        self.stderr = done.stderr.decode(errors="replace")
        assert done.returncode == 0, self.stderr
        self.events = [json.loads(line) for line in done.stdout.splitlines()]

    def of(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == name]

    def tool_updates(self) -> list[dict[str, Any]]:
        return [
            e["update"]
            for e in self.of("update")
            if e["update"]["sessionUpdate"] in ("tool_call", "tool_call_update")
        ]


@contextmanager
def gemini_acp(
    script: Script, agent: AgentHome, gemini_bin: Path, hub_config: HubConfig, acp_sdk: Path
) -> Iterator[tuple[ScriptedGemini, list[str], dict[str, str]]]:
    """The scripted model served, and the client's command line (less its prompt) and
    environment: ``node gemini_client.mjs PROJECT PROMPT hive-rpc acp ... -- gemini
    --acp``, Gemini's environment (private HOME, the model's URL and key) passed
    through the client and the proxy."""
    with scripted_gemini(script) as model:
        env = Gemini(gemini_bin, agent, model.base_url).env()
        env["HIVE_ACP_SDK_DIR"] = str(acp_sdk)
        proxy = [sys.executable, "-m", "hive_rpc", "acp", "--socket", str(hub_config.socket)]
        proxy += ["--data-dir", str(hub_config.data_dir), "--agent", AGENT]
        yield model, [*proxy, "--", str(gemini_bin), "--acp"], env


async def run_client(
    agent: AgentHome, command: list[str], env: dict[str, str], prompt: str
) -> subprocess.CompletedProcess[bytes]:
    return await trio.run_process(
        ["node", str(HERE / "gemini_client.mjs"), str(agent.project), prompt, *command],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        cwd=agent.project,
        env=env,
    )


def responses_to(request: GeminiRequest, name: str) -> list[dict[str, Any]]:
    """What the model was told of each call of the tool ``name`` (``response``)."""
    return [r["response"] for r in request.function_responses() if r.get("name") == name]


def last_turn(model: ScriptedGemini) -> GeminiRequest:
    assert model.errors == [], model.errors
    return model.requests[-1]


@asynccontextmanager
async def client_asking(
    hub_config: HubConfig, agent_home: AgentHome, proxy: list[str], env: dict[str, str], words: str
) -> AsyncIterator[tuple[HubClient, dict[str, Any], list[subprocess.CompletedProcess[bytes]]]]:
    """The ACP client run (``words`` its prompt) beside a human at an editor, once the
    hub's first question of the run has come: the human, that question, and the list
    the client's finished run is in once the block ends."""
    async with human_editor(hub_config.socket) as human, trio.open_nursery() as nursery:
        runs: list[subprocess.CompletedProcess[bytes]] = []

        async def client_side() -> None:
            runs.append(await run_client(agent_home, proxy, env, words))

        nursery.start_soon(client_side)
        with trio.fail_after(WITHIN_S):
            first: dict[str, Any] = (await next_prompt(human)).params
        yield human, first, runs


async def test_a_shell_command_allowed_from_the_editor_runs_and_the_client_is_not_asked(
    hub: HubService,
    hub_config: HubConfig,
    client: HubClient,
    gemini_bin: Path,
    agent_home: AgentHome,
    acp_sdk: Path,
) -> None:
    target = agent_home.project / "made-by-gemini"
    command = f"touch {target}"
    script = in_turns(
        [function_call(SHELL, {"command": command, "description": "make the file"})],
        [text("done")],
    )
    with gemini_acp(script, agent_home, gemini_bin, hub_config, acp_sdk) as (model, proxy, env):
        async with client_asking(hub_config, agent_home, proxy, env, "Make the file.") as (
            human,
            prompt,
            runs,
        ):
            assert not target.exists()  # asked before it ran
            await human.call("hive/respond", {"id": prompt["id"], "answer": "Allow"})
        said = responses_to(last_turn(model), SHELL)
    run = ClientRun(runs[0])
    assert target.exists()
    assert run.of("client-permission") == []  # the client's own dialog was not asked
    assert run.of("stop") == [{"event": "stop", "stopReason": "end_turn"}]
    assert [u["status"] for u in run.tool_updates()] == ["completed"]
    assert "error" not in said[0], said
    # What the human was shown: the command, the directory it runs in, Gemini's options.
    project = agent_home.project
    assert prompt["kind"] == "permission"
    assert prompt["agent_id"] == AGENT
    assert re.fullmatch(
        rf"{AGENT} in {project} \(session \w{{8}}\) wants to use execute: {command} \(see detail\)",
        prompt["question"],
    ), prompt["question"]
    assert prompt["detail"] == (
        f"title: {command}\n\nkind: execute\n\n[current working directory {project}] "
        "(make the file)"
    )
    assert prompt["choices"] == ["Allow for this session", "Allow", "Reject"]
    (entry,) = await client.call("audit/list", {})
    assert (entry["tool"], entry["answer"], entry["agent_id"]) == ("execute", "Allow", AGENT)
    assert entry["decision"] == "allow"  # the option's kind, allow_once
    assert entry["summary"] == f"{command} (see detail)"
    await all_gone(agent_home.home)


async def test_a_file_write_rejected_from_the_editor_is_not_written_and_the_model_is_told(
    hub: HubService,
    hub_config: HubConfig,
    client: HubClient,
    gemini_bin: Path,
    agent_home: AgentHome,
    acp_sdk: Path,
) -> None:
    target = agent_home.project / "notes.txt"
    content = "first line\nsecond line\n"
    script = in_turns(
        [function_call("write_file", {"file_path": str(target), "content": content})],
        [text("understood")],
    )
    with gemini_acp(script, agent_home, gemini_bin, hub_config, acp_sdk) as (model, proxy, env):
        async with client_asking(hub_config, agent_home, proxy, env, "Write the notes.") as (
            human,
            prompt,
            runs,
        ):
            await human.call("hive/respond", {"id": prompt["id"], "answer": "Reject"})
        said = responses_to(last_turn(model), "write_file")
    run = ClientRun(runs[0])
    assert not target.exists()
    assert said == [{"error": 'Tool "write_file" was canceled by the user.'}]
    (entry,) = await client.call("audit/list", {})
    assert (entry["answer"], entry["decision"]) == ("Reject", "deny")  # reject_once
    assert run.of("client-permission") == []
    assert run.of("stop") == [{"event": "stop", "stopReason": "end_turn"}]
    # The human saw what would be written, as a diff of a new file, not only its path.
    assert prompt["question"].endswith(
        f"wants to use edit: Writing to {target.name} (see detail)"
    ), prompt
    assert prompt["detail"] == (
        f"title: Writing to {target.name}\n\nkind: edit\n\n--- {target}\n+++ {target}\n"
        f"@@ -0,0 +1,2 @@\n+first line\n+second line\n\nat {target}"
    )
    await all_gone(agent_home.home)


async def test_the_model_asks_the_human_through_the_mcp_server_the_proxy_added(
    hub: HubService,
    hub_config: HubConfig,
    client: HubClient,
    gemini_bin: Path,
    agent_home: AgentHome,
    acp_sdk: Path,
) -> None:
    """Gemini offers hive-rpc's tools, but does not trust a server named in
    session/new: the first call is a permission question (its detail the question's
    arguments); "Allow all server tools for this session" lets the next call through
    unasked.  The question reaches the hub as the proxy's agent, and its answer the
    model.  Closing the client's stdin then ends Gemini and the MCP server."""

    def ask_async(request: GeminiRequest) -> list[Part]:
        assert f"{MCP}hivemind_await" in request.function_names, request.function_names
        return [function_call(f"{MCP}hivemind_ask_async", {"question": QUESTION})]

    def wait_for_it(request: GeminiRequest) -> list[Part]:
        (asked,) = responses_to(request, f"{MCP}hivemind_ask_async")
        match = re.search(r"ask_id (\w+)", json.dumps(asked))
        assert match, asked
        return [function_call(f"{MCP}hivemind_await", {"ask_id": match.group(1)})]

    script = in_turns(ask_async, wait_for_it, [text("thanks")])
    with gemini_acp(script, agent_home, gemini_bin, hub_config, acp_sdk) as (model, proxy, env):
        async with client_asking(hub_config, agent_home, proxy, env, "Ask the human.") as (
            human,
            permission,
            runs,
        ):
            answer = {"id": permission["id"], "answer": "Allow all server tools for this session"}
            await human.call("hive/respond", answer)
            with trio.fail_after(WITHIN_S):
                question = (await next_prompt(human)).params
            during = roles(processes_of(agent_home.home), hub_config)
            await human.call("hive/respond", {"id": question["id"], "answer": "Postgres"})
        said = responses_to(last_turn(model), f"{MCP}hivemind_await")
    audit = await client.call("audit/list", {})
    run = ClientRun(runs[0])
    assert permission["kind"] == "permission"
    assert permission["question"].endswith(
        "wants to use other: hivemind_ask_async (hive-rpc MCP Server) (see detail)"
    ), permission["question"]
    assert json.loads(permission["detail"].rpartition("\n\n")[2]) == {"question": QUESTION}
    assert permission["choices"] == [
        "Allow all server tools for this session",
        "Allow tool for this session",
        "Allow",
        "Reject",
    ]
    assert (question["question"], question["kind"], question["agent_id"]) == (
        QUESTION,
        "question",
        AGENT,
    )
    assert "answer from human: Postgres" in json.dumps(said), said
    assert len(audit) == 1  # hivemind_await was not put to the human: allowed for the session
    assert run.of("client-permission") == []
    assert run.of("stop") == [{"event": "stop", "stopReason": "end_turn"}]
    # While the question was open: Gemini's two processes and the MCP server ran.
    assert len(during["gemini"]) == 2, during
    assert len(during["mcp"]) == 1, during
    await all_gone(agent_home.home)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=lambda s: s.name)
async def test_killing_the_proxy_ends_gemini_its_command_and_the_mcp_server(
    sig: signal.Signals,
    hub: HubService,
    hub_config: HubConfig,
    gemini_bin: Path,
    agent_home: AgentHome,
    acp_sdk: Path,
) -> None:
    """The client kills the proxy while Gemini runs a command the human allowed: with
    SIGKILL (Emacs's ``delete-process``, Zed) the guard ends Gemini's group, with
    SIGTERM (a Node client's ``kill()``) the proxy itself; Gemini, told SIGTERM, ends
    its command, which runs in a process group of its own."""
    command = "sleep 3001"
    script = in_turns([function_call(SHELL, {"command": command})])
    with gemini_acp(script, agent_home, gemini_bin, hub_config, acp_sdk) as (_, proxy, env):
        async with client_asking(hub_config, agent_home, proxy, env, "Wait.") as (
            human,
            prompt,
            runs,
        ):
            await human.call("hive/respond", {"id": prompt["id"], "answer": "Allow"})

            def running() -> dict[str, list[int]] | None:
                found = processes_of(agent_home.home)
                running = [p for p, c in found.items() if c.strip() == command]
                return roles(found, hub_config) if running else None

            # Gemini's command is no child of the test: polled until it runs
            during = await until(running, "the command to run", within_s=WITHIN_S)
            (proxy_pid,) = during["proxy"]
            os.kill(proxy_pid, sig)
    run = ClientRun(runs[0])
    # SIGTERM: the proxy ends the agent's group itself and exits 0; SIGKILL: its guard
    ended = (
        {"code": 0, "signal": None} if sig == signal.SIGTERM else {"code": None, "signal": sig.name}
    )
    assert run.of("exit") == [{"event": "exit", **ended}], run.events
    assert len(run.of("error")) == 1, run.events  # the prompt got no answer
    assert len(during["gemini"]) == 2, during
    assert len(during["mcp"]) == 1, during
    assert len(during["guard"]) == 1, during
    await all_gone(agent_home.home)


async def test_a_turn_cancelled_by_the_client_withdraws_the_question_and_runs_nothing(
    hub: HubService,
    hub_config: HubConfig,
    client: HubClient,
    gemini_bin: Path,
    agent_home: AgentHome,
    acp_sdk: Path,
) -> None:
    """The user stops the turn in the client (``session/cancel``) while the human has
    not answered: the question is withdrawn from the editors, Gemini gets
    ``cancelled`` and runs nothing."""
    target = agent_home.project / "never"
    script = in_turns([function_call(SHELL, {"command": f"touch {target}"})], [text("ok")])
    with gemini_acp(script, agent_home, gemini_bin, hub_config, acp_sdk) as (model, proxy, env):
        async with client_asking(hub_config, agent_home, proxy, env, "Make it.") as (
            _,
            prompt,
            runs,
        ):
            found = processes_of(agent_home.home)
            (client_pid,) = [p for p, c in found.items() if "gemini_client.mjs" in c]
            os.kill(client_pid, signal.SIGUSR1)
            with trio.fail_after(WITHIN_S):
                closed = await client.call("hive/await", {"id": prompt["id"], "timeout_s": 50})
    run = ClientRun(runs[0])
    assert closed["status"] == "cancelled", closed
    assert len(model.requests) == 1  # the turn ended there: the model was not called again
    assert not target.exists()
    assert run.of("client-permission") == []
    assert run.of("stop") == [{"event": "stop", "stopReason": "cancelled"}]
    await all_gone(agent_home.home)


def hubs_on(socket: Path) -> list[int]:
    """The hub processes serving ``socket``."""
    return [
        pid
        for pid, cmdline in all_processes().items()
        if " -m hive_rpc serve " in cmdline and f"--socket {socket} " in cmdline
    ]


async def test_with_no_hub_the_client_is_asked_and_no_hub_is_started(
    hub_config: HubConfig, gemini_bin: Path, agent_home: AgentHome, acp_sdk: Path
) -> None:
    """No hub runs (none is started): the permission request goes to the client's own
    dialog as soon as the proxy finds no hub, and the run leaves no hub behind.
    Measured before the added server had ``--no-start``: Gemini starts the added
    ``hive-rpc mcp`` with the session, which started a hub on the proxy's socket; the
    proxy then asked that hub, where no editor shows the question, for the whole
    ``--timeout`` (120 s by default; 3 s here), and the hub outlived the session."""
    target = agent_home.project / "refused-by-the-client"
    script = in_turns([function_call(SHELL, {"command": f"touch {target}"})], [text("ok")])
    try:
        with gemini_acp(script, agent_home, gemini_bin, hub_config, acp_sdk) as (_, proxy, env):
            command = [*proxy[: proxy.index("--")], "--timeout", "3", *proxy[proxy.index("--") :]]
            with trio.fail_after(WITHIN_S):
                run = ClientRun(await run_client(agent_home, command, env, "Make it."))
        assert len(run.of("client-permission")) == 1
        assert not target.exists()  # the client's dialog refused
        assert "no answer from the hub (HubUnreachable" in run.stderr, run.stderr
        assert hubs_on(hub_config.socket) == []
    finally:
        # a hub the run started is this test's to end (before its directory goes);
        # no child of the test: polled until it has exited
        started = hubs_on(hub_config.socket)
        for pid in started:
            os.kill(pid, signal.SIGTERM)
        await until(lambda: all(map(exited, started)), "the hub to end", within_s=GONE_WITHIN_S)
