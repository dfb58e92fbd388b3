"""``--role learner``: the one process that learns, from the PostgreSQL log, in log order.

:class:`Learner` holds the learner lock (:func:`~glmbandits.data.postgres_locks.learner_lock`,
a session advisory lock per schema: a second learner logs that it waits, blocks, and
takes over when the first stops or dies), then:

1. restores its policy from the newest model version and the log after it
   (:func:`~glmbandits.service.replay.learn_event`: decisions are registered, never
   decided again);
2. reads the log in sequence (= commit) order and applies each event;
3. runs the expiry sweep (``reward_wait``) by **appending** an ``expire`` event and
   applying it when it reads it back, so the log alone rebuilds the model
   (:func:`~glmbandits.service.replay.rebuild_learner_from_log`);
4. publishes an immutable model version (``model_version`` = rewards absorbed, the seq
   it includes, SHA-256) and NOTIFYs the API processes: after ``snapshot_every``
   events, or within about a second of the last unpublished change when idle (at most
   every ``min_interval`` seconds). It checks that it still holds the lock first, and
   stops (exit 1) if it lost it.

It serves no HTTP; its log lines say what it does.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from ..data.postgres_locks import AdvisoryLock, learner_lock
from .config import ServiceConfig
from .core import check_store_config
from .events import Event
from .postgres_store import PostgresStore
from .replay import learn_event, policy_from_snapshot
from .snapshot import encode_snapshot

__all__ = ["Learner", "LostLockError"]

logger = logging.getLogger("glmbandits.service")


class LostLockError(RuntimeError):
    """The learner's lock session ended (another learner may hold it now)."""


class Learner:
    """The learner of a scale-out service (see the module docstring).

    Parameters
    ----------
    config : ServiceConfig
    store : PostgresStore
    clock : callable, optional
        Seconds since the epoch, the time of the ``expire`` events it appends.
    poll_interval : float, default 0.05
        Seconds between two reads of the log when it is caught up.
    min_interval : float, default 0.25
        The least time between two publications.
    max_staleness : float, default 1.0
        Unpublished changes are published after at most this long (and at once when idle).
    """

    def __init__(self, config: ServiceConfig, store: PostgresStore, *,
                 clock: Callable[[], float] = time.time, poll_interval: float = 0.05,
                 min_interval: float = 0.25, max_staleness: float = 1.0) -> None:
        if not isinstance(store, PostgresStore):
            raise TypeError(f"Learner: store must be a PostgresStore (--role learner needs "
                            f"--db postgresql://...), got {type(store).__name__}")
        self.config, self.store, self.clock = config, store, clock
        self.poll_interval = poll_interval
        self.min_interval = min_interval
        self.max_staleness = max_staleness
        self.policy: Any = None
        self.seq = 0
        self.published_seq = 0
        self._unpublished = 0
        self._last_publish = 0.0
        self._last_sweep = 0.0
        self.skipped = 0  # events the policy refused (see _apply)

    @property
    def lock_name(self) -> str:
        """The learner lock's name: one learner per schema of a database."""
        return f"glmbandits.learner:{self.store.schema}"

    # -- life cycle ------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Wait for the lock, then learn until ``stop`` is set (publishing before it returns).

        Raises :class:`LostLockError` if the lock's session ended while it worked.
        """
        self.store.claim_topology("scale-out")
        check_store_config(self.config, self.store)
        connection = self.store.connect("glmbandits-learner-lock")
        self._waiting_since = time.monotonic()
        try:
            while not stop.is_set():
                acquired = False
                try:
                    with learner_lock(connection, self.lock_name, timeout=1.0,
                                      on_wait=self._tell_waiting) as lock:
                        acquired = True
                        self._learn(lock, stop)
                        return
                except TimeoutError:
                    if acquired:
                        raise
        finally:
            connection.close()

    _told = False
    _waiting_since = 0.0

    def _tell_waiting(self, key: int) -> None:
        if not self._told:
            self._told = True
            logger.info("glmbandits learner: waiting for the learner lock %r (key %d): another "
                        "learner holds it; this one takes over when it stops",
                        self.lock_name, key)

    def _learn(self, lock: AdvisoryLock, stop: threading.Event) -> None:
        replayed = self.restore()
        logger.info("glmbandits learner: holding the learner lock (waited %.1f s); restored "
                    "from snapshot seq %d + %d events, model_version %d",
                    time.monotonic() - self._waiting_since,
                    self.published_seq, replayed, self.policy.model_version)
        while not stop.is_set():
            applied, caught_up = self.step()
            self.maybe_publish(lock, idle=caught_up and applied == 0)
            if caught_up:
                stop.wait(self.poll_interval)
        if self._unpublished:
            self.publish(lock)

    def restore(self) -> int:
        """The newest published model plus the log after it; returns how many events
        were applied on top of the snapshot."""
        policy, after = policy_from_snapshot(self.config, self.store)
        self.policy, self.seq, self.published_seq = policy, after, after
        count = 0
        for event in self.store.events(after=after):
            self._apply(event)
            self.seq = event.seq
            count += 1
        self._unpublished = count
        self._last_publish = time.monotonic()
        return count

    # -- one round ----------------------------------------------------------------------
    def step(self, page: int = 1000) -> tuple[int, bool]:
        """Apply the next page of the log and run the sweep when due.

        Returns (events applied, whether the log is read to its end).
        """
        applied = 0
        for event in self.store.events(after=self.seq, limit=page):
            self._apply(event)
            self.seq = event.seq
            applied += 1
        self._unpublished += applied
        caught_up = applied < page
        if caught_up:
            self.sweep()
        return applied, caught_up

    def _apply(self, event: Event) -> None:
        """Learn one event; one the policy refuses is skipped (as the offline rebuild skips
        it) and said in the log, so an operator sees it."""
        if not learn_event(self.policy, event):
            self.skipped += 1
            logger.warning("glmbandits learner: event seq %d (%s of decision_id %r) was not "
                           "applied: the policy refused it (e.g. a reward for a decision "
                           "closed longer ago than max_resolved); %d skipped so far",
                           event.seq, event.kind, event.decision_id, self.skipped)

    def sweep(self) -> bool:
        """Append an ``expire`` event if pending decisions are older than ``reward_wait``
        (every ``expire_every`` seconds); it is applied when read back. Returns whether
        one was appended."""
        options = self.config.decisions
        if options.reward_wait is None or \
                time.monotonic() - self._last_sweep < options.expire_every:
            return False
        self._last_sweep = time.monotonic()
        now = self.clock()
        cutoff = now - options.reward_wait
        if not self.policy.decisions_.has_expired(cutoff):
            return False
        self.store.append(Event("expire", None, now, older_than=options.reward_wait))
        self.store.commit()
        return True

    def maybe_publish(self, lock: AdvisoryLock, *, idle: bool) -> bool:
        """Publish if there are unpublished changes and it is time (module docstring)."""
        if not self._unpublished:
            return False
        since = time.monotonic() - self._last_publish
        if since < self.min_interval:
            return False
        if idle or since >= self.max_staleness or \
                self._unpublished >= self.config.snapshot_every:
            self.publish(lock)
            return True
        return False

    def publish(self, lock: AdvisoryLock) -> int:
        """Write the model as a new immutable version and NOTIFY; its row id."""
        if not lock.held():
            raise LostLockError(f"glmbandits learner: the learner lock {self.lock_name!r} was "
                                "lost (its database session ended); not publishing, stopping")
        policy = self.policy
        statistics = {key: int(value) for key, value in policy.decision_statistics.items()}
        row_id = self.store.publish(self.seq, encode_snapshot(policy),
                                    model_version=int(policy.model_version),
                                    pending=statistics["pending"], statistics=statistics)
        self.published_seq, self._unpublished = self.seq, 0
        self._last_publish = time.monotonic()
        logger.info("glmbandits learner: published model_version %d (seq %d, version id %d, "
                    "%d pending)", policy.model_version, self.seq, row_id,
                    statistics["pending"])
        return row_id
