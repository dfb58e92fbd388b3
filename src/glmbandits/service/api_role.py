"""``--role api``: answer decide and reward from the latest published model; never learn.

:class:`ApiRole` is the role (:mod:`glmbandits.service.roles`) of the one commit
worker, :class:`~glmbandits.service.core.DecisionService`, in a scale-out API process
(any number of them share one PostgreSQL log): the worker, its batching and one commit
per batch are the same; the role says what the operations do:

* **decide** chooses with a copy of the newest published model
  (``policy.decide(..., keep_pending=False)``: no pending entry, nothing kept
  locally; the copy's generator is reseeded from OS entropy, so two API processes
  draw different samples) and logs a ``decision`` event with the model version of
  the copy and the policy's tag. A ``decision_id`` already in the log is a retry:
  the logged answer if the request matches (same :func:`request_digest` of the
  logged contexts and exclusions), 409 otherwise, in every API process (a unique
  index on decision ids backs it: two processes that race on one new id make one
  batch fail with 503, and its retry finds the logged answer).
* **reward** is checked against the family, then looked up: 404 if no decision has
  that id in the log, ``late`` if it came after ``reward_wait`` or after a sweep
  that closed its decision, ``duplicate`` if a reward for it is logged already
  (``duplicate_rewards = "ignore"``), else ``accepted``: **logged; the learner will
  learn it in log order** (the learner's policy has the last word: it may still
  find the reward late, e.g. after a ``max_pending`` eviction). The answer's
  ``model_version`` is the API's current published version.
* A watcher thread LISTENs for new model versions (``NOTIFY`` from the learner) on
  a connection of its own and polls every ``poll_interval`` seconds as a fallback;
  a new version is decoded off the worker and swapped in by the worker between two
  batches (atomically: a request sees one model).

``GET /v1/model``'s ``decisions``, ``rewards`` and per-status counts are the store's
counters (exact totals over every API process); ``pending`` and the expiry counts
are those of the learner's last publication.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import numpy as np

from ..policies.decisions import (DROPPED, REWARDED, DecisionConflict, check_excluded,
                                  match_retry, request_digest, retry_default_action,
                                  reward_status)
from .config import ServiceConfig
from .core import DecisionService
from .errors import Invalid, NotFound, conflict, refused
from .events import Event
from .metrics import drift_body
from .postgres_store import CHANNEL, ModelVersion, PostgresStore
from .roles import Operation, ServedPolicy, Worker, add_explanation, decision_answer
from .snapshot import decode_snapshot

__all__ = ["ApiRole", "api_service", "ACCEPTED"]

#: The reward status of an API process: logged, to be learned by the learner in log order.
ACCEPTED = "accepted"
logger = logging.getLogger("glmbandits.service")


def _snapshot_bytes(loaded: ModelVersion) -> bytes:
    """The bytes of a model version read by ``load_version`` (which reads them)."""
    assert loaded.data is not None
    return loaded.data


class ApiRole:
    """``--role api``: the strategy of a scale-out API process's worker (see the module
    docstring).

    Parameters
    ----------
    store : PostgresStore
        The shared log (the worker's store).
    poll_interval : float, default 2.0
        Seconds between two checks for a new model version when no NOTIFY arrives.
    """

    name = "api"
    shares_log = True  # every API process of a scale-out appends to the one log

    def __init__(self, store: PostgresStore, *, poll_interval: float = 2.0) -> None:
        if not isinstance(store, PostgresStore):
            raise TypeError(f"ApiRole: store must be a PostgresStore (--role api needs "
                            f"--db postgresql://...), got {type(store).__name__}")
        self.store = store
        self.poll_interval = poll_interval
        self.version: ModelVersion | None = None
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None

    # -- life cycle ------------------------------------------------------------------
    def begin(self, service: Worker) -> None:
        self.store.claim_topology("scale-out")

    def restore(self, service: Worker) -> None:
        latest = self.store.latest_version()
        loaded = None if latest is None else self.store.load_version(latest.id)
        policy = service.config.build_policy() if loaded is None else \
            decode_snapshot(_snapshot_bytes(loaded))
        self._install(service, policy.reseed(), loaded, self.store.totals())
        service.restored_from = {"snapshot_seq": 0 if loaded is None else int(loaded.seq),
                                 "replayed_events": 0}

    def _install(self, service: Worker, policy: ServedPolicy,
                 version: ModelVersion | None, totals: dict[str, int] | None = None) -> None:
        self.version = version
        service.install(policy, 0 if version is None else int(version.seq), totals)

    def recover(self, service: Worker, error: BaseException) -> None:
        """Nothing to undo: the copy holds no pending decisions and is never persisted."""

    def started(self, service: Worker) -> None:
        self._watcher = threading.Thread(target=self._watch, args=(service,),
                                         name="glmbandits-api-watcher", daemon=True)
        self._watcher.start()

    def stopping(self, service: Worker, timeout: float) -> None:
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join(timeout)
            self._watcher = None

    def finish(self, service: Worker, snapshot: bool) -> None:
        """Nothing to write: the learner publishes model versions."""

    def period(self, service: Worker) -> float | None:
        return None  # the learner sweeps, by the log

    def periodic(self, service: Worker) -> bool:
        return False

    def committed(self, service: Worker) -> None:
        """Nothing to write: the learner publishes model versions."""

    # -- new model versions ------------------------------------------------------------
    def _watch(self, service: Worker) -> None:
        while not self._stopping.is_set():
            connection = None
            try:
                connection = self.store.connect("glmbandits-api-listen")
                connection.execute(f"LISTEN {CHANNEL}")
                while not self._stopping.is_set():
                    self.refresh(service)
                    for _ in connection.notifies(timeout=self.poll_interval, stop_after=1):
                        pass
            except Exception as error:  # the server went away: poll again after a pause
                logger.warning("glmbandits api: watching for model versions failed (%s: %s); "
                               "retrying", type(error).__name__, error)
                self._stopping.wait(self.poll_interval)
            finally:
                if connection is not None:
                    connection.close()

    def refresh(self, service: Worker) -> bool:
        """Load the newest model version if it is newer than the one in use; swap it in
        (on the worker, between batches). Returns whether a new version was swapped in."""
        latest = self.store.latest_version()
        current = self.version
        if latest is None or (current is not None and latest.id <= current.id):
            return False
        loaded = self.store.load_version(latest.id)
        if loaded is None or not service.running:
            return False
        policy = decode_snapshot(_snapshot_bytes(loaded)).reseed()

        def swap() -> None:
            if self.version is None or loaded.id > self.version.id:
                self._install(service, policy, loaded)
                logger.info("glmbandits api: now serving model_version %d (version id %d, "
                            "seq %d)", loaded.model_version, loaded.id, loaded.seq)

        service.submit(swap).result()
        return True

    # -- operations ---------------------------------------------------------------------
    def _logged_decision(self, service: Worker, decision_id: str) -> Event | None:
        for event in service.staged():
            if event.kind == "decision" and event.decision_id == decision_id:
                return event
        return self.store.find_decision(decision_id)

    def decide_operation(self, service: Worker, X: np.ndarray,
                         decision_id: str | None, rows: tuple[int, ...] | None,
                         requested: int | None, shown: int | None,
                         explain: bool = False) -> Operation:
        """Decide with the published model's copy (``shown``: the default action in shadow
        mode, None live; a retry is judged by the mode its logged decision was made in)."""
        def operation() -> dict[str, Any]:
            if decision_id is not None:
                logged = self._logged_decision(service, decision_id)
                if logged is not None:  # (answered from the log: no explanation)
                    answer = self._retry(service, logged, X, rows, requested)
                    if explain:
                        answer["explanation"] = None
                    return answer
            now = service.clock()
            service.sink.excluded = rows
            try:
                decision = service.policy.decide(X, decision_id,
                                                 None if rows is None else list(rows),
                                                 default_action=shown, now=now,
                                                 keep_pending=False, explain=explain)
            except (TypeError, ValueError) as error:
                raise refused(error) from None
            answer = decision_answer(decision.decision_id, decision.action,
                                     decision.probabilities, decision.propensity,
                                     decision.model_version, decision.policy_action)
            return add_explanation(service, decision, answer) if explain else answer

        return operation

    def _retry(self, service: Worker, logged: Event, X: np.ndarray,
               rows: tuple[int, ...] | None, default_action: int | None) -> dict[str, Any]:
        try:
            candidates = check_excluded(None if rows is None else list(rows), X.shape[0],
                                        "decide")
        except (TypeError, ValueError) as error:
            raise Invalid(str(error), "excluded") from None
        # the retry rule of a pending decision (decisions.match_retry), over the logged one
        assert (logged.decision_id is not None and logged.action is not None
                and logged.probabilities is not None and logged.model_version is not None)
        shadow = logged.policy_action is not None
        requested = retry_default_action(shadow, default_action)
        logged_rows = None if logged.excluded is None else list(logged.excluded)
        if logged.contexts is None or logged.contexts.shape != X.shape:
            raise conflict(logged.decision_id, None, logged=True)
        stored = request_digest(logged.contexts, check_excluded(logged_rows, X.shape[0],
                                                                "decide"),
                                logged.action if shadow else None)
        try:
            match_retry(logged.decision_id, stored, X, candidates, requested)
        except DecisionConflict:
            raise conflict(logged.decision_id, None, logged=True) from None
        service.append(Event("retry", logged.decision_id, service.clock(), contexts=X.copy(),
                             excluded=rows, action=requested,
                             policy_action=logged.policy_action))
        return decision_answer(logged.decision_id, logged.action, logged.probabilities,
                               logged.propensity, logged.model_version, logged.policy_action)

    def reward_operation(self, service: Worker, decision_id: str,
                         reward: float) -> Operation:
        def operation() -> dict[str, Any]:
            try:
                value = service.policy.check_reward(reward)
            except (TypeError, ValueError) as error:
                raise Invalid(str(error), "reward") from None
            logged = self._logged_decision(service, decision_id)
            if logged is None:
                raise NotFound(f"no decision has decision_id {decision_id!r} in the log",
                               "decision_id")
            now = service.clock()
            status = self._reward_status(service, logged, now)
            service.append(Event("reward", decision_id, now, reward=value, status=status))
            return {"decision_id": decision_id, "status": status,
                    "model_version": int(service.policy.model_version)}

        return operation

    def _reward_status(self, service: Worker, logged: Event, now: float) -> str:
        """The policy's rule (:func:`~glmbandits.policies.decisions.reward_status`) over the
        log: closed by a reward (``duplicate_rewards = "ignore"``), or by a sweep."""
        options = service.config.decisions
        wait = options.reward_wait
        closed_as = None
        assert logged.decision_id is not None  # a decision's event
        if options.duplicate_rewards == "ignore" and (
                any(event.kind == "reward" and event.decision_id == logged.decision_id
                    for event in service.staged()) or self.store.has_reward(logged.decision_id)):
            closed_as = REWARDED
        elif wait is not None and self.store.swept_after(logged.seq, logged.timestamp):
            closed_as = DROPPED  # closed by an expiry (what it learned is the learner's)
        status = reward_status(closed_as, logged.timestamp, now, wait)
        return ACCEPTED if status is None else status

    def model_info(self, service: Worker) -> dict[str, Any]:
        policy, version, config = service.policy, self.version, service.config
        statistics = {} if version is None else version.statistics
        counts: dict[str, Any] = dict(self.store.totals())
        expired = {key: value for key, value in statistics.items()
                   if key.startswith("expired_")}
        counts.update(expired)
        counts["expired"] = sum(expired.values())
        counts["pending"] = self.pending_count(service)
        return {"policy": config.policy.name, "class": type(policy).__name__,
                "parameters": dict(config.policy.params),
                "family": config.policy.family,
                "n_features": config.policy.n_features,
                "max_actions": config.decisions.max_actions,
                "model_version": int(policy.model_version),
                "pending": counts["pending"],
                "decisions": counts.get("decisions", 0),
                "rewards": counts.get("rewards", 0), "counts": counts,
                "explanation": service.latest_explanation,
                "last_seq": self.store.last_seq(), "snapshot_seq": service.snapshot_seq,
                "role": "api", "version_id": None if version is None else version.id,
                "drift": drift_body(policy)}

    def totals(self, service: Worker) -> dict[str, int]:
        """The store's counters: totals over every API process."""
        return self.store.totals()

    def pending_count(self, service: Worker) -> int:
        """Pending decisions as of the learner's last publication (0 before the first)."""
        version = self.version
        return 0 if version is None or version.pending is None else int(version.pending)


def api_service(config: ServiceConfig, store: PostgresStore, *, poll_interval: float = 2.0,
                **options: Any) -> DecisionService:
    """The commit worker of a scale-out API process (not started): a
    :class:`~glmbandits.service.core.DecisionService` with an :class:`ApiRole`."""
    return DecisionService(config, store, role=ApiRole(store, poll_interval=poll_interval),
                           **options)
