"""The service core: decide and reward against a store, with no HTTP.

:class:`DecisionService` owns the policy and runs every call on it on one
worker thread (the policy is not thread-safe, and a single order of calls is
what makes the log replayable). Requests are queued; the worker takes what is
waiting (up to ``max_batch``), applies each call (the policy writes its events
into the store's open transaction), commits once, and only then answers every
request of the batch: a response is never sent for an event that is not
durable, and concurrent requests share one commit.

If a write or the commit fails, the worker rolls back, rebuilds the policy
from the store (snapshot plus log tail) and answers the batch with
:class:`Unavailable`: the policy never holds state the log does not.

What the operations do is the service's role (:mod:`glmbandits.service.roles`), a
strategy of this one worker: ``all`` (:class:`~glmbandits.service.roles.AllRole`, the
default), ``api`` (:class:`~glmbandits.service.api_role.ApiRole`) or ``learner``
(:class:`~glmbandits.service.learner_role.LearnerRole`). Between batches the worker runs
the role's periodic work (the expiry sweep; the learner's lock and log reading), and after
each commit the role's :meth:`~glmbandits.service.roles.Role.committed` (a snapshot; the
learner's model versions).

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> from glmbandits.service.config import example_config, parse_config, tomllib
>>> from glmbandits.service.store import open_store
>>> config = parse_config(tomllib.loads(example_config()))
>>> store = open_store("sqlite:///" + os.path.join(tempfile.mkdtemp(), "log.db"))
>>> service = DecisionService(config, store).start()
>>> answer = service.decide(np.eye(3, 10), decision_id="r1")
>>> answer["decision_id"], answer["model_version"]
('r1', 0)
>>> service.reward("r1", 1.0)["status"]
'learned'
>>> service.stop()
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import threading
import time
from typing import Any, Callable

import numpy as np

from .config import ServiceConfig
from .errors import (Conflict, Invalid, NotFound, Overloaded, ServiceError,
                     StoreMismatchError, Unavailable)
from .catalogue import ActionCatalogue
from .events import Event, LogSink, total_keys
from .named_body import NamedDecide
from .named_operations import decide_named_operation, restore_catalogue
from .roles import AllRole, Role, ServedPolicy
from .snapshot import encode_snapshot
from .store import Store

__all__ = ["DecisionService", "ServiceError", "Invalid", "NotFound", "Conflict",
           "Unavailable", "Overloaded", "StoreMismatchError", "check_store_config"]

_STOP = object()


def _settle(replies: list) -> None:
    """Set a batch's asyncio futures (on their loop); skip those cancelled meanwhile."""
    for future, value, error in replies:
        if future.done():
            continue
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)


def _answer_all(results: list) -> None:
    """Answer a batch's ``(future, value, error)`` in order: a concurrent future at once,
    a coroutine's ``(loop, asyncio future)`` with one :func:`_settle` per batch and loop
    (a batch wakes the event loop once, not once a request as ``wrap_future`` would)."""
    replies: dict[asyncio.AbstractEventLoop, list] = {}
    for future, value, error in results:
        if isinstance(future, tuple):
            replies.setdefault(future[0], []).append((future[1], value, error))
        elif error is None:
            future.set_result(value)
        else:
            future.set_exception(error)
    for loop, items in replies.items():
        with contextlib.suppress(RuntimeError):  # a loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(_settle, items)


def check_store_config(config: ServiceConfig, store: Store) -> None:
    """Record the config's fingerprint in a new store, or refuse (StoreMismatchError) a
    store whose log was written with another policy config."""
    fingerprint = config.fingerprint()
    stored = store.get_meta("config")
    if stored is None:
        store.set_meta("config", fingerprint)
    elif stored != fingerprint:
        raise StoreMismatchError(
            f"the event log {store.url} was written by a service with another policy "
            f"config; replaying it into this one would not rebuild the model.\n  log's "
            f"config:  {stored}\n  this config: {fingerprint}\nUse a new --db or the "
            "original config.")


class DecisionService:
    """Decide and reward with one policy, every event durable before the answer.

    Parameters
    ----------
    config : ServiceConfig
        The checked config (policy, decision options, snapshot interval).
    store : Store
        Where events and snapshots go (e.g. :class:`SQLiteStore`).
    clock : callable, optional
        Seconds since the epoch (default ``time.time``); the time of every event.
    max_batch : int, default 256
        The most requests one commit covers.
    role : Role, optional
        What the operations do (default :class:`~glmbandits.service.roles.AllRole`).
    """

    def __init__(self, config: ServiceConfig, store: Store, *,
                 clock: Callable[[], float] = time.time, max_batch: int = 256,
                 role: Role | None = None) -> None:
        self.config = config
        self.store = store
        self.clock = clock
        self.max_batch = max_batch
        self.role: Role = AllRole() if role is None else role
        self.policy: ServedPolicy = None  # type: ignore[assignment]  # set by start()
        self.snapshot_seq = 0
        self.restored_from: dict[str, int] = {}
        self.latest_explanation: dict[str, Any] | None = None  # (roles.add_explanation)
        #: the actions by id (a service with a [features] schema; named_operations)
        self.catalogue = ActionCatalogue(config.features, config.decisions.max_catalogue)
        self._queue: queue.Queue = queue.Queue()  # bounded by config.max_queue: _enqueue
        self._ready = threading.Event()  # restored and serving; cleared when stopping
        self.stopping = False  # stop() has begun
        self.restoring = False  # start() is restoring the model
        self._thread: threading.Thread | None = None
        self._staged: list[Event] = []
        self.sink = LogSink(self.append)
        self._totals: dict[str, int] = {}
        self._last_sweep = 0.0
        self._started = time.time()
        self._lock = threading.Lock()
        self._commits = [0, 0]  # commits, requests answered after them

    # -- life cycle ------------------------------------------------------------------
    def start(self) -> "DecisionService":
        """Check the store's config, restore the policy (the role's: snapshot + log tail,
        or the latest published model), start the worker; :attr:`ready` after that."""
        self.restoring = True
        try:
            self.role.begin(self)
            check_store_config(self.config, self.store)
            self.role.restore(self)
            self._restore_catalogue()
            self._thread = threading.Thread(target=self._work,
                                            name="glmbandits-service-worker", daemon=True)
            self._thread.start()
            self.role.started(self)
        finally:
            self.restoring = False
        self._ready.set()
        return self

    def _restore_catalogue(self) -> None:
        """The catalogue as the log has it (only with a schema: no other can hold any)."""
        if self.config.features is not None:
            self.catalogue = restore_catalogue(self)

    def install(self, policy: ServedPolicy, snapshot_seq: int, totals: dict[str, int] | None,
                restored_from: dict[str, int] | None = None, *, logged: bool = True
                ) -> None:
        """Serve ``policy`` (its events go to the store's open transaction, unless not
        ``logged``: a learner applies the log and logs nothing of its own); ``totals`` are
        the log's counts (None: unchanged). The role calls it, on the worker once started."""
        policy.event_log = self.sink if logged else None
        self.policy = policy
        self.snapshot_seq = snapshot_seq
        if restored_from is not None:
            self.restored_from = restored_from
        if totals is not None:
            with self._lock:
                self._totals = totals

    def stop(self, *, snapshot: bool = True, timeout: float = 30.0) -> None:
        """Answer what is queued, stop the worker, let the role finish (a last snapshot or
        model version if ``snapshot``), close the store."""
        self._ready.clear()
        self.stopping = True
        self.role.stopping(self, timeout)
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join(timeout)
            self._thread = None
        try:
            self.role.finish(self, snapshot)
        finally:
            self.store.close()

    @property
    def running(self) -> bool:
        """Whether the worker thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def ready(self) -> bool:
        """Whether the model is restored and the worker serves (``GET /v1/ready``): False
        before :meth:`start` has restored it and from the moment :meth:`stop` begins."""
        return self._ready.is_set() and self.running

    def write_snapshot(self) -> int:
        """Snapshot the policy now (worker thread or stopped service); returns its seq."""
        seq = self.store.last_seq()
        self.store.write_snapshot(seq, encode_snapshot(self.policy))
        self.snapshot_seq = seq
        return seq

    # -- requests ---------------------------------------------------------------------
    def submit(self, operation: Callable[[], Any]) -> concurrent.futures.Future:
        """Queue ``operation`` for the worker; its future is set after the commit."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._enqueue(operation, future)
        return future

    def _enqueue(self, operation: Callable[[], Any], future: Any) -> None:
        """Queue a request, or refuse it: 503 if the worker is not running, 429
        (:class:`Overloaded`, nothing done) if ``config.max_queue`` requests already wait
        for it (a client retries later, with the same ``decision_id``)."""
        if not self.running:
            raise Unavailable("the service is not running")
        limit = self.config.max_queue
        if self._queue.qsize() >= limit:
            raise Overloaded(f"{limit} requests already wait for the service's worker "
                             f"([service] max_queue = {limit}); nothing of this request was "
                             "done: retry it after Retry-After seconds (a decide with the "
                             "same decision_id)")
        self._queue.put((operation, future))

    def decide(self, contexts: Any, decision_id: str | None = None,
               excluded: Any = None, default_action: int | None = None,
               explain: bool = False) -> dict[str, Any]:
        """Decide (blocking until the decision is durable); see :meth:`decide_operation`."""
        answer: dict[str, Any] = self.submit(self.decide_operation(
            contexts, decision_id, excluded, default_action, explain)).result()
        return answer

    def reward(self, decision_id: str, reward: float) -> dict[str, Any]:
        """Reward (blocking until the reward is durable); see :meth:`reward_operation`."""
        answer: dict[str, Any] = self.submit(self.reward_operation(decision_id, reward)).result()
        return answer

    def _submit_async(self, operation: Callable[[], Any]) -> asyncio.Future:
        """:meth:`submit` for a coroutine: a future of the running loop (see _answer_all)."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._enqueue(operation, (loop, future))
        return future

    async def decide_async(self, contexts: Any, decision_id: str | None = None,
                           excluded: Any = None, default_action: int | None = None,
                           explain: bool = False) -> dict[str, Any]:
        """:meth:`decide` for a coroutine (waits without blocking the event loop)."""
        answer: dict[str, Any] = await self._submit_async(self.decide_operation(
            contexts, decision_id, excluded, default_action, explain))
        return answer

    async def reward_async(self, decision_id: str, reward: float) -> dict[str, Any]:
        """:meth:`reward` for a coroutine."""
        answer: dict[str, Any] = await self._submit_async(
            self.reward_operation(decision_id, reward))
        return answer

    async def call_async(self, operation: Callable[[], Any]) -> Any:
        """Run a read-only operation on the worker (a consistent view of the policy)."""
        return await self._submit_async(operation)

    def decide_operation(self, contexts: Any, decision_id: str | None,
                         excluded: Any, default_action: int | None = None,
                         explain: bool = False) -> Callable[[], dict[str, Any]]:
        """The worker's half of ``decide`` (the role's): checks, decides, logs; returns the
        answer. ``default_action`` is required in shadow mode, ignored in live mode.
        ``explain``: the answer carries ``explanation`` (:mod:`glmbandits.policies.explain`;
        None for a retry of a decision made without it); without it the answer is as
        before, key for key."""
        X = np.asarray(contexts, dtype=np.float64)
        rows = None if excluded is None else tuple(int(i) for i in excluded)
        shown = self.default_row(default_action)
        if not explain:  # (a Role written before explain existed keeps working)
            return self.role.decide_operation(self, X, decision_id, rows, default_action,
                                              shown)
        return self.role.decide_operation(self, X, decision_id, rows, default_action, shown,
                                          explain=True)

    def decide_named(self, named: NamedDecide) -> dict[str, Any]:
        """A named-feature decide (blocking until durable); see
        :func:`~glmbandits.service.named_operations.decide_named_operation`."""
        answer: dict[str, Any] = self.submit(decide_named_operation(self, named)).result()
        return answer

    async def decide_named_async(self, named: NamedDecide) -> dict[str, Any]:
        """:meth:`decide_named` for a coroutine."""
        answer: dict[str, Any] = await self._submit_async(decide_named_operation(self, named))
        return answer

    def default_row(self, default_action: int | None) -> int | None:
        """The row a decide shows: the client's ``default_action`` in shadow mode (where
        it is required: 422 without it), None in live mode (where it is ignored)."""
        if self.config.decisions.mode != "shadow":
            return None
        if default_action is None:
            raise Invalid("default_action is required in shadow mode ([decisions] mode = "
                          "\"shadow\"): send the row the client shows", "default_action")
        return default_action

    def reward_operation(self, decision_id: str, reward: float) -> Callable[[], dict[str, Any]]:
        """The worker's half of ``reward`` (the role's): learns (or counts, or logs for the
        learner); returns the answer."""
        return self.role.reward_operation(self, decision_id, reward)

    def model_info_operation(self) -> Callable[[], dict[str, Any]]:
        """A worker operation that returns ``GET /v1/model``'s body."""
        def operation() -> dict[str, Any]:
            body = self.role.model_info(self)
            schema = self.config.features
            if schema is not None:  # the columns' names and the catalogue's size
                body["feature_names"] = list(schema.feature_names_out_)
                body["catalogue"] = {"actions": len(self.catalogue),
                                     "retired": len(self.catalogue.retired)}
            return body

        return operation

    def totals(self) -> dict[str, int]:
        """The log's counts (the role's: as of this worker's last commit, or the store's)."""
        return self.role.totals(self)

    def cached_totals(self) -> dict[str, int]:
        """The log's counts as of this worker's last commit."""
        with self._lock:
            return dict(self._totals)

    def commit_counts(self) -> tuple[int, int]:
        """(commits of request batches, requests they covered) since the start: concurrent
        requests share a commit (one fsync), so the second is at least the first. Only
        requests that logged an event count (a decide, a reward), never a read such as
        ``GET /v1/model``, nor a refused request, nor the expiry sweep."""
        with self._lock:
            return self._commits[0], self._commits[1]

    def pending_count(self) -> int:
        """How many decisions wait for a reward (read without the worker; approximate)."""
        return self.role.pending_count(self)

    # -- the worker ---------------------------------------------------------------------
    def append(self, event: Event) -> None:
        """Write an event into the store's open transaction (committed with the batch)."""
        self.store.append(event)
        self._staged.append(event)

    def staged(self) -> list[Event]:
        """The events of the batch being applied, not committed yet."""
        return self._staged

    def _work(self) -> None:
        every = self.role.period(self)
        again = False  # the role's periodic work is due at once
        while True:
            try:
                item = self._queue.get(timeout=0.0 if again else every)
            except queue.Empty:
                item = None
            batch = [] if item is None else [item]
            while len(batch) < self.max_batch:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(entry is _STOP for entry in batch)
            self._run_batch([entry for entry in batch if entry is not _STOP])
            if every is not None and (again or time.monotonic() - self._last_sweep >= every):
                self._last_sweep = time.monotonic()
                more: list[bool] = []
                self._run_batch([(lambda: more.append(self.role.periodic(self)), None)])
                again = any(more)
            if stop:
                return

    def _run_batch(self, batch: list) -> None:
        if not batch:
            return
        results: list[tuple[Any, Any, BaseException | None]] = []
        failed: BaseException | None = None
        writes = 0  # requests that logged an event (a read such as GET /v1/model logs none)
        for operation, future in batch:
            if failed is not None:
                results.append((future, None, None))
                continue
            staged = len(self._staged)
            try:
                results.append((future, operation(), None))
                writes += future is not None and len(self._staged) > staged
            except ServiceError as error:
                results.append((future, None, error))
            except Exception as error:  # a store write failed, or a bug
                failed = error
                results.append((future, None, None))
        if failed is None and self._staged:  # a batch that logged nothing commits nothing
            try:
                self.store.commit()
            except Exception as error:
                failed = error
        if failed is not None:
            self.store.rollback()
            self._staged.clear()
            self.role.recover(self, failed)
            try:  # what a refused catalogue change left in memory
                self._restore_catalogue()
            except Exception:
                pass
            message = (f"the event log could not be written ({type(failed).__name__}: "
                       f"{failed}); nothing of this request was kept, retry it")
            _answer_all([(future, None, Unavailable(message))
                         for future, _, _ in results if future is not None])
            return
        self._count(self._staged)
        self._staged.clear()
        if writes:  # neither reads nor the expiry sweep's own commits are counted
            with self._lock:
                self._commits[0] += 1
                self._commits[1] += writes
        _answer_all([result for result in results if result[0] is not None])
        self.role.committed(self)

    def _count(self, events: list[Event]) -> None:
        with self._lock:
            totals = self._totals
            for event in events:
                for key in total_keys(event.kind, event.status):
                    totals[key] = totals.get(key, 0) + 1
