"""Issue 23 item 4: the lockstep kernels on a GPU (torch, and CuPy when importable), with
the CPU rows of the same command beside them.

For each problem (d, K) and each R in ``--replicates`` (10^3 ... 10^6 by default), the
LinUCB and lazy UCB-GLM batch kernels play ``--steps`` steps (``ready``/``select``/
``update``; no environment: contexts and logistic rewards come from two pre-drawn sets,
‖θ*‖ = 3) on every backend asked for. A row gives policy-rounds per second of wall time
(the device synchronised after every step) and per CPU-second of this process, medians
of ``--repeats`` repeats after an untimed warm-up (compile time, CUDA context and
kernel caches excluded). Rows that would need more than ``--max-gb`` GiB for the
contexts, or (CPU backends) more than ``--cpu-max-replicates`` replicates, are
listed as skipped.

On a machine with CUDA (the whole table; about 10-20 minutes on one GPU):

    python benchmarks/bench_gpu.py

On CPU, as a smoke run: python benchmarks/bench_gpu.py --replicates 64 --steps 3
--backends numpy,numba,torch
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import statistics
import time
from typing import Any

import numpy as np

from glmbandits import LinUCB, UCBGLM
from glmbandits.batch.backend import get_backend
from glmbandits.batch.registry import make_batch_kernel

POLICIES = {
    "linucb": lambda d, seed: LinUCB(d, seed=seed),
    "ucb-glm (lazy)": lambda d, seed: UCBGLM(d, seed=seed, refit="lazy"),
}


def _sets(R: int, K: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two context sets (2, R, K, d) in the unit ball and their rewards (2, R, K)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=d)
    theta *= 3.0 / np.linalg.norm(theta)
    X = rng.normal(size=(2, R, K, d))
    X *= rng.random((2, R, K, 1)) ** (1.0 / d) / np.linalg.norm(X, axis=-1, keepdims=True)
    rewards = (rng.random((2, R, K)) < 1.0 / (1.0 + np.exp(-X @ theta))).astype(float)
    return X, rewards


def _synchronise(backend: Any) -> None:
    if backend.name == "torch" and backend.device == "cuda":
        backend.xp.cuda.synchronize()
    elif backend.name == "cupy":
        backend.xp.cuda.Device().synchronize()


def run(policy: str, backend_name: str, X: np.ndarray, rewards: np.ndarray, steps: int
        ) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, policy-rounds) of ``steps`` kernel steps."""
    R, d = X.shape[1], X.shape[3]
    backend = get_backend(backend_name)
    kernel = make_batch_kernel([POLICIES[policy](d, seed) for seed in range(R)], backend)
    kernel.reserve(steps)
    active = np.ones(R, dtype=bool)
    wall = cpu = 0.0
    played = 0
    for step in range(steps):
        contexts, outcome = X[step % 2], rewards[step % 2]
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        rows = kernel.ready(active)
        actions, _ = kernel.select(contexts, None, rows)
        kernel.update(rows, contexts[rows, actions], outcome[rows, actions])
        _synchronise(backend)
        wall += time.perf_counter() - wall_start
        cpu += time.process_time() - cpu_start
        played += len(rows)
    kernel.finalize()
    return wall, cpu, played


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", default="1000,10000,100000,1000000",
                        help="comma-separated R values")
    parser.add_argument("--problems", default="10x20,10x200,50x20,50x200",
                        help="comma-separated dxK")
    parser.add_argument("--backends", default=None,
                        help="comma-separated; default: torch and cupy where importable "
                             "(on the GPU when there is one), numpy and numba")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-gb", type=float, default=16.0)
    parser.add_argument("--cpu-max-replicates", type=int, default=100_000)
    args = parser.parse_args()
    if args.backends is None:
        names = [n for n in ("torch", "cupy") if importlib.util.find_spec(n)]
        names += ["numpy"] + (["numba"] if importlib.util.find_spec("numba") else [])
    else:
        names = args.backends.split(",")
    backends = {name: get_backend(name) for name in names}
    devices = {name: ("cuda" if name == "cupy" else backend.device or "cpu")
               for name, backend in backends.items()}
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}; "
          f"backends {', '.join(f'{n} ({devices[n]})' for n in names)}; {args.steps} steps, "
          f"medians of {args.repeats} repeats after a warm-up")
    print("\n| policy | d | K | R | backend | device | policy-rounds/s (wall) "
          "| policy-rounds/CPU-s | note |")
    print("|---|---:|---:|---:|---|---|---:|---:|---|")
    for problem in args.problems.split(","):
        d, K = (int(v) for v in problem.split("x"))
        for R in (int(v) for v in args.replicates.split(",")):
            gib = 2 * R * K * d * 8 / 2**30
            X = rewards = None
            for policy in POLICIES:
                for name in names:
                    cell = f"| {policy} | {d} | {K} | {R:,} | {name} | {devices[name]} |"
                    if gib > args.max_gb:
                        print(f"{cell} — | — | skipped: contexts {gib:.1f} GiB > --max-gb |")
                        continue
                    if devices[name] == "cpu" and R > args.cpu_max_replicates:
                        print(f"{cell} — | — | skipped: R > --cpu-max-replicates |")
                        continue
                    if X is None:
                        X, rewards = _sets(R, K, d)
                    run(policy, name, X[:, : min(R, 64)], rewards[:, : min(R, 64)], 2)  # warm-up
                    results = [run(policy, name, X, rewards, args.steps)
                               for _ in range(args.repeats)]
                    wall = statistics.median(played / w for w, _, played in results)
                    cpu = statistics.median(played / c for _, c, played in results)
                    print(f"{cell} {wall:,.0f} | {cpu:,.0f} | |", flush=True)


if __name__ == "__main__":
    main()
