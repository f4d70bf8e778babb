"""Names the hub and its clients agree on, in a module that imports nothing.

``hive-rpc list``, ``poll``, ``cancel`` and ``answer`` need these three and nothing
else of core/prompt.py, whose dataclasses and checks were 12 ms of each such command's
start (issue 18: one-shot commands import what they use); core/prompt.py re-exports
them for the hub's service.
"""

from __future__ import annotations

DEFAULT_AGENT = "anonymous"
"""The ``agent_id`` of a question whose asker named none."""
HUMAN = "human"
"""The ``by`` recorded when an answer comes from an editor or the CLI without a name."""
MIN_ID_PREFIX = 4
"""``hive/lookup`` wants this much of an id: fewer would match too much to be useful."""
