"""Issue 25, item 1: CPU cost of one round (select + update) of the discounted policies at
t = 10³ and t = 10⁴ samples learned, against UCB-GLM (whose refit is O(t)).

Problem: d = 5, K = 10 actions redrawn every round (unit ball), logistic rewards from a
fixed θ* of norm 2 (linear rewards for D-LinUCB). Each policy first learns from t rounds
(untimed: its own play), then plays ``--rounds`` timed rounds in blocks of ``--block``;
the blocks of all policies are interleaved (policy by policy, block by block), so load on
a shared machine falls on every policy alike. Reported: the median over the blocks of
``time.process_time`` per round, in µs, and the ratio t = 10⁴ / t = 10³ measured in the
same run.

What the cost should be (``glmbandits.estimation.discounted``): D-LinUCB O(d³ + K d²)
whatever t; D-GLUCB O(W d² + d³) per Newton pass over the last ``min(t, W)`` samples,
``W = ⌈log ε/log γ⌉`` (ε = 1e-12: W = 263 at γ = 0.9, 2 750 at γ = 0.99), so flat in t
once t > W; UCB-GLM O(t d) per refit.

Usage: PYTHONPATH=src python benchmarks/bench_drift_policies.py [--rounds 400] [--block 20]
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

import numpy as np

from glmbandits import DGLUCB, DLinUCB, UCBGLM
from glmbandits.families import get_family

D, K, NORM = 5, 10, 2.0
SIZES = (1_000, 10_000)
POLICIES: dict[str, Callable[[], Any]] = {
    "D-LinUCB (γ=0.99)": lambda: DLinUCB(D, gamma=0.99, alpha=0.2, seed=0, family="linear"),
    "D-GLUCB (γ=0.9)": lambda: DGLUCB(D, gamma=0.9, alpha=0.05, theta_norm=NORM, seed=0),
    "D-GLUCB (γ=0.99)": lambda: DGLUCB(D, gamma=0.99, alpha=0.05, theta_norm=NORM, seed=0),
    "UCB-GLM": lambda: UCBGLM(D, seed=0),
}


class Stream:
    """Contexts and rewards of one policy's play, from its own generator."""

    def __init__(self, family: str, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.family = get_family(family)
        theta = self.rng.normal(size=D)
        self.theta = NORM * theta / np.linalg.norm(theta)

    def contexts(self) -> np.ndarray:
        X = self.rng.normal(size=(K, D))
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        unit: np.ndarray = X / norms * self.rng.random((K, 1)) ** (1 / D)
        return unit

    def reward(self, x: np.ndarray) -> float:
        return float(self.family.sample(self.family.mean(np.array([x @ self.theta])),
                                        self.rng)[0])


def play(policy: Any, stream: Stream, rounds: int) -> None:
    for _ in range(rounds):
        X = stream.contexts()
        x = X[policy.select(X)]
        policy.update(x, stream.reward(x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--block", type=int, default=20)
    args = parser.parse_args()
    players = []
    for name, make in POLICIES.items():
        for size in SIZES:
            policy = make()
            stream = Stream("linear" if name.startswith("D-LinUCB") else "logistic", 1)
            play(policy, stream, size)  # untimed: reach t samples
            players.append((name, size, policy, stream))
    times: dict[tuple[str, int], list[float]] = {(n, s): [] for n, s, _, _ in players}
    for _ in range(args.rounds // args.block):
        for name, size, policy, stream in players:
            start = time.process_time()
            play(policy, stream, args.block)
            times[(name, size)].append((time.process_time() - start) / args.block * 1e6)
    print(f"CPU µs per round (select + update), median of {args.rounds // args.block} "
          f"interleaved blocks of {args.block} rounds; d = {D}, K = {K}\n")
    print("| policy | t = 10³ | t = 10⁴ | ratio 10⁴/10³ |")
    print("|---|---:|---:|---:|")
    for name in POLICIES:
        small, large = (statistics.median(times[(name, s)]) for s in SIZES)
        print(f"| {name} | {small:.0f} | {large:.0f} | {large / small:.2f} |")


if __name__ == "__main__":
    main()
