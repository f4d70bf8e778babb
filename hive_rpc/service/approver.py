"""Who may approve: answer a permission prompt, add or remove an answer rule.

An agent's own tools (Claude Code's Bash) run as the same user as the hub and can
open its socket, so a hub that took any client's word could be asked by an agent to
answer its own permission prompt, or to add a rule allowing everything.  Those
methods therefore want an *approver*: a connection that proved it can read the
approver token (``paths.approver_token_file``, 0600 in the hub's data dir), a file
an agent's sandbox is configured not to read (docs/security.md says what this stops
and what it does not).

The human's credential is this token; the agent's is the bare socket or the MCP
token (``DATA_DIR/mcp-token``), and the two never mix: the dashboard signs in with
this file, not the MCP token (faces/mcp/http.py), so nothing an agent holds answers
what only the human decides (``core.conventions.human_only``).

The proof is per connection: the editor socket runs ``hive/proveApprover`` (a
connection-scoped row, service/prompts.py) through ``check_token`` and then marks
every request of that connection in ``APPROVER``, as it marks the caller in
relay/consent.py's ``CALLER``.  A face that never proves (MCP over stdio or HTTP,
the web routes without the human's sign-in) leaves it False, so a face added later
is refused, not trusted.
"""

from __future__ import annotations

import secrets
from contextvars import ContextVar
from typing import TYPE_CHECKING

from hive_rpc.core.errors import NotAnApprover

if TYPE_CHECKING:
    from hive_rpc.service.hub import HubService

APPROVER: ContextVar[bool] = ContextVar("hive_rpc_approver", default=False)
"""Whether the current request comes from a connection that proved it is an approver."""


def _where(hub: HubService) -> str:
    return hub.info.approver_token_file or "the hub's data dir (approver-token)"


def check_token(hub: HubService, token: str) -> None:
    """Return if ``token`` is the hub's approver token, else raise NotAnApprover."""
    expected = hub.approver_token
    if expected is None:
        raise NotAnApprover("this hub keeps no approver token, so no connection can prove it")
    if not secrets.compare_digest(token.encode(), expected.encode()):
        raise NotAnApprover(
            f"wrong approver token: send the contents of {_where(hub)} (the hub makes a new "
            "one when it starts with that file missing)",
            token_file=hub.info.approver_token_file,
        )


def require_approver(hub: HubService, what: str) -> None:
    """Raise NotAnApprover, saying how to become one, unless the current request's
    connection proved it is an approver."""
    if APPROVER.get():
        return
    raise NotAnApprover(
        f"only an approver may {what}: this connection has not proved it is one (it holds "
        "an agent's credential: the socket or the MCP token, not the human's). An editor "
        f"proves it with hive/proveApprover and the token in {_where(hub)} (hive-rpc answer "
        "and the editors do so when they can read that file; the dashboard signs in with "
        "that file too); an agent cannot approve its own tool use or terminal",
        token_file=hub.info.approver_token_file,
        lacks="approver",
    )


__all__ = ["APPROVER", "check_token", "require_approver"]
