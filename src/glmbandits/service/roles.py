"""What a service process does with requests: its role, a strategy of the one commit worker.

:class:`~glmbandits.service.core.DecisionService` is the one commit worker (queue,
batches, one commit before the answers, the rebuild after a failed write); what its
operations do is its :class:`Role`:

* ``all`` (:class:`AllRole`, here): one process decides, learns, sweeps and snapshots
  (SQLite or PostgreSQL);
* ``api`` (:class:`~glmbandits.service.api_role.ApiRole`): decides with the latest
  published model and logs rewards for the learner; it never learns;
* ``learner`` (:class:`~glmbandits.service.learner_role.LearnerRole`): serves no
  requests; its worker's periodic work takes the learner lock, learns the log in log
  order and publishes model versions.

The worker's loop is the only loop: it answers requests in batches, runs the role's
periodic work (:meth:`Role.periodic`: the expiry sweep, or the learner's reading of the
log) and, after each commit, :meth:`Role.committed` (a snapshot, or a model version).

:class:`ServedPolicy` is what the service calls on the policy it holds.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from ..policies.decisions import Decision, EventSink, PendingDecisions, retry_default_action
from .errors import refused
from .config import ServiceConfig
from .events import Event, LogSink
from .metrics import drift_body
from .replay import check_restored, policy_from_snapshot, replay_events
from .store import Store

__all__ = ["ServedPolicy", "Worker", "Role", "AllRole", "ROLES", "decision_answer"]

#: The roles of ``glmbandits serve --role``.
ROLES = ("all", "api", "learner")

Operation = Callable[[], Any]


def decision_answer(decision_id: str, action: int, probabilities: np.ndarray,
                    propensity: float | None, model_version: int,
                    policy_action: int | None) -> dict[str, Any]:
    """The body of a ``POST /v1/decide`` answer; ``policy_action`` only for a shadow
    decision (whose ``propensity`` is None: the client chose)."""
    answer = {"decision_id": decision_id, "action": int(action),
              "probabilities": probabilities.tolist(), "propensity": propensity,
              "model_version": int(model_version)}
    if policy_action is not None:
        answer["policy_action"] = int(policy_action)
    return answer


def add_explanation(service: "Worker", decision: Any, answer: dict[str, Any]
                    ) -> dict[str, Any]:
    """``answer`` with ``explanation``: the decision's (``decide(..., explain=True)``) as JSON
    values, or None (a retry of a decision made without it); an explained decision becomes
    the worker's ``latest_explanation`` (``GET /v1/model``'s ``explanation``, the dashboard)."""
    explanation = getattr(decision, "explanation", None)
    body = None if explanation is None else explanation.to_dict()
    answer["explanation"] = body
    if body is not None:
        service.latest_explanation = {"decision_id": answer["decision_id"],
                                      "model_version": answer["model_version"],
                                      "action": answer["action"], "explanation": body}
    return answer


@runtime_checkable
class ServedPolicy(Protocol):
    """What the service calls on its policy (every :class:`glmbandits.Policy` has it)."""

    decisions_: PendingDecisions
    event_log: EventSink | None

    @property
    def model_version(self) -> int: ...

    @property
    def decision_statistics(self) -> dict[str, int]: ...

    def decide(self, contexts: Any, decision_id: str | None = None,
               excluded: Sequence[int] | None = None, *, default_action: int | None = None,
               now: float | None = None, keep_pending: bool = True,
               explain: bool = False) -> Decision: ...

    def reward(self, decision_id: str, reward: Any, *, now: float | None = None) -> str: ...

    def expire(self, older_than: float = 0.0, *, now: float | None = None
               ) -> dict[str, int]: ...

    def check_reward(self, reward: Any) -> float: ...

    def reseed(self, entropy: Any = None) -> Any: ...


class Worker(Protocol):
    """What a role uses of the commit worker (:class:`~glmbandits.service.core.DecisionService`)."""

    config: ServiceConfig
    store: Store
    clock: Callable[[], float]
    policy: ServedPolicy
    sink: LogSink
    snapshot_seq: int
    restored_from: dict[str, int]
    #: the latest decision made with ``explain`` (see :func:`add_explanation`), or None
    latest_explanation: dict[str, Any] | None

    @property
    def running(self) -> bool: ...

    def install(self, policy: ServedPolicy, snapshot_seq: int, totals: dict[str, int] | None,
                restored_from: dict[str, int] | None = None, *, logged: bool = True
                ) -> None: ...

    def write_snapshot(self) -> int: ...

    def append(self, event: Event) -> None: ...

    def staged(self) -> list[Event]: ...

    def cached_totals(self) -> dict[str, int]: ...

    def submit(self, operation: Callable[[], Any]) -> concurrent.futures.Future: ...


class Role(Protocol):
    """What the commit worker asks its role (each method gets the worker, ``service``)."""

    name: str
    #: whether other processes append to the same log while this one serves (an API
    #: process of a scale-out): what it keeps beside the policy, the action catalogue,
    #: is then read again from the log before each use
    shares_log: bool

    def begin(self, service: Worker) -> None:
        """Before the store's config is checked (e.g. claim the log's topology)."""

    def restore(self, service: Worker) -> None:
        """Install the policy (``service.install``) and the store's totals."""

    def recover(self, service: Worker, error: BaseException) -> None:
        """After a failed write (``error``) was rolled back: rebuild what the policy may
        hold."""

    def started(self, service: Worker) -> None:
        """The worker runs (e.g. start watching for model versions)."""

    def stopping(self, service: Worker, timeout: float) -> None:
        """The service stops (before the worker answers what is queued)."""

    def finish(self, service: Worker, snapshot: bool) -> None:
        """The worker has stopped (the store is closed next): a last snapshot or model
        version if ``snapshot``; release what the role holds."""

    def period(self, service: Worker) -> float | None:
        """Seconds between two runs of :meth:`periodic` (None: the worker runs none)."""

    def periodic(self, service: Worker) -> bool:
        """The role's periodic work, on the worker, in a batch of its own (what it
        appends is committed with it); True when more is due at once (the worker then
        runs it again without waiting)."""

    def committed(self, service: Worker) -> None:
        """After each batch's commit, on the worker (e.g. a snapshot every
        ``snapshot_every`` events)."""

    def decide_operation(self, service: Worker, X: np.ndarray,
                         decision_id: str | None, rows: tuple[int, ...] | None,
                         requested: int | None, shown: int | None,
                         explain: bool = False) -> Operation:
        """The worker's half of a decide (``shown``: the default action a new decision
        shows; ``requested``: the client's, which a retry is judged with)."""

    def reward_operation(self, service: Worker, decision_id: str,
                         reward: float) -> Operation:
        """The worker's half of a reward."""

    def model_info(self, service: Worker) -> dict[str, Any]:
        """``GET /v1/model``'s body (on the worker)."""

    def totals(self, service: Worker) -> dict[str, int]:
        """The log's counts."""

    def pending_count(self, service: Worker) -> int:
        """Decisions waiting for a reward."""


class AllRole:
    """``--role all``: decide, learn, sweep and snapshot in this process."""

    name = "all"
    shares_log = False  # the one process of its log (the serve lock)

    def begin(self, service: Worker) -> None:
        """Nothing to claim: the log lock (or the learner lock) is the server's."""

    def restore(self, service: Worker) -> None:
        store = service.store
        policy, after = policy_from_snapshot(service.config, store)
        replayed = [0]  # counted, not seq differences: PostgreSQL's seqs may have gaps

        def tail() -> Any:
            for event in store.events(after=after):
                replayed[0] += 1
                yield event

        replay_events(policy, tail())
        totals = store.totals()
        check_restored(policy, totals, log=store.url, snapshot_seq=after)
        service.install(policy, after, totals,
                        {"snapshot_seq": after, "replayed_events": replayed[0]})

    def recover(self, service: Worker, error: BaseException) -> None:
        try:
            self.restore(service)
        except Exception:  # the store is unusable: refuse everything from now on
            service.policy = None  # type: ignore[assignment]

    def started(self, service: Worker) -> None:
        """Nothing runs beside the worker."""

    def stopping(self, service: Worker, timeout: float) -> None:
        """Nothing runs beside the worker."""

    def finish(self, service: Worker, snapshot: bool) -> None:
        """A snapshot if the log moved since the last one."""
        if snapshot and service.store.last_seq() > service.snapshot_seq:
            service.write_snapshot()

    def period(self, service: Worker) -> float | None:
        decisions = service.config.decisions
        return None if decisions.reward_wait is None else decisions.expire_every

    def periodic(self, service: Worker) -> bool:
        """The expiry sweep: an ``expire`` event, and the policy's ``expire``."""
        older_than = service.config.decisions.reward_wait
        assert older_than is not None  # period is None without a reward_wait
        now = service.clock()
        if service.policy.decisions_.has_expired(now - older_than):
            service.append(Event("expire", None, now, older_than=older_than))
            service.policy.expire(older_than, now=now)
        return False

    def committed(self, service: Worker) -> None:
        """A snapshot every ``snapshot_every`` events."""
        if service.store.last_seq() - service.snapshot_seq >= service.config.snapshot_every:
            try:
                service.write_snapshot()
            except Exception:  # a missed snapshot only makes the next start replay more
                pass

    def decide_operation(self, service: Worker, X: np.ndarray,
                         decision_id: str | None, rows: tuple[int, ...] | None,
                         requested: int | None, shown: int | None,
                         explain: bool = False) -> Operation:
        def operation() -> dict[str, Any]:
            policy = service.policy
            entry = None if decision_id is None else policy.decisions_.lookup(decision_id)
            # a retry is judged by the mode it was decided in (a restart may switch)
            default = shown if entry is None else retry_default_action(
                entry.decision.shadow, requested)
            now = service.clock()
            service.sink.excluded = rows
            try:  # the policy's decisions_ judges a retry (find_retry); refusals are typed
                decision = policy.decide(X, decision_id, None if rows is None else list(rows),
                                         default_action=default, now=now, explain=explain)
            except (TypeError, ValueError) as error:
                raise refused(error) from None
            if entry is not None:  # a shadow retry keeps its default action, which replay
                service.append(Event("retry", decision.decision_id, now,  # repeats
                                     contexts=X.copy(), excluded=rows, action=default,
                                     policy_action=decision.policy_action))
            answer = decision_answer(decision.decision_id, decision.action,
                                     decision.probabilities, decision.propensity,
                                     decision.model_version, decision.policy_action)
            return add_explanation(service, decision, answer) if explain else answer

        return operation

    def reward_operation(self, service: Worker, decision_id: str,
                         reward: float) -> Operation:
        def operation() -> dict[str, Any]:
            try:
                status = service.policy.reward(decision_id, reward, now=service.clock())
            except (KeyError, TypeError, ValueError) as error:
                raise refused(error) from None
            return {"decision_id": decision_id, "status": status,
                    "model_version": service.policy.model_version}

        return operation

    def model_info(self, service: Worker) -> dict[str, Any]:
        policy, config = service.policy, service.config
        totals = service.cached_totals()
        pending = policy.decisions_.n_pending
        counts = {**totals, "pending": pending, "expired": sum(
            n for name, n in totals.items() if name.startswith("expiries_"))}
        return {"policy": config.policy.name, "class": type(policy).__name__,
                "mode": config.decisions.mode,
                "parameters": dict(config.policy.params),
                "family": config.policy.family,
                "n_features": config.policy.n_features,
                "max_actions": config.decisions.max_actions,
                "model_version": int(policy.model_version),
                "pending": pending,
                "decisions": totals.get("decisions", 0),
                "rewards": totals.get("rewards", 0),
                "counts": counts,
                "explanation": service.latest_explanation,
                "last_seq": service.store.last_seq(), "snapshot_seq": service.snapshot_seq,
                "drift": drift_body(policy)}

    def totals(self, service: Worker) -> dict[str, int]:
        return service.cached_totals()

    def pending_count(self, service: Worker) -> int:
        return service.policy.decisions_.n_pending
