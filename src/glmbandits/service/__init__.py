"""The decision service behind ``glmbandits serve``.

HTTP stays at the edge: :mod:`.app` (Starlette routes only) parses and validates
requests with :mod:`.schemas` and calls :class:`.core.DecisionService`, which
knows nothing of HTTP. The core runs every policy call on one worker thread,
writes every event to a :class:`.store.Store` (:mod:`.sqlite_store`) and commits
before it answers; it recovers from a snapshot plus the log tail (:mod:`.replay`,
:mod:`.snapshot`). :mod:`.config` reads and checks the TOML config,
:mod:`.auth` the API keys, :mod:`.metrics` the Prometheus counters,
:mod:`.server` runs uvicorn with a SIGTERM that drains, snapshots and exits 0,
:mod:`.export` writes the log as Parquet. See ``docs/service.md``.

Only :mod:`.app`, :mod:`.server`, :mod:`.schemas` and :mod:`.export` need the
``serve`` extra (starlette, uvicorn, msgspec, pyarrow); this package's
``__init__`` imports none of them.
"""

from __future__ import annotations

from .config import ConfigError, ServiceConfig, example_config, load_config

__all__ = ["ConfigError", "ServiceConfig", "example_config", "load_config"]
