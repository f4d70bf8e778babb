"""Which agent process a process runs under, as /proc says (Linux; elsewhere None).

An agent (Codex, Gemini CLI) starts its MCP server (``hive-rpc mcp``) and runs its
hooks as its own descendants, maybe through a shell.  The nearest ancestor whose
``comm`` is the agent's is then one process for both, whatever names the agent's
clients chose: the hub finds it from an MCP connection's ``SO_PEERCRED`` pid, and the
hook from its own parent.  Plain ``os``, so the hook that imports it stays light."""

from __future__ import annotations

MAX_DEPTH = 32
"""How far up the walk goes: a loop in what /proc says (a reused pid) ends here."""


def stat_fields(pid: int) -> tuple[str, list[str]] | None:
    """``/proc/PID/stat`` as its comm and the fields after it (``[0]`` is field 3,
    the state), or None when the process is gone or the line is not one.  The one
    parser of that line (``relay/proc.stat`` reads its own fields from it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    # comm is in parentheses and may itself contain ") ": split at the last one.
    head, sep, rest = raw.rpartition(")")
    if not sep or "(" not in head:
        return None
    return head.partition("(")[2], rest.split()


def is_running(pid: int, names: tuple[str, ...]) -> bool:
    """Whether ``pid`` is a living process whose comm is one of ``names``: not gone,
    and not a zombie waiting to be reaped (state ``Z`` or ``X``)."""
    found = stat_fields(pid)
    return found is not None and found[0] in names and found[1][:1] not in (["Z"], ["X"])


def parent_and_comm(pid: int) -> tuple[int, str] | None:
    """``/proc/PID/stat``'s ppid and comm, or None when the process is gone."""
    found = stat_fields(pid)
    if found is None or len(found[1]) < 2:
        return None
    comm, fields = found
    try:
        return int(fields[1]), comm
    except ValueError:
        return None


def agent_ancestor(pid: int, names: tuple[str, ...]) -> int | None:
    """The nearest process from ``pid`` up (``pid`` itself excluded) whose comm is one
    of ``names``, or None when none is (not run by that agent, or no /proc).  Each
    process on the way is read once: its line gives its comm and its parent."""
    found = parent_and_comm(pid)
    for _ in range(MAX_DEPTH):
        if found is None or found[0] <= 1:
            return None
        pid = found[0]
        found = parent_and_comm(pid)
        if found is not None and found[1] in names:
            return pid
    return None


def ancestry(pid: int) -> list[tuple[int, int]]:
    """``pid`` and its ancestors, nearest first, each as (pid, start time) as /proc
    says: with the start time, a pid names one process, not a recycled one (what a
    ling's approved ``Agent`` records)."""
    chain: list[tuple[int, int]] = []
    for _ in range(MAX_DEPTH):
        found = stat_fields(pid)
        if found is None or len(found[1]) < 20:
            break
        fields = found[1]
        try:
            chain.append((pid, int(fields[19])))
            pid = int(fields[1])
        except ValueError:
            break
        if pid <= 1:
            break
    return chain
