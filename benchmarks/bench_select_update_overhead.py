"""Issue 14 benchmark: did decide/reward slow down the select/update simulation loop?

Measures select+update rounds/s (d=10, K=20, logistic rewards from a fixed θ*)
for UCB-GLM and LinUCB on the code this script is run from ("current") and on
the code at a reference commit (default 2ce41f9, the last one before
decide/reward existed), checked out into a temporary ``git worktree``. Each
measurement is its own subprocess (``PYTHONPATH`` pointing at one tree's
``src``); the two trees alternate run by run, and the table reports the median
of ``--repeats`` runs of each and the ratio current/before.

Usage: python benchmarks/bench_select_update_overhead.py [--repeats 7] [--rounds 3000]
       [--commit 2ce41f9] [--before-tree /tmp/wt-before]
Timings are noisy on a shared machine: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from worktree import ROOT, ensure_tree  # noqa: E402  (shared with bench_lockstep.py)

D, K = 10, 20
POLICIES = ("UCBGLM", "LinUCB")


def worker(name: str, rounds: int, warmup: int) -> float:
    """Rounds/s of select+update over ``rounds`` rounds after ``warmup`` untimed ones."""
    import numpy as np

    import glmbandits

    cls = getattr(glmbandits, name)
    policy = cls(n_features=D, seed=0)
    rng = np.random.default_rng(1)
    theta = rng.normal(size=D)
    theta *= 3.0 / np.linalg.norm(theta)
    total = warmup + rounds
    X = rng.normal(size=(total, K, D))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=2, keepdims=True))
    u = rng.random((total, K))
    for t in range(warmup):
        a = policy.select(X[t])
        policy.update(X[t, a], float(u[t, a] < 1.0 / (1.0 + np.exp(-X[t, a] @ theta))))
    start = time.perf_counter()
    for t in range(warmup, total):
        a = policy.select(X[t])
        policy.update(X[t, a], float(u[t, a] < 1.0 / (1.0 + np.exp(-X[t, a] @ theta))))
    return rounds / (time.perf_counter() - start)


def measure(src: Path, name: str, rounds: int, warmup: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, __file__, "--worker", name, "--rounds", str(rounds),
         "--warmup", str(warmup)], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["rounds_per_s"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--commit", default="2ce41f9")
    parser.add_argument("--before-tree", default="/tmp/wt-before")
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps({"rounds_per_s": worker(args.worker, args.rounds, args.warmup)}))
        return 0
    before = Path(args.before_tree)
    ensure_tree(before, args.commit)
    trees = {"current": ROOT / "src", "before": before / "src"}
    results: dict[tuple[str, str], list[float]] = {}
    for name in POLICIES:
        for _ in range(args.repeats):
            for label, src in trees.items():  # interleaved: current, before, current, ...
                results.setdefault((name, label), []).append(
                    measure(src, name, args.rounds, args.warmup))
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    print(f"select+update rounds/s, d={D}, K={K}, T={args.rounds} timed rounds after "
          f"{args.warmup} untimed; median of {args.repeats} interleaved subprocess runs each\n")
    print(f"| policy | current ({head}) | before ({args.commit}) | current / before "
          "| spread current (min–max) | spread before (min–max) |")
    print("|---|---:|---:|---:|---|---|")
    for name in POLICIES:
        now, old = results[(name, "current")], results[(name, "before")]
        print(f"| {name} | {statistics.median(now):,.0f} | {statistics.median(old):,.0f} | "
              f"{statistics.median(now) / statistics.median(old):.3f} | "
              f"{min(now):,.0f}–{max(now):,.0f} | {min(old):,.0f}–{max(old):,.0f} |")
    print(f"\nmachine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"python {platform.python_version()}, {platform.system()} {platform.release()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
