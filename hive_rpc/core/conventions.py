"""Names the hub and its clients agree on, in a module that imports nothing.

``hive-rpc list``, ``poll``, ``cancel`` and ``answer`` need these three and nothing
else of core/prompt.py, whose dataclasses and checks were 12 ms of each such command's
start (one-shot commands import only what they use); core/prompt.py re-exports
them for the hub's service.
"""

from __future__ import annotations

DEFAULT_AGENT = "anonymous"
"""The ``agent_id`` of a question whose asker named none."""
HUMAN = "human"
"""The ``by`` recorded when an answer comes from an editor or the CLI without a name."""
MIN_ID_PREFIX = 4
"""``hive/lookup`` wants this much of an id: fewer would match too much to be useful."""
HUB_AGENT = "hive-rpc"
"""The ``agent_id`` of the hub's own prompts (the consent questions of the relay): only
the human answers them, and no client may ask under this name."""
RESERVED_AGENTS = frozenset({HUB_AGENT, HUMAN, "dashboard", "rule", "nobody", "hub"})
"""Names no agent may ask as: the hub's own (``HUB_AGENT``) and the ``by`` the hub
records for the human's and its own decisions.  A question asked as ``hive-rpc`` would
look exactly like the hub's consent prompt on every screen."""
PERMISSION = "permission"
"""The ``kind`` of an agent's permission request (``hive-rpc hook claude-code``)."""


def reserved_agent(agent_id: str) -> bool:
    """Whether no agent may ask as ``agent_id``: a reserved name, or any name holding
    ``hive-rpc`` once folded (NFKC, case), so nothing an agent names itself reads like
    :data:`HUB_LABEL`, the way every face names the hub's own questions.  Linear."""
    import unicodedata  # here: the CLI's one-shot commands import this module

    folded = unicodedata.normalize("NFKC", agent_id).casefold()
    return folded in RESERVED_AGENTS or HUB_AGENT in folded


def human_only(kind: object, agent_id: object) -> bool:
    """Whether only the human (an approver: service/approver.py) may answer a prompt of
    this ``kind`` asked by ``agent_id``: an agent's permission request, or one of the
    hub's own questions (consent to type into a terminal).  The agent's credential (the
    MCP token, the bare socket) answers neither (docs/security.md)."""
    return kind == PERMISSION or agent_id == HUB_AGENT


HUB_LABEL = "the hub itself (hive-rpc)"
"""How every face names the asker of the hub's own questions: since no agent may ask
as ``hive-rpc``, a question shown so is the hub's, not text an agent wrote to look
like it (Emacs, VS Code and the dashboard spell it the same)."""


def asker_label(agent_id: str) -> str:
    """The asker as a person reads it: :data:`HUB_LABEL` for the hub's own questions."""
    return HUB_LABEL if agent_id == HUB_AGENT else agent_id
