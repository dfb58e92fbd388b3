"""Rebuild a served policy from its event log: the same calls, in the same order.

A policy's state is a deterministic function of its seed and the sequence of
``decide`` (contexts, id, excluded, now), ``reward`` (id, value, now) and
``expire`` (older_than, now) calls, so applying the logged events in order to
a fresh policy (or to a snapshot, from the event after it) rebuilds the state
the service had, bit for bit. A shadow decision (one with a logged
``policy_action``) is replayed with its logged default action, ``action``. ``expiry`` rows are effects of the call that
closed the decision and are not applied; a ``reward`` row is applied whatever
its status, since the policy itself decides again that it was a duplicate or late.

The learner of a scale-out service (``--role learner``) never decides: it applies
the log with :func:`learn_event` instead (a ``decision`` is registered as pending
with :meth:`~glmbandits.policies.decision_api.DecisionAPI.register_decision`, a
``reward`` is ``policy.reward``, an ``expire`` is ``policy.expire``), and
:func:`rebuild_learner_from_log` is its offline check.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..data.vocabulary import EXPIRY_OUTCOMES, REWARD_STATUSES
from ..policies.decisions import UnknownDecisionError
from .events import Event

__all__ = ["apply_event", "replay_events", "rebuild_from_log", "ReplayMismatchError",
           "learn_event", "rebuild_learner_from_log", "policy_from_snapshot",
           "expected_totals", "check_restored"]


class ReplayMismatchError(RuntimeError):
    """Replaying the log did not reproduce it: a logged outcome differs, the policy refuses
    a logged call, or the restored policy does not account for every event of the log (a
    log written by two processes at once, by another config or build, or damaged).

    ``seq`` is the first event that does not replay (None when the counts disagree).
    """

    def __init__(self, message: str, seq: int | None = None) -> None:
        super().__init__(message)
        self.seq = seq


def apply_event(policy: Any, event: Event) -> None:
    """Apply one logged event to ``policy`` (which must not have an ``event_log`` set).

    Raises :class:`ReplayMismatchError` if the replayed call does not give the logged
    outcome, or if the policy refuses it (e.g. a reward for a decision it never made).
    """
    try:
        _apply(policy, event)
    except (UnknownDecisionError, ValueError, TypeError) as error:
        what = f"{event.kind} {event.decision_id!r}" if event.decision_id else event.kind
        raise ReplayMismatchError(
            f"replay: event {event.seq} ({what}) is refused by the replayed policy ({error}); "
            "the log holds a call the policy it describes never accepted", event.seq) from None


def _apply(policy: Any, event: Event) -> None:
    if event.kind in ("decision", "retry"):
        excluded = None if event.excluded is None else list(event.excluded)
        # a shadow decision (policy_action logged) showed the client's default: re-apply it
        default = None if event.policy_action is None else event.action
        decision = policy.decide(event.contexts, event.decision_id, excluded,
                                 default_action=default, now=event.timestamp)
        if event.kind == "decision" and event.policy_action is not None:
            if decision.policy_action != event.policy_action:
                raise ReplayMismatchError(
                    f"replay: event {event.seq} (shadow decision {event.decision_id!r}) "
                    f"logged policy_action {event.policy_action} but the replayed policy "
                    f"chose {decision.policy_action}; the log was written by a policy with "
                    "another config, or is damaged", event.seq)
        elif event.kind == "decision" and decision.action != event.action:
            raise ReplayMismatchError(
                f"replay: event {event.seq} (decision {event.decision_id!r}) logged action "
                f"{event.action} but the replayed policy chose {decision.action}; the log was "
                "written by a policy with another config, or is damaged", event.seq)
    elif event.kind == "reward":
        status = policy.reward(event.decision_id, event.reward, now=event.timestamp)
        if status != event.status:
            raise ReplayMismatchError(
                f"replay: event {event.seq} (reward of {event.decision_id!r}) was logged as "
                f"{event.status!r} but replays as {status!r}", event.seq)
    elif event.kind == "expire":
        policy.expire(event.older_than, now=event.timestamp)
    elif event.kind not in ("expiry", "catalogue"):  # (the catalogue is not the policy's)
        raise ReplayMismatchError(f"replay: event {event.seq} has an unknown kind {event.kind!r}",
                                  event.seq)


def replay_events(policy: Any, events: Iterable[Event]) -> int:
    """Apply events in order; returns the seq of the last one applied (0 if none)."""
    last = 0
    sink, policy.event_log = policy.event_log, None
    try:
        for event in events:
            apply_event(policy, event)
            last = event.seq
    finally:
        policy.event_log = sink
    return last


def policy_from_snapshot(config: Any, store: Any) -> tuple[Any, int]:
    """(the store's newest snapshot decoded, or a fresh policy; the seq it includes), with
    no ``event_log`` set: where a restore starts before replaying the log after it."""
    from .snapshot import decode_snapshot

    snapshot = store.latest_snapshot()
    if snapshot is None:
        policy, after = config.build_policy(), 0
    else:
        after, data = snapshot
        policy = decode_snapshot(data)
    policy.event_log = None
    return policy, after


#: The policy's decision counts (``decision_statistics``) and the log's totals
#: (``Store.totals``, keyed as :func:`~glmbandits.service.events.total_keys`) that count
#: the same events: each count is one kind of row of the log.
_COUNTED_AS = {"decided": "decisions", "retried": "retries",
               **{status: f"rewards_{status}" for status in REWARD_STATUSES},
               **{f"expired_{outcome}": f"expiries_{outcome}" for outcome in EXPIRY_OUTCOMES}}

#: The totals a policy's counts account for (not, e.g., the catalogue's changes).
_POLICY_TOTALS = frozenset(_COUNTED_AS.values()) | {"rewards"}


def expected_totals(statistics: dict[str, int]) -> dict[str, int]:
    """The log totals a policy with these ``decision_statistics`` has written (nonzero ones).

    A served policy writes one row for each count it adds (a ``decision`` for
    ``decided``, a ``reward`` with its status, an ``expiry`` with its outcome, a
    ``retry``), so after a restore its counts must equal the log's totals.

    Examples
    --------
    >>> expected_totals({"decided": 3, "retried": 0, "learned": 2, "late": 1,
    ...                  "expired_dropped": 1, "pending": 0})
    {'decisions': 3, 'rewards_learned': 2, 'rewards_late': 1, 'expiries_dropped': 1, 'rewards': 3}
    """
    out = {total: int(statistics.get(count, 0)) for count, total in _COUNTED_AS.items()
           if statistics.get(count, 0)}
    rewards = sum(value for key, value in out.items() if key.startswith("rewards_"))
    if rewards:
        out["rewards"] = rewards
    return out


def policy_totals(totals: dict[str, int]) -> dict[str, int]:
    """The nonzero totals of a log that a policy's counts account for (those
    :func:`expected_totals` gives; not, e.g., the catalogue's changes)."""
    return {key: value for key, value in totals.items() if value and key in _POLICY_TOTALS}


def check_restored(policy: Any, totals: dict[str, int], *, log: str, snapshot_seq: int) -> None:
    """Refuse (:class:`ReplayMismatchError`) a restored policy whose counts differ from the
    log's ``totals``: it did not see every event of the log.

    This is what a log written by two processes at once looks like after a restart
    that starts from a snapshot: the snapshot holds one process's decisions only, and
    the other's would be forgotten (their rewards answered 404). It costs nothing:
    the totals are read at every start anyway.
    """
    expected = expected_totals(policy.decision_statistics)
    logged = policy_totals(totals)
    if logged == expected:
        return
    differ = ", ".join(f"{key}: {logged.get(key, 0)} in the log, {expected.get(key, 0)} in "
                       "the policy" for key in sorted(set(logged) | set(expected))
                       if logged.get(key, 0) != expected.get(key, 0))
    raise ReplayMismatchError(
        f"restore: the policy restored from {log} (the snapshot at seq {snapshot_seq} and "
        f"the events after it) does not account for every event of the log ({differ}); "
        "the snapshot was written by a process that did not see them all")


def rebuild_from_log(config: Any, store: Any) -> Any:
    """A fresh policy from ``config`` (a :class:`ServiceConfig`) with the whole log replayed.

    This uses the log alone (no snapshot): the offline check of what the service restores.
    """
    policy = config.build_policy()
    replay_events(policy, store.events())
    return policy


def learn_event(policy: Any, event: Event) -> bool:
    """Apply one logged event the way the learner does (``policy.event_log`` must be None).

    ``decision``: registered as pending (the logged row, probabilities, propensity,
    model version, time and tag), never decided again. ``reward``: learned, whatever
    status the API process logged (``accepted``, ``duplicate``, ``late``): the
    policy finds again that a reward is a duplicate or late. ``expire``: the sweep is
    run at its logged time. ``retry`` and ``expiry`` rows change no model.

    A reward the policy refuses (its decision closed longer ago than
    ``max_resolved``, or a sample whose learning would overflow: the policy is
    unchanged either way) is skipped, and so is a decision it cannot keep; the
    outcome depends on the state only, so a rebuild skips the same events. Returns
    whether the event was applied.
    """
    try:
        _learn(policy, event)
    except (UnknownDecisionError, ValueError, TypeError):
        return False
    return True


def _learn(policy: Any, event: Event) -> None:
    if event.kind == "decision":
        policy.register_decision(
            event.decision_id, event.contexts, event.action, event.probabilities,
            model_version=event.model_version, timestamp=event.timestamp,
            propensity=event.propensity, tag=event.tag,
            excluded=None if event.excluded is None else list(event.excluded),
            policy_action=event.policy_action)
    elif event.kind == "reward":
        policy.reward(event.decision_id, event.reward, now=event.timestamp)
    elif event.kind == "expire":
        policy.expire(event.older_than, now=event.timestamp)
    elif event.kind not in ("retry", "expiry", "catalogue"):
        raise ReplayMismatchError(f"learn: event {event.seq} has an unknown kind {event.kind!r}")


def rebuild_learner_from_log(config: Any, store: Any) -> Any:
    """A fresh policy with the whole log applied by :func:`learn_event` (no snapshot):
    the offline check of what a ``--role learner`` process holds."""
    policy = config.build_policy()
    for event in store.events():
        learn_event(policy, event)
    return policy
