"""SettledWatch: a tool call's result found in Claude Code's transcript (JSON lines, in
the shape 2.1.328 writes: an assistant message with the ``tool_use`` block, a user
message with the ``tool_result``), fed in pieces as the file grows."""

from __future__ import annotations

import json
from typing import Any

from hive_rpc.core.claude_transcript import SettledWatch

QUESTION = {"question": "Which db?", "header": "DB", "multiSelect": False,
            "options": [{"label": "A", "description": "a"}, {"label": "B"}]}  # fmt: skip
ASK = {"questions": [QUESTION]}


START = 1795551320.0
"""The hook's start, Unix seconds: 2026-11-24T20:15:20Z."""


def line(entry: dict[str, Any], at: str = "2026-11-24T20:15:21.614Z") -> bytes:
    return json.dumps({**entry, "timestamp": at}).encode() + b"\n"


def tool_use(call_id: str, tool_input: Any = ASK, name: str = "AskUserQuestion") -> bytes:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}
    return line({"type": "assistant", "message": {"role": "assistant", "content": [block]}})


def tool_result(call_id: str, at: str = "2026-11-24T20:15:21.614Z") -> bytes:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": "The user answered"}
    return line({"type": "user", "message": {"role": "user", "content": [block]}}, at)


EARLIER = "2026-11-24T20:10:02.001Z"


META = line({"type": "permission-mode", "permissionMode": "default"})


def test_the_calls_result_settles_it_even_cut_across_reads() -> None:
    watch = SettledWatch("AskUserQuestion", ASK, START)
    assert not watch.feed(META + tool_use("toolu_1"))
    result = tool_result("toolu_1")
    assert not watch.feed(result[:20])
    assert watch.feed(result[20:])


def test_the_call_written_after_the_hook_started_reading() -> None:
    watch = SettledWatch("AskUserQuestion", ASK, START)
    assert not watch.feed(META)
    assert not watch.feed(tool_use("toolu_1"))
    assert watch.feed(tool_result("toolu_1"))


def test_an_earlier_call_with_the_same_input_already_answered_is_not_this_one() -> None:
    watch = SettledWatch("AskUserQuestion", ASK, START)
    assert not watch.feed(tool_use("toolu_1") + tool_result("toolu_1", EARLIER) + META)
    assert not watch.feed(tool_use("toolu_2"))
    assert watch.feed(tool_result("toolu_2"))


def test_answered_before_the_first_read_it_still_counts() -> None:
    """The human was quick: the call and its result are both in the first bytes read."""
    watch = SettledWatch("AskUserQuestion", ASK, START)
    assert watch.feed(META + tool_use("toolu_1") + tool_result("toolu_1"))


def test_a_result_without_a_readable_time_does_not_count() -> None:
    watch = SettledWatch("AskUserQuestion", ASK, START)
    assert not watch.feed(tool_use("toolu_1") + tool_result("toolu_1", "yesterday"))


def test_other_calls_and_other_inputs_do_not_settle_it() -> None:
    watch = SettledWatch("AskUserQuestion", ASK, START)
    assert not watch.feed(tool_use("toolu_1"))
    other_input = {"questions": []}
    assert not watch.feed(tool_use("toolu_2", other_input) + tool_result("toolu_2"))
    assert not watch.feed(tool_use("toolu_3", name="Bash") + tool_result("toolu_3"))
    assert not watch.feed(b"not json\n" + line({"message": {"content": "text"}}))
    assert watch.feed(tool_result("toolu_1"))


def test_reading_from_the_middle_of_a_line_skips_it() -> None:
    watch = SettledWatch("AskUserQuestion", ASK, START)
    assert not watch.feed(META[5:] + tool_use("toolu_1"))
    assert watch.feed(tool_result("toolu_1"))
