"""The decision–reward join: which reward of a logged decision counts (the one home of its rules).

:class:`DecisionRewardJoin` applies the joining rules one event at a time, so that a
whole log (:class:`~glmbandits.data.event_export.JoinedDecisions`: the Parquet export,
:meth:`~glmbandits.data.LoggedBanditData.from_event_log` and ``glmbandits replay``, the
service's ``glmbandits export``) and a tail of it read in pages (the service's shadow
evaluation behind ``GET /v1/evaluation`` and the dashboard) join the same way.

Joining rules (per decision, by id; a reward or expiry joins the latest decision
with its id logged before it):

* a reward with status ``"learned"``: that reward (source ``"learned"``);
* an expiry with outcome ``"learned"`` (``duplicate_rewards="sum"``): the summed
  reward it learned (``"sum"``);
* an expiry with outcome ``"default"``: the default reward (``"default"``);
* an expiry with outcome ``"dropped"``: no reward (``"dropped"``);
* ``"held"`` rewards wait for the expiry that sums them; ``"duplicate"`` and
  ``"late"`` rewards are never used (counted);
* a reward or expiry that names no logged decision, or a decision already closed,
  is an orphan (counted: no policy writes one);
* a decision still open has no reward (source None).
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

from .._validation import check_int
from .event_records import DecisionEvent, Event, RewardEvent
from .vocabulary import DEFAULTED, DUPLICATE, LATE, LEARNED

__all__ = ["DecisionRewardJoin", "JoinedRow", "REWARD_SOURCES"]

#: The sources of a joined reward (besides None: no reward yet, and "dropped").
REWARD_SOURCES = ("learned", "sum", "default")
#: The source an expiry outcome gives the decision it closes.
_EXPIRY_SOURCE = {LEARNED: "sum", DEFAULTED: "default"}


class JoinedRow:
    """One logged decision and what the join found for it.

    Attributes
    ----------
    decision : DecisionEvent
    reward : float
        The joined reward (NaN without one).
    source : str or None
        ``"learned"``, ``"sum"``, ``"default"``, ``"dropped"``, or None while open.
    """

    __slots__ = ("decision", "reward", "source")

    def __init__(self, decision: DecisionEvent) -> None:
        self.decision = decision
        self.reward = math.nan
        self.source: str | None = None

    @property
    def has_reward(self) -> bool:
        """Whether a reward was joined (learned, summed or a default)."""
        return self.source in REWARD_SOURCES


class DecisionRewardJoin:
    """The decision–reward join, fed one event at a time (see the module docstring).

    Parameters
    ----------
    keep : callable, optional
        ``keep(decision) -> bool``: the decisions to keep (e.g. shadow decisions
        only); a decision not kept still hides the older decisions with its id.
        Default: every decision.
    max_decisions : int, optional
        Keep only the most recent ``max_decisions`` kept decisions (the oldest are
        forgotten, and a reward for one of them is an orphan). Default: all.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits.data.event_records import DecisionEvent, RewardEvent
    >>> join = DecisionRewardJoin()
    >>> join.add(DecisionEvent(1, "a", 0.0, np.eye(2), np.array([0.5, 0.5]), 1, 0.5, 0))
    >>> join.add(RewardEvent(2, "a", 1.0, 1.0, "learned"))
    >>> [(row.decision.decision_id, row.reward, row.source) for row in join.rows()]
    [('a', 1.0, 'learned')]
    """

    def __init__(self, *, keep: Callable[[DecisionEvent], bool] | None = None,
                 max_decisions: int | None = None) -> None:
        if max_decisions is not None:
            max_decisions = check_int(max_decisions, "DecisionRewardJoin", "max_decisions",
                                      minimum=1)
        self.keep = keep
        self.max_decisions = max_decisions
        self._rows: dict[int, JoinedRow] = {}   # in log order
        self._latest: dict[str, int] = {}       # id -> key of its latest kept decision
        self._next = 0
        #: Rewards and expiries that joined nothing, by why.
        self.counts = {"duplicate_rewards": 0, "late_rewards": 0, "orphan_rewards": 0}

    def add(self, event: Event) -> None:
        """Join one event (a :class:`DecisionEvent`, :class:`RewardEvent` or
        :class:`ExpiryEvent`), in log order."""
        if isinstance(event, DecisionEvent):
            if self.keep is not None and not self.keep(event):
                self._latest.pop(event.decision_id, None)
                return
            self._latest[event.decision_id] = self._next
            self._rows[self._next] = JoinedRow(event)
            self._next += 1
            if self.max_decisions is not None and len(self._rows) > self.max_decisions:
                oldest = next(iter(self._rows))
                forgotten = self._rows.pop(oldest).decision.decision_id
                if self._latest.get(forgotten) == oldest:
                    del self._latest[forgotten]
            return
        if isinstance(event, RewardEvent) and event.status in (DUPLICATE, LATE):
            self.counts[f"{event.status}_rewards"] += 1
            return
        key = self._latest.get(event.decision_id)
        row = None if key is None else self._rows.get(key)
        if row is None or row.source is not None:  # nothing, or a second closing
            self.counts["orphan_rewards"] += 1
            return
        if isinstance(event, RewardEvent):
            if event.status == LEARNED:
                row.reward, row.source = float(event.reward), "learned"
            return  # "held": the sum arrives with the expiry
        source = _EXPIRY_SOURCE.get(event.outcome)
        if source is None:
            row.source = "dropped"
        else:
            row.reward, row.source = float(event.reward), source  # type: ignore[arg-type]

    def extend(self, events: Iterable[Event]) -> "DecisionRewardJoin":
        """Join every event of ``events``, in order; returns the join."""
        for event in events:
            self.add(event)
        return self

    def rows(self) -> list[JoinedRow]:
        """The kept decisions in log order, each with its joined reward."""
        return list(self._rows.values())

    def __len__(self) -> int:
        return len(self._rows)
