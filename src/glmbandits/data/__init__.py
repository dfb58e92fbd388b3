"""Containers for bandit data shared by several layers.

* :class:`PaddedContexts`, :class:`FactoredContexts` — context stores
  (:mod:`.contexts`);
* :class:`LoggedBanditData` — a checked log of decisions, rewards and
  propensities (:mod:`.logged`);
* :class:`EventLog` — the append-only SQLite log a deployed policy writes and
  offline evaluation reads (:mod:`.event_log`).

Real-data loaders (:mod:`glmbandits.environments`) build them and the offline
evaluators (:mod:`glmbandits.evaluation`) read them; neither imports the other.
"""

from .contexts import ContextStore, FactoredContexts, PaddedContexts
from .event_export import export_parquet
from .event_log import EventLog
from .logged import LOG_COLUMNS, LoggedBanditData

__all__ = ["PaddedContexts", "FactoredContexts", "ContextStore", "LoggedBanditData", "LOG_COLUMNS",
           "EventLog", "export_parquet"]
