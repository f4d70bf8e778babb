"""The hub's methods, independent of any transport: one row per method.

* ``table.py``: the row (``Method``, ``Param``), ``METHODS``, the ``@method``
  decorator that declares a method with its handler, and ``check_params``;
* ``hub.py``: ``HubService``, whose ``call`` checks a request against its row and runs
  the row's handler, and what the hub tells subscribers;
* ``prompts.py``, ``agora.py``, ``activity.py``, ``audit.py``, ``rules.py``,
  ``notices.py``: the handlers, each
  declared with its row (importing them fills ``METHODS``, so this package imports them all).

Faces import from here (``from hive_rpc.service import METHODS, HubService``).
"""

# isort: off
# Declared in this order, so ``hive-rpc methods`` lists the prompts' methods first.
from hive_rpc.service import prompts
from hive_rpc.service import agora
from hive_rpc.service import activity
from hive_rpc.service import audit
from hive_rpc.service import rules
from hive_rpc.service import notices

# isort: on
from hive_rpc.core.prompt import DEFAULT_AGENT, HUMAN, MIN_ID_PREFIX
from hive_rpc.service.hub import HubInfo, HubService, acting_agent, dismissal
from hive_rpc.service.prompts import RECORD_OVERHEAD
from hive_rpc.service.table import METHODS, Method, Param, check_params

__all__ = [
    "DEFAULT_AGENT",
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
]
