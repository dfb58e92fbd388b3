"""Benchmark of the decision service (issue 15): prints the tables of docs/service.md.

1. In-process ``decide`` latency at K=100, d=50 (UCB-GLM, after a warm-up).
2. Over HTTP on loopback with the SQLite log: decide+reward pairs per second and decide
   latency p50/p99/p99.9, at K=20/d=10 and K=100/d=50, for several client counts, served
   policies and body encodings (JSON, or the contexts as an .npy file). The clients are
   asyncio tasks (on uvloop when installed) on one keep-alive connection each, a minimal
   HTTP/1.1 client sending request bodies built before the clock starts (64 per size and
   encoding; the decision id goes in a separate write for JSON, in the query for .npy), so
   the load generator costs little; it runs in a process of its own and shares the
   machine's cores with the server. The CPU time each process spent per pair is reported.
3. A cProfile of the server under load (K=100, d=50, 16 clients), grouped by where the time
   goes, for each encoding.

Run:  PYTHONPATH=src python benchmarks/bench_service.py [--seconds 5] [--clients 1 4 16]
          [--served ecolog ucb-glm:refit=lazy] [--encoding json npy] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import multiprocessing
import os
import platform
import pstats
import resource
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
SERVED = "ucb-glm"  # the policy write_config serves when given none (bench_service_postgres.py)
PARAMS = ""      # TOML lines added to every served policy's [policy.params]
STACK = "auto"   # "h11": hide uvloop/httptools from the server (uvicorn's pure-Python stack)
BLAS_THREADS = "1"  # the server's OPENBLAS/OMP/MKL_NUM_THREADS ("" leaves the environment)
SWITCH_INTERVAL = 0.0  # the server's sys.setswitchinterval (0: Python's default, 5 ms)
MEDIA = {"json": b"application/json", "npy": b"application/x-npy"}


def _toml_value(text: str) -> str:
    """``lazy`` -> ``"lazy"``; numbers and booleans as they are."""
    try:
        float(text)
        return text
    except ValueError:
        return text if text in ("true", "false") else json.dumps(text)


def write_config(folder: Path, K: int, d: int, served: str | None = None) -> Path:
    """A config serving ``served`` (``NAME[:PARAM=VALUE,...]``, default ``SERVED``) at K, d."""
    name, _, options = (served or SERVED).partition(":")
    lines = [f"{key} = {_toml_value(value)}" for key, value in
             (option.split("=", 1) for option in options.split(",") if option)]
    if PARAMS:
        lines.append(PARAMS)
    path = folder / f"bench-{K}-{d}-{name}.toml"
    path.write_text(f'[policy]\nname = "{name}"\nn_features = {d}\nseed = 0\n'
                    f'[decisions]\nmax_actions = {K}\n'
                    f'[service]\nsnapshot_every = 100000\nmax_body_bytes = 4194304\n'
                    f'synchronous = "{SYNCHRONOUS}"\n'
                    + ("[policy.params]\n" + "\n".join(lines) + "\n" if lines else ""))
    return path


def _hide_fast_stack(folder: Path) -> Path:
    """A folder whose ``uvloop`` and ``httptools`` fail to import (uvicorn falls back)."""
    shim = folder / "hide-fast-stack"
    for name in ("uvloop", "httptools"):
        (shim / name).mkdir(parents=True, exist_ok=True)
        (shim / name / "__init__.py").write_text("raise ImportError('hidden by the benchmark')\n")
    return shim


def _switch_interval_shim(folder: Path, seconds: float) -> Path:
    """A folder whose ``sitecustomize`` sets the GIL switch interval at interpreter start."""
    shim = folder / f"switch-{seconds:g}"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "sitecustomize.py").write_text(f"import sys\nsys.setswitchinterval({seconds!r})\n")
    return shim


def start_server(config: Path, db: str, profile: str | None = None) -> tuple:
    path = str(ROOT / "src")
    if STACK == "h11":
        path = str(_hide_fast_stack(config.parent)) + os.pathsep + path
    if SWITCH_INTERVAL:
        path = str(_switch_interval_shim(config.parent, SWITCH_INTERVAL)) + os.pathsep + path
    env = dict(os.environ, PYTHONPATH=path, GLMBANDITS_API_KEYS=KEY)
    if BLAS_THREADS:
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[name] = BLAS_THREADS
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


async def _answer(reader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(head.decode(errors="replace") + (await reader.read(2000)).decode(
            errors="replace"))
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return await reader.readexactly(length)


def _head(target: bytes, media: bytes, length: int) -> bytes:
    return (b"POST " + target + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + KEY.encode() + b"\r\nContent-Type: " + media + b"\r\nContent-Length: "
            + str(length).encode() + b"\r\n\r\n")


def make_bodies(K: int, d: int, encoding: str, count: int = 64) -> list:
    """``count`` decide bodies built once: for JSON (prefix, suffix) around the decision id,
    so that no request copies or rescans the 50 KB; for .npy the file's bytes."""
    rng = np.random.default_rng(1)
    out = []
    for _ in range(count):
        X = rng.normal(size=(K, d)) / np.sqrt(d)
        if encoding == "json":
            contexts = json.dumps(X.tolist(), separators=(",", ":")).encode()
            out.append((b'{"decision_id":"', b'","contexts":' + contexts + b"}"))
        else:
            buffer = io.BytesIO()
            np.save(buffer, X)
            out.append(buffer.getvalue())
    return out


async def _client(port: int, index: int, bodies: list, encoding: str, stop_at: float,
                  out: list) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    media = MEDIA[encoding]
    t = 0
    tag = f"{time.monotonic_ns()}-{index}-".encode()
    rewards = [b"1" if bit else b"0" for bit in np.random.default_rng(index).random(61) < 0.5]
    while time.perf_counter() < stop_at:
        decision_id = tag + str(t).encode()
        body = bodies[t % len(bodies)]
        start = time.perf_counter()
        if encoding == "json":
            prefix, suffix = body
            writer.writelines([_head(b"/v1/decide", media, len(prefix) + len(decision_id)
                                     + len(suffix)), prefix, decision_id, suffix])
        else:
            writer.writelines([_head(b"/v1/decide?decision_id=" + decision_id, media,
                                     len(body)), body])
        await _answer(reader)
        out.append(time.perf_counter() - start)
        reward = b'{"decision_id":"' + decision_id + b'","reward":' + rewards[t % 61] + b"}"
        writer.write(_head(b"/v1/reward", MEDIA["json"], len(reward)) + reward)
        await _answer(reader)
        t += 1
    writer.close()


def _load(port: int, bodies: list, encoding: str, clients: int, seconds: float,
          queue) -> None:
    latencies: list[float] = []

    async def main() -> float:
        start = time.perf_counter()
        stop_at = start + seconds
        await asyncio.gather(*[_client(port, i, bodies, encoding, stop_at, latencies)
                               for i in range(clients)])
        return time.perf_counter() - start

    try:
        import uvloop
        elapsed = uvloop.run(main())
    except ImportError:
        elapsed = asyncio.run(main())
    used = resource.getrusage(resource.RUSAGE_SELF)
    queue.put((latencies, elapsed, used.ru_utime + used.ru_stime))


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


_BODIES: dict = {}


def bodies_for(K: int, d: int, encoding: str) -> list:
    """:func:`make_bodies`, built once per (K, d, encoding) in this process."""
    if (K, d, encoding) not in _BODIES:
        _BODIES[K, d, encoding] = make_bodies(K, d, encoding)
    return _BODIES[K, d, encoding]


def http_run(folder: Path, K: int, d: int, clients: int, seconds: float, served: str,
             encoding: str, profile: str | None = None, *, config: Path | None = None,
             bodies: list | None = None, prepare=None) -> dict:
    """One server, a 1 s warm-up load, then ``seconds`` of measured load. ``config`` and
    ``bodies`` replace :func:`write_config`'s and :func:`bodies_for`'s (JSON bodies are
    (prefix, suffix) around the decision id); ``prepare(port)`` runs once the server
    listens, before the warm-up (bench_service_named.py puts its catalogue there)."""
    bodies = bodies_for(K, d, encoding) if bodies is None else bodies
    config = write_config(folder, K, d, served) if config is None else config
    db = f"sqlite:///{folder / f'bench-{K}-{d}-{clients}-{time.monotonic_ns()}.db'}"
    process, port = start_server(config, db, profile)
    try:
        if prepare is not None:
            prepare(port)
        warm = multiprocessing.Queue()
        warmup = multiprocessing.Process(target=_load, args=(port, bodies, encoding, clients,
                                                             1.0, warm))
        warmup.start(); warm.get(timeout=120); warmup.join(60)
        queue = multiprocessing.Queue()
        load = multiprocessing.Process(target=_load, args=(port, bodies, encoding, clients,
                                                           seconds, queue))
        server_cpu = _cpu_seconds(process.pid)
        load.start()
        latencies, elapsed, client_cpu = queue.get(timeout=seconds + 120)
        server_cpu = _cpu_seconds(process.pid) - server_cpu
        load.join(60)
        group = _group_size(port)
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(120)
    ms = np.array(latencies) * 1e3
    pairs = max(1, len(latencies))
    return {"K": K, "d": d, "clients": clients, "pairs/s": len(latencies) / elapsed,
            "p50": np.percentile(ms, 50), "p99": np.percentile(ms, 99),
            "p99.9": np.percentile(ms, 99.9), "exit": code, "group": group,
            "server ms/pair": 1e3 * server_cpu / pairs,
            "client ms/pair": 1e3 * client_cpu / pairs}


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
          ("request parse + validation (msgspec JSON, .npy header, checks)",
           ("service/schemas", "service/npy_body", "service/media", "msgspec",
            "_format_impl", "lib/format", "ast.py")),
          ("policy decide/reward (numpy)", ("glmbandits/policies", "glmbandits/estimation",
                                            "numpy")),
          ("HTTP (uvicorn, h11, starlette, asyncio)", ("uvicorn", "h11", "starlette",
                                                       "asyncio", "selectors")),
          ("queue/thread hand-off", ("threading.py", "queue.py", "concurrent/futures"))]


def profile_summary(path: str, top: int = 12, groups: list | None = None) -> str:
    """Own time by group (``groups``: (name, needles) pairs, first match wins; default
    :data:`GROUPS`) and the ``top`` functions, as Markdown tables."""
    groups = GROUPS if groups is None else groups
    stats = pstats.Stats(path)
    rows = sorted(stats.stats.items(), key=lambda item: -item[1][2])  # tottime
    total = sum(v[2] for v in stats.stats.values())
    grouped = {name: 0.0 for name, _ in groups}
    grouped["other"] = 0.0
    for (filename, _, function), (_, _, tottime, _, _) in stats.stats.items():
        where = f"{filename}:{function}"
        for name, needles in groups:
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
    parser.add_argument("--served", nargs="+", default=["ucb-glm:refit=lazy"],
                        help="the policies served over HTTP, NAME[:PARAM=VALUE,...]")
    parser.add_argument("--params", default="",
                        help='TOML lines added to every served policy\'s [policy.params], e.g. '
                        '\'refit_growth = 4.0\'')
    parser.add_argument("--encoding", nargs="+", choices=["json", "npy"],
                        default=["json", "npy"], help="decide body encodings over HTTP")
    parser.add_argument("--blas-threads", default="1",
                        help="the server's OPENBLAS_NUM_THREADS (and OMP_, MKL_); '' leaves "
                        "the environment as it is")
    parser.add_argument("--switch-interval", type=float, default=0.0,
                        help="the server's GIL switch interval in seconds "
                        "(sys.setswitchinterval; 0: Python's default, 0.005)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="measure the whole HTTP grid this many times, interleaved, and "
                        "print the medians")
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
    global SYNCHRONOUS, PARAMS, STACK, BLAS_THREADS, SWITCH_INTERVAL
    SYNCHRONOUS, PARAMS, STACK = args.synchronous, args.params, args.stack
    BLAS_THREADS = args.blas_threads
    SWITCH_INTERVAL = args.switch_interval
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
    http_tables(args)


COLUMNS = ("| policy | K | d | encoding | clients | pairs/s | p50 | p99 | p99.9 | "
           "requests/commit | server CPU ms/pair | client CPU ms/pair |\n"
           "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")


def _row(served: str, K: int, d: int, encoding: str, clients: int, r: dict) -> str:
    return (f"| {served} | {K} | {d} | {encoding} | {clients} | {r['pairs/s']:.0f} | "
            f"{r['p50']:.2f} | {r['p99']:.2f} | {r['p99.9']:.2f} | {r['group']:.1f} | "
            f"{r['server ms/pair']:.2f} | {r['client ms/pair']:.2f} |")


def http_tables(args: argparse.Namespace) -> None:
    """The HTTP grid (sizes x clients x served x encodings), ``--repeat`` times interleaved
    (each row as measured, then the medians), then the profiles."""
    threads = f"BLAS threads {BLAS_THREADS}" if BLAS_THREADS else "BLAS threads as inherited"
    if SWITCH_INTERVAL:
        threads += f", GIL switch interval {SWITCH_INTERVAL * 1e3:g} ms"
    print(f"\n## Over HTTP ({STACK} stack, {threads}), SQLite log (synchronous={SYNCHRONOUS}); "
          f"decide "
          f"latency in ms; CPU: ms of CPU time the server / load-generator process used per "
          f"pair" + (f"; [policy.params] {PARAMS}" if PARAMS else "") + "\n")
    header, rule = COLUMNS.split("\n")
    print(f"| run {header}\n|---:{rule}" if args.repeat > 1 else COLUMNS)
    sizes = [tuple(int(v) for v in size.split("x")) for size in args.sizes]
    grid = [(served, K, d, encoding, clients) for K, d in sizes for clients in args.clients
            for served in args.served for encoding in args.encoding]
    results: dict = {key: [] for key in grid}
    with tempfile.TemporaryDirectory() as folder:
        for run in range(1, args.repeat + 1):
            for served, K, d, encoding, clients in grid:
                r = http_run(Path(folder), K, d, clients, args.seconds, served, encoding)
                results[served, K, d, encoding, clients].append(r)
                print((f"| {run} " if args.repeat > 1 else "")
                      + _row(served, K, d, encoding, clients, r), flush=True)
        if args.repeat > 1:
            print(f"\n## Medians of the {args.repeat} runs above\n")
            print(COLUMNS)
            for key, runs in results.items():
                median = {name: float(np.median([r[name] for r in runs])) for name in
                          ("pairs/s", "p50", "p99", "p99.9", "group", "server ms/pair",
                           "client ms/pair")}
                print(_row(*key, median))
        if args.no_profile:
            return
        for encoding in args.encoding:
            profile = str(Path(folder) / f"server-{encoding}.prof")
            http_run(Path(folder), 100, 50, 16, args.seconds, args.served[0], encoding,
                     profile=profile)
            print(f"\n## Server profile under load ({args.served[0]}, K=100, d=50, 16 clients, "
                  f"{encoding} bodies): event loop thread\n")
            print(profile_summary(profile + ".main"))
            print("\n## ... and the core's worker thread (policy calls, log writes, "
                  "commits)\n")
            print(profile_summary(profile + ".worker"))


if __name__ == "__main__":
    main()
