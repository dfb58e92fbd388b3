"""Rebuild a served policy from its event log: the same calls, in the same order.

A policy's state is a deterministic function of its seed and the sequence of
``decide`` (contexts, id, excluded, now), ``reward`` (id, value, now) and
``expire`` (older_than, now) calls, so applying the logged events in order to
a fresh policy (or to a snapshot, from the event after it) rebuilds the state
the service had, bit for bit. A shadow decision (one with a logged
``policy_action``) is replayed with its logged default action, ``action``. ``expiry`` rows are effects of the call that
closed the decision and are not applied; a ``reward`` row is applied whatever
its status, since the policy itself decides again that it was a duplicate or late.
"""

from __future__ import annotations

from typing import Any, Iterable

from .events import Event

__all__ = ["apply_event", "replay_events", "rebuild_from_log", "ReplayMismatchError"]


class ReplayMismatchError(RuntimeError):
    """Replaying the log did not reproduce a logged outcome (wrong config or a damaged log)."""


def apply_event(policy: Any, event: Event) -> None:
    """Apply one logged event to ``policy`` (which must not have an ``event_log`` set)."""
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
                    "another config, or is damaged")
        elif event.kind == "decision" and decision.action != event.action:
            raise ReplayMismatchError(
                f"replay: event {event.seq} (decision {event.decision_id!r}) logged action "
                f"{event.action} but the replayed policy chose {decision.action}; the log was "
                "written by a policy with another config, or is damaged")
    elif event.kind == "reward":
        status = policy.reward(event.decision_id, event.reward, now=event.timestamp)
        if status != event.status:
            raise ReplayMismatchError(
                f"replay: event {event.seq} (reward of {event.decision_id!r}) was logged as "
                f"{event.status!r} but replays as {status!r}")
    elif event.kind == "expire":
        policy.expire(event.older_than, now=event.timestamp)
    elif event.kind != "expiry":
        raise ReplayMismatchError(f"replay: event {event.seq} has an unknown kind {event.kind!r}")


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


def rebuild_from_log(config: Any, store: Any) -> Any:
    """A fresh policy from ``config`` (a :class:`ServiceConfig`) with the whole log replayed.

    This uses the log alone (no snapshot): the offline check of what the service restores.
    """
    policy = config.build_policy()
    replay_events(policy, store.events())
    return policy
