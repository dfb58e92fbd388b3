"""Where the decision service's CPU goes per decide+reward pair, by thread and component.

The real app and core (``create_app`` + ``DecisionService`` on a SQLite log with
``synchronous = FULL``) driven in-process through ASGI calls from 16 concurrent asyncio
clients (no sockets, no uvicorn: the HTTP parsing is not counted), K=100, d=50. Components
are timed with the CPU clock of the thread that runs them (``time.thread_time``), so waits
(the GIL, fsync, the queue) are not counted; cProfile's wall-clock shares
(``bench_service.py``) say where the threads wait, this says what they compute. One row
is by the wall clock: the worker's busy time per pair (its batches from start to end,
fsync and waits for the GIL included), the serial path every request goes through.

Run:  OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/service_cpu_split.py \
          [--served linucb ecolog ucb-glm:refit=lazy] [--encoding json npy] [--pairs 4000]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import tempfile
import time
from typing import Any, Callable

import numpy as np

os.environ.setdefault("GLMBANDITS_API_KEYS", "bench-key")

from glmbandits.policies.decision_api import DecisionAPI  # noqa: E402
from glmbandits.service.app import create_app  # noqa: E402
from glmbandits.service.config import parse_config, tomllib  # noqa: E402
from glmbandits.service.core import DecisionService  # noqa: E402
from glmbandits.service.server import start_service  # noqa: E402
from glmbandits.service.sqlite_store import SQLiteStore  # noqa: E402

K, D = 100, 50
TIMED = [(DecisionService, "_run_batch", "worker: one batch, all of it"),
         (DecisionAPI, "decide", "worker: policy.decide (with its log row)"),
         (DecisionAPI, "reward", "worker: policy.reward (with its log row)"),
         (SQLiteStore, "append", "worker: SQLite INSERT of an event"),
         (SQLiteStore, "commit", "worker: SQLite COMMIT (WAL write, fsync, checkpoints)"),
         (SQLiteStore, "last_seq", "worker: SQLite SELECT MAX(seq)")]


#: the worker's busy time by the wall clock: its CPU plus what it waits for inside a batch
#: (fsync, the GIL held by the event loop); the worker is the one serial path of the service
BUSY = "worker: one batch, wall clock (CPU + fsync + waits for the GIL)"


def _timed(function: Callable, totals: dict, label: str) -> Callable:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        wall = time.perf_counter() if function.__name__ == "_run_batch" else None
        try:
            return function(*args, **kwargs)
        finally:
            totals[label] += time.thread_time() - start
            if wall is not None:
                totals[BUSY] += time.perf_counter() - wall
    return wrapper


def _bodies(encoding: str) -> list:
    rng = np.random.default_rng(1)
    out = []
    for _ in range(64):
        X = rng.normal(size=(K, D)) / np.sqrt(D)
        if encoding == "npy":
            buffer = io.BytesIO()
            np.save(buffer, X)
            out.append(buffer.getvalue())
        else:
            out.append(json.dumps(X.tolist()).encode())
    return out


def measure(served: str, encoding: str, pairs: int, clients: int = 16) -> dict:
    """CPU ms per pair: event-loop thread, worker thread, and the timed components."""
    name, _, options = served.partition(":")
    params = "".join(f'{k} = "{v}"\n' for k, v in (o.split("=", 1) for o in options.split(",")
                                                    if o))
    config = parse_config(tomllib.loads(
        f'[policy]\nname = "{name}"\nn_features = {D}\nseed = 0\n[decisions]\nmax_actions = '
        f'{K}\n[service]\nsnapshot_every = 1000000\nmax_body_bytes = 4194304\n'
        + (f"[policy.params]\n{params}" if params else "")))
    totals = {label: 0.0 for _, _, label in TIMED}
    totals[BUSY] = 0.0
    saved = [(cls, attr, getattr(cls, attr)) for cls, attr, _ in TIMED]
    for cls, attr, label in TIMED:
        setattr(cls, attr, _timed(getattr(cls, attr), totals, label))
    folder = tempfile.mkdtemp()
    service = start_service(config, f"sqlite:///{folder}/log.db")
    app = create_app(config, service)
    bodies = _bodies(encoding)
    media = b"application/x-npy" if encoding == "npy" else b"application/json"

    async def call(path: str, body: bytes, content_type: bytes, query: bytes = b"") -> None:
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(),
                 "query_string": query, "root_path": "", "server": ("127.0.0.1", 8000),
                 "client": ("127.0.0.1", 1),
                 "headers": [(b"authorization", b"Bearer bench-key"),
                             (b"content-type", content_type),
                             (b"content-length", str(len(body)).encode())]}
        messages = [{"type": "http.request", "body": body, "more_body": False}]
        sent: list = []

        async def receive() -> dict:
            if messages:
                return messages.pop()
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        await app(scope, receive, send)
        if sent[0]["status"] != 200:
            raise RuntimeError(sent)

    async def client(index: int, rounds: int) -> None:
        for t in range(rounds):
            decision_id = f"{index}-{t}-{time.monotonic_ns()}".encode()
            body = bodies[t % len(bodies)]
            if encoding == "npy":
                await call("/v1/decide", body, media, b"decision_id=" + decision_id)
            else:
                await call("/v1/decide", b'{"decision_id":"' + decision_id + b'","contexts":'
                           + body + b"}", media)
            await call("/v1/reward", b'{"decision_id":"' + decision_id + b'","reward":'
                       + (b"1" if (t * 7 + index) % 3 == 0 else b"0") + b"}",
                       b"application/json")

    async def run(rounds: int) -> None:
        await asyncio.gather(*[client(i, rounds) for i in range(clients)])

    asyncio.run(run(max(1, 500 // clients)))  # warm-up
    for label in totals:
        totals[label] = 0.0
    main_start = time.thread_time()
    asyncio.run(run(pairs // clients))
    main_cpu = time.thread_time() - main_start
    service.stop(snapshot=False)
    for cls, attr, function in saved:
        setattr(cls, attr, function)
    n = (pairs // clients) * clients
    out = {"event loop thread (ASGI app, parse, the in-process clients)": 1e3 * main_cpu / n}
    out.update({label: 1e3 * value / n for label, value in totals.items()})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--served", nargs="+", default=["linucb", "ecolog",
                                                        "ucb-glm:refit=lazy"])
    parser.add_argument("--encoding", nargs="+", default=["json", "npy"])
    parser.add_argument("--pairs", type=int, default=4000)
    args = parser.parse_args()
    runs = [(s, e) for s in args.served for e in args.encoding]
    results = {run: measure(*run, args.pairs) for run in runs}
    print(f"CPU ms per decide+reward pair, K={K}, d={D}, 16 in-process ASGI clients, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}\n")
    print("| component | " + " | ".join(f"{s} {e}" for s, e in runs) + " |")
    print("|---|" + "---:|" * len(runs))
    for label in next(iter(results.values())):
        print(f"| {label} | " + " | ".join(f"{results[run][label]:.3f}" for run in runs)
              + " |")


if __name__ == "__main__":
    main()
