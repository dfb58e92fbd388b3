"""``GET /v1/evaluation``: shadow mode's evaluation of the policy against the client's default.

:class:`ShadowEvaluator` tails the service's log (only the events it has not read
yet, page by page) and keeps the most recent ``max_rounds`` shadow decisions (those
with a logged ``policy_action``) with their reward, joined by the one decision-reward
join (:class:`glmbandits.data.event_join.DecisionRewardJoin`, which the export and
:meth:`glmbandits.data.LoggedBanditData.from_event_log` read too): the ``learned``
reward, or the learned sum or default reward of an expiry; a dropped decision is
left out. On those rounds it runs
:func:`glmbandits.evaluation.evaluate_shadow` (DR and SNIPS with intervals, the
overlap diagnostics, model-free bounds; the client is taken as deterministic, so
propensity 1 for the default) and returns its ``to_dict()``.

It reads the log through the store's own reader connections, never the policy, so
it runs off the worker thread (the app calls it in a thread pool) and cannot stall
decisions. Its cost is bounded: the first call starts at most ``max_events`` events
before the end of the log, later calls read only the new events, at most
``max_rounds`` rounds are kept, and a result is reused for ``min_interval`` seconds
and for as long as the log has not grown.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterator

import numpy as np

from ..data.event_join import DecisionRewardJoin
from ..data.event_records import Event
from .store import Store

__all__ = ["ShadowEvaluator", "MIN_ROUNDS"]

#: Fewer rewarded shadow rounds than this give ``available: false`` (the reward model is
#: cross-fitted on two folds; with a handful of rounds the intervals mean nothing).
MIN_ROUNDS = 10


def _is_shadow(decision: Event) -> bool:
    return decision.shadow


class ShadowEvaluator:
    """The evaluation panel's numbers from a service's log (see the module docstring).

    Parameters
    ----------
    store : Store
        The service's store (read with :meth:`Store.events`).
    family : str
        The policy's reward family (the reward model's link, the reward range).
    mode : str
        The service's current mode; only used in the ``reason`` of an empty answer.
    max_rounds : int, default 20,000
        The most recent shadow decisions kept (older ones are forgotten).
    max_events : int, default 200,000
        How far before the end of the log the first call starts reading.
    min_interval : float, default 1.0
        Seconds a computed result is reused for, even if the log grew.
    clock : callable, default ``time.monotonic``
    """

    def __init__(self, store: Store, family: str, mode: str, *, max_rounds: int = 20_000,
                 max_events: int = 200_000, min_interval: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.family = family
        self.mode = mode
        self.max_rounds = max_rounds
        self.max_events = max_events
        self.min_interval = min_interval
        self.clock = clock
        self._lock = threading.Lock()
        self._after: int | None = None      # the last seq read
        self._first_seq = 0
        self._join = DecisionRewardJoin(keep=_is_shadow, max_decisions=max_rounds)
        self._result: dict[str, Any] | None = None
        self._result_seq = -1
        self._computed_at = -float("inf")

    def evaluate(self) -> dict[str, Any]:
        """The JSON body of ``GET /v1/evaluation`` (blocking; call it off the event loop)."""
        with self._lock:
            if self._result is not None and self.clock() - self._computed_at < self.min_interval:
                return self._result
            self._read_new_events()
            if self._result is None or self._after != self._result_seq:
                self._result = self._compute()
                self._result_seq = self._after or 0
            self._computed_at = self.clock()
            return self._result

    # -- tailing the log ------------------------------------------------------------------
    def _read_new_events(self) -> None:
        if self._after is None:
            self._after = max(0, self.store.last_seq() - self.max_events)
            self._first_seq = self._after + 1
        self._join.extend(self._new_records())

    def _new_records(self) -> Iterator[Event]:
        """The log's events after the last one read (``_after`` follows)."""
        for event in self.store.events(after=self._after or 0):
            self._after = event.seq
            yield event

    # -- the estimate ---------------------------------------------------------------------
    def _window(self, n_rounds: int) -> dict[str, Any]:
        return {"first_seq": self._first_seq, "last_seq": self._after or 0,
                "shadow_decisions": len(self._join), "rewarded_rounds": n_rounds,
                "max_rounds": self.max_rounds}

    def _compute(self) -> dict[str, Any]:
        from ..data.logged import LoggedBanditData
        from ..evaluation.shadow import evaluate_shadow

        rounds = [row for row in self._join.rows() if row.has_reward]
        if len(rounds) < MIN_ROUNDS:
            if not len(self._join):
                reason = ("the policy is served live: no shadow-mode decisions in the log"
                          if self.mode == "live" else
                          "no shadow-mode decisions in the log yet")
            else:
                reason = (f"{len(rounds)} shadow-mode decision(s) have a reward; at least "
                          f"{MIN_ROUNDS} are needed")
            return {"available": False, "reason": reason, "window": self._window(len(rounds))}
        K_max = max(row.decision.contexts.shape[0] for row in rounds)  # type: ignore[union-attr]
        pi = np.zeros((len(rounds), K_max))
        for t, row in enumerate(rounds):
            probabilities = row.decision.probabilities  # a decision's: not None
            pi[t, : probabilities.shape[0]] = probabilities  # type: ignore[union-attr]
        log = LoggedBanditData([row.decision.contexts for row in rounds],
                               [row.decision.action for row in rounds],
                               [row.reward for row in rounds], name="shadow")
        try:
            result = evaluate_shadow(log, pi, family=self.family)
        except (ValueError, np.linalg.LinAlgError) as error:
            return {"available": False, "reason": f"the evaluation failed: {error}",
                    "window": self._window(len(rounds))}
        return {"available": True, **result.to_dict(), "window": self._window(len(rounds))}
