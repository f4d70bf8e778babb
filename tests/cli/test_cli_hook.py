"""``hive-rpc hook claude-code``: the real command, fed a PermissionRequest's JSON on
stdin in the shape Claude Code 2.1.328 sends (research.md, measured), against a real
hub; an editor-socket client plays the human.  Whatever goes wrong, the hook prints
nothing and exits 0, so Claude Code shows its own dialog: it never allows by default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import trio
from ask_user_question import DATABASE, FEATURES

from hive_rpc.cli.hook import SUMMARY_CHARS, permission_ask
from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.core.limits import MAX_QUESTION_CHARS
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

SESSION = "3f2a9c1d-5b7e-4c1a-9d2f-0e8b6a4c2d10"


def permission_request(home: Path, command: str = "npm test") -> dict[str, Any]:
    """A PermissionRequest as Claude Code 2.1.328 sends it (no tool_use_id)."""
    return {
        "session_id": SESSION,
        "transcript_path": str(home / ".claude" / "projects" / "x" / f"{SESSION}.jsonl"),
        "cwd": str(home / "src" / "app"),
        "prompt_id": "p-1",
        "permission_mode": "default",
        "effort": {"level": "medium"},
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run the tests"},
        "permission_suggestions": [
            {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
        ],
    }


async def run_hook(
    config: HubConfig, home: Path, stdin: bytes, *extra: str
) -> subprocess.CompletedProcess[bytes]:
    where = ["--socket", str(config.socket), "--data-dir", str(config.data_dir)]
    return await trio.run_process(
        [sys.executable, "-m", "hive_rpc", "hook", "claude-code", *where, *extra],
        stdin=stdin,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env={**os.environ, "HOME": str(home)},
    )


async def hook_meanwhile(
    config: HubConfig,
    home: Path,
    human: HubClient,
    stdin: bytes,
    meanwhile: Callable[[dict[str, Any]], Awaitable[None]],
    *extra: str,
) -> tuple[subprocess.CompletedProcess[bytes], dict[str, Any]]:
    """Run the hook on ``stdin``; once ``human`` (subscribed) is sent its prompt, run
    ``meanwhile(prompt)`` while the hook waits (an editor's answer, the terminal's),
    and return what the hook did with the prompt it asked."""
    done: list[subprocess.CompletedProcess[bytes]] = []
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:

            async def hook() -> None:
                done.append(await run_hook(config, home, stdin, *extra))

            nursery.start_soon(hook)
            note = await human.next_notification()
            while note.method != "hive/prompt":  # the previous prompt's dismiss, updates
                note = await human.next_notification()
            prompt: dict[str, Any] = note.params
            await meanwhile(prompt)
    return done[0], prompt


async def hook_with_human(
    config: HubConfig,
    home: Path,
    human: HubClient,
    answer: dict[str, Any] | None,
    *extra: str,
    event: dict[str, Any] | None = None,
) -> tuple[subprocess.CompletedProcess[bytes], dict[str, Any]]:
    """Run the hook on ``event`` (default: ``permission_request``) while ``human``
    (subscribed) waits for its prompt and answers it with ``answer`` (hive/respond
    params), or only starts typing when None."""
    stdin = json.dumps(event or permission_request(home)).encode()
    assert await prove_approver(human.call) is None  # a permission prompt wants one

    async def reply(prompt: dict[str, Any]) -> None:
        if answer is None:
            await human.call("hive/typing", {"id": prompt["id"]})
        else:
            await human.call("hive/respond", {"id": prompt["id"], **answer})

    return await hook_meanwhile(config, home, human, stdin, reply, *extra)


async def test_allow_from_the_editor_prints_the_allow_decision(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    await client.call("hive/subscribe", {})
    done, prompt = await hook_with_human(hub_config, short_tmp, client, {"answer": "allow"})
    assert done.returncode == 0, done.stderr
    allow = {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
    assert json.loads(done.stdout) == {"hookSpecificOutput": allow}
    # the question the human saw: who, where, what in one line; the input in full as
    # the detail, a permission prompt, urgent
    assert prompt["question"] == (
        "Claude Code in ~/src/app (session 3f2a) wants to run Bash: npm test"
    )
    assert json.loads(prompt["detail"]) == permission_request(short_tmp)["tool_input"]
    assert prompt["kind"] == "permission"
    assert prompt["choices"] == [
        "allow",
        "allow for this session",
        "always allow in this project",
        "deny",
    ]
    assert prompt["urgent"] is True
    assert prompt["agent_id"] == "claude-code-3f2a9c1d"


async def test_deny_prints_the_deny_decision_with_a_message(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    await client.call("hive/subscribe", {})
    done, _ = await hook_with_human(
        hub_config, short_tmp, client, {"answer": "deny", "by": "emacs"}
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {
                "behavior": "deny",
                "message": "The human denied this Bash request from hive-rpc (emacs).",
            },
        }
    }


async def test_a_decline_prints_nothing(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    await client.call("hive/subscribe", {})
    done, _ = await hook_with_human(hub_config, short_tmp, client, {"action": "decline"})
    assert (done.returncode, done.stdout) == (0, b"")


async def test_no_answer_in_time_prints_nothing_and_withdraws_the_question(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    # The human starts typing (the countdown stops) but never answers: the hook must
    # still give up at its --timeout, before Claude Code kills it.
    await client.call("hive/subscribe", {})
    done, prompt = await hook_with_human(hub_config, short_tmp, client, None, "--timeout", "1")
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"Claude Code asks itself" in done.stderr
    record = await client.call("hive/poll", {"id": prompt["id"]})
    assert record["status"] == "cancelled"


async def test_hub_down_prints_nothing(hub_config: HubConfig, short_tmp: Path) -> None:
    stdin = json.dumps(permission_request(short_tmp)).encode()
    done = await run_hook(hub_config, short_tmp, stdin)
    assert (done.returncode, done.stdout) == (0, b"")
    assert f"no hub answers on {hub_config.socket}".encode() in done.stderr
    assert not hub_config.socket.exists()  # and it started none


async def test_malformed_stdin_prints_nothing_and_says_why(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    for stdin in (b"{not json", b"[1, 2]", b'{"tool_name": "Bash"}', b"\xff\xfe"):
        done = await run_hook(hub_config, short_tmp, stdin)
        assert (done.returncode, done.stdout) == (0, b""), stdin
        (line,) = done.stderr.decode().splitlines()
        assert line.startswith("hive-rpc hook: stdin is not"), line
    assert await client.call("hive/list", {}) == []


async def test_other_events_are_left_alone(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    stop = {"session_id": SESSION, "cwd": str(short_tmp), "hook_event_name": "Stop"}
    done = await run_hook(hub_config, short_tmp, json.dumps(stop).encode())
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert await client.call("hive/list", {}) == []


ALLOW_OUTPUT = {
    "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
}


async def test_allow_for_this_session_saves_a_rule_the_next_request_uses(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    await client.call("hive/subscribe", {})
    done, prompt = await hook_with_human(
        hub_config, short_tmp, client, {"answer": "allow for this session"}
    )
    assert json.loads(done.stdout) == ALLOW_OUTPUT
    (rule,) = await client.call("rule/list", {})
    assert {k: rule[k] for k in ("pattern", "decision", "scope", "where", "made_by")} == {
        "pattern": "Bash(npm test)",
        "decision": "allow",
        "scope": "session",
        "where": SESSION,
        "made_by": f"prompt {prompt['id']}",
    }
    # the same request again in this session: allowed by the rule, nobody asked
    stdin = json.dumps(permission_request(short_tmp)).encode()
    with trio.fail_after(20):
        again = await run_hook(hub_config, short_tmp, stdin)
    assert json.loads(again.stdout) == ALLOW_OUTPUT
    assert await client.call("hive/list", {}) == []
    # another session is asked
    other = {**permission_request(short_tmp), "session_id": "77aa0000-0000"}
    done, prompt = await hook_with_human(
        hub_config, short_tmp, client, {"answer": "deny"}, event=other
    )
    assert prompt["agent_id"] == "claude-code-77aa0000"
    assert json.loads(done.stdout)["hookSpecificOutput"]["decision"]["behavior"] == "deny"


async def test_always_allow_in_this_project_covers_other_sessions_there(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    await client.call("hive/subscribe", {})
    done, _ = await hook_with_human(
        hub_config, short_tmp, client, {"answer": "always allow in this project"}
    )
    assert json.loads(done.stdout) == ALLOW_OUTPUT
    (rule,) = await client.call("rule/list", {})
    assert (rule["scope"], rule["where"]) == ("project", str(short_tmp / "src" / "app"))
    other_session = {**permission_request(short_tmp), "session_id": "88bb0000-0000"}
    with trio.fail_after(20):
        again = await run_hook(hub_config, short_tmp, json.dumps(other_session).encode())
    assert json.loads(again.stdout) == ALLOW_OUTPUT
    # another project is asked
    elsewhere = {**permission_request(short_tmp), "cwd": str(short_tmp / "src" / "other")}
    done, _ = await hook_with_human(
        hub_config, short_tmp, client, {"answer": "allow"}, event=elsewhere
    )
    assert json.loads(done.stdout) == ALLOW_OUTPUT


async def test_a_deny_rule_answers_without_asking(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    assert await prove_approver(client.call) is None
    rule = await client.call(
        "rule/add", {"pattern": "Bash(npm:*)", "decision": "deny", "scope": "global"}
    )
    stdin = json.dumps(permission_request(short_tmp)).encode()
    with trio.fail_after(20):
        done = await run_hook(hub_config, short_tmp, stdin)
    assert json.loads(done.stdout)["hookSpecificOutput"]["decision"] == {
        "behavior": "deny",
        "message": "A hive-rpc rule denies this Bash request: Bash(npm:*) "
        f"(global, rule {rule['id']}).",
    }
    assert await client.call("hive/list", {}) == []


def claude_question(home: Path, *questions: dict[str, Any]) -> dict[str, Any]:
    """Claude Code's AskUserQuestion as it reaches the PermissionRequest hook (2.1.328)."""
    return {
        **permission_request(home),
        "tool_name": "AskUserQuestion",
        "tool_input": {"questions": list(questions)},
    }


OWN = {"type": "string", "title": "Other: type your own answer"}


def answered_output(questions: list[dict[str, Any]], answers: dict[str, str]) -> dict[str, Any]:
    """The allow carrying ``answers`` (question text -> one string), as Claude Code
    2.1.328 takes it (docs/claude-code.md)."""
    updated = {"questions": questions, "answers": answers}
    decision = {"behavior": "allow", "updatedInput": updated}
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


async def test_claude_codes_own_question_is_one_prompt_with_the_options_described(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    await client.call("hive/subscribe", {})
    event = claude_question(short_tmp, DATABASE)
    done, prompt = await hook_with_human(
        hub_config, short_tmp, client, {"answer": {"q1": "Postgres"}, "by": "emacs"}, event=event
    )
    assert prompt["question"] == "Which database should the cache use?"
    assert prompt["choices"] is None
    assert prompt["schema"] == {
        "type": "object",
        "properties": {
            "q1": {
                "title": "Database",
                "type": "string",
                "anyOf": [
                    {"const": "SQLite", "title": "SQLite", "description": "embedded, one file"},
                    {"const": "Postgres", "title": "Postgres",
                     "description": "the server we already run"},
                    OWN,
                ],
            }
        },
        "required": ["q1"],
    }  # fmt: skip
    assert "- Postgres: the server we already run" in prompt["detail"]
    assert (prompt["agent_id"], prompt["kind"]) == ("claude-code-3f2a9c1d", "permission")
    assert json.loads(done.stdout) == answered_output(
        [DATABASE], {"Which database should the cache use?": "Postgres"}
    )
    # the audit trail: who answered which question, and what
    (entry,) = await client.call("audit/list", {})
    assert (entry["by"], entry["prompt_id"], entry["answer"]) == (
        "emacs",
        prompt["id"],
        {"q1": "Postgres"},
    )
    assert entry["summary"] == "Which database should the cache use?"
    assert entry["tool"] == "AskUserQuestion"


async def test_several_questions_are_one_prompt_multi_select_and_own_text_answered(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    await client.call("hive/subscribe", {})
    event = claude_question(short_tmp, FEATURES, DATABASE)
    answer = {"q1": ["Alpha", "a feature of my own"], "q2": "MariaDB"}
    done, prompt = await hook_with_human(
        hub_config, short_tmp, client, {"answer": answer}, event=event
    )
    assert prompt["question"] == "Claude Code asks 2 questions: Features; Database"
    features, database = prompt["schema"]["properties"].values()
    assert (features["type"], features["minItems"]) == ("array", 1)
    assert features["items"]["anyOf"][-1] == OWN
    assert (features["title"], features["description"]) == ("Features", FEATURES["question"])
    assert database["description"] == DATABASE["question"]
    assert json.loads(done.stdout) == answered_output(
        [FEATURES, DATABASE],
        {FEATURES["question"]: "Alpha, a feature of my own", DATABASE["question"]: "MariaDB"},
    )
    assert await client.call("hive/list", {}) == []
    asked = [n for n in client.notifications if n.method == "hive/prompt"]
    assert asked == [], "a second prompt was asked"


async def test_a_declined_question_prints_nothing(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    await client.call("hive/subscribe", {})
    event = claude_question(short_tmp, FEATURES, DATABASE)
    done, _ = await hook_with_human(
        hub_config, short_tmp, client, {"action": "decline"}, event=event
    )
    assert (done.returncode, done.stdout) == (0, b"")


async def test_a_question_nobody_answers_in_time_prints_nothing_and_is_withdrawn(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    await client.call("hive/subscribe", {})
    event = claude_question(short_tmp, FEATURES, DATABASE)
    done, prompt = await hook_with_human(
        hub_config, short_tmp, client, None, "--timeout", "1", event=event
    )
    assert (done.returncode, done.stdout) == (0, b"")
    record = await client.call("hive/poll", {"id": prompt["id"]})
    assert record["status"] == "cancelled"


def transcript_lines(event: dict[str, Any], tool_use_id: str) -> list[dict[str, Any]]:
    """The lines Claude Code writes to the session's transcript for ``event``'s tool
    (2.1.328's): the call, then its result once answered in the terminal."""
    use = {"type": "tool_use", "id": tool_use_id, "name": event["tool_name"],
           "input": event["tool_input"]}  # fmt: skip
    result = {"type": "tool_result", "tool_use_id": tool_use_id, "content": "answered"}
    return [
        {"type": "assistant", "message": {"content": [use]}},
        {"type": "user", "message": {"content": [result]}},
    ]


def append_stamped(transcript: Path, *lines: dict[str, Any]) -> None:
    """Append ``lines`` to ``transcript``, each stamped with the time it is written,
    as Claude Code stamps its lines (the hook reads only what comes after its start)."""
    with transcript.open("a") as f:
        for line in lines:
            at = datetime.now(UTC).isoformat().replace("+00:00", "Z")
            f.write(json.dumps({**line, "timestamp": at}) + "\n")


async def assert_withdrawn_by_the_terminal(
    config: HubConfig,
    home: Path,
    human: HubClient,
    event: dict[str, Any],
    answer_in_the_terminal: Callable[[], None],
) -> None:
    """Run the hook on ``event``, answer in the terminal once its prompt is out, and
    check that the hook printed nothing and withdrew its prompt, answered there."""

    async def meanwhile(prompt: dict[str, Any]) -> None:
        answer_in_the_terminal()

    stdin = json.dumps(event).encode()
    done, prompt = await hook_meanwhile(config, home, human, stdin, meanwhile)
    assert (done.returncode, done.stdout) == (0, b"")
    record = await human.call("hive/poll", {"id": prompt["id"]})
    assert (record["status"], record["by"]) == ("cancelled", "the terminal")


@pytest.mark.parametrize("kind", ["question", "permission"])
async def test_a_request_answered_in_the_terminal_is_withdrawn_from_the_editors(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path, kind: str
) -> None:
    """Claude Code shows its own menu or dialog while the hook waits and takes the
    first answer; it writes the call, then its result once answered there, to the
    session's transcript; the hook withdraws its prompt then, so no editor goes on
    asking what the terminal answered. A permission's result comes once the tool ran
    (or was refused)."""
    await client.call("hive/subscribe", {})
    if kind == "question":
        event = claude_question(short_tmp, DATABASE)
    else:
        event = permission_request(short_tmp)
    transcript = short_tmp / "transcript.jsonl"
    event["transcript_path"] = str(transcript)
    call, answer = transcript_lines(event, "toolu_7")
    append_stamped(transcript, call)
    await assert_withdrawn_by_the_terminal(
        hub_config, short_tmp, client, event, lambda: append_stamped(transcript, answer)
    )


async def test_a_transcript_written_after_the_hook_started_is_watched(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    """A new session's transcript may not exist yet when its first tool's hook starts
    (seen once on a loaded clean-clone CI run with the real Claude Code: the watch
    ended at once, and the editor's question stayed until the hook's timeout). The
    hook waits for the file; the terminal's answer written there withdraws the prompt."""
    await client.call("hive/subscribe", {})
    event = permission_request(short_tmp)
    transcript = short_tmp / "later" / "transcript.jsonl"
    event["transcript_path"] = str(transcript)

    def call_and_answer() -> None:
        transcript.parent.mkdir()
        append_stamped(transcript, *transcript_lines(event, "toolu_8"))

    await assert_withdrawn_by_the_terminal(hub_config, short_tmp, client, event, call_and_answer)


async def test_rules_never_answer_a_question(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    """An allow rule for every tool still leaves Claude Code's question to the human."""
    await client.call("hive/subscribe", {})
    assert await prove_approver(client.call) is None
    await client.call(
        "rule/add", {"pattern": "AskUserQuestion", "decision": "allow", "scope": "global"}
    )
    event = claude_question(short_tmp, DATABASE)
    done, prompt = await hook_with_human(
        hub_config, short_tmp, client, {"answer": {"q1": "SQLite"}}, event=event
    )
    assert prompt["question"] == DATABASE["question"]
    assert json.loads(done.stdout) == answered_output([DATABASE], {DATABASE["question"]: "SQLite"})


async def test_a_question_it_cannot_ask_is_left_to_claude_code(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    no_label = {**DATABASE, "options": [{"description": "no label"}, *DATABASE["options"]]}
    for event in (claude_question(short_tmp), claude_question(short_tmp, no_label)):
        with trio.fail_after(20):
            done = await run_hook(hub_config, short_tmp, json.dumps(event).encode())
        assert (done.returncode, done.stdout) == (0, b"")
    assert await client.call("hive/list", {}) == []


def test_a_long_command_is_cut_in_the_head_which_says_so_and_whole_in_the_detail(
    short_tmp: Path,
) -> None:
    command = "echo " + "x" * 300 + " && rm -rf build"
    ask = permission_ask(permission_request(short_tmp, command), timeout_s=5, home=None)
    head = ask.question
    assert "\n" not in head
    assert head.endswith("\u2026 (see detail)")
    assert len(head.partition("wants to run Bash: ")[2]) == SUMMARY_CHARS + len(" (see detail)")
    assert "rm -rf build" not in head
    assert ask.detail is not None
    assert json.loads(ask.detail)["command"] == command


def test_a_multi_line_command_is_one_line_in_the_head_which_says_there_is_more(
    short_tmp: Path,
) -> None:
    command = "npm test\nrm -rf ~"
    ask = permission_ask(permission_request(short_tmp, command), timeout_s=5, home=None)
    assert ask.question.endswith("wants to run Bash: npm test rm -rf ~ (see detail)")
    assert ask.detail is not None
    assert json.loads(ask.detail)["command"] == command


def test_an_input_longer_than_a_detail_may_be_is_cut_and_says_so(short_tmp: Path) -> None:
    command = "y" * (MAX_QUESTION_CHARS + 10)
    ask = permission_ask(permission_request(short_tmp, command), timeout_s=5, home=None)
    assert ask.detail is not None
    assert len(ask.detail) == MAX_QUESTION_CHARS
    assert ask.detail.endswith("[... cut: the input is longer than a detail may be]")
    assert ask.question.endswith("\u2026 (see detail)")


async def test_deeply_nested_stdin_prints_nothing_and_says_why_on_one_line(
    hub_config: HubConfig, short_tmp: Path
) -> None:
    """100,000 nested arrays made the JSON decoder raise RecursionError: a traceback
    and exit 1 (issue 26)."""
    deep = b"[" * 100_000 + b"]" * 100_000
    nested_event = b'{"hook_event_name": "PermissionRequest", "tool_input": ' + deep + b"}"
    for stdin in (deep, nested_event):
        done = await run_hook(hub_config, short_tmp, stdin)
        assert (done.returncode, done.stdout) == (0, b""), done.stderr[-300:]
        (line,) = done.stderr.decode().splitlines()
        assert line.startswith("hive-rpc hook: stdin is not JSON (nested too deeply"), line


async def test_timeout_covers_a_hub_that_accepts_and_never_answers(
    hub_config: HubConfig, short_tmp: Path
) -> None:
    """A socket that accepts and never answers held the hook for the 30 s of the hub
    timeout, whatever its ``--timeout`` (issue 26): now ``--timeout`` is the hook's
    whole budget.  The bound below only keeps a regression from hanging the suite."""
    hub_config.socket.parent.mkdir(mode=0o700)
    listener = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    await listener.bind(str(hub_config.socket))
    listener.listen(8)
    accepted: list[trio.socket.SocketType] = []
    stdin = json.dumps(permission_request(short_tmp)).encode()
    try:
        async with trio.open_nursery() as nursery:

            async def accept_and_say_nothing() -> None:
                while True:
                    conn, _ = await listener.accept()
                    accepted.append(conn)

            nursery.start_soon(accept_and_say_nothing)
            with trio.fail_after(20):
                done = await run_hook(hub_config, short_tmp, stdin, "--timeout", "2")
            nursery.cancel_scope.cancel()
    finally:
        for conn in accepted:
            conn.close()
        listener.close()
    assert accepted  # it did reach the silent "hub"
    assert (done.returncode, done.stdout) == (0, b"")
    (line,) = done.stderr.decode().splitlines()
    assert "did not answer" in line, line
    assert line.endswith("printing no decision, so Claude Code asks itself"), line
