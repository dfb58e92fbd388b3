"""``--role learner``: learn the PostgreSQL log in log order and publish model versions.

:class:`LearnerRole` is the role (:mod:`glmbandits.service.roles`) of the one commit
worker, :class:`~glmbandits.service.core.DecisionService`, in the learner of a scale-out
service (one per log; it serves no requests). The worker's loop is the learner's loop;
the role says what its hooks do:

1. ``begin`` claims the log for scale-out; ``restore`` opens the lock's connection.
2. ``periodic`` (on the worker, every ``poll_interval`` seconds, and at once while the
   log is ahead of it): until it holds the learner lock
   (:func:`~glmbandits.data.postgres_locks.learner_lock`, a session advisory lock per
   schema: a second learner logs that it waits, and takes over when the first stops or
   dies) it tries to take it for up to ``lock_timeout`` seconds; once held, it restores
   the policy from the newest model version and the log after it, then reads the log
   from its cursor in sequence (= commit) order, a page at a time, and applies each
   event with :func:`~glmbandits.service.replay.learn_event` (a decision is registered
   through the decision protocol, never decided again). Read to its end, it runs the
   expiry sweep (``reward_wait``) by **appending** an ``expire`` event (the worker
   commits it) that it applies when it reads it back, so the log alone rebuilds the
   model (:func:`~glmbandits.service.replay.rebuild_learner_from_log`).
3. ``committed`` (after each of the worker's commits) publishes an immutable model
   version (``model_version`` = rewards absorbed, the seq it includes, SHA-256) and
   NOTIFYs the API processes: after ``snapshot_every`` events, or within about a second
   of the last unpublished change when idle (at most every ``min_interval`` seconds).
   It checks that it still holds the lock first: a learner that lost it
   (:class:`LostLockError`), or whose log or database failed, records the
   :attr:`~LearnerRole.failure` and asks to stop (:attr:`~LearnerRole.should_stop`).
4. ``finish`` (the worker has stopped) publishes what is unpublished and releases the lock.

:func:`run_learner` runs it until SIGTERM/SIGINT. It serves no HTTP; its log lines say
what it does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import signal
import threading
import time
from typing import Any, Iterable, cast

import numpy as np

from .._validation import check_int, check_positive
from ..data.postgres_locks import AdvisoryLock, learner_lock
from .config import ServiceConfig
from .core import DecisionService
from .events import Event
from .postgres_store import PostgresStore
from .replay import learn_event, policy_from_snapshot
from .roles import Operation, Worker
from .snapshot import encode_snapshot
from .store import open_store

__all__ = ["LearnerRole", "LostLockError", "learner_service", "run_learner"]

logger = logging.getLogger("glmbandits.service")


class LostLockError(RuntimeError):
    """The learner's lock session ended (another learner may hold it now)."""


class LearnerRole:
    """``--role learner``: the strategy of a scale-out learner's worker (see the module
    docstring).

    Parameters
    ----------
    store : PostgresStore
        The shared log (the worker's store).
    poll_interval : float, default 0.05
        Seconds between two reads of the log when it is read to its end (and between two
        tries of the lock).
    min_interval : float, default 0.25
        The least time between two publications.
    max_staleness : float, default 1.0
        Unpublished changes are published after at most this long (and at once when idle).
    lock_timeout : float, default 1.0
        Seconds one try of the lock waits (the worker stops within about this long).
    page : int, default 1000
        The most events one run of ``periodic`` applies.

    Raises
    ------
    TypeError
        If ``store`` is not a :class:`~glmbandits.service.postgres_store.PostgresStore`.
    ValueError
        If an interval or ``page`` is not positive.

    References
    ----------
    Li, Lu & Zhou (2017), "Provably Optimal Algorithms for Generalized Linear Contextual
    Bandits", Algorithm 1 (UCB-GLM), its update step (the MLE on the rewards observed so
    far), done here in log order, apart from the processes that select. PostgreSQL
    documentation, "Advisory Locks" (13.3.5): the learner lock.

    Examples
    --------
    >>> LearnerRole(object())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: LearnerRole: store must be a PostgresStore (--role learner needs --db postgresql://...), got object
    """

    name = "learner"
    shares_log = False  # it serves no requests (it reads the log, holding the learner lock)

    def __init__(self, store: PostgresStore, *, poll_interval: float = 0.05,
                 min_interval: float = 0.25, max_staleness: float = 1.0,
                 lock_timeout: float = 1.0, page: int = 1000) -> None:
        owner = type(self).__name__
        if not isinstance(store, PostgresStore):
            raise TypeError(f"{owner}: store must be a PostgresStore (--role learner needs "
                            f"--db postgresql://...), got {type(store).__name__}")
        self.poll_interval = check_positive(poll_interval, owner, "poll_interval")
        self.min_interval = check_positive(min_interval, owner, "min_interval")
        self.max_staleness = check_positive(max_staleness, owner, "max_staleness")
        self.lock_timeout = check_positive(lock_timeout, owner, "lock_timeout")
        self.page = check_int(page, owner, "page", minimum=1)
        self.store = store
        #: the cursor: the seq of the last event applied
        self.seq = 0
        #: the seq the last published model version includes
        self.published_seq = 0
        #: events the policy refused (see :meth:`_apply`)
        self.skipped = 0
        #: the held learner lock (None until it is taken)
        self.lock: AdvisoryLock | None = None
        #: why the learner must stop (a lost lock, a failed read or write), or None
        self.failure: BaseException | None = None
        #: set when the learner should stop: by a failure, or by :func:`run_learner`'s
        #: signal handler
        self.should_stop = threading.Event()
        self._connection: Any = None
        self._holding = contextlib.ExitStack()
        self._unpublished = 0
        self._last_publish = 0.0
        self._last_sweep = 0.0
        self._idle = False
        self._told = False
        self._waiting_since = 0.0

    @property
    def lock_name(self) -> str:
        """The learner lock's name: one learner per schema of a database."""
        return f"glmbandits.learner:{self.store.schema}"

    # -- life cycle ------------------------------------------------------------------
    def begin(self, service: Worker) -> None:
        self.store.claim_topology("scale-out")

    def restore(self, service: Worker) -> None:
        """Open the lock's connection; the policy is restored on the worker once the lock
        is held (:meth:`periodic`)."""
        self._connection = self.store.connect("glmbandits-learner-lock")
        self._waiting_since = time.monotonic()

    def recover(self, service: Worker, error: BaseException) -> None:
        """A read or a write of the log failed: the learner stops (the process exits with
        the error)."""
        self._fail(error)

    def started(self, service: Worker) -> None:
        """Nothing runs beside the worker."""

    def stopping(self, service: Worker, timeout: float) -> None:
        """Nothing runs beside the worker."""

    def finish(self, service: Worker, snapshot: bool) -> None:
        """Publish what is unpublished (if ``snapshot``), then release the lock."""
        try:
            if snapshot and self.lock is not None and self.failure is None and \
                    self._unpublished:
                self._publish(service)
        finally:
            self._holding.close()
            if self._connection is not None:
                self._connection.close()

    def _fail(self, error: BaseException) -> None:
        if self.failure is None:
            self.failure = error
        self.should_stop.set()

    # -- the worker's periodic work: the lock, then the log -------------------------------
    def period(self, service: Worker) -> float | None:
        return self.poll_interval

    def periodic(self, service: Worker) -> bool:
        """Take the lock (and restore), or apply the next page of the log and sweep when
        due; True while the log is ahead (the worker runs it again at once)."""
        if self.failure is not None:
            return False
        if self.lock is None:
            return self._take_lock(service)
        applied = self._learn(service, self.store.events(after=self.seq, limit=self.page))
        caught_up = applied < self.page
        self._idle = caught_up and applied == 0
        if caught_up:
            self._sweep(service)
        return not caught_up

    def _take_lock(self, service: Worker) -> bool:
        try:
            self.lock = self._holding.enter_context(learner_lock(
                self._connection, self.lock_name, timeout=self.lock_timeout,
                on_wait=self._tell_waiting))
        except TimeoutError:
            return False
        policy, after = policy_from_snapshot(service.config, self.store)
        service.install(policy, after, None, logged=False)
        self.seq = self.published_seq = after
        replayed = self._learn(service, self.store.events(after=after))
        service.restored_from = {"snapshot_seq": after, "replayed_events": replayed}
        self._last_publish = time.monotonic()
        logger.info("glmbandits learner: holding the learner lock (waited %.1f s); restored "
                    "from snapshot seq %d + %d events, model_version %d",
                    time.monotonic() - self._waiting_since, after, replayed,
                    service.policy.model_version)
        return True

    def _tell_waiting(self, key: int) -> None:
        if not self._told:
            self._told = True
            logger.info("glmbandits learner: waiting for the learner lock %r (key %d): another "
                        "learner holds it; this one takes over when it stops",
                        self.lock_name, key)

    def _learn(self, service: Worker, events: Iterable[Event]) -> int:
        """Apply ``events`` in order, moving the cursor; how many."""
        applied = 0
        for event in events:
            self._apply(service.policy, event)
            self.seq = event.seq
            applied += 1
        self._unpublished += applied
        return applied

    def _apply(self, policy: Any, event: Event) -> None:
        """Learn one event; one the policy refuses is skipped (as the offline rebuild skips
        it) and said in the log, so an operator sees it."""
        if not learn_event(policy, event):
            self.skipped += 1
            logger.warning("glmbandits learner: event seq %d (%s of decision_id %r) was not "
                           "applied: the policy refused it (e.g. a reward for a decision "
                           "closed longer ago than max_resolved); %d skipped so far",
                           event.seq, event.kind, event.decision_id, self.skipped)

    def _sweep(self, service: Worker) -> None:
        """Append an ``expire`` event if pending decisions are older than ``reward_wait``
        (every ``expire_every`` seconds); the worker commits it, and it is applied when
        read back."""
        options = service.config.decisions
        if options.reward_wait is None or \
                time.monotonic() - self._last_sweep < options.expire_every:
            return
        self._last_sweep = time.monotonic()
        now = service.clock()
        if service.policy.decisions_.has_expired(now - options.reward_wait):
            service.append(Event("expire", None, now, older_than=options.reward_wait))

    # -- publication ------------------------------------------------------------------
    def committed(self, service: Worker) -> None:
        """Publish if there are unpublished changes and it is time (module docstring)."""
        if self.lock is None or self.failure is not None or not self._unpublished:
            return
        since = time.monotonic() - self._last_publish
        if since < self.min_interval:
            return
        if self._idle or since >= self.max_staleness or \
                self._unpublished >= service.config.snapshot_every:
            try:
                self._publish(service)
            except Exception as error:  # a lost lock, or the database: the learner stops
                self._fail(error)

    def _publish(self, service: Worker) -> int:
        """Write the model as a new immutable version and NOTIFY; its row id."""
        assert self.lock is not None  # only a learner that holds the lock publishes
        if not self.lock.held():
            raise LostLockError(f"glmbandits learner: the learner lock {self.lock_name!r} was "
                                "lost (its database session ended); not publishing, stopping")
        policy = service.policy
        statistics = {key: int(value) for key, value in policy.decision_statistics.items()}
        row_id = self.store.publish(self.seq, encode_snapshot(policy),
                                    model_version=int(policy.model_version),
                                    pending=statistics["pending"], statistics=statistics)
        self.published_seq, self._unpublished = self.seq, 0
        service.snapshot_seq = self.seq
        self._last_publish = time.monotonic()
        logger.info("glmbandits learner: published model_version %d (seq %d, version id %d, "
                    "%d pending)", policy.model_version, self.seq, row_id,
                    statistics["pending"])
        return row_id

    # -- requests: a learner serves none ------------------------------------------------
    def decide_operation(self, service: Worker, X: np.ndarray,
                         decision_id: str | None, rows: tuple[int, ...] | None,
                         requested: int | None, shown: int | None,
                         explain: bool = False) -> Operation:
        raise TypeError("LearnerRole: a learner serves no decide (send it to an API process)")

    def reward_operation(self, service: Worker, decision_id: str,
                         reward: float) -> Operation:
        raise TypeError("LearnerRole: a learner serves no reward (send it to an API process)")

    def model_info(self, service: Worker) -> dict[str, Any]:
        """What it learned: the model version, the cursor, the last publication."""
        policy = service.policy
        return {"policy": service.config.policy.name, "role": "learner",
                "model_version": None if policy is None else int(policy.model_version),
                "seq": self.seq, "published_seq": self.published_seq,
                "skipped": self.skipped}

    def totals(self, service: Worker) -> dict[str, int]:
        """The store's counters (totals over every API process)."""
        return self.store.totals()

    def pending_count(self, service: Worker) -> int:
        """Decisions waiting for a reward in the learner's policy (0 before the lock)."""
        policy = service.policy
        return 0 if policy is None else int(policy.decisions_.n_pending)


def learner_service(config: ServiceConfig, store: PostgresStore,
                    **options: Any) -> DecisionService:
    """The commit worker of a scale-out learner (not started): a
    :class:`~glmbandits.service.core.DecisionService` with a :class:`LearnerRole`
    (``options`` are the role's)."""
    return DecisionService(config, store, role=LearnerRole(store, **options))


def run_learner(config: ServiceConfig, *, db: str | None = None,
                log_level: str = "info") -> int:
    """``--role learner``: learn from the PostgreSQL log until SIGTERM/SIGINT; exit code.

    0 after a clean stop (a last publication is written), 1 if the learner lock was
    lost (another learner may hold it now).
    """
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(message)s")
    if db is not None:
        config = dataclasses.replace(config, db=db)
    store = open_store(config.db)
    try:  # a PostgreSQL log: the only kind ``glmbandits serve --role learner`` accepts
        service = learner_service(config, cast(PostgresStore, store))
    except BaseException:
        store.close()
        raise
    role = cast(LearnerRole, service.role)
    handled = (signal.SIGINT, signal.SIGTERM)
    original = {sig: signal.signal(sig, lambda *_: role.should_stop.set()) for sig in handled}
    try:
        try:
            service.start()
        except BaseException:
            service.stop(snapshot=False)
            raise
        role.should_stop.wait()  # a signal, or a failure of the worker's
        service.stop()
        if role.failure is not None:
            raise role.failure
    except LostLockError as error:
        logger.error("%s", error)
        return 1
    finally:
        for sig, handler in original.items():
            signal.signal(sig, handler)
    logger.info("glmbandits learner: stopped cleanly")
    return 0
