"""Claude Code's own questions (its ``AskUserQuestion`` tool), pure: how one call
becomes ONE hub prompt, and how the human's answer goes back to Claude Code.

The call reaches ``hive-rpc hook claude-code`` as a PermissionRequest whose
``tool_input.questions[]`` holds up to four questions, each with a ``header``, its
``options`` (``label`` and ``description``) and ``multiSelect``.  Claude Code's own
menu walks them as one unit (a tab per question, then "Submit answers"), and offers
"Type something" besides the options; so here they are one prompt with a schema,
a field per question in the model's order, which the editors walk as steps:

- a single-select field is a string whose ``anyOf`` lists the options (``const``
  the label, ``title`` the label, ``description`` the option's) and ends with the
  free-text entry (core/schema.py), the human's own answer;
- a multi-select field is an array of the same ``anyOf``, at least one item;
- the field's ``title`` is the question's header; its ``description`` the question
  (when there are several: one question is the prompt's own text).

A single question is such a prompt too, not a choices prompt: choices cannot carry
the options' descriptions nor take the human's own text.  Declining or deferring any
step leaves the prompt unanswered, so the whole call falls back to Claude Code's
menu.

The answer Claude Code takes (measured on 2.1.328, docs/claude-code.md): the
decision ``allow`` with ``updatedInput`` = the tool input plus ``answers``, question
text -> one string; a multi-select's picks joined with ``", "`` (its SDK's type:
"multi-select answers are comma-separated"); a typed answer as typed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hive_rpc.core.limits import MAX_QUESTION_CHARS
from hive_rpc.core.prompt import Ask, Kind
from hive_rpc.core.terminal_text import one_line

TOOL_NAME = "AskUserQuestion"
"""Claude Code's built-in tool for asking the human, as its PermissionRequest names it."""
OWN_ANSWER = "Other: type your own answer"
"""The title of each field's free-text entry (Claude Code's menu says "Type something")."""
OWN_ENTRY = {"type": "string", "title": OWN_ANSWER}
"""Each field's last choice: one's own answer, typed."""
MULTI_JOIN = ", "
"""How Claude Code joins a multi-select's labels in ``answers`` (its own menu's answer
reached the model as ``"Which features?"="Alpha, Beta"``)."""
DETAIL_CUT = "\n[... cut]"


@dataclass(frozen=True)
class Option:
    label: str
    description: str


@dataclass(frozen=True)
class Question:
    """One of the call's questions, as the model wrote it."""

    text: str
    header: str
    options: tuple[Option, ...]
    multi: bool


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def parse_questions(tool_input: object) -> list[Question] | None:
    """The call's questions, or None when the input is not one Claude Code's menu
    would show as we mean to (no questions, a question without text or options, an
    option without a label, two questions with the same text: the answers are keyed
    by it): then the hook leaves the call to that menu."""
    raw = tool_input.get("questions") if isinstance(tool_input, Mapping) else None
    if not isinstance(raw, list) or not raw:
        return None
    questions = []
    for q in raw:
        if not isinstance(q, Mapping) or _text(q.get("question")) is None:
            return None
        options = q.get("options")
        if not isinstance(options, list) or not options:
            return None
        parsed = []
        for o in options:
            label = _text(o.get("label")) if isinstance(o, Mapping) else None
            if label is None:
                return None
            description = o.get("description")
            parsed.append(Option(label, description if isinstance(description, str) else ""))
        header = q.get("header")
        questions.append(
            Question(
                text=q["question"],
                header=header if isinstance(header, str) else "",
                options=tuple(parsed),
                multi=q.get("multiSelect") is True,
            )
        )
    if len({q.text for q in questions}) != len(questions):
        return None
    return questions


def field_name(index: int) -> str:
    """The schema field of the question at ``index``: ``q1``, ``q2`` ... (question
    texts make poor keys: long, any characters)."""
    return f"q{index + 1}"


def question_field(question: Question, *, several: bool) -> dict[str, Any]:
    """The schema property asking ``question``."""
    choices: list[dict[str, Any]] = [
        {
            "const": o.label,
            "title": o.label,
            **({"description": o.description} if o.description else {}),
        }
        for o in question.options
    ]
    choices.append(dict(OWN_ENTRY))
    prop: dict[str, Any] = {"title": one_line(question.header or question.text)}
    if several:
        prop["description"] = question.text
    if question.multi:
        prop.update(type="array", items={"anyOf": choices}, minItems=1)
    else:
        prop.update(type="string", anyOf=choices)
    return prop


def questions_schema(questions: Sequence[Question]) -> dict[str, Any]:
    several = len(questions) > 1
    return {
        "type": "object",
        "properties": {
            field_name(i): question_field(q, several=several) for i, q in enumerate(questions)
        },
        "required": [field_name(i) for i in range(len(questions))],
    }


def is_questions_schema(schema: object) -> bool:
    """Whether ``schema`` has the shape ``questions_schema`` gives it (fields ``q1``,
    ``q2`` ..., each ending in one's own answer): how the audit trail names a closed
    prompt's tool ``AskUserQuestion``.  A label, not a proof: any client may ask
    with this shape."""
    if not isinstance(schema, Mapping):
        return False
    fields = schema.get("properties")
    if not isinstance(fields, Mapping) or not fields:
        return False
    for index, (name, field) in enumerate(fields.items()):
        if name != field_name(index) or not isinstance(field, Mapping):
            return False
        items = field.get("items")
        choices = items.get("anyOf") if isinstance(items, Mapping) else field.get("anyOf")
        if not isinstance(choices, Sequence) or not choices or choices[-1] != OWN_ENTRY:
            return False
    return True


def questions_detail(questions: Sequence[Question]) -> str:
    """Every question with its options and their descriptions, as text: where an
    editor shows a prompt's detail, the human reads them all before answering."""
    lines = []
    for q in questions:
        kind = " (pick one or more)" if q.multi else ""
        lines.append(f"{q.header}: {q.text}{kind}" if q.header else q.text + kind)
        lines += [
            f"  - {o.label}" + (f": {o.description}" if o.description else "") for o in q.options
        ]
        lines.append(f"  - {OWN_ANSWER}")
        lines.append("")
    detail = "\n".join(lines).strip()
    if len(detail) > MAX_QUESTION_CHARS:
        detail = detail[: MAX_QUESTION_CHARS - len(DETAIL_CUT)] + DETAIL_CUT
    return detail


def questions_ask(questions: Sequence[Question], *, agent_id: str, timeout_s: float) -> Ask:
    """The one prompt asking the whole call: a permission prompt (only an approver
    answers what an agent goes on with, docs/security.md), not urgent (the model
    waits, nothing runs)."""
    if len(questions) == 1:
        text = questions[0].text
    else:
        text = f"Claude Code asks {len(questions)} questions: " + "; ".join(
            one_line(q.header or q.text) for q in questions
        )
    return Ask(
        question=text[:MAX_QUESTION_CHARS],
        schema=questions_schema(questions),
        timeout_s=timeout_s,
        agent_id=agent_id,
        kind=Kind.PERMISSION,
        detail=questions_detail(questions),
    )


def claude_answers(questions: Sequence[Question], answer: object) -> dict[str, str] | None:
    """``updatedInput.answers`` for the human's schema answer (question text -> one
    string), or None when the answer does not answer every question."""
    if not isinstance(answer, Mapping):
        return None
    answers: dict[str, str] = {}
    for i, q in enumerate(questions):
        value = answer.get(field_name(i))
        if isinstance(value, list) and value and all(_text(v) for v in value):
            answers[q.text] = MULTI_JOIN.join(value)
        elif _text(value) is not None:
            answers[q.text] = str(value)
        else:
            return None
    return answers


def answered_input(tool_input: Mapping[str, Any], answers: Mapping[str, str]) -> dict[str, Any]:
    """The tool input Claude Code runs: as the model sent it, plus the answers."""
    return {**tool_input, "answers": dict(answers)}
