"""Where prompts outlive the hub process.

The registry talks to a store only through ``PromptStore``: seven async methods, with
``update`` a compare-and-set on the status so that a shared store (NATS JetStream KV,
several hubs) keeps "first answer wins" true across machines.
"""

from hive_rpc.store.base import PromptStore
from hive_rpc.store.memory import MemoryStore
from hive_rpc.store.sqlite import SqliteStore

__all__ = ["MemoryStore", "PromptStore", "SqliteStore"]
