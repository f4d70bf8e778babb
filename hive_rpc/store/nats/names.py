"""The shared store's names and values: KV keys, server URLs as logs may show them,
the JSON written, and what a change looks like (``StoreChange``).  Pure: no NATS
client, no I/O.

KV keys allow only ``[-/_=.a-zA-Z0-9]``.  A name made of ``[-_a-zA-Z0-9]`` is used as
is; any other is written ``=`` + base32 of its UTF-8 (raw names never contain ``=``,
so the two never collide, and the original can always be read back from the key).
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

PROMPTS_BUCKET = "hive_prompts"
DOCUMENTS_BUCKET = "hive_documents"
BUCKETS = (PROMPTS_BUCKET, DOCUMENTS_BUCKET)
RESULTS_BUCKET = "hive_results"
"""The object store of task results too large to be copied into their reports
(runtime/activity.py ``INLINE_RESULT_BYTES``), each named by its SHA-256."""

_RAW_NAME = re.compile(r"[-_a-zA-Z0-9]+")


@dataclass(frozen=True, slots=True)
class StoreChange:
    """One write to the shared store, by any hub (this one included)."""

    kind: Literal["prompt", "document"]
    key: str
    """The prompt id, or the document's own key."""
    doc_kind: str | None
    """The document's kind (``dialogue``, ``ling`` ...); None for a prompt."""
    value: dict[str, Any] | None
    """The prompt record or the document body; None when it was deleted."""


def encode_name(name: str) -> str:
    """A KV key token for ``name``: itself if plain, else ``=`` + base32 of its UTF-8."""
    if _RAW_NAME.fullmatch(name):
        return name
    data = name.encode("utf-8", "surrogatepass")
    return "=" + base64.b32encode(data).decode("ascii").rstrip("=")


def decode_name(token: str) -> str:
    """The name ``encode_name`` turned into ``token``."""
    if not token.startswith("="):
        return token
    body = token[1:]
    body += "=" * (-len(body) % 8)
    return base64.b32decode(body).decode("utf-8", "surrogatepass")


def redact_url(url: str) -> str:
    """The URL without its password or token, fit for messages and logs."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"***@{host}"))


def server_urls(url: str) -> list[str]:
    """The servers of a ``--store`` value: one URL or several, comma-separated."""
    return [part.strip() for part in url.split(",") if part.strip()]


def shown(url: str) -> str:
    """``url`` (one or a comma-separated list) with every password or token hidden."""
    return ",".join(redact_url(u) for u in server_urls(url))


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("ascii")


def doc_key(kind: str, key: str) -> str:
    return f"{encode_name(kind)}.{encode_name(key)}"
