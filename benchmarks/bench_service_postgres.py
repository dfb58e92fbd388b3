"""Benchmark of scale-out on PostgreSQL (issue 16): prints the table of docs/service.md.

Decide+reward pairs per second and decide latency p50/p99 over HTTP on loopback, for

* ``sqlite, all``: one ``--role all`` process on a SQLite log (the baseline);
* ``postgresql, all``: one ``--role all`` process on PostgreSQL;
* ``postgresql, N api + learner``: N ``--role api`` processes and one ``--role learner``,

at K=20/d=10 and K=100/d=50 and a few client counts (split evenly over the API
processes). The load generator is bench_service.py's (asyncio clients, one keep-alive
connection each, in processes of their own). PostgreSQL is a real server started here
with tests/fixtures_system.py's :class:`PostgresServer` (``fsync=on``), one fresh schema
per run. "learner lag" is how long after the load stopped the learner's published model
included the whole log.

Run:  PYTHONPATH=src python benchmarks/bench_service_postgres.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

import bench_service  # noqa: E402  (the load generator and the server helpers)
from fixtures_system import PostgresServer, find_postgres_bindir  # noqa: E402


def start(config: Path, db: str, role: str) -> tuple[subprocess.Popen, int | None]:
    """``glmbandits serve --role ROLE``; (process, port) (no port for a learner)."""
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "src"),
               GLMBANDITS_API_KEYS=bench_service.KEY)
    log = open(config.parent / f"{role}-{time.monotonic_ns()}.log", "wb")
    process = subprocess.Popen([sys.executable, "-m", "glmbandits", "serve", str(config),
                                "--port", "0", "--db", db, "--role", role,
                                "--log-level", "warning"],
                               stdout=log, stderr=subprocess.STDOUT, env=env)
    if role == "learner":
        return process, None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        port = bench_service._listening_port(process.pid)
        if port:
            return process, port
        if process.poll() is not None:
            raise RuntimeError(Path(log.name).read_text())
        time.sleep(0.1)
    raise TimeoutError(f"--role {role} did not start")


def load(ports: list[int], K: int, d: int, clients: int, seconds: float) -> tuple:
    """Run ``clients`` clients split over ``ports``; (latencies in s, elapsed s)."""
    queue = multiprocessing.Queue()
    shares = [clients // len(ports) + (i < clients % len(ports)) for i in range(len(ports))]
    bodies = bench_service.bodies_for(K, d, "json")
    workers = [multiprocessing.Process(target=bench_service._load,
                                       args=(port, bodies, "json", share, seconds, queue))
               for port, share in zip(ports, shares) if share]
    for worker in workers:
        worker.start()
    results = [queue.get(timeout=seconds + 120) for _ in workers]
    for worker in workers:
        worker.join(60)
    return ([t for latencies, _, _ in results for t in latencies],
            max(e for _, e, _ in results))


def learner_lag(db: str, timeout: float = 60.0) -> float:
    """Seconds until the newest published model version includes the whole log."""
    from glmbandits.service.postgres_store import PostgresStore

    store = PostgresStore(db)
    start_time = time.monotonic()
    try:
        while time.monotonic() - start_time < timeout:
            version = store.latest_version()
            if version is not None and version.seq == store.last_seq():
                return time.monotonic() - start_time
            time.sleep(0.02)
        return float("nan")
    finally:
        store.close()


def run(folder: Path, server: PostgresServer | None, K: int, d: int, apis: int,
        clients: int, seconds: float) -> dict:
    """One row: ``apis`` = 0 means one ``--role all`` process."""
    config = bench_service.write_config(folder, K, d)
    db = (f"sqlite:///{folder / f'bench-{time.monotonic_ns()}.db'}" if server is None
          else server.create_schema())
    processes = []
    try:
        if apis:
            processes.append(start(config, db, "learner"))
        for _ in range(max(1, apis)):
            processes.append(start(config, db, "api" if apis else "all"))
        ports = [port for _, port in processes if port]
        load(ports, K, d, clients, 1.0)  # warm-up
        latencies, elapsed = load(ports, K, d, clients, seconds)
        lag = learner_lag(db) if apis else float("nan")
    finally:
        for process, _ in processes:
            process.send_signal(signal.SIGTERM)
        for process, _ in processes:
            process.wait(120)
    ms = np.array(latencies) * 1e3
    return {"pairs/s": len(latencies) / elapsed, "p50": np.percentile(ms, 50),
            "p99": np.percentile(ms, 99), "lag": lag}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--sizes", nargs="+", default=["20x10", "100x50"])
    parser.add_argument("--clients", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--api-processes", type=int, nargs="+", default=[1, 2],
                        help="API process counts of the scale-out rows")
    parser.add_argument("--params", default='refit = "lazy"',
                        help="TOML lines of the served policy's [policy.params]")
    args = parser.parse_args()
    bench_service.PARAMS = args.params
    bindir = find_postgres_bindir()
    if bindir is None:
        sys.exit("PostgreSQL binaries not found (bash scripts/install-test-system-deps.sh)")
    server = PostgresServer.create(bindir)
    try:
        version = server.psql("SHOW server_version").split("\n")[2].strip()
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} "
              f"cores, Python {platform.python_version()}, {platform.system()} "
              f"{platform.release()}, PostgreSQL {version} (fsync=on) on the same machine")
        print(f"\n## {bench_service.SERVED} {args.params}; decide latency in ms\n")
        print("| K | d | log, topology | clients | pairs/s | p50 | p99 | learner lag s |\n"
              "|---:|---:|---|---:|---:|---:|---:|---:|")
        topologies = [("sqlite, all", None, 0), ("postgresql, all", server, 0)] + [
            (f"postgresql, {n} api + learner", server, n) for n in args.api_processes]
        with tempfile.TemporaryDirectory() as folder:
            for K, d in (tuple(int(v) for v in size.split("x")) for size in args.sizes):
                for clients in args.clients:
                    for name, pg, apis in topologies:
                        r = run(Path(folder), pg, K, d, apis, clients, args.seconds)
                        lag = "" if np.isnan(r["lag"]) else f"{r['lag']:.2f}"
                        print(f"| {K} | {d} | {name} | {clients} | {r['pairs/s']:.0f} | "
                              f"{r['p50']:.2f} | {r['p99']:.2f} | {lag} |", flush=True)
    finally:
        server.close()


if __name__ == "__main__":
    main()
