"""Containers for bandit data shared by several layers.

* :class:`PaddedContexts`, :class:`FactoredContexts` — context stores
  (:mod:`.contexts`);
* :class:`LoggedBanditData` — a checked log of decisions, rewards and
  propensities (:mod:`.logged`);
* :class:`EventLog` — the append-only SQLite log a deployed policy writes and
  offline evaluation reads (:mod:`.event_log`);
* :class:`PostgresEventLog` — the same log in PostgreSQL, for several writing
  processes (:mod:`.postgres_event_log`), and :func:`learner_lock`, the advisory
  lock that keeps one learner per database (:mod:`.postgres_locks`); psycopg is
  imported only when they are used.

Real-data loaders (:mod:`glmbandits.environments`) build them and the offline
evaluators (:mod:`glmbandits.evaluation`) read them; neither imports the other.
"""

from .contexts import ContextStore, FactoredContexts, PaddedContexts
from .event_export import export_parquet
from .event_log import EventLog
from .logged import LOG_COLUMNS, LoggedBanditData
from .postgres_event_log import PostgresEventLog
from .postgres_locks import learner_lock

__all__ = ["PaddedContexts", "FactoredContexts", "ContextStore", "LoggedBanditData", "LOG_COLUMNS",
           "EventLog", "export_parquet", "PostgresEventLog", "learner_lock"]
