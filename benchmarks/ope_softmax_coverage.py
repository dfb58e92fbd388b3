"""Coverage of the 95 % intervals of IPS, SNIPS and DR, and the overlap warning, as overlap shrinks.

A synthetic logistic bandit (by default d=5, K=5, contexts in the unit ball, a fixed θ* with
‖θ*‖=3) is logged by a softmax rule, p(a|x) ∝ exp(β x_a'u), with inverse temperature
β ∈ {0 (uniform), 1, 2, 4}; u is a unit vector at cosine −0.5 with θ*, so the logger leans
away from the actions the target prefers, and the larger β, the poorer the overlap. The target is the
greedy policy on θ* (deterministic), evaluated on each log by expected IPS, SNIPS and DR
(:mod:`glmbandits.evaluation.estimators`); its true value on the log,
(1/n) Σ_t μ(x_{t,π_t}'θ*), is known exactly. For every (β, n) and every seed the script draws
one log and records whether each 95 % interval contains the true value, the effective sample
size (ESS) and whether the estimators issued a ``PoorOverlapWarning``.

The table gives, over the seeds: the coverage of each estimator's interval (a coverage
within about 2·√(0.95·0.05/seeds) of 0.95 is consistent with the nominal level: ±0.03 at 200
seeds), the mean ESS, the share of the runs the rule before issue 21 flagged (ESS below 1 % of
the rounds; no round here is deterministic, so that was its only test), and the rate at which
the ``PoorOverlapWarning`` fired. A second table pools all runs by their ESS. Seeds 0..N-1
are fixed: the same command prints the same tables. The default grid takes about 12 minutes
on one busy core (``--sizes 500`` alone: 1 minute); ``--features``, ``--actions``,
``--theta-norm``, ``--cosine`` and ``--estimators`` try other problems.

Usage::

    python benchmarks/ope_softmax_coverage.py --seeds 200
    python benchmarks/ope_softmax_coverage.py --features 10 --actions 10 --theta-norm 2 \
        --cosine -0.3 --betas 1,2,3,5 --sizes 500 --estimators ips,snips
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

ESTIMATORS = {"ips": ips, "snips": snips, "dr": doubly_robust}
#: Effective-sample-size bins of the second table.
ESS_BINS = (0.0, 10.0, MIN_ESS, 60.0, 100.0, np.inf)


@dataclass(frozen=True)
class Setting:
    """The synthetic problem: dimension, actions, ‖θ*‖, the logger's cosine with θ*."""

    d: int = 5
    k: int = 5
    theta_norm: float = 3.0
    cosine: float = -0.5

    def problem(self) -> tuple[np.ndarray, np.ndarray]:
        """(θ*, u): the fixed parameter and the logger's unit direction at ``cosine`` with it."""
        rng = np.random.default_rng(1234)
        theta = rng.standard_normal(self.d)
        theta *= self.theta_norm / np.linalg.norm(theta)
        along = theta / np.linalg.norm(theta)
        other = rng.standard_normal(self.d)
        other -= (other @ along) * along
        other /= np.linalg.norm(other)
        return theta, self.cosine * along + np.sqrt(1.0 - self.cosine**2) * other


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


def one_run(setting: Setting, beta: float, n: int, seed: int,
            estimators: tuple[str, ...] = tuple(ESTIMATORS)) -> Run:
    theta, direction = setting.problem()
    env = SyntheticGLMEnv(setting.d, n_actions=setting.k, theta=theta, seed=seed)
    logging = "uniform" if beta == 0 else softmax_logging(direction, temperature=1.0 / beta)
    log = collect_log(env, n, logging, seed=seed)
    target = Greedy(theta)
    probabilities = target_probabilities(target, log)
    truth = true_value(target, log, probabilities=probabilities)
    covered: dict[str, bool] = {}
    ess = float("nan")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PoorOverlapWarning)
        for name in estimators:
            estimator = ESTIMATORS[name]
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
    parser.add_argument("--features", type=int, default=5, help="dimension d")
    parser.add_argument("--actions", type=int, default=5, help="actions K")
    parser.add_argument("--theta-norm", type=float, default=3.0, help="||theta*||")
    parser.add_argument("--cosine", type=float, default=-0.5,
                        help="cosine between the logger's direction and theta*")
    parser.add_argument("--estimators", default="ips,snips,dr")
    args = parser.parse_args()
    setting = Setting(args.features, args.actions, args.theta_norm, args.cosine)
    betas = [float(b) for b in args.betas.split(",")]
    sizes = [int(n) for n in args.sizes.split(",")]
    names = tuple(args.estimators.split(","))
    start = time.perf_counter()
    grid = [(beta, n, seed) for beta in betas for n in sizes for seed in range(args.seeds)]
    runs = [one_run(setting, *point, estimators=names)
            for point in tqdm(grid, desc="logs", unit="log")]
    print(f"softmax logs (d={setting.d}, K={setting.k}, ||theta*||={setting.theta_norm:g}, "
          f"logger at cosine {setting.cosine:g} with theta*), greedy target, "
          f"seeds 0..{args.seeds - 1}, 95% intervals")
    titles = " | ".join(f"coverage {name.upper()}" for name in names)
    print(f"| β | n | {titles} | mean ESS (5-95 %) "
          f"| old rule (ESS < {100 * MIN_ESS_FRACTION:g} % of n) "
          f"| warned now (ESS < {MIN_ESS:g} or < {100 * MIN_ESS_FRACTION:g} % of n) |")
    print("|---:|---:|" + "---:|" * len(names) + "---:|---:|---:|")
    for beta in betas:
        for n in sizes:
            group = [r for r in runs if r.beta == beta and r.n == n]
            cells = [f"{np.mean([r.covered[name] for r in group]):.3f}" for name in names]
            ess = np.array([r.ess for r in group])
            low, high = np.percentile(ess, [5, 95])
            print(f"| {beta:g} | {n} | {' | '.join(cells)} | "
                  f"{ess.mean():.1f} ({low:.0f}-{high:.0f}) "
                  f"| {100 * np.mean(ess < MIN_ESS_FRACTION * n):.0f} % "
                  f"| {100 * np.mean([r.warned for r in group]):.0f} % |")
    print()
    print("coverage by effective sample size, all runs above pooled")
    print(f"| ESS | runs | {titles} | warned |")
    print("|---|---:|" + "---:|" * len(names) + "---:|")
    for low, high in zip(ESS_BINS[:-1], ESS_BINS[1:]):
        group = [r for r in runs if low <= r.ess < high]
        if not group:
            continue
        cells = [f"{np.mean([r.covered[name] for r in group]):.3f}" for name in names]
        label = f"[{low:g}, {high:g})" if np.isfinite(high) else f">= {low:g}"
        print(f"| {label} | {len(group)} | {' | '.join(cells)} | "
              f"{100 * np.mean([r.warned for r in group]):.0f} % |")
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
