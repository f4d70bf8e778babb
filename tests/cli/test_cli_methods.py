"""``hive-rpc methods [--json]``: the hub's method table without a hub, and what a client
command imports (``hive-rpc status`` must not load the hub, a face or the MCP SDK)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hive_rpc.service import METHODS


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=60, env=env
    )


def test_methods_json_is_the_service_table_without_a_hub(tmp_path: Path) -> None:
    env = {**os.environ, "HIVE_RPC_SOCKET": str(tmp_path / "none.sock")}
    done = _run("-m", "hive_rpc", "methods", "--json", env=env)
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)
    assert [m["name"] for m in table["methods"]] == list(METHODS)
    for row in table["methods"]:
        method = METHODS[row["name"]]
        assert row["doc"] == method.doc
        assert row["params"] == {
            name: {"type": p.type, "required": p.required} for name, p in method.params.items()
        }
        assert row["notification_ok"] is method.notification_ok
        assert row["retryable"] is method.retryable
        assert row["long_poll"] == method.long_poll
        assert row["epc"] == method.epc
        assert row["scope"] == method.scope
        assert row["faces"] == list(method.faces)
        assert row["mcp"] == list(method.mcp)
    assert table["methods"][0]["params"]["question"] == {"type": "string", "required": True}
    waits = {m["name"]: m["long_poll"] for m in table["methods"] if m["long_poll"]}
    assert waits["agora/news"] == "wait_s"
    assert not (tmp_path / "none.sock").exists(), "methods started a hub"


def test_methods_prints_one_paragraph_a_method() -> None:
    done = _run("-m", "hive_rpc", "methods")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2 * len(METHODS)
    assert lines[0].startswith("hive/ask(question: string, choices?: array")
    assert "hive/typing(id: string)  [notification_ok]" in lines


_PROBE = """
import sys
from hive_rpc.cli import main
try:
    code = main(sys.argv[1:])
finally:
    heavy = sorted(
        m for m in sys.modules
        if m == "hive_rpc.hub" or m.startswith(("hive_rpc.faces", "mcp", "pygls"))
    )
    print("HEAVY", heavy, file=sys.stderr)
raise SystemExit(code)
"""


def test_client_commands_import_neither_the_hub_nor_a_face(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "HIVE_RPC_SOCKET": str(tmp_path / "hub.sock"),
        "HIVE_RPC_DATA_DIR": str(tmp_path / "data"),
    }
    for command in (["status", "--no-start"], ["list", "--no-start"], ["methods"]):
        done = _run("-c", _PROBE, *command, env=env)
        assert "HEAVY []" in done.stderr, (command, done.stderr)
    # and the probe would see them: serve's options load their defaults' modules
    done = _run("-c", _PROBE, "serve", "--help", env=env)
    assert done.returncode == 0
    assert "--retain" in done.stdout
    assert "'hive_rpc.hub'" in done.stderr
    # mcp's come from core/tool_groups.py: the relay loads no face (mcp_relay.py)
    done = _run("-c", _PROBE, "mcp", "--help", env=env)
    assert done.returncode == 0
    assert "--tools" in done.stdout
    assert "HEAVY []" in done.stderr


def test_the_clients_long_polls_are_the_tables_waiting_methods() -> None:
    """The one-shot client reads the method table's ``long_poll`` column (plain data,
    no hub): each method that waits on purpose, with the parameter that says how
    long, whatever that parameter is called (``agora/news`` names it ``wait_s``)."""
    from hive_rpc.client.sync_client import LONG_POLLS

    assert LONG_POLLS == {
        "hive/await": "timeout_s",
        "hive/awaitAsk": "timeout_s",
        "agora/news": "wait_s",
    }
    # every retryable read that takes a timeout_s is among them
    waiting = {n for n, row in METHODS.items() if row.retryable and "timeout_s" in row.params}
    assert waiting <= set(LONG_POLLS)


def test_a_calls_deadline_adds_what_its_long_poll_asks_the_hub_to_wait() -> None:
    """A client must not give up on a call the hub is still waiting on as asked:
    ``agora/news`` waits its ``wait_s`` as ``hive/await`` waits its ``timeout_s``."""
    from hive_rpc.client.sync_client import call_limit

    assert call_limit(5.0, "hive/await", {"id": "x", "timeout_s": 10}) == 15.0
    assert call_limit(5.0, "agora/news", {"since": 0, "wait_s": 30}) == 35.0
    # the other parameter, a method that does not wait, a bad value: no more time
    assert call_limit(5.0, "agora/news", {"timeout_s": 30}) == 5.0
    assert call_limit(5.0, "hive/list", {"timeout_s": 30}) == 5.0
    assert call_limit(5.0, "hive/await", {"timeout_s": True}) == 5.0
    assert call_limit(5.0, "hive/await", {"timeout_s": -1}) == 5.0
    assert call_limit(5.0, "agora/news", None) == 5.0
