"""The service's SQLite log alone: commit latency and CPU per decide+reward pair, K=100, d=50.

``SQLiteStore`` (``synchronous = FULL``, WAL) receives what the service writes under load:
per pair one decision row (40 KB of float64 contexts) and one reward row, a commit every
``--group`` pairs (the grouping 16 HTTP clients reach). Variants: SQLite's page size (set
before the database is created), ``wal_autocheckpoint`` (pages of WAL after which the
committing connection copies the WAL back into the database file, inside that commit), and
the store's background checkpointer (``checkpoint_interval``, ``wal_limit``: the WAL
checkpointed by a thread of its own, off the commit path; what is served). Medians over
``--repeat`` interleaved runs; "max WAL MB" is the largest size of the -wal file after a
commit.

Run:  PYTHONPATH=src python benchmarks/service_sqlite_commits.py [--pairs 3000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import tempfile
import time

import numpy as np

from glmbandits.data.sqlite_log import SQLiteLog
from glmbandits.service import sqlite_store
from glmbandits.service.events import Event

#: (name, page size, wal_autocheckpoint, background checkpointer interval in s or None)
VARIANTS = [("page 4096, background checkpointer (as served)", 4096, 0, 0.05),
            ("page 4096, autocheckpoint 1000 (served before)", 4096, 1000, None),
            ("page 16384, autocheckpoint 1000", 16384, 1000, None),
            ("page 65536, autocheckpoint 1000", 65536, 1000, None),
            ("page 4096, autocheckpoint 300", 4096, 300, None),
            ("page 4096, autocheckpoint 100", 4096, 100, None)]


def run(page_size: int, autocheckpoint: int, interval: float | None, pairs: int,
        group: int) -> list[float]:
    """[commit p50, p99, max (ms), CPU µs per pair (user + system, all threads), max WAL
    MB] of one run."""
    connect = SQLiteLog.connect

    def variant(self: SQLiteLog, mode: str = "rwc") -> sqlite3.Connection:
        connection = connect(self, mode)
        connection.execute(f"PRAGMA page_size={page_size}")  # before the file has pages
        connection.execute(f"PRAGMA wal_autocheckpoint={autocheckpoint}")
        return connection

    SQLiteLog.connect = variant  # type: ignore[method-assign]
    try:
        path = os.path.join(tempfile.mkdtemp(), "log.db")
        store = sqlite_store.SQLiteStore(path, checkpoint_interval=interval)
    finally:
        SQLiteLog.connect = connect  # type: ignore[method-assign]
    rng = np.random.default_rng(0)
    X, p = rng.normal(size=(100, 50)), np.full(100, 0.01)
    commits, wal = [], 0
    before = resource.getrusage(resource.RUSAGE_SELF)
    for i in range(pairs):
        decision_id = f"{i % 16}-{i}"
        store.append(Event("decision", decision_id, 1.0, contexts=X, action=3,
                           probabilities=p, propensity=0.01, model_version=i))
        store.append(Event("reward", decision_id, 1.0, reward=1.0, status="learned"))
        if i % group == group - 1:
            start = time.perf_counter()
            store.commit()
            commits.append(time.perf_counter() - start)
            wal = max(wal, os.path.getsize(f"{path}-wal"))
    after = resource.getrusage(resource.RUSAGE_SELF)
    assert store._db.execute("PRAGMA page_size").fetchone()[0] == page_size
    store.close()
    ms = np.array(commits) * 1e3
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / pairs
    return [float(np.median(ms)), float(np.percentile(ms, 99)), float(ms.max()), cpu * 1e6,
            wal / 1e6]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3000)
    parser.add_argument("--group", type=int, default=5, help="pairs per commit")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list] = {name: [] for name, *_ in VARIANTS}
    for _ in range(args.repeat):
        for name, page_size, autocheckpoint, interval in VARIANTS:
            results[name].append(run(page_size, autocheckpoint, interval, args.pairs,
                                     args.group))
    print(f"SQLite log alone: {args.pairs} pairs, a commit every {args.group}, "
          f"synchronous=FULL; medians of {args.repeat} interleaved runs\n")
    print("| variant | commit p50 ms | commit p99 ms | commit max ms | CPU µs/pair | "
          "max WAL MB |\n|---|---:|---:|---:|---:|---:|")
    for name, runs in results.items():
        p50, p99, worst, cpu, wal = np.median(np.array(runs), axis=0)
        print(f"| {name} | {p50:.2f} | {p99:.2f} | {worst:.2f} | {cpu:.0f} | {wal:.1f} |")


if __name__ == "__main__":
    main()
