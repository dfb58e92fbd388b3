"""Issue 14 benchmark: ``update_batch``/``reward_batch`` against loops of ``update``/``reward``.

For UCB-GLM, LinUCB, GLOC and Laplace-TS (d=10): a batch of n=10,000 logistic
samples learned by one ``update_batch`` call against n ``update`` calls, and n
pending decisions (K=20) rewarded by one ``reward_batch`` call against n
``reward`` calls. Each timing is the median of ``--repeats`` runs on a fresh
policy; "+ select" adds the next ``select`` (where an exact-refit policy pays
its one refit on all samples, the same for both ways). Ratios are loop/batch
of the same run (> 1: the batch is faster).

Usage: python benchmarks/bench_batch_updates.py [--n 10000] [--repeats 5]
Timings are noisy on a shared machine: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

import glmbandits

D, K = 10, 20
POLICIES = ("UCBGLM", "LinUCB", "GLOC", "LaplaceTS")


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=D)
    theta *= 3.0 / np.linalg.norm(theta)
    X = rng.normal(size=(n, D))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-X @ theta))).astype(float)
    contexts = rng.normal(size=(K, D))
    contexts /= np.maximum(1.0, np.linalg.norm(contexts, axis=1, keepdims=True))
    return X, y, contexts


def _timed(run) -> tuple[float, float]:
    """(seconds of the ingest, seconds of the ingest plus the next select)."""
    policy, ingest, contexts = run()
    start = time.perf_counter()
    ingest(policy)
    middle = time.perf_counter()
    policy.select(contexts)
    end = time.perf_counter()
    return middle - start, end - start


def bench(name: str, n: int, repeats: int) -> dict[str, float]:
    cls = getattr(glmbandits, name)
    X, y, contexts = _data(n)
    rewards = y.tolist()

    def fresh():
        return cls(n_features=D, seed=0)

    def update_setup(batch: bool):
        def setup():
            if batch:
                return fresh(), lambda p: p.update_batch(X, y), contexts
            return fresh(), lambda p: [p.update(x, r) for x, r in zip(X, rewards)], contexts
        return setup

    ids = [f"d{i}" for i in range(n)]
    decide_rows = np.broadcast_to(contexts, (K, D))

    def reward_setup(batch: bool):
        def setup():
            policy = fresh()
            for decision_id in ids:
                policy.decide(decide_rows, decision_id=decision_id, now=0.0)
            if batch:
                return policy, lambda p: p.reward_batch(ids, rewards, now=1.0), contexts
            return policy, lambda p: [p.reward(i, r, now=1.0) for i, r in zip(ids, rewards)], \
                contexts
        return setup

    out: dict[str, float] = {}
    samples: dict[str, list[tuple[float, float]]] = {}
    for _ in range(repeats):  # interleave the four ways, repeat by repeat
        for label, setup in (("update_loop", update_setup(False)),
                             ("update_batch", update_setup(True)),
                             ("reward_loop", reward_setup(False)),
                             ("reward_batch", reward_setup(True))):
            samples.setdefault(label, []).append(_timed(setup))
    for label, values in samples.items():
        out[label] = statistics.median(v[0] for v in values)
        out[label + "+select"] = statistics.median(v[1] for v in values)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--policies", default=",".join(POLICIES))
    args = parser.parse_args(argv)
    names = [name for name in args.policies.split(",") if name]
    print(f"n = {args.n:,} samples, d = {D} (reward_batch: n pending decisions, K = {K}); "
          f"median ms of {args.repeats} runs each; ratio = loop / batch\n")
    print("| policy | update loop | update_batch | ratio | ratio incl. next select "
          "| reward loop | reward_batch | ratio | ratio incl. next select |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        r = bench(name, args.n, args.repeats)
        print(f"| {name} | {1e3 * r['update_loop']:.1f} | {1e3 * r['update_batch']:.1f} | "
              f"{r['update_loop'] / r['update_batch']:.2f} | "
              f"{r['update_loop+select'] / r['update_batch+select']:.2f} | "
              f"{1e3 * r['reward_loop']:.1f} | {1e3 * r['reward_batch']:.1f} | "
              f"{r['reward_loop'] / r['reward_batch']:.2f} | "
              f"{r['reward_loop+select'] / r['reward_batch+select']:.2f} |", flush=True)
    print(f"\nmachine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"python {platform.python_version()}, numpy {np.__version__}, "
          f"{platform.system()} {platform.release()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
