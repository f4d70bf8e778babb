"""Where prompts outlive the hub process.

The hub talks to a store only through ``PromptStore`` (``base.py``): async methods
for prompts and for the hub's other documents, with ``update`` a compare-and-set on
the status so that a shared store (NATS JetStream KV, several hubs) keeps "first
answer wins" true across machines.  ``aio_bridge.py`` runs the asyncio-only NATS
client from trio.
"""

from hive_rpc.store.base import PromptStore
from hive_rpc.store.memory import MemoryStore
from hive_rpc.store.sqlite import SqliteStore

__all__ = ["MemoryStore", "PromptStore", "SqliteStore"]
