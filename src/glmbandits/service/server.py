"""Run the service under uvicorn; SIGTERM drains, writes a snapshot, exits 0.

The learner serves no HTTP and runs without uvicorn:
:func:`~glmbandits.service.learner_role.run_learner`.

uvicorn handles SIGTERM and SIGINT by finishing the requests in flight and
running the app's shutdown (which stops the core: the queue is answered, then
a snapshot is written), and by default it then raises the signal again, so the
process would end "killed by SIGTERM". :class:`_Server` keeps the draining and
drops the re-raise: a clean stop exits 0.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import signal
import threading
from typing import TYPE_CHECKING, Iterator, cast

import uvicorn

from .app import create_app
from .config import ServiceConfig
from .core import DecisionService
from .http_guard import guarded_protocol
from .roles import ROLES
from .store import open_store

if TYPE_CHECKING:
    from .postgres_store import PostgresStore

__all__ = ["run_server", "start_service", "ROLES"]

logger = logging.getLogger("glmbandits.service")


class _Server(uvicorn.Server):
    """uvicorn's server without re-raising the stop signal after a graceful shutdown."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        original = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)


def start_service(config: ServiceConfig, db: str | None = None,
                  role: str = "all") -> DecisionService:
    """Open the store (``db`` or the config's) and start the core: restore, then serve.

    ``role`` ``"all"``: one process decides, learns and snapshots (SQLite or
    PostgreSQL); ``"api"``: a scale-out API process (PostgreSQL only, see
    :mod:`.api_role`).

    The store is claimed first (``Store.claim_topology``): the process holds the log
    until the service stops, and a log another process serves is refused with
    :class:`~glmbandits.service.log_lock.LogInUseError` before anything is read. A log
    that does not replay (written by two processes at once, for one) is refused with
    :class:`~glmbandits.service.replay.ReplayMismatchError` (``glmbandits recover``).
    """
    if role not in ("all", "api"):
        raise ValueError(f"start_service: role must be 'all' or 'api' (a learner serves no "
                         f"API: learner_role.run_learner), got {role!r}")
    if db is not None:
        config = dataclasses.replace(config, db=db)
    store = open_store(config.db, synchronous=config.synchronous)
    try:
        if role == "api":
            from .api_role import api_service

            # a PostgreSQL log: the only kind ``glmbandits serve --role api`` accepts
            return api_service(config, cast("PostgresStore", store)).start()
        store.claim_topology("single")
        return DecisionService(config, store).start()
    except BaseException:
        store.close()
        raise


def _freeze_startup_objects() -> None:
    """Move every object alive now (the imported modules, the restored policy: about
    60,000 objects) out of the cyclic garbage collector's sight (:func:`gc.freeze`).

    They live as long as the process, yet each full collection would walk them all,
    holding the GIL for about 30 ms on the benchmark machine, long enough to show in
    the p99.9 of decide latency; after the freeze a full collection walks only what
    the requests left behind. Collected first, so that no garbage is frozen.
    """
    gc.collect()
    gc.freeze()


def run_server(config: ServiceConfig, *, host: str | None = None, port: int | None = None,
               db: str | None = None, log_level: str = "info", access_log: bool = False,
               role: str = "all", log_format: str | None = None) -> int:
    """Serve until SIGTERM/SIGINT; returns the exit code (0 after a clean stop).

    The store is opened and the model restored before the port is bound, so a
    bad store or a config that does not match the log fails before serving.
    ``role`` is ``"all"`` or ``"api"`` (see :func:`start_service`). ``log_format``
    (default: the config's ``log_format``) ``"json"`` writes every log line, the
    service's and uvicorn's, as one JSON object (:mod:`.logging_json`).
    """
    http = guarded_protocol(  # needs httptools (the serve extra): before the log is opened
        max_header_bytes=config.max_header_bytes, max_headers=config.max_headers,
        header_timeout=config.header_timeout, body_timeout=config.body_timeout)
    log_config = None
    if (log_format or config.log_format) == "json":
        from .logging_json import use_json_logs

        log_config = use_json_logs(log_level)  # before the restore: its lines are JSON too
    service = start_service(config, db, role)
    restored = service.restored_from
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(message)s")
    logger.info("glmbandits serve (role %s): %s at %s, restored from snapshot seq %d + %d "
                "events, model_version %d", role, config.policy.name, service.store.url,
                restored["snapshot_seq"], restored["replayed_events"],
                service.policy.model_version)
    try:
        app = create_app(config, service)  # refuses no key, or a documented example key
    except BaseException:
        service.stop(snapshot=False)
        raise
    server = _Server(uvicorn.Config(
        app, host=host or config.host, port=config.port if port is None else port,
        log_level=log_level, access_log=access_log, lifespan="on",
        log_config=uvicorn.config.LOGGING_CONFIG if log_config is None else log_config,
        timeout_graceful_shutdown=30, http=http))
    _freeze_startup_objects()
    try:
        server.run()
    except SystemExit as exit_:  # uvicorn exits this way when it cannot bind
        if service.running:
            service.stop()
        return int(exit_.code or 1)
    if service.running:  # the lifespan did not run (startup failed)
        service.stop()
        return 1
    logger.info("glmbandits serve: stopped cleanly after a snapshot at seq %d",
                service.snapshot_seq)
    return 0
