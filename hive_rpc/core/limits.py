"""Every limit on what a client may send or make the hub hold, each with its reason.

Agents are untrusted input (docs/security.md).  Whatever a client sends is checked
against these numbers at the door (``service.check_params``), so every face refuses
the same thing with the same -32602 naming the limit; stores re-check rows on load
(``problem``) so one over-limit row cannot stop a restart.  A limit lives here once:
the table in docs/security.md is checked against ``LIMITS`` by a test.

The JSON walk is iterative and linear in the size of the value: a value nested 980
deep must be refused, not blow the interpreter's stack the way a recursive walk (or
``json.dumps`` of it later, on restart) does.
"""

from __future__ import annotations

from typing import Any

from hive_rpc.core.errors import InvalidParams


class Limit:
    """One limit: its name in errors (``data.limit``), value, unit and why it exists.

    A plain class, not a dataclass: ``hive-rpc mcp --agent NAME`` checks the name with
    ``check_name`` below, and ``dataclasses`` (with ``inspect``) was 1.7 MiB of that
    relay's memory, one per agent session (docs/benchmarks.md, mcp_cold_start)."""

    __slots__ = ("name", "reason", "unit", "value")

    def __init__(self, name: str, value: int, unit: str, reason: str) -> None:
        self.name, self.value, self.unit, self.reason = name, value, unit, reason

    def __repr__(self) -> str:
        return f"Limit({self.name!r}, {self.value!r}, {self.unit!r})"


def _limit(name: str, value: int, unit: str, reason: str) -> int:
    LIMITS[name] = Limit(name, value, unit, reason)
    return value


LIMITS: dict[str, Limit] = {}
"""Every limit by name, in the order docs/security.md lists them."""

MAX_JSON_DEPTH = _limit(
    "json_depth",
    32,
    "levels",
    "nesting of any JSON value from a client (params, schema, answer, result); a flat "
    "elicitation schema needs 4, and 980 levels broke the restart with RecursionError",
)
MAX_STRING_CHARS = _limit(
    "string_chars",
    1 << 20,
    "characters",
    "any one string in a client's value: the socket's frame is 1 MiB, HTTP must not allow more",
)
MAX_TOTAL_CHARS = _limit(
    "total_chars",
    4 << 20,
    "characters",
    "all strings and keys of one request's params together (the activity log keeps "
    "results up to 4 MiB)",
)
MAX_NODES = _limit(
    "json_nodes",
    100_000,
    "values",
    "values (items, entries) in one request's params: bounds the time of every walk",
)
MAX_INT_BITS = _limit(
    "int_bits",
    1023,
    "bits",
    "an integer must fit a double: a 400-digit answer to a number field raised "
    "OverflowError in the bounds check",
)
MAX_QUESTION_CHARS = _limit(
    "question_chars",
    65_536,
    "characters",
    "a question is read by a human in an editor; it is also the largest part of a "
    "pending record held in memory",
)
MAX_NAME_CHARS = _limit(
    "name_chars",
    200,
    "characters",
    "agent ids, by, task ids, correlation ids: names, not documents",
)
MAX_CHOICES = _limit(
    "choices",
    100,
    "choices",
    "choices (and enum values of one schema field) a human can pick from",
)
MAX_SCHEMA_PROPERTIES = _limit(
    "schema_properties",
    50,
    "fields",
    "fields of one answer form",
)
MAX_SCHEMA_CHARS = _limit(
    "schema_chars",
    65_536,
    "characters",
    "all strings of one schema (titles, descriptions, enum values) together",
)
MAX_PENDING_PER_AGENT = _limit(
    "pending_per_agent",
    10_000,
    "prompts",
    "pending prompts one agent may hold: a runaway loop fills its own quota, not the hub",
)
MAX_PENDING = _limit(
    "pending_total",
    100_000,
    "prompts",
    "pending prompts in all: memory, the deadline heap and every subscriber's snapshot "
    "grow with it",
)
MAX_PENDING_CHARS = _limit(
    "pending_chars",
    64 << 20,
    "characters",
    "characters of questions, choices and schemas pending in all: at the other limits' "
    "maxima 100,000 prompts could hold 15 GB (bench/hostile.py); this holds ~100 MB",
)
MAX_PENDING_CHARS_PER_AGENT = _limit(
    "pending_chars_per_agent",
    16 << 20,
    "characters",
    "the same for one agent, so one cannot take the whole budget from the others",
)
MAX_PENDING_PER_PEER = _limit(
    "pending_per_peer",
    10_000,
    "prompts",
    "pending prompts asked through one peer, as the hub can verify it (a socket "
    "client's session, SO_PEERCRED and /proc; every MCP-over-HTTP agent together), "
    "whatever agent names it gives: one client using 5 made-up names filled the "
    "hub's whole budget",
)
MAX_PENDING_CHARS_PER_PEER = _limit(
    "pending_chars_per_peer",
    16 << 20,
    "characters",
    "the same in characters held, for one peer",
)
AGENT_SHARE_PERCENT = _limit(
    "agent_share",
    75,
    "percent",
    "of pending_total and pending_chars that askers who have not proved the human's "
    "credential may fill together: the rest is kept for the human's own tools (the "
    "editors, the permission hook), so an agent flood never refuses them",
)
MAX_REPLY_BYTES = _limit(
    "reply_bytes",
    8 << 20,
    "bytes",
    "a reply built for one request (hive/list without paging): a 263 MB reply held the "
    "hub's memory and cut slow readers off",
)
LIST_PAGE_MAX = _limit(
    "list_page",
    1000,
    "records",
    "records in one page of hive/list or hivemind_list_pending (the default page is 100)",
)
MAX_CONNECTIONS = _limit(
    "connections",
    1000,
    "connections",
    "open connections to the editor socket, and to each hive-rpc epc (fewer if the "
    "fd limit is lower), instead of the hub looping on EMFILE: at it the socket closes "
    "the oldest connection that never sent a request to admit a new one, else admits "
    "approvers only (connections_reserved); others get -32011",
)
MAX_CONNECTIONS_PER_PEER = _limit(
    "connections_per_peer",
    64,
    "connections",
    "connections to the editor socket from one peer, its uid and session as the kernel "
    "says (SO_PEERCRED, /proc/PID/stat), not a name it chose: one process's 1,000 idle "
    "connections locked every client out; past it the peer's own oldest connection "
    "that never sent a request is closed, else the new one may only enter the reserve "
    "(connections_reserved)",
)
RESERVED_CONNECTIONS = _limit(
    "connections_reserved",
    64,
    "connections",
    "connections the editor socket admits beyond connections when every connection has "
    "spoken, for approvers (editors, the hook, the human's CLI): until one proves "
    "itself (hive/proveApprover) it may only call hive/status, so an agent, which "
    "cannot read the approver token, cannot fill them",
)
MAX_IN_FLIGHT = _limit(
    "in_flight",
    256,
    "requests",
    "requests one connection may have running at once (long polls included)",
)
LISTEN_BACKLOG = _limit(
    "listen_backlog",
    4096,
    "connections",
    "connects the kernel queues before the hub accepts them: 128 made a burst of ~180 "
    "connects fail with EAGAIN (Linux caps it at net.core.somaxconn)",
)
MAX_LING_REQUESTS = _limit(
    "ling_requests",
    32,
    "requests",
    "ling registrations waiting for the human's approval at once: each is an urgent "
    "question on every screen, so an agent must not be able to bury the human in them",
)
MAX_LING_REQUESTS_PER_PEER = _limit(
    "ling_requests_per_peer",
    8,
    "requests",
    "of those, from one peer the hub verified (a socket client's session; MCP over "
    "HTTP as one), whatever agent id it gives: one agent took all 32 slots",
)
MAX_SPAWN_WORKERS = _limit(
    "spawn_workers",
    8,
    "children",
    "children one spawn_workers call (ling/spawn) may ask for: each is a prompt on the "
    "human's screen and, approved, a running agent",
)
MAX_SPAWN_REQUESTS = _limit(
    "spawn_requests",
    16,
    "requests",
    "spawns waiting for the human's approval at once, from every parent",
)
MAX_SPAWN_REQUESTS_PER_PARENT = _limit(
    "spawn_requests_per_parent",
    8,
    "requests",
    "of those, from one parent ling, the one the hub found from the caller's process "
    "(not a name it gave): one agent must not take every slot",
)
MAX_SPAWN_COMMAND_WORDS = _limit(
    "spawn_command_words",
    64,
    "words",
    "words of a child's command: the human reads all of it before approving",
)
MAX_SPAWN_COMMAND_CHARS = _limit(
    "spawn_command_chars",
    8000,
    "characters",
    "characters of a child's command in all, for the same reason",
)
LIST_PAGE_DEFAULT = 100
"""Records in a page of ``hive/list`` when ``limit`` is not given with ``cursor``."""


def check_name(value: object, what: str) -> str:
    """An agent id, a ``by`` or a correlation id: a short non-blank string."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidParams(f"{what} must be a non-empty string")
    if len(value) > MAX_NAME_CHARS:
        raise InvalidParams(
            f"{what} is longer than {MAX_NAME_CHARS} characters (limit name_chars)",
            limit="name_chars",
            max=MAX_NAME_CHARS,
        )
    return value


class LimitError(InvalidParams):
    """A value is over one of the limits above; ``data.limit`` names it."""

    def __init__(self, what: str, limit: str, detail: str, **data: Any) -> None:
        entry = LIMITS[limit]
        super().__init__(
            f"{what}: {detail} (limit {limit}: {entry.value:,} {entry.unit})",
            limit=limit,
            max=entry.value,
            **data,
        )


def check_value(
    value: Any,
    what: str,
    *,
    max_depth: int = MAX_JSON_DEPTH,
    max_total_chars: int = MAX_TOTAL_CHARS,
    total_limit: str = "total_chars",
) -> None:
    """Raise LimitError if JSON ``value`` is nested too deep, too large or holds an
    integer too large for a double.  ``what`` names the value in the message.

    Iterative, one visit per value: its cost is linear and its stack is a list.
    Values that are not JSON types (a Python object in a test) are not refused here.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    nodes = 0
    chars = 0
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise LimitError(what, "json_nodes", f"more than {MAX_NODES:,} values")
        if isinstance(item, str):
            n = len(item)
            if n > MAX_STRING_CHARS:
                raise LimitError(what, "string_chars", f"a string of {n:,} characters")
            chars += n
        elif isinstance(item, bool) or item is None or isinstance(item, float):
            continue
        elif isinstance(item, int):
            if item.bit_length() > MAX_INT_BITS:
                raise LimitError(what, "int_bits", "an integer too large for a double")
            continue
        elif isinstance(item, dict | list):
            if depth >= max_depth:
                raise LimitError(what, "json_depth", f"nested deeper than {max_depth} levels")
            if isinstance(item, dict):
                for key, child in item.items():
                    chars += len(key) if isinstance(key, str) else 0
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
        if chars > max_total_chars:
            raise LimitError(what, total_limit, f"more than {max_total_chars:,} characters")


def problem(value: Any, what: str = "value") -> str | None:
    """Why ``value`` breaks a limit, or None: for a store re-checking a row on load."""
    try:
        check_value(value, what)
    except LimitError as e:
        return e.message
    return None


def record_problem(record: Any) -> str | None:
    """Why a stored prompt record breaks a limit, or None: the JSON limits above plus
    the lengths of the question, the detail and the confirm texts, so a store can
    quarantine the row instead of failing."""
    if not isinstance(record, dict):
        return f"record is a {type(record).__name__}, not an object"
    found = problem(record, "record")
    if found is not None:
        return found
    for field in ("question", "detail"):
        text = record.get(field)
        if isinstance(text, str) and len(text) > MAX_QUESTION_CHARS:
            return f"record: {field} of {len(text):,} characters (limit question_chars)"
    confirm = record.get("confirm")
    if isinstance(confirm, list):
        texts = sum(len(c.get("text") or "") for c in confirm if isinstance(c, dict))
        if texts > MAX_QUESTION_CHARS:
            return f"record: confirm texts of {texts:,} characters (limit question_chars)"
    return None


def fits_double(value: int) -> bool:
    """True if the integer can be compared with and converted to a float."""
    return value.bit_length() <= MAX_INT_BITS


__all__ = [
    "LIMITS",
    "LIST_PAGE_DEFAULT",
    "Limit",
    "LimitError",
    "check_value",
    "fits_double",
    "problem",
    "record_problem",
]
