"""Issue 23 benchmark: the lockstep path end to end against its kernels and against simulate.

Policy-rounds per CPU-second (``time.process_time``, BLAS on one thread) of

* **kernel-only**: the batch kernel's ``ready``/``select``/``update`` on R replicates,
  fed contexts from a pre-drawn pool (only the kernel calls are timed);
* **simulate_batch**: ``simulate_batch`` end to end (policies and environments built,
  every round drawn, played and recorded), R·T over the CPU time of the call;
* **sequential**: ``simulate`` run replicate after replicate (``--sequential`` of them).

for lazy UCB-GLM and LinUCB at R in {64, 1024} on logistic problems (d=10, K=20 and
d=50, K=200; ``SyntheticGLMEnv`` with contexts in the unit ball, ‖θ*‖ = 3). Each
measurement is its own subprocess; the table shows medians of ``--repeats``
interleaved runs. ``--against COMMIT`` checks COMMIT out into a temporary git worktree
(``benchmarks/worktree.py``) and runs it interleaved with the current tree, so the two
columns come from one run.

Usage: python benchmarks/bench_lockstep.py [--repeats 3] [--against HEAD~1]
       [--horizon-small 1000] [--horizon-large 20] [--sequential 8] [--only d10]
Timings are noisy on a shared machine: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from worktree import ROOT, ensure_tree, remove_tree, run_worker, short_hash  # noqa: E402

POLICIES = ("lazy UCB-GLM", "LinUCB")
PROBLEMS = ((10, 20), (50, 200))
REPLICATES = (64, 1024)
MODES = ("kernel", "batch", "sequential")


def _make_policy(name: str, d: int, seed: Any) -> Any:
    import glmbandits

    if name == "lazy UCB-GLM":
        return glmbandits.UCBGLM(d, refit="lazy", seed=seed)
    return glmbandits.LinUCB(d, seed=seed)


def _make_env(d: int, K: int, seed: Any) -> Any:
    import glmbandits

    return glmbandits.SyntheticGLMEnv(d, K, "logistic", 3.0, seed=seed)


def _kernel_only(name: str, R: int, d: int, K: int, T: int) -> float:
    """Policy-rounds per CPU-second of the kernel calls alone, on a pool of 8 rounds."""
    import time

    import numpy as np

    from glmbandits.batch.backend import get_backend
    from glmbandits.batch.registry import make_batch_kernel

    rng = np.random.default_rng(0)
    pool = rng.standard_normal((8, R, K, d))
    pool /= np.linalg.norm(pool, axis=-1, keepdims=True)
    pool *= rng.random((8, R, K, 1)) ** (1.0 / d)
    theta = rng.standard_normal((R, d))
    theta *= 3.0 / np.linalg.norm(theta, axis=1, keepdims=True)
    means = 1.0 / (1.0 + np.exp(-np.einsum("prkd,rd->prk", pool, theta)))
    draws = rng.random((8, R, K))
    kernel = make_batch_kernel([_make_policy(name, d, s) for s in range(R)], get_backend("numpy"))
    kernel.reserve(T)
    played = np.zeros(R, dtype=np.int64)
    seconds, step = 0.0, 0
    while (played < T).any():
        X, u, mu = pool[step % 8], draws[step % 8], means[step % 8]
        start = time.process_time()
        rows = kernel.ready(played < T)
        actions, _ = kernel.select(X, None, rows)
        chosen = X[rows, actions]
        seconds += time.process_time() - start
        rewards = (u[rows, actions] < mu[rows, actions]).astype(float)
        start = time.process_time()
        kernel.update(rows, chosen, rewards)
        seconds += time.process_time() - start
        played[rows] += 1
        step += 1
    kernel.finalize()
    return R * T / seconds


def worker(payload: dict[str, Any]) -> dict[str, float]:
    import time

    from glmbandits import simulate, simulate_batch

    name, mode = payload["policy"], payload["mode"]
    R, d, K, T = payload["R"], payload["d"], payload["K"], payload["T"]
    if mode == "kernel":
        return {"rate": _kernel_only(name, R, d, K, T)}
    start = time.process_time()
    if mode == "batch":
        simulate_batch(lambda s: _make_policy(name, d, s), lambda s: _make_env(d, K, s), T,
                       seeds=list(range(R)))
        return {"rate": R * T / (time.process_time() - start)}
    n = min(R, payload["sequential"])
    for seed in range(n):
        simulate(_make_policy(name, d, seed), _make_env(d, K, seed), T, seed=seed)
    return {"rate": n * T / (time.process_time() - start)}


def _cases(args: argparse.Namespace) -> list[dict[str, Any]]:
    cases = []
    for d, K in PROBLEMS:
        if args.only and args.only != f"d{d}":
            continue
        T = args.horizon_small if d == 10 else args.horizon_large
        for name in POLICIES:
            for R in REPLICATES:
                cases.append({"policy": name, "d": d, "K": K, "R": R, "T": T,
                              "sequential": args.sequential})
    return cases


def _row(label: str, case: dict[str, Any], rates: dict[str, float]) -> str:
    kernel, batch, sequential = (rates[mode] for mode in MODES)
    return (f"| {label} | {case['policy']} | {case['d']} | {case['K']} | {case['R']:,} | "
            f"{case['T']:,} | {kernel:,.0f} | {batch:,.0f} | {batch / kernel:.0%} | "
            f"{sequential:,.0f} | {batch / sequential:.1f}x |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--against", help="a commit to measure interleaved with this tree")
    parser.add_argument("--horizon-small", type=int, default=1000, help="T at d=10, K=20")
    parser.add_argument("--horizon-large", type=int, default=20, help="T at d=50, K=200")
    parser.add_argument("--sequential", type=int, default=8,
                        help="replicates of the sequential runs (at most R)")
    parser.add_argument("--only", choices=["d10", "d50"], help="one problem only")
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    trees = {f"current ({short_hash()}{'+' if _dirty() else ''})": ROOT / "src"}
    temporary = None
    if args.against:
        temporary = Path(tempfile.mkdtemp(prefix="bench-lockstep-")) / "tree"
        ensure_tree(temporary, args.against)
        trees[f"{args.against} ({short_hash(args.against)})"] = temporary / "src"
    results: dict[tuple[str, int, str], list[float]] = {}
    cases = _cases(args)
    try:
        for _ in range(args.repeats):
            for i, case in enumerate(cases):
                for mode in MODES:
                    for label, src in trees.items():  # interleaved: tree by tree, run by run
                        rate = run_worker(__file__, src, {**case, "mode": mode})["rate"]
                        results.setdefault((label, i, mode), []).append(rate)
    finally:
        if temporary is not None:
            remove_tree(temporary)
    print(f"policy-rounds per CPU-second (process_time, BLAS on one thread); median of "
          f"{args.repeats} interleaved subprocess runs; kernel-only on a pool of pre-drawn "
          f"contexts; sequential: min(R, {args.sequential}) simulate runs\n")
    print("| tree | policy | d | K | R | T | kernel-only | simulate_batch | batch / kernel "
          "| sequential simulate | batch / sequential |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for i, case in enumerate(cases):
        for label in trees:
            rates = {mode: statistics.median(results[(label, i, mode)]) for mode in MODES}
            print(_row(label, case, rates))
    if len(trees) == 2:
        now, before = trees

        def batch(label: str, i: int) -> float:
            return statistics.median(results[(label, i, "batch")])
        print(f"\nsimulate_batch {now} / {before}: " + ", ".join(
            f"{case['policy']} d={case['d']} R={case['R']}: {batch(now, i) / batch(before, i):.1f}x"
            for i, case in enumerate(cases)))
    print(f"\nmachine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"python {platform.python_version()}, {platform.system()} {platform.release()}")
    return 0


def _dirty() -> bool:
    import subprocess

    status = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"],
                            capture_output=True, text=True).stdout
    return bool(status.strip())


if __name__ == "__main__":
    raise SystemExit(main())
