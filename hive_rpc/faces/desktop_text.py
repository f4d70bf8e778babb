"""What a desktop notification says, pure: which session asks, what it needs, which
actions it offers, and the summary that holds the rest (desktop_pacing.py).  The
desktop face (desktop_notify.py) sends it over D-Bus or ``notify-send``.

Text from agents is never interpreted: control characters and escape sequences are
stripped, the body's ``&`` and ``<`` are escaped (daemons such as dunst read body
markup even when they do not advertise ``body-markup``), and names in the summary
lose ``<``, ``>`` and ``&`` (the specification says summaries are plain text, which
dunst honours by escaping them itself, so escaping would show ``&lt;``).
"""

from __future__ import annotations

from hive_rpc.agora.lings import DENY as CONSENT_DENY
from hive_rpc.core.agents import AGENTS, Agent
from hive_rpc.core.conventions import HUB_AGENT, asker_label, human_only
from hive_rpc.core.prompt import Kind, Prompt
from hive_rpc.core.terminal_text import one_line, strip_controls
from hive_rpc.runtime.activity import Entry

APP_NAME = "hive-rpc"
DEFAULT_ACTION = "default"
DEFAULT_LABEL = "hive-rpc"
CHOICE_PREFIX = "choice:"
MAX_BODY_CHARS = 2000

PERMISSION_NOTE = "Deny it here, or answer it in your editor, which shows the whole input."
"""Ends a permission's body: the notification never allows (docs/security.md)."""
NO_DENY_NOTE = "Answer it in your editor, which shows the whole input."
"""Ends the body of a question only the human answers that has no Deny to offer."""
DENY_ACTION = "deny"
DENY_LABEL = "Deny"
SOUND = {"sound-name": ("s", "message-new-instant")}
"""The freedesktop sound theme's name for "someone wants you" (daemons that play
sounds: GNOME, KDE); a new notification carries it, an update in place does not."""
QUIET = {"suppress-sound": ("b", True)}
SUMMARY_LINES = 5
"""Questions the summary lists by name; it counts the rest."""
SUMMARY_LINE_CHARS = 160


def wants_notification(prompt: Prompt) -> bool:
    """Whether ``prompt`` needs the human now: an urgent question, or any question
    only the human may answer for an agent that waits on it (a permission request,
    Claude Code's own question, AskUserQuestion, which is not urgent but stops the
    session's turn).  An ordinary question is not: its agent keeps working
    (``hivemind_ask_async``) unless it asked urgently."""
    return prompt.is_pending and (prompt.urgent or prompt.kind is Kind.PERMISSION)


def _plain(text: str) -> str:
    """One line with no character markup could act on (summaries are plain text)."""
    return one_line(text).translate({ord(c): None for c in "<>&"})


def _markup(text: str) -> str:
    """Body text as inert markup: ``&`` and ``<`` escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;")


def agent_of(agent_id: str) -> Agent | None:
    """The agent program an id names by its prefix (``claude-code-4242``,
    ``codex-e26ee0``: core/agents.py), or None for any other name."""
    return next((a for a in AGENTS.values() if agent_id.startswith(a.name + "-")), None)


def session_label(prompt: Prompt) -> str:
    """Which session asks, as the human tells them apart: the agent program, the
    project dir the hub found (``origin``, never the asker's word) and the agent id,
    ``Claude Code in ~/src/app (claude-code-4242)``; the hub's own questions as
    every face names them."""
    if prompt.agent_id == HUB_AGENT:
        return asker_label(prompt.agent_id)
    agent = agent_of(prompt.agent_id)
    name = _plain(prompt.agent_id) or "an agent"
    where = f" in {_plain(prompt.origin)}" if prompt.origin else ""
    if agent is None:
        return f"{name}{where}"
    return f"{agent.display}{where} ({name})"


def _asks_permission(prompt: Prompt) -> bool:
    return prompt.kind is Kind.PERMISSION and bool(prompt.choices)


def summary_text(prompt: Prompt) -> str:
    """``SESSION asks permission`` (a tool use) or ``SESSION needs input``."""
    verb = "asks permission" if _asks_permission(prompt) else "needs input"
    return f"{session_label(prompt)} {verb}"


def body_text(prompt: Prompt) -> str:
    """What it needs: the question (a permission's one head line: the tool and what it
    runs) as inert text, bounded; for a question only the human answers, what the
    notification can and cannot do about it."""
    text = strip_controls(prompt.question).strip()
    if len(text) > MAX_BODY_CHARS:
        text = text[: MAX_BODY_CHARS - 1] + "…"
    if human_only(prompt.kind.value, prompt.agent_id):
        note = PERMISSION_NOTE if deny_choice(prompt) is not None else NO_DENY_NOTE
        text = f"{text}\n\n{note}"
    return _markup(text)


def deny_choice(prompt: Prompt) -> str | None:
    """The choice a notification's Deny sends for a question only the human answers:
    the first whose decision is ``deny`` and that saves nothing lasting (no
    ``confirm``); for the hub's own consent question, ``deny``.  None when there is
    none, and for every other question (their choices are buttons of their own)."""
    if not human_only(prompt.kind.value, prompt.agent_id):
        return None
    choices = prompt.choices or ()
    decisions = prompt.decisions or {}
    lasting = {c.get("choice") for c in prompt.confirm or ()}
    for choice in choices:
        if decisions.get(choice) == "deny" and choice not in lasting:
            return choice
    if prompt.agent_id == HUB_AGENT and not decisions and CONSENT_DENY in choices:
        return CONSENT_DENY
    return None


def answer_choices(prompt: Prompt) -> tuple[str, ...]:
    """The choices a notification's buttons answer: an ordinary question's, which the
    agent's own credential may answer too; none of a question only the human answers
    (its Deny is ``deny_choice``)."""
    if human_only(prompt.kind.value, prompt.agent_id):
        return ()
    return prompt.choices or ()


def action_list(prompt: Prompt) -> list[str]:
    """The flat ``[key, label, ...]`` list: one button per choice, or Deny; then
    ``default``.  Never Allow (docs/security.md: the hub cannot tell a click from a
    script that drives the daemon)."""
    actions: list[str] = []
    for index, choice in enumerate(answer_choices(prompt)):
        actions += [f"{CHOICE_PREFIX}{index}", one_line(choice) or "(empty)"]
    if deny_choice(prompt) is not None:
        actions += [DENY_ACTION, DENY_LABEL]
    return [*actions, DEFAULT_ACTION, DEFAULT_LABEL]


def held_summary(held: list[Prompt], alone: int) -> tuple[str, str]:
    """The summary notification's summary and body for the questions it holds:
    ``N more sessions wait on you`` (``N sessions`` when none is shown on its own,
    ``alone`` counting those), then a line per question, the first few."""
    sessions = len({p.agent_id for p in held})
    more = " more" if alone else ""
    noun = "session waits" if sessions == 1 else "sessions wait"
    summary = f"{sessions}{more} {noun} on you"
    if len(held) > sessions:
        summary += f" ({len(held)} questions)"
    lines = []
    for prompt in held[:SUMMARY_LINES]:
        line = f"{session_label(prompt)}: {one_line(strip_controls(prompt.question))}"
        if len(line) > SUMMARY_LINE_CHARS:
            line = line[: SUMMARY_LINE_CHARS - 1] + "…"
        lines.append(line)
    if len(held) > SUMMARY_LINES:
        lines.append(f"and {len(held) - SUMMARY_LINES} more: hive-rpc list, or your editor")
    return summary, _markup("\n".join(lines))


def is_urgent_notice(entry: Entry) -> bool:
    return entry.kind == "notice" and entry.data.get("urgent") is True


def notice_summary(entry: Entry) -> str:
    """``AGENT needs you``, as inert as a prompt's summary."""
    agent = str(entry.data.get("agent_id") or entry.key)
    name = one_line(agent).translate({ord(c): None for c in "<>&"}) or "an agent"
    return f"{name} needs you"


def notice_body(entry: Entry) -> str:
    """The notice's message, and where the agent works, as inert text."""
    text = strip_controls(str(entry.data.get("message") or "")).strip()
    if entry.data.get("cwd"):
        text += f"\n(in {one_line(str(entry.data['cwd']))})"
    if len(text) > MAX_BODY_CHARS:
        text = text[: MAX_BODY_CHARS - 1] + "…"
    return text.replace("&", "&amp;").replace("<", "&lt;")


def notice_notify_send_argv(program: str, entry: Entry) -> list[str]:
    return [
        program,
        "-u",
        "normal",
        "-a",
        APP_NAME,
        "--",
        notice_summary(entry),
        notice_body(entry),
    ]


def notify_send_argv(program: str, prompt: Prompt) -> list[str]:
    """``notify-send`` arguments; ``--`` keeps a summary such as ``-u low`` from
    being read as an option."""
    return [
        program,
        "-u",
        "critical",
        "-a",
        APP_NAME,
        "--",
        summary_text(prompt),
        body_text(prompt),
    ]
