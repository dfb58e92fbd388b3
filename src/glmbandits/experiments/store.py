"""The embedded results store: one SQLite file (Python's standard library).

Two tables. ``experiments`` holds each experiment's resolved config and the
package versions that ran it. ``runs`` holds one row per (experiment, cell,
replicate): the cell (environment, horizon, policy, parameters; a drifting environment's
``drift`` key says the regret is dynamic, :attr:`StoredRun.dynamic_regret`), the seeds,
the status (``ok`` or ``failed`` with its error), the final regret, the wall
time and the down-sampled cumulative-regret curve. Finished rows are what a
resumed run skips. Their summaries (mean ± sd per cell) are in :mod:`.summary`.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

__all__ = ["ResultStore", "StoreError", "StoredRun", "select_runs", "package_versions",
           "DEFAULT_STORE"]

#: Where ``glmbandits run CONFIG`` writes and ``glmbandits results`` reads by default.
DEFAULT_STORE = "glmbandits-results.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS experiments (
    name TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    versions TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    experiment TEXT NOT NULL,
    cell_key TEXT NOT NULL,
    replicate INTEGER NOT NULL,
    label TEXT NOT NULL,
    policy TEXT NOT NULL,
    params TEXT NOT NULL,
    environment TEXT NOT NULL,
    horizon INTEGER NOT NULL,
    seed TEXT NOT NULL,
    status TEXT NOT NULL,
    final_regret REAL,
    seconds REAL,
    rounds TEXT,
    curve TEXT,
    error TEXT,
    attempts INTEGER NOT NULL,
    finished REAL NOT NULL,
    PRIMARY KEY (experiment, cell_key, replicate)
);
"""


#: The tables and columns of a results store, as SQLite reports them.
_TABLES = {
    "experiments": ("name", "config", "versions", "created", "updated"),
    "runs": ("experiment", "cell_key", "replicate", "label", "policy", "params", "environment",
             "horizon", "seed", "status", "final_regret", "seconds", "rounds", "curve", "error",
             "attempts", "finished"),
}
_SQLITE_HEADER = b"SQLite format 3\x00"


class StoreError(ValueError):
    """A path given as a results store is not one (empty, corrupt or another program's file),
    or a store that cannot be read or written (a damaged page, a lock held too long)."""


#: SQLite's primary result codes that mean the file itself is damaged (SQLITE_CORRUPT,
#: SQLITE_NOTADB); https://www.sqlite.org/rescode.html
_DAMAGE_CODES = frozenset({11, 26})


def _damaged(owner: str, reason: object) -> StoreError:
    return StoreError(f"{owner}: the results store is damaged ({reason}); move it aside (or "
                      "restore a backup) and run again: a new store is then created at this path")


def _store_error(owner: str, error: sqlite3.Error) -> StoreError:
    """The StoreError a SQLite error on a results store becomes: damage, or another failure."""
    code = getattr(error, "sqlite_errorcode", None)  # Python >= 3.11
    if code in _DAMAGE_CODES or (code is None and type(error) is sqlite3.DatabaseError):
        return _damaged(owner, error)
    if isinstance(error, sqlite3.OperationalError) and code is None:
        # raised by Python's sqlite3 module itself, e.g. a text value that is not UTF-8
        return _damaged(owner, str(error)[:120])
    return StoreError(f"{owner}: could not use the results store ({error})")


def _create_atomically(path: Path) -> None:
    """Make a new, empty results store appear at ``path`` in one step, unless a file is there.

    The schema is written into a temporary file beside ``path``, which is then hard-linked
    to ``path`` (``os.link`` fails when ``path`` exists). So a peer process never sees an
    empty or half-made store at ``path``: the path is absent, or it is a whole store. When
    several processes create one store at once, one link wins and the others open its file.
    On a file system without hard links, the schema is written at ``path`` in one
    transaction instead.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".new",
                                         dir=path.parent)
    os.close(handle)
    try:
        connection = sqlite3.connect(temporary)
        try:
            connection.executescript(f"BEGIN;{_SCHEMA}COMMIT;")
        finally:
            connection.close()
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # a peer created it first: open theirs
        except (OSError, NotImplementedError):  # no hard links here
            connection = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
            try:
                connection.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}COMMIT;")
            finally:
                connection.close()
    finally:
        Path(temporary).unlink(missing_ok=True)


def _connect_existing(path: Path) -> sqlite3.Connection:
    """Open an existing results store without writing to it; refuse anything else.

    The checks only read: the file header, then SQLite's own table list. A
    refused file is left byte for byte as it was (no tables are added).
    """
    owner = f"ResultStore({str(path)!r})"
    if path.is_dir():
        raise StoreError(f"{owner}: path must be a SQLite results file, got a directory")
    with path.open("rb") as handle:
        header = handle.read(len(_SQLITE_HEADER))
    if not header:
        raise StoreError(f"{owner}: path must be a glmbandits results store, got an empty file "
                         "(remove it, or give a new path, to create a store)")
    if header != _SQLITE_HEADER:
        raise StoreError(f"{owner}: path must be a glmbandits results store (a SQLite file), "
                         "got a file that is not a SQLite database")
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=30.0)
    try:
        names = [row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        columns = {name: tuple(row[1] for row in connection.execute(
            f"PRAGMA table_info({name!r})")) for name in names}
    except sqlite3.DatabaseError as error:
        connection.close()
        raise StoreError(f"{owner}: path must be a glmbandits results store, got a corrupt "
                         f"SQLite file ({error})") from None
    if columns != _TABLES:
        connection.close()
        found = ", ".join(sorted(names)) or "no tables"
        raise StoreError(f"{owner}: path must be a glmbandits results store (tables "
                         f"experiments and runs), got a SQLite database with {found}")
    try:  # a damaged page is refused here, before a run computes anything it cannot store
        problems = [row[0] for row in connection.execute("PRAGMA quick_check")]
    except sqlite3.Error as error:
        connection.close()
        raise _store_error(owner, error) from None
    if problems != ["ok"]:
        connection.close()
        raise _damaged(owner, problems[0].replace("\n", " ")[:120])
    return connection


def package_versions() -> dict[str, str]:
    """Versions of Python, glmbandits, numpy and scipy (recorded with every experiment)."""
    import scipy

    from .._version import __version__

    return {"python": platform.python_version(), "glmbandits": __version__,
            "numpy": np.__version__, "scipy": scipy.__version__}


@dataclass(frozen=True, eq=False)
class StoredRun:
    """One row of the ``runs`` table."""

    experiment: str
    cell_key: str
    replicate: int
    label: str
    policy: str
    params: dict[str, Any]
    environment: dict[str, Any]
    horizon: int
    seed: dict[str, Any]
    status: str
    final_regret: float | None
    seconds: float | None
    rounds: np.ndarray | None
    curve: np.ndarray | None
    error: str | None = None
    attempts: int = 1
    finished: float = field(default_factory=time.time)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def dynamic_regret(self) -> bool:
        """Whether the regret is dynamic (against each round's θ*_t): the environment of
        the run drifts (its ``drift`` key, :mod:`glmbandits.environments.drifting`)."""
        return self.environment.get("drift") is not None

    @property
    def seconds_per_round(self) -> float:
        return float(self.seconds) / self.horizon if self.seconds is not None else float("nan")


def select_runs(runs: Sequence[StoredRun], **match: Any) -> list[StoredRun]:
    """The runs whose environment, policy, horizon or parameters equal every ``match`` item."""
    out = []
    for run in runs:
        fields = {**run.environment, "policy": run.policy, "horizon": run.horizon, **run.params}
        if all(fields.get(k) == v for k, v in match.items()):
            out.append(run)
    return out


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


class ResultStore:
    """A SQLite results store (created on first use).

    A path that does not exist yet becomes a new store; it appears there whole,
    in one step, so several processes may create one store at once. An existing
    file must be a results store: an empty, corrupt or foreign file (another
    program's SQLite database), or a store with a damaged page, raises
    :class:`StoreError` and is left untouched.

    Examples
    --------
    >>> import numpy as np
    >>> store = ResultStore(":memory:")
    >>> store.save_experiment("demo", {"name": "demo"})
    >>> store.add_run(StoredRun("demo", "cell", 0, "random", "random", {}, {"n_features": 2},
    ...                         10, {"entropy": 0}, "ok", 3.5, 0.01, np.array([1, 10]),
    ...                         np.array([0.5, 3.5])))
    >>> [run.final_regret for run in store.runs("demo")]
    [3.5]
    >>> store.finished("demo")
    {('cell', 0)}
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = str(path)
        if self.path == ":memory:":
            self._connection = sqlite3.connect(self.path)
            self._connection.executescript(_SCHEMA)
            return
        if not Path(self.path).exists():
            _create_atomically(Path(self.path))
        self._connection = _connect_existing(Path(self.path))

    @contextmanager
    def _using(self) -> Iterator[None]:
        """Turn a SQLite error, or a stored value that no longer decodes, into StoreError."""
        owner = f"ResultStore({self.path!r})"
        try:
            yield
        except sqlite3.Error as error:
            raise _store_error(owner, error) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise _damaged(owner, f"a stored value does not decode: {error}") from None

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------
    def save_experiment(self, name: str, config: dict[str, Any],
                        versions: dict[str, str] | None = None) -> None:
        """Record (or update) an experiment's resolved config and package versions."""
        now = time.time()
        versions = package_versions() if versions is None else versions
        with self._using(), self._connection:
            self._connection.execute(
                "INSERT INTO experiments VALUES (?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE "
                "SET config = excluded.config, versions = excluded.versions, "
                "updated = excluded.updated",
                (name, _dumps(config), _dumps(versions), now, now))

    def add_run(self, run: StoredRun) -> None:
        """Insert one run, replacing an earlier row of the same cell and replicate."""
        as_list = (lambda a: None if a is None else json.dumps(np.asarray(a).tolist()))
        with self._using(), self._connection:
            self._connection.execute(
                "INSERT OR REPLACE INTO runs VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run.experiment, run.cell_key, run.replicate, run.label, run.policy,
                 _dumps(run.params), _dumps(run.environment), run.horizon, _dumps(run.seed),
                 run.status, run.final_regret, run.seconds, as_list(run.rounds),
                 as_list(run.curve), run.error, run.attempts, run.finished))

    def remove_runs(self, experiment: str) -> int:
        """Delete every stored run of ``experiment`` (its config stays); return how many."""
        with self._using(), self._connection:
            return self._connection.execute("DELETE FROM runs WHERE experiment = ?",
                                            (experiment,)).rowcount

    # -- reading ------------------------------------------------------------------
    def experiments(self) -> list[dict[str, Any]]:
        """Every experiment: name, config, versions, created and updated times."""
        with self._using():
            rows = self._connection.execute(
                "SELECT name, config, versions, created, updated FROM experiments "
                "ORDER BY created")
            return [{"name": name, "config": json.loads(config), "versions": json.loads(versions),
                     "created": created, "updated": updated}
                    for name, config, versions, created, updated in rows]

    def finished(self, experiment: str) -> set[tuple[str, int]]:
        """(cell key, replicate) of the successful runs of ``experiment``."""
        with self._using():
            rows = self._connection.execute(
                "SELECT cell_key, replicate FROM runs WHERE experiment = ? AND status = 'ok'",
                (experiment,))
            return {(key, int(replicate)) for key, replicate in rows}

    def finished_seeds(self, experiment: str) -> dict[tuple[str, int], Any]:
        """(cell key, replicate) -> seed record of the successful runs of ``experiment``.

        The resume key: a stored run is reused only when its cell key (the full
        cell definition), replicate and seeds (master entropy and spawn keys)
        all equal those of the run that would be made.
        """
        with self._using():
            rows = self._connection.execute(
                "SELECT cell_key, replicate, seed FROM runs WHERE experiment = ? "
                "AND status = 'ok'", (experiment,))
            return {(key, int(replicate)): json.loads(seed) for key, replicate, seed in rows}

    def current_runs(self, experiment: str | None = None) -> tuple[list[StoredRun], int]:
        """The runs that belong to each experiment's last recorded config, and how many do not.

        A run belongs when it was made with the config's master ``seed`` and its
        replicate index is below the config's ``seeds``; runs left from an
        earlier seed or a larger ``--seeds`` are counted, not returned, so that
        summaries never mix them in.
        """
        configs = {e["name"]: e["config"] for e in self.experiments()}
        kept, left_out = [], 0
        for run in self.runs(experiment):
            config = configs.get(run.experiment)
            if config is not None and (
                    run.replicate >= int(config.get("seeds", run.replicate + 1))
                    or (isinstance(run.seed, dict)
                        and run.seed.get("entropy") != config.get("seed", run.seed.get(
                            "entropy")))):
                left_out += 1
                continue
            kept.append(run)
        return kept, left_out

    def runs(self, experiment: str | None = None, status: str | None = None) -> list[StoredRun]:
        """The stored runs (of one experiment and/or status), in insertion order."""
        query, args = "SELECT * FROM runs", []
        clauses = []
        if experiment is not None:
            clauses.append("experiment = ?")
            args.append(experiment)
        if status is not None:
            clauses.append("status = ?")
            args.append(status)
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        query += " ORDER BY rowid"
        out = []
        with self._using():
            for row in self._connection.execute(query, args):
                (experiment_, key, replicate, label, policy, params, environment, horizon, seed,
                 status_, final, seconds, rounds, curve, error, attempts, finished) = row
                out.append(StoredRun(
                    experiment_, key, int(replicate), label, policy, json.loads(params),
                    json.loads(environment), int(horizon), json.loads(seed), status_, final,
                    seconds,
                    None if rounds is None else np.asarray(json.loads(rounds), dtype=np.int64),
                    None if curve is None else np.asarray(json.loads(curve), dtype=np.float64),
                    error, int(attempts), finished))
        return out
