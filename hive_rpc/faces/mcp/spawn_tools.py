"""The spawn tools: a parent agent starts children in new tmux windows
(``spawn_subtree``, ``spawn_workers``: exomonad's names), each approved by the human
first.  The hub finds the parent from the calling process, not from anything the
agent says (agora/spawning.py); see docs/agora.md, "Spawning children"."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from hive_rpc.faces.mcp.hints import ADDS
from hive_rpc.faces.mcp.results import AgoraResult, agora_ok
from hive_rpc.faces.mcp.session import session_of
from hive_rpc.faces.mcp.tool_table import ToolTable

TOOLS = ToolTable()

TOLD = (
    "Returns at once: each child is pending until the human approves it (prompt_id). "
    "Approved, it runs in a new window of your tmux session, registered as ling "
    "YOUR_NAME.NAME (your child: its events come to you); you are told in your "
    "terminal when it runs ([CHILD SPAWNED]) or is refused ([SPAWN REFUSED]). Your "
    "terminal must be a registered ling whose approved agent is you."
)


class Worker(BaseModel):
    """One child of ``spawn_workers``."""

    name: str = Field(description="the last part of the child's ling name (auth)")
    command: list[str] = Field(description='the program and its arguments: ["claude"]')
    worktree: str | None = Field(
        default=None, description="run it in a new git worktree on this branch"
    )
    label: str | None = Field(default=None, description="what its events call it")


def _said(r: dict[str, Any]) -> str:
    lines = [
        f"{c['name']}: pending, the human must approve it (prompt {c['prompt_id']}); "
        f"runs {' '.join(c['command'])} in {c['workdir']}"
        for c in r["children"]
    ]
    return "\n".join([*lines, "You are told in your terminal when each runs or is refused."])


@TOOLS.tool(
    group="spawn",
    description=(
        "Start one child agent: command (the program and its arguments, not run by a "
        "shell) in a new tmux window, as your child NAME (ling YOUR_NAME.NAME), in a "
        "new git worktree on branch worktree when given. " + TOLD
    ),
    hints=ADDS,
)
async def spawn_subtree(
    ctx: Context,
    name: str,
    command: list[str],
    worktree: str | None = None,
    label: str | None = None,
) -> Annotated[CallToolResult, AgoraResult]:
    session = session_of(ctx)
    r = await session.call(
        "ling/spawn",
        name=name,
        command=command,
        worktree=worktree,
        label=label,
        agent_id=session.agent(ctx),
    )
    return agora_ok(r, _said(r))


@TOOLS.tool(
    group="spawn",
    description=(
        "Start several child agents at once (at most 8), each as spawn_subtree starts "
        "one; each is approved by the human on its own. " + TOLD
    ),
    hints=ADDS,
    words={"children": "workers"},
)
async def spawn_workers(
    ctx: Context, workers: list[Worker]
) -> Annotated[CallToolResult, AgoraResult]:
    session = session_of(ctx)
    r = await session.call(
        "ling/spawn",
        children=[w.model_dump(exclude_none=True) for w in workers],
        agent_id=session.agent(ctx),
    )
    return agora_ok(r, _said(r))
