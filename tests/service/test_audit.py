"""The audit trail (core/audit.py, service/audit.py): every permission decision is one
entry, made by the hub itself, durable in its store, on the activity stream, and
listed by ``audit/list``.  Over the real editor socket of a real hub (SQLite); the
NATS store's round trip is in tests/store/test_audit_nats.py."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import trio
from waiting import logged

from hive_rpc.cli.hook import permission_ask
from hive_rpc.client.async_client import HubClient
from hive_rpc.core import lifecycle
from hive_rpc.core.audit import AuditEntry, from_prompt, select, to_prune
from hive_rpc.core.errors import InvalidParams, StoreWriteFailed
from hive_rpc.core.prompt import Action, Ask, new_prompt
from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.runtime.registry import open_registry
from hive_rpc.service import HubService
from hive_rpc.service.approver import APPROVER
from hive_rpc.service.audit import AUDIT_DOC, record_decisions, trail
from hive_rpc.store import MemoryStore

SESSION = "3f2a9c1d-5b7e-4c1a-9d2f-0e8b6a4c2d10"
EVENT = {
    "session_id": SESSION,
    "cwd": "/home/me/src/app",
    "hook_event_name": "PermissionRequest",
    "tool_name": "Bash",
    "tool_input": {"command": "npm test", "description": "Run the tests"},
}


def hook_ask() -> Ask:
    """The question the hook asks for EVENT (its own code, so a change of wording
    that the trail no longer reads fails here)."""
    return permission_ask(EVENT, timeout_s=300, home="/home/me")


async def as_approver(c: HubClient) -> None:
    """Make ``c`` an approver where the hub has them (issue 15's approver token)."""
    try:
        from hive_rpc.client.async_client import prove_approver  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return
    assert await prove_approver(c.call) is None


async def recorded(hub: HubService, prompt_id: str) -> None:
    """Until the hub has recorded the decision on ``prompt_id``: its own task does it
    a moment after the answer, then logs it."""
    await logged(hub.activity, lambda e: e.kind == "audit" and e.key == prompt_id, within_s=10)


# --- pure -------------------------------------------------------------------------


def test_a_permission_prompt_closing_is_an_entry_a_question_is_not() -> None:
    asked = new_prompt(hook_ask(), now=1000.0)
    assert from_prompt(asked) is None  # pending: not a decision yet
    answered = lifecycle.respond(
        asked, answer="allow for this session", by="emacs", action=Action.ACCEPT, now=1002.5
    )
    entry = from_prompt(answered)
    assert entry is not None
    assert entry.record() == {
        "id": asked.id,
        "at": 1002.5,
        "source": "human",
        "decision": "allow",
        "by": "emacs",
        "latency_s": 2.5,
        "tool": "Bash",
        "summary": "npm test",
        "prompt_id": asked.id,
        "agent_id": "claude-code-3f2a9c1d",
        "answer": "allow for this session",
        "status": "responded",
        "action": "accept",
        "rule_id": None,
        "rule_pattern": None,
        "rule_scope": None,
        "session_id": None,
        "project": None,
    }
    assert AuditEntry.from_record(entry.record()) == entry
    for bad in ({}, {"id": "x", "at": "soon"}, {"id": "x", "at": 1.0}, ["x"]):
        with pytest.raises(ValueError, match="not an audit entry"):
            AuditEntry.from_record(bad)
    declined = lifecycle.respond(asked, answer=None, by="vscode", action=Action.DECLINE, now=1001)
    assert from_prompt(declined).decision == "none"  # type: ignore[union-attr]
    expired = from_prompt(lifecycle.expire(asked, now=1300.0))
    assert expired is not None
    assert (expired.by, expired.decision, expired.status) == ("nobody", "none", "expired")
    question = new_prompt(Ask(question="Deploy?", choices=["yes", "no"]), now=1000.0)
    answered = lifecycle.respond(question, answer="yes", by="h", action=Action.ACCEPT, now=1001)
    assert from_prompt(answered) is None


def test_select_and_prune_keep_the_newest() -> None:
    def entry(i: int) -> AuditEntry:
        return AuditEntry(f"e{i}", float(i), "rule", "allow", "rule", 0.0, "Bash", "ls")

    entries = [entry(i) for i in (5, 1, 3, 4, 2)]
    assert [e.id for e in select(entries, since=2.0, limit=3)] == ["e3", "e4", "e5"]
    assert [e.id for e in select(entries, since=None, limit=10)] == [
        "e1", "e2", "e3", "e4", "e5",
    ]  # fmt: skip
    assert to_prune({e.id: e.at for e in entries}, 3) == ["e1", "e2"]
    assert to_prune({"a": 1.0}, 3) == []


# --- a real hub -------------------------------------------------------------------


async def test_a_human_answer_and_a_rule_match_each_give_one_entry_kept_over_a_restart(
    hub_config: HubConfig,
) -> None:
    async with trio.open_nursery() as nursery:
        service: HubService = await nursery.start(run_hub, hub_config)
        async with await HubClient.connect(hub_config.socket) as c:
            await as_approver(c)
            first_id = service.activity.last_id
            # 1. A human allows from an editor.
            asked = await c.call("hive/ask", hook_ask().params())
            answered = await c.call(
                "hive/respond", {"id": asked["id"], "answer": "allow", "by": "emacs"}
            )
            await recorded(service, asked["id"])
            (human,) = await c.call("audit/list", {})
            assert human["id"] == human["prompt_id"] == asked["id"]
            assert (human["source"], human["decision"], human["by"]) == ("human", "allow", "emacs")
            assert (human["tool"], human["summary"]) == ("Bash", "npm test")
            assert human["latency_s"] == pytest.approx(
                answered["answered_at"] - asked["created_at"]
            )
            # 2. A rule answers: one entry, with the rule's id, recorded before the answer.
            rule = await c.call(
                "rule/add",
                {"pattern": "Bash(npm run lint:*)", "decision": "deny", "scope": "project",
                 "where": "/home/me/src"},
            )  # fmt: skip
            use = {"tool_name": "Bash", "tool_input": {"command": "npm run lint -- --fix"},
                   "session_id": SESSION, "project": "/home/me/src/app"}  # fmt: skip
            before = time.monotonic()
            checked = await c.call("rule/check", use)
            took = time.monotonic() - before
            assert checked["rule"]["id"] == rule["id"]
            entries = await c.call("audit/list", {})
            assert [e["source"] for e in entries] == ["human", "rule"]
            by_rule = entries[1]
            assert by_rule["id"].startswith("rule-")
            assert {k: by_rule[k] for k in ("decision", "by", "tool", "summary", "rule_id",
                                            "rule_pattern", "rule_scope", "session_id",
                                            "project", "prompt_id")} == {
                "decision": "deny", "by": "rule", "tool": "Bash",
                "summary": "npm run lint -- --fix", "rule_id": rule["id"],
                "rule_pattern": "Bash(npm run lint:*)", "rule_scope": "project",
                "session_id": SESSION, "project": "/home/me/src/app", "prompt_id": None,
            }  # fmt: skip
            assert 0 <= by_rule["latency_s"] <= took  # the check's own time, within the call
            # no match: no decision, no entry (rule/check records before it answers)
            await c.call("rule/check", {**use, "tool_input": {"command": "ls"}})
            assert len(await c.call("audit/list", {})) == 2
            # the activity stream carried both, as kind audit
            on_stream = [
                e.record() for e in service.activity.since(first_id) or [] if e.kind == "audit"
            ]
            assert [(e["event"], e["key"]) for e in on_stream] == [
                ("audit/human", asked["id"]),
                ("audit/rule", by_rule["id"]),
            ]
            assert on_stream[0]["decision"] == "allow"
            # since / limit
            assert await c.call("audit/list", {"since": by_rule["at"]}) == [by_rule]
            assert await c.call("audit/list", {"limit": 1}) == [by_rule]
            with pytest.raises(InvalidParams, match="limit"):
                await c.call("audit/list", {"limit": 0})
            # A question closing is no entry: the recorder takes closings in order, so
            # once it has recorded a permission prompt closed after it, the question
            # has had its turn.
            q = await c.call("hive/ask", {"question": "Lunch?", "choices": ["yes", "no"]})
            await c.call("hive/respond", {"id": q["id"], "answer": "yes"})
            later = await c.call("hive/ask", hook_ask().params())
            await c.call("hive/respond", {"id": later["id"], "answer": "deny", "by": "emacs"})
            await recorded(service, later["id"])
            entries = await c.call("audit/list", {})
            assert [e["id"] for e in entries] == [asked["id"], by_rule["id"], later["id"]]
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:  # the store kept them
        await nursery.start(run_hub, hub_config)
        async with await HubClient.connect(hub_config.socket) as c:
            assert await c.call("audit/list", {}) == entries
        nursery.cancel_scope.cancel()


async def test_the_store_keeps_only_the_newest_entries(hub: HubService, client: HubClient) -> None:
    await as_approver(client)
    trail(hub).keep = 3
    await client.call("rule/add", {"pattern": "Read", "decision": "allow", "scope": "global"})
    for i in range(5):
        await client.call(
            "rule/check", {"tool_name": "Read", "tool_input": {"file_path": f"/f{i}"}}
        )
    kept = await client.call("audit/list", {})
    assert [e["summary"] for e in kept] == ["/f2", "/f3", "/f4"]
    assert len(await hub.registry.store.documents(AUDIT_DOC)) == 3
    # a document that is no entry (by hand, a future version) is skipped, not fatal
    await hub.registry.store.put_document(AUDIT_DOC, "odd", {"id": "odd", "at": "never"})
    assert await client.call("audit/list", {}) == kept


async def test_a_rule_from_a_prompt_names_it_and_must_agree_with_its_answer(
    hub: HubService, client: HubClient
) -> None:
    await as_approver(client)
    asked = await client.call("hive/ask", hook_ask().params())
    await client.call("hive/respond", {"id": asked["id"], "answer": "allow for this session"})
    rule = await client.call(
        "rule/add",
        {"pattern": "Bash(npm test)", "decision": "allow", "scope": "session", "where": SESSION,
         "from_prompt": asked["id"]},
    )  # fmt: skip
    assert rule["from_prompt"] == asked["id"]
    assert (await client.call("rule/list", {}))[0]["from_prompt"] == asked["id"]
    by_hand = await client.call("rule/add", {"pattern": "Read", "decision": "allow",
                                             "scope": "global"})  # fmt: skip
    assert by_hand["from_prompt"] is None
    wrong = {"pattern": "Bash", "decision": "deny", "scope": "global"}
    with pytest.raises(InvalidParams, match="did not answer deny"):
        await client.call("rule/add", {**wrong, "from_prompt": asked["id"]})
    with pytest.raises(InvalidParams, match="no prompt"):
        await client.call("rule/add", {**wrong, "from_prompt": "0123456789abcdef"})
    question = await client.call("hive/ask", {"question": "Lunch?", "choices": ["allow", "no"]})
    await client.call("hive/respond", {"id": question["id"], "answer": "allow"})
    with pytest.raises(InvalidParams, match="permission"):
        await client.call("rule/add", {**wrong, "decision": "allow", "from_prompt": question["id"]})


class AuditRefused(MemoryStore):
    """A store whose disk is full for audit documents only."""

    refuse = True

    async def put_document(self, kind: str, key: str, body: dict[str, Any]) -> None:
        if kind == AUDIT_DOC and self.refuse:
            raise StoreWriteFailed("memory", "database or disk is full")
        await super().put_document(kind, key, body)


async def test_a_decision_the_store_cannot_record_is_not_given() -> None:
    """A rule's decision is recorded before it is given: a full store refuses the check
    (the hook then prints nothing and Claude Code asks itself).  A human's decision,
    recorded after the answer, makes the hub degraded until a record works again, and is
    kept and saved then."""
    store = AuditRefused()
    async with open_registry(store) as registry:
        hub = HubService(registry)
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                await nursery.start(record_decisions, hub)
                APPROVER.set(True)
                await hub.call("rule/add", {"pattern": "Read", "decision": "allow",
                                            "scope": "global"})  # fmt: skip
                use = {"tool_name": "Read", "tool_input": {"file_path": "/x"}}
                with pytest.raises(StoreWriteFailed):
                    await hub.call("rule/check", use)
                asked = await hub.call("hive/ask", json.loads(json.dumps(hook_ask().params())))
                await hub.call("hive/respond", {"id": asked["id"], "answer": "deny"})
                full = "store: database or disk is full"
                assert await registry.health(None) == full  # waits for the recorder
                assert list(registry.degraded) == ["audit"]
                store.refuse = False
                assert (await hub.call("rule/check", use))["decision"] == "allow"
                asked = await hub.call("hive/ask", json.loads(json.dumps(hook_ask().params())))
                await hub.call("hive/respond", {"id": asked["id"], "answer": "allow"})
                assert await registry.health(full) is None
                await recorded(hub, asked["id"])  # a moment after the answer
                entries = await hub.call("audit/list", {})
                # the deny made while the store was full was kept and saved since; the
                # refused check was no decision
                assert [(e["source"], e["decision"]) for e in entries] == [
                    ("human", "deny"), ("rule", "allow"), ("human", "allow"),
                ]  # fmt: skip
                nursery.cancel_scope.cancel()
