"""``request_human_input`` as a VS Code language-model tool, invoked in a real VS Code.

What Copilot's agent mode does, done by a probe extension installed beside ours (built
here from a few lines of JavaScript): ``vscode.lm.invokeTool('request_human_input',
...)`` from a command, the result written to a file of the workspace. The question
goes through the real hub to the same input box (or quick pick) as any other, and the
human answers it there."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from vscode_session import EXT_DIR, EditorSetup, Hub, Window

NO_ANSWER = ":timeout->what-would-rich-hickey-do"

PROBE_PACKAGE = {
    "name": "lm-probe",
    "publisher": "hive-rpc-tests",
    "version": "0.0.1",
    "engines": {"vscode": "^1.95.0"},
    "main": "./extension.js",
    "activationEvents": ["onStartupFinished"],
    "contributes": {
        "commands": [
            {"command": "lmProbe.invoke", "title": "LM Probe: Invoke request_human_input"},
            {"command": "lmProbe.cancel", "title": "LM Probe: Cancel the invocation"},
        ]
    },
}

PROBE_JS = """\
const vscode = require('vscode');
const fs = require('fs');
const path = require('path');
let source;
const file = (name) => path.join(vscode.workspace.workspaceFolders[0].uri.fsPath, name);
exports.activate = (context) => {
  context.subscriptions.push(
    vscode.commands.registerCommand('lmProbe.invoke', async () => {
      const input = JSON.parse(fs.readFileSync(file('probe-input.json'), 'utf8'));
      const tool = vscode.lm.tools.find((t) => t.name === 'request_human_input');
      source = new vscode.CancellationTokenSource();
      let out;
      try {
        const result = await vscode.lm.invokeTool(
          'request_human_input', { input, toolInvocationToken: undefined }, source.token);
        out = { ok: true, text: result.content.map((p) => p.value) };
      } catch (err) {
        out = { ok: false, error: String(err), name: err && err.name };
      }
      out.tool = tool && {
        name: tool.name, description: tool.description, inputSchema: tool.inputSchema,
        tags: tool.tags };
      fs.writeFileSync(file('probe-result.json'), JSON.stringify(out));
    }),
    vscode.commands.registerCommand('lmProbe.cancel', () => source && source.cancel()),
  );
};
"""


@pytest.fixture(scope="module")
def probe_vsix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("lm-probe")
    (src / "package.json").write_text(json.dumps(PROBE_PACKAGE))
    (src / "extension.js").write_text(PROBE_JS)
    (src / "README.md").write_text("Invokes request_human_input for the tests.\n")
    out = src / "lm-probe.vsix"
    vsce = EXT_DIR / "node_modules" / "@vscode" / "vsce" / "vsce"
    flags = ["--allow-missing-repository", "--skip-license", "-o", str(out)]
    done = subprocess.run(
        ["node", str(vsce), "package", *flags],
        cwd=src,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope="module")
def editor_setup(probe_vsix: Path) -> EditorSetup:
    return EditorSetup(machine={"hive.pythonPath": sys.executable}, extra_vsix=[probe_vsix])


def invoke(window: Window, tool_input: dict[str, Any]) -> Path:
    """Run the probe's command; the path its result will be written to."""
    workspace = window.server.workspace
    result = workspace / "probe-result.json"
    result.unlink(missing_ok=True)
    (workspace / "probe-input.json").write_text(json.dumps(tool_input))
    window.command("LM Probe: Invoke request_human_input")
    return result


def result_of(window: Window, path: Path) -> dict[str, Any]:
    """What the probe wrote, once it is all there: the file exists before its text
    does (the probe writes it in place)."""

    def written() -> dict[str, Any] | None:
        try:
            got: dict[str, Any] = json.loads(path.read_text())
        except (FileNotFoundError, ValueError):
            return None
        return got

    return window.wait(written, "the probe to write what invokeTool returned")


def only_pending(hub: Hub) -> dict[str, Any]:
    (record,) = hub.pending()
    return record


def test_the_tool_asks_the_hub_and_returns_the_answer(window: Window, vscode_hub: Hub) -> None:
    result = invoke(window, {"prompt": "Which port should the dev server use?"})
    box = window.wait_quick_input("Which port should the dev server use?", "the tool's question")
    # Where it runs (the extension host's working directory, the workspace), after it.
    assert box.title == f"Agent vscode-chat ({window.server.workspace}) needs input", box
    assert box.message == "Which port should the dev server use? (Enter answers, Escape defers)"
    # Calva Backseat Driver's words for the box (issue 32), then the time left.
    seed = "Start typing to cancel auto-dismiss (60s timeout)..."
    assert re.fullmatch(re.escape(seed) + r" (1m00s|[0-9]+s) left", box.placeholder), box
    window.shot("lm-tool-question")
    record = only_pending(vscode_hub)
    assert (record["agent_id"], record["timeout_s"]) == ("vscode-chat", 60), record
    window.type_human("8080")
    window.press("Enter")
    got = result_of(window, result)
    assert got["ok"] is True, got
    assert got["text"] == ["8080"], got
    # What VS Code offers to models: the contribution in package.json.
    tool = got["tool"]
    assert tool["name"] == "request_human_input", tool
    assert tool["description"].startswith("Ask the human developer for input or guidance.")
    assert tool["inputSchema"]["required"] == ["prompt"], tool
    assert set(tool["inputSchema"]["properties"]) == {"prompt", "options", "timeout_s"}, tool
    # Calva's tags (issue 32): a tool picker selecting tools by them finds it.
    assert tool["tags"] == ["information", "knowledge", "lookup"], tool
    assert vscode_hub.record(record["id"])["answer"] == "8080"


def test_options_are_a_quick_pick(window: Window, vscode_hub: Hub) -> None:
    result = invoke(
        window, {"prompt": "Where to?", "options": ["staging", "production"], "timeout_s": 300}
    )
    box = window.wait_quick_input("Where to?", "the tool's question as a quick pick")
    assert box.rows == ["staging", "production"], box
    assert only_pending(vscode_hub)["timeout_s"] == 300
    window.pick("production")
    assert result_of(window, result)["text"] == ["production"]


def test_no_answer_in_time_or_a_decline_returns_the_sentinel(
    window: Window, vscode_hub: Hub
) -> None:
    result = invoke(window, {"prompt": "Quick, anyone?", "timeout_s": 2})
    got = result_of(window, result)  # nobody typed: the hub's countdown ran out
    assert got["text"] == [NO_ANSWER], got
    window.wait_no_quick_input("the expired question's box to close")

    result = invoke(window, {"prompt": "Shall I?"})
    window.wait_quick_input("Shall I?")
    window.click_quick_input_button("Decline")
    assert result_of(window, result)["text"] == [NO_ANSWER]


def test_cancelling_the_invocation_withdraws_the_question(window: Window, vscode_hub: Hub) -> None:
    result = invoke(window, {"prompt": "Still there?"})
    window.wait_quick_input("Still there?")
    ask_id = only_pending(vscode_hub)["id"]
    window.press("Escape")  # deferred: the tool keeps waiting
    window.wait_no_quick_input()
    assert vscode_hub.record(ask_id)["status"] == "pending"
    window.command("LM Probe: Cancel the invocation")
    got = result_of(window, result)
    assert got["ok"] is False, got
    assert got["name"] == "Canceled", got
    record = window.wait(
        lambda: (r := vscode_hub.record(ask_id))["status"] == "cancelled" and r,
        "the hub to have the question withdrawn",
    )
    assert record["by"] == "vscode-chat", record
    window.wait_status(None, "the status bar to drop it")
