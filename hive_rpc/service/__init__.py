"""The hub's methods, independent of any transport: the handlers of the method table.

The rows (``METHODS``: name, params, doc, flags) are data in protocol/methods.py.

* ``table.py``: ``HANDLERS``, the ``@handles`` decorator that attaches a handler to
  its row by name, and ``check_params``;
* ``hub.py``: ``HubService``, whose ``call`` checks a request against its row and runs
  its handler, and what the hub tells subscribers;
* ``prompts.py``, ``agora.py``, ``activity.py``, ``audit.py``, ``rules.py``,
  ``notices.py``, ``sessions.py``: the handlers (importing them fills ``HANDLERS``, so this package
  imports them all).

Faces import from here (``from hive_rpc.service import METHODS, HubService``).
"""

# isort: off
from hive_rpc.service import prompts
from hive_rpc.service import agora
from hive_rpc.service import activity
from hive_rpc.service import audit
from hive_rpc.service import rules
from hive_rpc.service import notices
from hive_rpc.service import sessions

# isort: on
from hive_rpc.core.conventions import DEFAULT_AGENT, HUMAN, MIN_ID_PREFIX
from hive_rpc.service.hub import HubInfo, HubService, acting_agent, dismissal
from hive_rpc.service.prompts import RECORD_OVERHEAD
from hive_rpc.service.table import HANDLERS, METHODS, Method, Param, check_params

__all__ = [
    "DEFAULT_AGENT",
    "HANDLERS",
    "HUMAN",
    "METHODS",
    "MIN_ID_PREFIX",
    "RECORD_OVERHEAD",
    "HubInfo",
    "HubService",
    "Method",
    "Param",
    "acting_agent",
    "activity",
    "agora",
    "audit",
    "check_params",
    "dismissal",
    "notices",
    "prompts",
    "rules",
    "sessions",
]
