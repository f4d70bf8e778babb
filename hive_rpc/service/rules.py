"""Answer rules for permission requests (core/rules.py), kept in the hub's store as
documents of kind ``rule`` so every hub sharing the store applies the same ones.

``rule/check`` is what a permission hook asks first: the rule that answers this
tool use, or null (ask the human).  Rules answer permissions only, never an
agent's question.  Each handler is attached to its row by name (``@handles``; the
rows are data in protocol/methods.py)."""

from __future__ import annotations

import secrets
from typing import Any

from hive_rpc.core.audit import from_rule, human_decision
from hive_rpc.core.errors import InvalidParams, LimitReached, PromptNotFound
from hive_rpc.core.prompt import Kind
from hive_rpc.core.rules import MAX_RULES, Rule, decide, new_rule
from hive_rpc.service.approver import require_approver
from hive_rpc.service.audit import new_rule_entry_id, trail
from hive_rpc.service.hub import HubService
from hive_rpc.service.table import handles

RULE_DOC = "rule"
"""The store's document kind for rules."""


async def load_rules(hub: HubService) -> list[Rule]:
    return [Rule.from_record(body) for body in await hub.registry.store.documents(RULE_DOC)]


@handles("rule/add")
async def add(hub: HubService, p: dict[str, Any]) -> dict[str, Any]:
    require_approver(hub, "add an answer rule")
    rules = await load_rules(hub)
    if len(rules) >= MAX_RULES:
        raise LimitReached(
            f"the hub keeps {MAX_RULES} rules at most (limit rules); remove some first",
            limit="rules",
            max=MAX_RULES,
        )
    rule = new_rule(
        secrets.token_hex(6),
        p["pattern"],
        p["decision"],
        p["scope"],
        p.get("where"),
        made_by=p.get("by") or "human",
        now=hub.registry.now(),
        from_prompt=p.get("from_prompt"),
    )
    if rule.from_prompt is not None:
        await _check_from_prompt(hub, rule)
    await hub.registry.store.put_document(RULE_DOC, rule.id, rule.record())
    return rule.record()


async def _check_from_prompt(hub: HubService, rule: Rule) -> None:
    """A rule that says a prompt's answer made it must be what that answer said: the
    prompt is a permission prompt, answered, with the rule's decision.  So ``rules
    list`` and the audit trail can be read together."""
    assert rule.from_prompt is not None
    try:
        prompt = await hub.registry.poll(rule.from_prompt)
    except PromptNotFound:
        raise InvalidParams(
            f"from_prompt: no prompt {rule.from_prompt!r}", param="from_prompt"
        ) from None
    if prompt.kind is not Kind.PERMISSION or human_decision(prompt) != rule.decision:
        raise InvalidParams(
            f"from_prompt: prompt {prompt.id} did not answer {rule.decision} to a "
            "permission request",
            param="from_prompt",
        )


@handles("rule/list")
async def list_rules(hub: HubService, p: dict[str, Any]) -> list[dict[str, Any]]:
    return [r.record() for r in sorted(await load_rules(hub), key=lambda r: r.created_at)]


@handles("rule/remove")
async def remove(hub: HubService, p: dict[str, Any]) -> dict[str, Any]:
    require_approver(hub, "remove an answer rule")
    removed = await hub.registry.store.delete_document(RULE_DOC, p["id"])
    return {"id": p["id"], "removed": removed}


@handles("rule/check")
async def check(hub: HubService, p: dict[str, Any]) -> dict[str, Any] | None:
    started = hub.registry.now()
    tool_input = p.get("tool_input") or {}
    if not all(isinstance(k, str) for k in tool_input):
        raise InvalidParams("tool_input must be an object", param="tool_input")
    rule = decide(
        await load_rules(hub),
        p["tool_name"],
        tool_input,
        session=p.get("session_id"),
        project=p.get("project"),
    )
    if rule is None:
        return None
    now = hub.registry.now()
    entry = from_rule(
        new_rule_entry_id(),
        rule,
        p["tool_name"],
        tool_input,
        session=p.get("session_id"),
        project=p.get("project"),
        at=now,
        latency_s=now - started,
    )
    # Recorded before it is given: a decision the store cannot record is not given
    # (the hook then prints nothing, and Claude Code asks in its own dialog).
    await trail(hub).record(entry)
    return {"decision": rule.decision, "rule": rule.record()}
