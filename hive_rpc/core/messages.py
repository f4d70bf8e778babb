"""The text typed into an agent's terminal.  Pure: structured facts in, prose out.

Agents read these as messages from a collaborator, so they are natural language with
the one instruction that matters (how to reply) spelled out: the Agora's context
template around a turn, and the templates of a child's events for its parent.
Everything that came from another agent is passed through as the message body; the
relay makes the whole text safe to type (relay.text.prepare).
"""

from __future__ import annotations

import json
from typing import Any

from hive_rpc.core.dialogue import Dialogue, Turn

AGORA_TEMPLATE = """---
AGORA DIALOGUE CONTEXT
Dialogue ID: {dialogue_id}
From: {sender}
Topic: {topic}
Turn: {number} of at most {max_turns}

You are in a Nash Equilibrium dialogue. Respond via agora_dispatch:
- dialogue_id: "{dialogue_id}"
- to: "{sender}"{others}
- signal: [propose|counter|approve|no-change|defer]
- sender: "{to}"

Signals: propose/counter=reset equilibrium, approve/no-change=toward consensus
{rule}{absent}
---

{message}"""
"""The seed's compact template (its ``agora-context-template``: ~300 characters
around the message), with what a receiver cannot do without besides: the name to
send as (``sender``: an agent's id is seldom its ling's name, and a turn sent under
another id is refused), how far the dialogue may go, and the rule the hub applies.
The first version spelled out each signal's meaning and the rule at length: about
1,000 characters typed before every turn and read into the receiver's context each
time; this is about 450 with the names (issue 32)."""


CONSENSUS_RULE = (
    "Consensus: all have spoken and, since the last propose/counter, all others sent "
    "approve, no-change or defer."
)
"""The rule of core/dialogue.py (``is_consensus``) in the words the lings read; the
first wording, "when all participants signal approve/no-change", left out that a
proposer stands by its own proposal, so agents approved their own proposals back and
forth."""


def agora_turn(d: Dialogue, turn: Turn) -> str:
    """The context template around one turn's message.  Other participants
    to answer instead are suggested only when there are some (not absent ones)."""
    others = [p for p in d.present if p not in (turn.to, turn.sender)]
    return AGORA_TEMPLATE.format(
        dialogue_id=d.id,
        sender=turn.sender,
        to=turn.to,
        topic=d.topic,
        number=turn.number,
        max_turns=d.max_turns,
        others=f" (or another participant: {', '.join(others)})" if others else "",
        rule=CONSENSUS_RULE,
        absent=("\nAbsent, not counted until they speak again: " + ", ".join(d.absent))
        if d.absent
        else "",
        message=turn.message,
    )


EVENT_KINDS = (
    "child-complete",
    "child-question",
    "child-note",
    "pr-status",
    "pr-ready",
    "ci-status",
)
"""What a child reports to its parent: its completion, question and note; a review
posted on its PR (``pr-status`` with ``review``: ``[COPILOT REVIEW]``); its PR ready
(approved, the child gone dormant); a CI status change."""


def child_event(kind: str, child: str, child_name: str, fields: dict[str, Any]) -> str:
    """A child's event as its parent reads it.

    ``child`` is what the parent calls it (its label, e.g. ``auth-module``),
    ``child_name`` its full branch-like name; ``fields``: message, pr, ci, review,
    url, comments as given by the caller, and ``reviewer``: who reviewed, when not
    Copilot (the hub's watch of pull requests names the others).
    """
    message = str(fields.get("message") or "").strip()
    pr, ci, review = fields.get("pr"), fields.get("ci"), fields.get("review")
    if kind == "child-complete":
        lines = [f"[CHILD COMPLETE] Agent '{child}' on branch {child_name} has completed."]
        facts = []
        if pr is not None:
            facts.append(f"PR #{pr} filed against your branch.")
        if review:
            facts.append(f"Copilot status: {review}.")
        if ci:
            facts.append(f"CI: {ci}.")
        if facts:
            lines.append(" ".join(facts))
        if message:
            lines.append(message)
        if pr is not None:
            lines.append(f"Review with: gh pr view {pr}")
        return "\n".join(lines)
    if kind == "child-question":
        reply = json.dumps("...")
        return (
            f"[QUESTION from {child}] {message}\n"
            f"Reply with: answer_question agent={child_name} message={reply}"
        )
    if kind == "child-note":
        return f"[NOTE from {child}] {message}"
    what = f"PR #{pr} ({child})" if pr is not None else child
    comments = fields.get("comments")
    if isinstance(comments, float) and comments.is_integer():
        comments = int(comments)  # 3, not 3.0, from a JSON number
    count = "" if comments is None else f" {comments} comment{'' if comments == 1 else 's'}."
    url = f"View: {fields['url']}" if fields.get("url") else ""
    reviewer = fields.get("reviewer")  # None: Copilot, the seed's reviewer
    if kind == "pr-status" and review:
        # The template for a review posted on the child's PR; another reviewer's named.
        lines = [
            f"[COPILOT REVIEW] {what} received new Copilot review."
            if not reviewer
            else f"[PR REVIEW] {what} received a new review from {reviewer}."
        ]
        lines += [f"Status: {review}.{count}", message, url]
        return "\n".join(line for line in lines if line)
    if kind == "pr-ready":
        lines = [
            f"[PR READY] {what} on branch {child_name} is ready to merge."
            if pr is not None
            else f"[PR READY] Agent '{child}' on branch {child_name} has its PR ready to merge."
        ]
        said = f"Review: {review} by {reviewer}." if reviewer else f"Copilot status: {review}."
        facts = [said if review else "", f"CI: {ci}." if ci else ""]
        lines += [" ".join(f for f in facts if f), message, url]
        if pr is not None:
            lines.append(f"Review with: gh pr view {pr}")
        return "\n".join(line for line in lines if line)
    if kind == "pr-status":
        text = " ".join(part for part in (f"[PR STATUS] {what}.{count}", message) if part)
        return f"{text}\n{url}" if url else text
    if kind == "ci-status":
        text = f"[CI STATUS] {what}: {ci or 'unknown'}."
        return f"{text} {message}" if message else text
    raise ValueError(f"unknown event kind {kind!r}")


def answer(parent: str, message: str) -> str:
    """A parent's answer to a child's question, typed into the child's terminal."""
    return f"[ANSWER from {parent}] {message.strip()}"
