"""Offline (off-policy) evaluation on logged bandit data.

* :class:`LoggedBanditData` — a checked log (contexts per round with K_t
  actions, logged actions, rewards, propensities).
* :func:`replay` — Li, Chu, Langford & Wang (2011) for uniformly logged data.
* :func:`ips`, :func:`snips`, :func:`doubly_robust` — for any logging policy
  with known propensities; DR's reward model is fitted by :func:`glmbandits.fit_glm`.
* :func:`collect_log`, :func:`fit_on_log`, :func:`true_value` — make logs,
  train a policy on one, and the exact value on a full-information log.
* :func:`evaluate_shadow` — shadow mode: the policy's logged distributions against
  the client's (deterministic) default, with what can and cannot be estimated.
* :func:`logged_from_requests` — feature evaluation offline: a decision service's
  exported named requests featurised again by another feature schema.
* :class:`DriftMonitor` — drift in production: a two-window test of the standardised
  residuals of rewarded decisions, with a stated false-alarm bound
  (``policy.monitor_drift(DriftMonitor(...))``, ``policy.drift_``).
"""

from .collect import collect_log, softmax_logging
from .estimators import (
    cross_fitted_reward_model,
    doubly_robust,
    fit_on_log,
    ips,
    snips,
    target_actions,
    target_probabilities,
    true_value,
)
from .intervals import OffPolicyEstimate, OverlapDiagnostics, PoorOverlapWarning
from ..data import FactoredContexts, LoggedBanditData, PaddedContexts
from .intervals import OffPolicyWarning
from .drift import DriftMonitor, DriftStatus, restart_policy
from .refeaturise import logged_from_requests
from .replay import replay
from .shadow import ShadowEvaluation, evaluate_shadow

__all__ = [
    "LoggedBanditData",
    "PaddedContexts",
    "FactoredContexts",
    "OffPolicyEstimate",
    "OffPolicyWarning",
    "OverlapDiagnostics",
    "PoorOverlapWarning",
    "replay",
    "ips",
    "snips",
    "doubly_robust",
    "target_actions",
    "target_probabilities",
    "cross_fitted_reward_model",
    "fit_on_log",
    "true_value",
    "collect_log",
    "softmax_logging",
    "evaluate_shadow",
    "ShadowEvaluation",
    "DriftMonitor",
    "DriftStatus",
    "restart_policy",
    "logged_from_requests",
]
