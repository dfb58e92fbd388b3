"""``glmbandits recover``: rebuild a ``--role all`` service from the events it can trust.

A log written by two processes at once (or damaged) no longer replays: the
service refuses to start (:class:`~glmbandits.service.replay.ReplayMismatchError`).
:func:`plan_recovery` replays the log from its first event with a fresh policy
and finds its **longest trusted prefix**: the events up to the last one after
which the replay reproduced every logged outcome and the policy's counts equal
the prefix's totals (:func:`~glmbandits.service.replay.expected_totals`), that is
a log one process could have written. :func:`apply_recovery` then moves the
events after it, and every snapshot, out of the log (``Store.set_aside``: a file
beside a SQLite log, tables of the same schema on PostgreSQL; nothing is
deleted), writes a snapshot of the rebuilt policy and records what it did in the
log's meta (``recovered``). The service then starts from exactly that prefix.

Replay is exact within one glmbandits, numpy and BLAS build: a log carried to
another machine may fail to replay although one process wrote it. Recover it on
the machine (and build) that wrote it.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from itertools import takewhile
from typing import Any

from .events import total_keys
from .replay import (ReplayMismatchError, check_restored, expected_totals, policy_from_snapshot,
                     policy_totals, replay_events)
from .snapshot import encode_snapshot

__all__ = ["RecoveryPlan", "plan_recovery", "apply_recovery"]


@dataclass
class RecoveryPlan:
    """What :func:`plan_recovery` found (and, once applied, what was done).

    Attributes
    ----------
    log : str
        The log's URL.
    events, last_seq : int
        Events in the log, and the largest sequence number.
    kept, kept_seq : int
        Events of the trusted prefix, and the seq of its last one (0: none).
    reason : str or None
        Why the events after ``kept_seq`` cannot be trusted (None if all can).
    restores : bool
        Whether the service starts from the log as it is (its newest snapshot and the
        events after it replay and account for the whole log).
    after_kinds : dict
        The events after the prefix, counted by kind.
    moved, destination : int, str or None
        Set by :func:`apply_recovery`: events moved out of the log, and where.
    """

    log: str
    events: int = 0
    last_seq: int = 0
    kept: int = 0
    kept_seq: int = 0
    reason: str | None = None
    restores: bool = True
    after_kinds: dict[str, int] = field(default_factory=dict)
    moved: int | None = None
    destination: str | None = None

    @property
    def needed(self) -> bool:
        """Whether the log must be recovered before the service can use it."""
        return self.kept_seq < self.last_seq or not self.restores

    def summary(self) -> str:
        """The plan in words, one fact per line."""
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(self.after_kinds.items()))
        lines = [f"event log: {self.log}: {self.events} events (last seq {self.last_seq})",
                 f"trusted prefix: {self.kept} events, up to seq {self.kept_seq} (a fresh "
                 "policy replays them exactly)"]
        if self.reason is not None:
            lines.append(f"where it ends: {self.reason}")
        if self.kept_seq < self.last_seq:
            lines.append(f"after it: {self.events - self.kept} events ({kinds})")
        lines.append("the service starts from the log as it is" if self.restores else
                     "the service does not start from the log as it is (its snapshot or its "
                     "events do not replay)")
        if self.moved is not None:
            lines.append(f"moved out of the log: {self.moved} events and every snapshot, into "
                         f"{self.destination}; a new snapshot at seq {self.kept_seq} was written")
        return "\n".join(lines)


def plan_recovery(config: Any, store: Any) -> RecoveryPlan:
    """Replay the whole log with a fresh policy from ``config``; the trusted prefix.

    Reads only. The prefix ends at the last event after which the replayed policy
    accounts for every event so far (its counts equal the prefix's totals), before
    the first event that does not replay; trailing rows that no call of the policy
    wrote (e.g. another process's expiries) end it too.
    """
    plan = RecoveryPlan(log=store.url)
    policy = config.build_policy()
    policy.event_log = None
    totals: dict[str, int] = {}
    for event in store.events():
        plan.events += 1
        plan.last_seq = event.seq
        if plan.reason is not None:
            continue  # only counted
        try:
            replay_events(policy, [event])
        except ReplayMismatchError as error:
            plan.reason = str(error)
            continue
        for key in total_keys(event.kind, event.status):
            totals[key] = totals.get(key, 0) + 1
        if expected_totals(policy.decision_statistics) == policy_totals(totals):
            plan.kept, plan.kept_seq = plan.events, event.seq
    if plan.reason is None and plan.kept_seq < plan.last_seq:
        plan.reason = (f"the events after seq {plan.kept_seq} replay, but the policy's counts "
                       "never again equal the log's: the log holds rows no call of this "
                       "policy wrote")
    plan.after_kinds = _kinds_after(store, plan.kept_seq)
    try:
        restored, after = policy_from_snapshot(config, store)
        replay_events(restored, store.events(after=after))
        check_restored(restored, store.totals(), log=store.url, snapshot_seq=after)
    except ReplayMismatchError:
        plan.restores = False
    return plan


def _kinds_after(store: Any, seq: int) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for event in store.events(after=seq):
        kinds[event.kind] = kinds.get(event.kind, 0) + 1
    return kinds


def apply_recovery(config: Any, store: Any, plan: RecoveryPlan, *,
                   label: str | None = None) -> RecoveryPlan:
    """Keep ``plan``'s trusted prefix: move the rest and the snapshots out, snapshot the
    rebuilt policy, record it in the meta; returns ``plan`` with ``moved`` and
    ``destination`` set.

    ``store`` must be claimed (``claim_topology("single")``): no service may write
    meanwhile. ``label`` names the place the events go (default: the UTC time).
    Raises RuntimeError if the recovered log does not restore (it always should).
    """
    label = label or datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d_%H%M%S")
    policy = config.build_policy()
    policy.event_log = None
    replay_events(policy, takewhile(lambda event: event.seq <= plan.kept_seq, store.events()))
    plan.moved, plan.destination = store.set_aside(plan.kept_seq, label)
    if plan.kept_seq:
        store.write_snapshot(plan.kept_seq, encode_snapshot(policy))
    store.set_meta("recovered", json.dumps({
        "at": label, "kept_seq": plan.kept_seq, "moved": plan.moved,
        "destination": plan.destination, "reason": plan.reason}))
    restored, after = policy_from_snapshot(config, store)
    try:
        replay_events(restored, store.events(after=after))
        check_restored(restored, store.totals(), log=store.url, snapshot_seq=after)
    except ReplayMismatchError as error:
        raise RuntimeError(f"recover: the recovered log {store.url} does not restore ({error}); "
                           f"the events moved out are in {plan.destination}") from error
    return plan
