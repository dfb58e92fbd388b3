"""Benchmark of the decision service (issue 15): prints the tables of docs/service.md.

1. In-process ``decide`` latency at K=100, d=50 (UCB-GLM, after a warm-up).
2. Over HTTP on loopback with the SQLite log: decide+reward pairs per second and decide
   latency p50/p99/p99.9, at K=20/d=10 and K=100/d=50, for several client counts. The
   clients are asyncio tasks on one keep-alive connection each (a minimal HTTP/1.1 client,
   so that the load generator costs little), in a process of their own; client and server
   share the machine's cores.
3. A cProfile of the server under load (K=100, d=50), grouped by where the time goes.

Run:  PYTHONPATH=src python benchmarks/bench_service.py [--seconds 5] [--clients 1 4 16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
KEY = "bench-key"


# -- 1. in-process -------------------------------------------------------------------------
def in_process(name: str = "ucb-glm", K: int = 100, d: int = 50, warmup: int = 1000,
               n: int = 3000, gc_off: bool = False) -> dict:
    """``decide`` latency after ``warmup`` rounds; ``name`` may carry ``:refit=lazy``-style
    parameters; ``gc_off`` disables Python's cyclic GC while timing (to see its share)."""
    import gc

    from glmbandits.policies.registry import ProblemSpec, make_policy

    name, _, options = name.partition(":")
    params = dict(option.split("=", 1) for option in options.split(",") if option)
    rng = np.random.default_rng(0)
    policy = make_policy(name, ProblemSpec(d, K, "logistic", n + warmup), seed=0, **params)
    contexts = rng.normal(size=(256, K, d)) / np.sqrt(d)
    times = []
    try:
        for t in range(n + warmup):
            if t == warmup and gc_off:
                gc.disable()
            start = time.perf_counter()
            decision = policy.decide(contexts[t % 256], now=float(t))
            elapsed = time.perf_counter() - start
            policy.reward(decision.decision_id, float(rng.random() < 0.5), now=float(t))
            if t >= warmup:
                times.append(elapsed)
    finally:
        gc.enable()
    ms = np.array(times) * 1e3
    return {"p50": np.percentile(ms, 50), "p99": np.percentile(ms, 99),
            "p99.9": np.percentile(ms, 99.9), "n": n}


# -- 2. over HTTP ---------------------------------------------------------------------------
SYNCHRONOUS = "FULL"
SERVED = "ucb-glm"
PARAMS = ""      # TOML lines of [policy.params], e.g. 'refit = "lazy"'
STACK = "auto"   # "h11": hide uvloop/httptools from the server (uvicorn's pure-Python stack)


def write_config(folder: Path, K: int, d: int) -> Path:
    path = folder / f"bench-{K}-{d}.toml"
    path.write_text(f'[policy]\nname = "{SERVED}"\nn_features = {d}\nseed = 0\n'
                    f'[decisions]\nmax_actions = {K}\n'
                    f'[service]\nsnapshot_every = 100000\nmax_body_bytes = 4194304\n'
                    f'synchronous = "{SYNCHRONOUS}"\n'
                    + (f'[policy.params]\n{PARAMS}\n' if PARAMS else ''))
    return path


def _hide_fast_stack(folder: Path) -> Path:
    """A folder whose ``uvloop`` and ``httptools`` fail to import (uvicorn falls back)."""
    shim = folder / "hide-fast-stack"
    for name in ("uvloop", "httptools"):
        (shim / name).mkdir(parents=True, exist_ok=True)
        (shim / name / "__init__.py").write_text("raise ImportError('hidden by the benchmark')\n")
    return shim


def start_server(config: Path, db: str, profile: str | None = None) -> tuple:
    path = str(ROOT / "src")
    if STACK == "h11":
        path = str(_hide_fast_stack(config.parent)) + os.pathsep + path
    env = dict(os.environ, PYTHONPATH=path, GLMBANDITS_API_KEYS=KEY)
    command = ([sys.executable, __file__, "--serve-profiled", profile] if profile else
               [sys.executable, "-m", "glmbandits"])
    log = open(config.with_suffix(".log"), "wb")
    process = subprocess.Popen(command + ["serve", str(config), "--port",
                                          "0", "--db", db, "--log-level", "warning"],
                               stdout=log, stderr=subprocess.STDOUT, env=env)
    # the port: ask the OS which one the process listens on, via the log at info level is
    # silenced, so read it from /proc
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        port = _listening_port(process.pid)
        if port:
            return process, port
        if process.poll() is not None:
            raise RuntimeError(config.with_suffix(".log").read_text())
        time.sleep(0.1)
    raise TimeoutError("server did not start")


def _listening_port(pid: int) -> int | None:
    try:
        inodes = {os.readlink(f"/proc/{pid}/fd/{fd}")[8:-1]
                  for fd in os.listdir(f"/proc/{pid}/fd")
                  if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:[")}
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            parts = line.split()
            if parts[3] == "0A" and parts[9] in inodes:  # LISTEN
                return int(parts[1].split(":")[1], 16)
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return None


async def _request(reader, writer, path: str, body: bytes) -> bytes:
    writer.write(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                 + KEY.encode() + b"\r\nContent-Type: application/json\r\nContent-Length: "
                 + str(len(body)).encode() + b"\r\n\r\n" + body)
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(head.decode(errors="replace"))
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return await reader.readexactly(length)


async def _client(port: int, index: int, bodies: list, stop_at: float, out: list) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    t = 0
    tag = time.monotonic_ns()
    while time.perf_counter() < stop_at:
        decision_id = f"{tag}-{index}-{t}"
        body = bodies[t % len(bodies)].replace(b"@ID@", decision_id.encode())
        start = time.perf_counter()
        await _request(reader, writer, "/v1/decide", body)
        out.append(time.perf_counter() - start)
        await _request(reader, writer, "/v1/reward",
                       b'{"decision_id": "' + decision_id.encode() + b'", "reward": 1}')
        t += 1
    writer.close()


def _load(port: int, K: int, d: int, clients: int, seconds: float, queue) -> None:
    rng = np.random.default_rng(1)
    bodies = [json.dumps({"decision_id": "@ID@", "contexts": (
        rng.normal(size=(K, d)) / np.sqrt(d)).round(6).tolist()}).encode() for _ in range(64)]
    latencies: list[float] = []

    async def main() -> float:
        start = time.perf_counter()
        stop_at = start + seconds
        await asyncio.gather(*[_client(port, i, bodies, stop_at, latencies)
                               for i in range(clients)])
        return time.perf_counter() - start

    elapsed = asyncio.run(main())
    queue.put((latencies, elapsed))


def http_run(folder: Path, K: int, d: int, clients: int, seconds: float,
             profile: str | None = None) -> dict:
    config = write_config(folder, K, d)
    db = f"sqlite:///{folder / f'bench-{K}-{d}-{clients}-{time.monotonic_ns()}.db'}"
    process, port = start_server(config, db, profile)
    try:
        warm = multiprocessing.Queue()
        warmup = multiprocessing.Process(target=_load, args=(port, K, d, clients, 1.0, warm))
        warmup.start(); warm.get(timeout=120); warmup.join(60)
        queue = multiprocessing.Queue()
        load = multiprocessing.Process(target=_load, args=(port, K, d, clients, seconds, queue))
        load.start()
        latencies, elapsed = queue.get(timeout=seconds + 120)
        load.join(60)
        group = _group_size(port)
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(120)
    ms = np.array(latencies) * 1e3
    return {"K": K, "d": d, "clients": clients, "pairs/s": len(latencies) / elapsed,
            "p50": np.percentile(ms, 50), "p99": np.percentile(ms, 99),
            "p99.9": np.percentile(ms, 99.9), "exit": code, "group": group}


def _group_size(port: int) -> float:
    """Requests per log commit (one fsync each) so far, from ``GET /metrics``."""
    import urllib.request

    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                     headers={"Authorization": f"Bearer {KEY}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        values = dict(line.split() for line in answer.read().decode().splitlines()
                      if line.startswith(("glmbandits_commits_total",
                                          "glmbandits_committed_requests_total")))
    return (float(values["glmbandits_committed_requests_total"])
            / max(1.0, float(values["glmbandits_commits_total"])))


# -- 3. profile ------------------------------------------------------------------------------
GROUPS = [("idle: waiting for work (event-loop poll, worker's queue get)",
           ("asyncio/runners.py:run", "method 'acquire' of '_thread.lock'")),
          ("SQLite writes and commit (fsync)", ("method 'execute' of 'sqlite3",
                                                 "sqlite_store")),
          ("policy decide/reward (numpy)", ("glmbandits/policies", "glmbandits/estimation",
                                            "numpy")),
          ("JSON parse + validation (msgspec, checks)", ("service/schemas", "msgspec")),
          ("HTTP (uvicorn, h11, starlette, asyncio)", ("uvicorn", "h11", "starlette",
                                                       "asyncio", "selectors")),
          ("queue/thread hand-off", ("threading.py", "queue.py", "concurrent/futures"))]


def profile_summary(path: str, top: int = 12) -> str:
    stats = pstats.Stats(path)
    rows = sorted(stats.stats.items(), key=lambda item: -item[1][2])  # tottime
    total = sum(v[2] for v in stats.stats.values())
    grouped = {name: 0.0 for name, _ in GROUPS}
    grouped["other"] = 0.0
    for (filename, _, function), (_, _, tottime, _, _) in stats.stats.items():
        where = f"{filename}:{function}"
        for name, needles in GROUPS:
            if any(needle in where for needle in needles):
                grouped[name] += tottime
                break
        else:
            grouped["other"] += tottime
    lines = ["| where (own time, all threads) | share |", "|---|---:|"]
    for name, value in sorted(grouped.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {name} | {100 * value / total:.1f}% |")
    lines += ["", "| function | own time share |", "|---|---:|"]
    for (filename, line, function), (_, _, tottime, _, _) in rows[:top]:
        lines.append(f"| `{Path(filename).name}:{line}:{function}` | "
                     f"{100 * tottime / total:.1f}% |")
    return "\n".join(lines)


def serve_profiled(prefix: str, argv: list[str]) -> int:
    """``glmbandits serve`` with the event loop (main thread) and the core's worker thread
    each under a profiler; writes PREFIX.main and PREFIX.worker."""
    import cProfile

    from glmbandits.cli.main import main as cli
    from glmbandits.service.core import DecisionService

    work = DecisionService._work

    def profiled_work(self):
        profiler = cProfile.Profile()
        try:
            profiler.runcall(work, self)
        finally:
            profiler.dump_stats(prefix + ".worker")

    DecisionService._work = profiled_work
    profiler = cProfile.Profile()
    try:
        return profiler.runcall(cli, argv)
    finally:
        profiler.dump_stats(prefix + ".main")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve-profiled":
        sys.exit(serve_profiled(sys.argv[2], sys.argv[3:]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--synchronous", choices=["FULL", "NORMAL"], default="FULL",
                        help="SQLite durability of the log (FULL: survives power loss)")
    parser.add_argument("--served", default="ucb-glm", help="the policy served over HTTP")
    parser.add_argument("--params", default="",
                        help='TOML lines of the served policy\'s [policy.params], e.g. '
                        '\'refit = "lazy"\'')
    parser.add_argument("--stack", choices=["auto", "h11"], default="auto",
                        help="auto: uvicorn picks uvloop+httptools when installed; h11: hide "
                        "them (asyncio + h11, the pure-Python stack)")
    parser.add_argument("--sizes", nargs="+", default=["20x10", "100x50"],
                        help="KxD problem sizes served over HTTP")
    parser.add_argument("--warmup", type=int, nargs="+", default=[1000],
                        help="rounds before the in-process decides are timed")
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--clients", type=int, nargs="*", default=[1, 4, 16, 64],
                        help="client counts over HTTP (none: in-process only)")
    parser.add_argument("--policies", nargs="*",
                        default=["ucb-glm:refit=lazy", "ucb-glm", "linucb", "ecolog", "gloc"],
                        help="in-process policies, NAME[:PARAM=VALUE,...] (none: skip)")
    args = parser.parse_args()
    global SYNCHRONOUS, SERVED, PARAMS, STACK
    SYNCHRONOUS, SERVED, PARAMS, STACK = args.synchronous, args.served, args.params, args.stack
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, {platform.system()} {platform.release()}")
    if args.policies:
        print("\n## In-process decide, K=100, d=50 (ms); last column: p99 with gc disabled\n")
        print("| policy | after rounds | p50 | p99 | p99.9 | p99 gc off |\n"
              "|---|---:|---:|---:|---:|---:|")
    for warmup in args.warmup:
        for name in args.policies:
            result = in_process(name, warmup=warmup)
            quiet = in_process(name, warmup=warmup, gc_off=True)
            print(f"| {name} | {warmup} | {result['p50']:.3f} | {result['p99']:.3f} | "
                  f"{result['p99.9']:.3f} | {quiet['p99']:.3f} |", flush=True)
    if not args.clients:
        return
    print(f"\n## Over HTTP ({STACK} stack), SQLite log (synchronous={SYNCHRONOUS}), {SERVED} "
          f"{PARAMS}; decide latency in ms\n")
    print("| K | d | clients | pairs/s | p50 | p99 | p99.9 | requests/commit |\n"
          "|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for K, d in (tuple(int(v) for v in size.split("x")) for size in args.sizes):
            for clients in args.clients:
                r = http_run(Path(folder), K, d, clients, args.seconds)
                print(f"| {K} | {d} | {clients} | {r['pairs/s']:.0f} | {r['p50']:.2f} | "
                      f"{r['p99']:.2f} | {r['p99.9']:.2f} | {r['group']:.1f} |", flush=True)
        if args.no_profile:
            return
        profile = str(Path(folder) / "server.prof")
        http_run(Path(folder), 100, 50, 16, args.seconds, profile=profile)
        print("\n## Server profile under load (K=100, d=50, 16 clients): event loop thread\n")
        print(profile_summary(profile + ".main"))
        print("\n## ... and the core's worker thread (policy calls, log writes, commits)\n")
        print(profile_summary(profile + ".worker"))


if __name__ == "__main__":
    main()
