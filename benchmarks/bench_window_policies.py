"""Per-round CPU time of SW-GLUCB and DOMD-GLB at t = 10³ and 10⁴ (UCB-GLM for contrast).

A round is one ``select`` over K unit-ball actions and one ``update`` with a Bernoulli
reward. Each policy first absorbs t random samples (``update_batch``, untimed; then one
untimed round, which does the catch-up refit), then plays blocks of ``--block`` rounds;
the blocks of the policies are interleaved (policy 1, 2, 3, policy 1, 2, 3, ...) and the
table shows the median over ``--repeats`` blocks of CPU seconds per round
(``time.process_time``), in microseconds, and the ratio of the two t. SW-GLUCB's
(O(τd² + d³) per Newton iteration) and DOMD-GLB's (O(d³)) costs do not depend on t (a
ratio near 1); UCB-GLM's refit passes over all t samples, so its cost grows with t.

Run from the repository root::

    python benchmarks/bench_window_policies.py [--d 10] [--k 20] [--window 500]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from glmbandits import DOMDGLB, SWGLUCB, UCBGLM


def _rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    X = rng.normal(size=(n, d))
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))


def _block(policy, rng: np.random.Generator, rounds: int, k: int, d: int) -> float:
    contexts = [_rows(rng, k, d) for _ in range(rounds)]
    rewards = (rng.random(rounds) < 0.5).astype(float)
    start = time.process_time()
    for X, r in zip(contexts, rewards):
        policy.update(X[policy.select(X)], float(r))
    return (time.process_time() - start) / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--window", type=int, default=500, help="SW-GLUCB's τ")
    parser.add_argument("--block", type=int, default=100, help="rounds per timed block")
    parser.add_argument("--repeats", type=int, default=7, help="blocks per policy and t")
    args = parser.parse_args()
    d, k = args.d, args.k
    makers = {
        "UCB-GLM": lambda: UCBGLM(d, seed=0),
        f"SW-GLUCB (τ = {args.window})": lambda: SWGLUCB(d, window=args.window, seed=0),
        "DOMD-GLB (γ = 0.99)": lambda: DOMDGLB(d, seed=0),
    }
    medians: dict[str, dict[int, float]] = {name: {} for name in makers}
    for t in (1_000, 10_000):
        rng = np.random.default_rng(t)
        X = _rows(rng, t, d)
        y = (rng.random(t) < 0.5).astype(float)
        policies = {}
        for name, make in makers.items():
            policy = make()
            policy.update_batch(X, y)
            _block(policy, rng, 1, k, d)  # the catch-up refit, untimed
            policies[name] = policy
        times: dict[str, list[float]] = {name: [] for name in makers}
        for _ in range(args.repeats):
            for name, policy in policies.items():
                times[name].append(_block(policy, rng, args.block, k, d))
        for name in makers:
            medians[name][t] = statistics.median(times[name])
    print(f"d = {d}, K = {k}; CPU µs per round (select + update), median of "
          f"{args.repeats} interleaved blocks of {args.block} rounds")
    print()
    print("| policy | t = 10³ | t = 10⁴ | ratio |")
    print("|---|---:|---:|---:|")
    for name, row in medians.items():
        print(f"| {name} | {row[1_000] * 1e6:.0f} | {row[10_000] * 1e6:.0f} | "
              f"{row[10_000] / row[1_000]:.2f} |")


if __name__ == "__main__":
    main()
