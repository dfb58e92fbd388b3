"""Containers for bandit data shared by several layers.

* :class:`PaddedContexts`, :class:`FactoredContexts` — context stores
  (:mod:`.contexts`);
* :class:`LoggedBanditData` — a checked log of decisions, rewards and
  propensities (:mod:`.logged`).

Real-data loaders (:mod:`glmbandits.environments`) build them and the offline
evaluators (:mod:`glmbandits.evaluation`) read them; neither imports the other.
"""

from .contexts import ContextStore, FactoredContexts, PaddedContexts
from .logged import LOG_COLUMNS, LoggedBanditData

__all__ = ["PaddedContexts", "FactoredContexts", "ContextStore", "LoggedBanditData", "LOG_COLUMNS"]
