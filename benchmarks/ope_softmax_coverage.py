"""Coverage of the 95 % intervals of IPS, SNIPS and DR, and the overlap warning, as overlap shrinks.

A synthetic logistic bandit (d=5, K=5, contexts in the unit ball, a fixed θ* with ‖θ*‖=3) is
logged by a softmax rule, p(a|x) ∝ exp(β x_a'u), with inverse temperature β ∈ {0 (uniform),
1, 2, 4}; u is a unit vector at cosine −0.5 with θ*, so the logger leans away from the
actions the target prefers, and the larger β, the poorer the overlap. The target is the
greedy policy on θ* (deterministic), evaluated on each log by expected IPS, SNIPS and DR
(:mod:`glmbandits.evaluation.estimators`); its true value on the log,
(1/n) Σ_t μ(x_{t,π_t}'θ*), is known exactly. For every (β, n) and every seed the script draws
one log and records whether each 95 % interval contains the true value, the effective sample
size (ESS) and whether the estimators issued a ``PoorOverlapWarning``.

The table gives, over the seeds: the coverage of each estimator's interval (a coverage
within about 2·√(0.95·0.05/seeds) of 0.95 is consistent with the nominal level: ±0.03 at 200
seeds), the mean ESS, the share of the runs the rule before issue 21 flagged (ESS below 1 % of
the rounds; no round here is deterministic, so that was its only test), and the rate at which
the ``PoorOverlapWarning`` fired. Seeds 0..N-1 are fixed: the same command prints the same
table. It takes about 20 minutes on one busy core (``--sizes 500`` alone: 2 minutes).

Usage::

    python benchmarks/ope_softmax_coverage.py --seeds 200
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm import tqdm

from glmbandits import SyntheticGLMEnv
from glmbandits.evaluation import (PoorOverlapWarning, collect_log, doubly_robust, ips, snips,
                                   softmax_logging, target_probabilities, true_value)
from glmbandits.evaluation.intervals import MIN_ESS, MIN_ESS_FRACTION

D, K, THETA_NORM, COSINE = 5, 5, 3.0, -0.5
ESTIMATORS = {"ips": ips, "snips": snips, "dr": doubly_robust}


def problem() -> tuple[np.ndarray, np.ndarray]:
    """(θ*, u): the fixed parameter and the logger's unit direction at cosine −0.5 with it."""
    rng = np.random.default_rng(1234)
    theta = rng.standard_normal(D)
    theta *= THETA_NORM / np.linalg.norm(theta)
    along = theta / np.linalg.norm(theta)
    other = rng.standard_normal(D)
    other -= (other @ along) * along
    other /= np.linalg.norm(other)
    return theta, COSINE * along + np.sqrt(1.0 - COSINE**2) * other


class Greedy:
    """The frozen target: argmax_a x_a'θ (ties: the first), as a one-hot distribution."""

    def __init__(self, theta: np.ndarray) -> None:
        self.theta = theta
        self.n_features = theta.shape[0]
        self.last_probabilities_: np.ndarray | None = None

    def select(self, contexts: np.ndarray) -> int:
        action = int(np.argmax(contexts @ self.theta))
        self.last_probabilities_ = np.eye(contexts.shape[0])[action]
        return action

    def update(self, x: Any, reward: float) -> None:
        """Frozen."""


@dataclass(frozen=True)
class Run:
    beta: float
    n: int
    seed: int
    ess: float
    warned: bool
    covered: dict[str, bool]


def one_run(beta: float, n: int, seed: int) -> Run:
    theta, direction = problem()
    env = SyntheticGLMEnv(D, n_actions=K, theta=theta, seed=seed)
    logging = "uniform" if beta == 0 else softmax_logging(direction, temperature=1.0 / beta)
    log = collect_log(env, n, logging, seed=seed)
    target = Greedy(theta)
    probabilities = target_probabilities(target, log)
    truth = true_value(target, log, probabilities=probabilities)
    covered: dict[str, bool] = {}
    ess = float("nan")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PoorOverlapWarning)
        for name, estimator in ESTIMATORS.items():
            try:
                estimate = estimator(target, log, probabilities=probabilities)
            except ValueError:  # SNIPS with no matched round: undefined, counted as a miss
                covered[name] = False
                continue
            covered[name] = bool(estimate.ci_low <= truth <= estimate.ci_high)
            ess = estimate.diagnostics.ess
    warned = any(issubclass(w.category, PoorOverlapWarning) for w in caught)
    return Run(beta, n, seed, ess, warned, covered)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--betas", default="0,1,2,4",
                        help="logging inverse temperatures (0: uniform)")
    parser.add_argument("--sizes", default="500,5000", help="log lengths n")
    args = parser.parse_args()
    betas = [float(b) for b in args.betas.split(",")]
    sizes = [int(n) for n in args.sizes.split(",")]
    start = time.perf_counter()
    grid = [(beta, n, seed) for beta in betas for n in sizes for seed in range(args.seeds)]
    runs = [one_run(*point) for point in tqdm(grid, desc="logs", unit="log")]
    print(f"softmax logs (d={D}, K={K}, ||theta*||={THETA_NORM:g}, logger at cosine "
          f"{COSINE:g} with theta*), greedy target, seeds 0..{args.seeds - 1}, 95% intervals")
    print("| β | n | coverage IPS | coverage SNIPS | coverage DR | mean ESS (5-95 %) "
          f"| old rule (ESS < {100 * MIN_ESS_FRACTION:g} % of n) "
          f"| warned now (ESS < {MIN_ESS:g} or < {100 * MIN_ESS_FRACTION:g} % of n) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for beta in betas:
        for n in sizes:
            group = [r for r in runs if r.beta == beta and r.n == n]
            cells = [f"{np.mean([r.covered[name] for r in group]):.3f}" for name in ESTIMATORS]
            ess = np.array([r.ess for r in group])
            low, high = np.percentile(ess, [5, 95])
            print(f"| {beta:g} | {n} | {' | '.join(cells)} | "
                  f"{ess.mean():.1f} ({low:.0f}-{high:.0f}) "
                  f"| {100 * np.mean(ess < MIN_ESS_FRACTION * n):.0f} % "
                  f"| {100 * np.mean([r.warned for r in group]):.0f} % |")
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
