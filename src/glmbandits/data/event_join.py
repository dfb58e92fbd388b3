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
from .event_records import Event
from .vocabulary import DECISION, DEFAULTED, DUPLICATE, EXPIRY, LATE, LEARNED, REWARD

__all__ = ["DecisionRewardJoin", "JoinedRow", "REWARD_SOURCES"]

#: The sources of a joined reward (besides None: no reward yet, and "dropped").
REWARD_SOURCES = ("learned", "sum", "default")
#: The source an expiry outcome gives the decision it closes.
_EXPIRY_SOURCE = {LEARNED: "sum", DEFAULTED: "default"}


class JoinedRow:
    """One logged decision and what the join found for it.

    Attributes
    ----------
    decision : Event
        The decision (an :class:`~glmbandits.data.event_records.Event` of kind
        ``decision``).
    reward : float
        The joined reward (NaN without one).
    source : str or None
        ``"learned"``, ``"sum"``, ``"default"``, ``"dropped"``, or None while open.
    """

    __slots__ = ("decision", "reward", "source")

    def __init__(self, decision: Event, reward: float = math.nan,
                 source: str | None = None) -> None:
        self.decision = decision
        self.reward = reward
        self.source = source

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
    >>> from glmbandits.data.event_records import Event
    >>> join = DecisionRewardJoin()
    >>> join.add(Event("decision", "a", 0.0, seq=1, contexts=np.eye(2), action=1,
    ...                probabilities=np.array([0.5, 0.5]), propensity=0.5, model_version=0))
    >>> join.add(Event("reward", "a", 1.0, seq=2, reward=1.0, status="learned"))
    >>> [(row.decision.decision_id, row.reward, row.source) for row in join.rows()]
    [('a', 1.0, 'learned')]
    """

    def __init__(self, *, keep: Callable[[Event], bool] | None = None,
                 max_decisions: int | None = None) -> None:
        if max_decisions is not None:
            max_decisions = check_int(max_decisions, "DecisionRewardJoin", "max_decisions",
                                      minimum=1)
        self.keep = keep
        self.max_decisions = max_decisions
        # the kept decisions as columns (no object per row: a long log joins without
        # feeding the garbage collector), indexed from _offset; rows before _first are
        # forgotten (a window) and cut off the lists now and then
        self._decisions: list[Event] = []
        self._rewards: list[float] = []
        self._sources: list[str | None] = []
        self._offset = 0
        self._first = 0
        self._latest: dict[str, int] = {}       # id -> index of its latest kept decision
        #: Rewards and expiries that joined nothing, by why.
        self.counts = {"duplicate_rewards": 0, "late_rewards": 0, "orphan_rewards": 0}

    def add(self, event: Event) -> None:
        """Join one event, in log order (a ``decision``, ``reward`` or ``expiry``; the
        service's ``retry`` and ``expire`` carry nothing the join needs)."""
        self.extend((event,))

    def extend(self, events: Iterable[Event]) -> "DecisionRewardJoin":
        """Join every event of ``events``, in log order; returns the join."""
        decisions, rewards, sources = self._decisions, self._rewards, self._sources
        latest, counts, keep, limit = self._latest, self.counts, self.keep, self.max_decisions
        nan = math.nan
        for event in events:
            kind = event.kind
            if kind == DECISION:
                if keep is not None and not keep(event):
                    latest.pop(event.decision_id, None)  # type: ignore[arg-type]
                    continue
                latest[event.decision_id] = self._offset + len(decisions)  # type: ignore[index]
                decisions.append(event)
                rewards.append(nan)
                sources.append(None)
                if limit is not None and self._offset + len(decisions) - self._first > limit:
                    self._forget_oldest()
                continue
            is_reward = kind == REWARD
            if not is_reward and kind != EXPIRY:  # a retry or a sweep
                continue
            if is_reward and event.status in (DUPLICATE, LATE):
                counts[f"{event.status}_rewards"] += 1
                continue
            index = latest.get(event.decision_id, -1) - self._offset  # type: ignore[arg-type]
            if index < 0 or sources[index] is not None:  # nothing, or a second closing
                counts["orphan_rewards"] += 1
            elif is_reward:
                if event.status == LEARNED:
                    rewards[index], sources[index] = float(event.reward), "learned"  # type: ignore[arg-type]
                # "held": the sum arrives with the expiry
            else:
                source = _EXPIRY_SOURCE.get(event.status)  # type: ignore[arg-type]
                if source is None:
                    sources[index] = "dropped"
                else:
                    rewards[index], sources[index] = float(event.reward), source  # type: ignore[arg-type]
        return self

    def _forget_oldest(self) -> None:
        """Drop the oldest kept decision (the window is full)."""
        forgotten = self._decisions[self._first - self._offset].decision_id or ""
        if self._latest.get(forgotten) == self._first:
            del self._latest[forgotten]
        self._first += 1
        cut = self._first - self._offset
        if cut >= 1024 and 2 * cut >= len(self._decisions):
            del self._decisions[:cut], self._rewards[:cut], self._sources[:cut]
            self._offset = self._first

    def columns(self) -> tuple[list[Event], list[float], list[str | None]]:
        """The kept decisions in log order, their joined rewards (NaN without one) and
        the rewards' sources (as :class:`JoinedRow` has them), as three lists."""
        start = self._first - self._offset
        return self._decisions[start:], self._rewards[start:], self._sources[start:]

    def rows(self) -> list[JoinedRow]:
        """The kept decisions in log order, each with its joined reward."""
        return [JoinedRow(*row) for row in zip(*self.columns())]

    def __len__(self) -> int:
        return self._offset + len(self._decisions) - self._first
