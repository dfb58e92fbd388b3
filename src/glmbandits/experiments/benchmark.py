"""The performance benchmark of issue 6: speed, regret and memory of every policy.

Used by ``benchmarks/bench_performance.py`` (the full table) and by
``glmbandits bench`` (a short version). Timings are wall-clock seconds spent in
the policy (``select`` + ``update``, as :func:`~glmbandits.simulate` records
them), so they are noisy on a shared machine: the tables report medians over
seeds, and speed-ups as ratios measured in the same run.

The problem is the issue's default: logistic rewards, d = 10, K = 20 actions
uniform in the unit ball, ‖θ*‖ = 3.

:class:`NaiveExactUCBGLM` is the "straightforward numpy" UCB-GLM of the issue,
the baseline of the exact-refit speed-up: history appended with ``np.vstack``,
the MLE refitted every round by plain Newton (full Hessian, ``np.linalg.solve``)
from the previous estimate on all data until the same gradient test as the
library's solver, V⁻¹ kept by Sherman–Morrison updates. It is a benchmark
baseline, not a library policy.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
import tracemalloc
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Sequence

import numpy as np

from ..batch import simulate_batch
from ..environments import SyntheticGLMEnv
from ..estimation import sherman_morrison_update
from ..families import get_family
from ..policies.base import Policy, tied_scores, ucb_scores
from ..policies.registry import ProblemSpec, make_policy, policy_names
from ..policies.scores import ActionScores
from ..simulation import play, simulate
from .progress import progress_bar

__all__ = ["NaiveExactUCBGLM", "BenchRow", "BatchRow", "MemoryRow", "policy_variants",
           "bench_policies", "bench_batch", "bench_memory", "format_table", "run_benchmark"]

D, K, THETA_NORM, FAMILY = 10, 20, 3.0, "logistic"


class NaiveExactUCBGLM(Policy):
    """Straightforward numpy UCB-GLM (Algorithm 1 with l2 = 1): the baseline of target 1."""

    def __init__(self, n_features: int, alpha: float = 1.0, tau: int | None = None,
                 l2: float = 1.0, seed: Any = None, tol: float = 1e-8) -> None:
        super().__init__(n_features, "logistic", seed)
        self.alpha, self.l2, self.tol = alpha, l2, tol
        self.tau = 2 * n_features if tau is None else tau
        self.X_ = np.empty((0, n_features))
        self.y_ = np.empty(0)
        self.theta_ = np.zeros(n_features)
        self.V_inv_ = np.eye(n_features) / l2

    def _fit(self) -> None:
        X, y, theta, d = self.X_, self.y_, self.theta_, self.n_features
        for _ in range(100):
            p = 1.0 / (1.0 + np.exp(-(X @ theta)))
            gradient = X.T @ (p - y) + self.l2 * theta
            if np.max(np.abs(gradient)) <= self.tol * max(1, len(y)):
                break
            hessian = X.T @ (X * (p * (1 - p))[:, None]) + self.l2 * np.eye(d)
            theta = theta - np.linalg.solve(hessian, gradient)
        self.theta_ = theta

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        if len(self.y_) < self.tau:
            return self._choose_max(tied_scores(X.shape[0]))
        self._fit()
        return self._choose_max(ucb_scores(X, self.theta_, self.V_inv_, self.alpha))

    def _learn(self, x: np.ndarray, reward: float) -> None:
        self.X_ = np.vstack([self.X_, x])
        self.y_ = np.append(self.y_, reward)
        sherman_morrison_update(self.V_inv_, x)


def policy_variants(horizon: int) -> dict[str, Callable[[Any], Policy]]:
    """label -> factory(seed) for every registered policy and mode, plus the baseline."""
    problem = ProblemSpec(D, K, FAMILY, horizon, THETA_NORM)
    variants: dict[str, Callable[[Any], Policy]] = {
        "numpy-baseline (exact)": lambda seed: NaiveExactUCBGLM(D, seed=seed)}
    for name in policy_names():
        if name in ("ucb-glm", "supcb-glm"):
            for mode in ("every_round", "lazy"):
                label = f"{name} ({'exact' if mode == 'every_round' else 'lazy'})"
                variants[label] = partial(make_policy, name, problem, refit=mode)
                if name == "ucb-glm" and mode == "every_round":  # the strict stopping rule
                    variants["ucb-glm (exact, strict)"] = (
                        lambda seed: make_policy("ucb-glm", problem, seed, refit_tol=0.0))
        else:
            variants[name] = partial(make_policy, name, problem)
    return variants


def _env(seed: Any) -> SyntheticGLMEnv:
    return SyntheticGLMEnv(D, K, FAMILY, THETA_NORM, seed=seed)


@dataclass(frozen=True)
class BenchRow:
    policy: str
    horizon: int
    n_seeds: int
    rounds_per_second: float
    regret_mean: float
    regret_sd: float
    peak_mib: float
    note: str = ""

    @property
    def us_per_round(self) -> float:
        return 1e6 / self.rounds_per_second if self.rounds_per_second > 0 else math.nan


def _peak_memory(factory: Callable[[Any], Policy], horizon: int, seed: int = 0) -> float:
    """Peak traced memory (MiB) of a bare play loop: policy state, no result arrays."""
    policy, env = factory(seed), _env(seed)
    gc.collect()
    tracemalloc.start()
    try:
        play(policy, env, horizon, seed=seed)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / 2**20


def _projected_seconds(factory: Callable[[Any], Policy], horizon: int, short: tuple[int, float],
                       pilot_horizon: int) -> float:
    """Seconds one run of ``horizon`` rounds would take, from a pilot run.

    With s_1 the policy seconds of T_1 = ``short[0]`` rounds (at ``short[1]``
    rounds/s) and s_2 those of one pilot run of T_2 rounds, the cost is
    modelled as s ∝ T^g with g = log(s_2/s_1)/log(T_2/T_1) (g = 1: cost per
    round independent of t); g > 1.2 is rounded up to 2 (cost per round linear
    in t, as for exact refits), since fixed overheads flatten g at small T.
    """
    short_horizon, short_speed = short
    s1 = short_horizon / short_speed
    s2 = simulate(factory(0), _env(0), pilot_horizon, seed=0).seconds
    g = max(1.0, math.log(s2 / s1) / math.log(pilot_horizon / short_horizon))
    if g > 1.2:  # the cost per round grows with t: fixed overheads hide it at small t, so
        g = 2.0  # project with the asymptotic exponent of an O(t) round
    projected: float = s2 * (horizon / pilot_horizon) ** g
    return projected


def bench_policies(horizon: int, n_seeds: int, *, labels: Sequence[str] | None = None,
                   max_seconds_per_run: float = 60.0,
                   speed_at: tuple[int, dict[str, float]] | None = None,
                   pilot_horizon: int = 10_000,
                   log: Callable[[str], None] = lambda text: None) -> list[BenchRow]:
    """Rounds/s (median over seeds), regret at T (mean, sd) and peak memory per variant.

    With ``speed_at = (T_short, {label: rounds/s at T_short})``, a variant is
    skipped, with a note, when a pilot run of ``pilot_horizon`` rounds projects
    more than ``max_seconds_per_run`` seconds for one run of ``horizon`` rounds.
    """
    variants = policy_variants(horizon)
    rows = []
    for label, factory in variants.items():
        if labels is not None and label not in labels:
            continue
        if speed_at is not None and label in speed_at[1] and horizon > pilot_horizon:
            projected = _projected_seconds(factory, horizon, (speed_at[0], speed_at[1][label]),
                                           pilot_horizon)
            if projected > max_seconds_per_run:
                rows.append(BenchRow(label, horizon, 0, math.nan, math.nan, math.nan, math.nan,
                                     f"skipped: one run projected at {projected:,.0f} s "
                                     f"(> {max_seconds_per_run:g} s) from a {pilot_horizon:,}-round "
                                     "pilot"))
                log(f"  {label:28s} T={horizon}: skipped ({projected:.0f} s projected)")
                continue
        speeds, regrets = [], []
        for seed in range(n_seeds):
            result = simulate(factory(seed), _env(seed), horizon, seed=seed)
            speeds.append(result.rounds_per_second)
            regrets.append(float(result.cumulative_regret[-1]))
        peak = _peak_memory(factory, horizon)
        rows.append(BenchRow(label, horizon, n_seeds, statistics.median(speeds),
                             float(np.mean(regrets)), float(np.std(regrets, ddof=1))
                             if n_seeds > 1 else 0.0, peak))
        log(f"  {label:28s} T={horizon}: {rows[-1].rounds_per_second:10.0f} rounds/s")
    return rows


@dataclass(frozen=True)
class BatchRow:
    policy: str
    n_replicates: int
    horizon: int
    sequential_rounds_per_second: float
    batch_rounds_per_second: float
    identical: bool
    steps: int = 0

    @property
    def ratio(self) -> float:
        return self.batch_rounds_per_second / self.sequential_rounds_per_second


def bench_batch(horizon: int, n_replicates: int, repeats: int = 3,
                labels: Sequence[str] = ("linucb", "ucb-glm (lazy)"),
                log: Callable[[str], None] = lambda text: None) -> list[BatchRow]:
    """Policy-rounds/s of R sequential runs vs ``simulate_batch`` on the same seeds.

    Sequential: R·T over the total policy seconds of the R runs; batch: R·T
    over the kernel's seconds; each the median over ``repeats`` runs, the two
    interleaved. ``identical``: every replicate's actions and regret equal the
    sequential run's. ``steps``: batch steps (T in lockstep; more when lazy
    replicates wait for a refit wave).
    """
    variants = policy_variants(horizon)
    seeds = list(range(n_replicates))
    rows = []
    for label in labels:
        factory = variants[label]
        sequential_speeds, batch_speeds, identical = [], [], True
        for _ in range(repeats):
            sequential = [simulate(factory(s), _env(s), horizon, seed=s) for s in seeds]
            sequential_speeds.append(n_replicates * horizon
                                     / sum(result.seconds for result in sequential))
            batch = simulate_batch(factory, _env, horizon, seeds)
            batch_speeds.append(batch.policy_rounds_per_second)
            steps = batch.n_steps
            identical &= all(np.array_equal(batch.actions[r], sequential[r].actions)
                             and np.array_equal(batch.regret[r], sequential[r].regret)
                             for r in range(n_replicates))
        rows.append(BatchRow(label, n_replicates, horizon, statistics.median(sequential_speeds),
                             statistics.median(batch_speeds), identical, steps))
        log(f"  batch {label}: x{rows[-1].ratio:.1f}")
    return rows


@dataclass(frozen=True)
class MemoryRow:
    policy: str
    horizon: int
    peak_mib: float
    seconds: float


def bench_memory(horizon: int, labels: Sequence[str],
                 log: Callable[[str], None] = lambda text: None) -> list[MemoryRow]:
    """Peak traced memory of a bare play loop of ``horizon`` rounds (one seed)."""
    variants = policy_variants(horizon)
    rows = []
    for label in labels:
        if label not in variants:
            continue
        start = time.perf_counter()
        peak = _peak_memory(variants[label], horizon)
        rows.append(MemoryRow(label, horizon, peak, time.perf_counter() - start))
        log(f"  memory {label} T={horizon}: {peak:.2f} MiB")
    return rows


def _number(value: float, digits: int = 0) -> str:
    return "—" if not math.isfinite(value) else f"{value:,.{digits}f}"


def format_table(rows: Sequence[BenchRow], batch: Sequence[BatchRow] = (),
                 memory: Sequence[MemoryRow] = ()) -> str:
    """Markdown tables: per policy and T; the exact-refit speed-up; batch; memory."""
    lines = ["| policy (mode) | T | seeds | rounds/s (median) | µs/round | regret at T (mean ± sd) "
             "| peak memory (MiB) | note |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    if not rows:
        lines = []
    for row in rows:
        regret = ("—" if not math.isfinite(row.regret_mean)
                  else f"{row.regret_mean:.1f} ± {row.regret_sd:.1f}")
        lines.append(f"| {row.policy} | {row.horizon:,} | {row.n_seeds} | "
                     f"{_number(row.rounds_per_second)} | {_number(row.us_per_round, 1)} | "
                     f"{regret} | {_number(row.peak_mib, 2)} | {row.note} |")
    by_key = {(row.policy, row.horizon): row for row in rows}
    ratios = []
    for horizon in sorted({row.horizon for row in rows}):
        base = by_key.get(("numpy-baseline (exact)", horizon))
        exact = by_key.get(("ucb-glm (exact)", horizon))
        strict = by_key.get(("ucb-glm (exact, strict)", horizon))
        if base and strict and math.isfinite(base.rounds_per_second):
            ratios.append(f"- T={horizon:,}: exact UCB-GLM with refit_tol=0 / numpy baseline "
                          f"rounds/s = {strict.rounds_per_second / base.rounds_per_second:.2f}x "
                          f"(regret {strict.regret_mean:.1f} vs {base.regret_mean:.1f})")
        lazy = by_key.get(("ucb-glm (lazy)", horizon))
        if base and exact and math.isfinite(base.rounds_per_second):
            ratios.append(f"- T={horizon:,}: exact UCB-GLM / numpy baseline rounds/s = "
                          f"{exact.rounds_per_second / base.rounds_per_second:.2f}x "
                          f"(regret {exact.regret_mean:.1f} vs {base.regret_mean:.1f})")
        if exact and lazy and math.isfinite(exact.regret_mean):
            ratios.append(f"- T={horizon:,}: lazy / exact UCB-GLM regret = "
                          f"{lazy.regret_mean / exact.regret_mean:.3f}; rounds/s "
                          f"{lazy.rounds_per_second / exact.rounds_per_second:.1f}x")
    lazy_rows = sorted((row for row in rows if row.policy == "ucb-glm (lazy)"),
                       key=lambda row: row.horizon)
    if len(lazy_rows) >= 2:
        ratios.append(f"- lazy UCB-GLM rounds/s at T={lazy_rows[-1].horizon:,} / at "
                      f"T={lazy_rows[0].horizon:,} = "
                      f"{lazy_rows[-1].rounds_per_second / lazy_rows[0].rounds_per_second:.2f}")
    if ratios:
        lines += ["", "Ratios measured in this run:", *ratios]
    if batch:
        lines += ["", "| lockstep batch | R | T | sequential policy-rounds/s | batch policy-rounds/s "
                  "| speed-up | trajectories identical | batch steps |",
                  "|---|---:|---:|---:|---:|---:|---|---:|"]
        for pair in batch:
            lines.append(f"| {pair.policy} | {pair.n_replicates} | {pair.horizon:,} | "
                         f"{_number(pair.sequential_rounds_per_second)} | "
                         f"{_number(pair.batch_rounds_per_second)} | {pair.ratio:.1f}x | "
                         f"{'yes' if pair.identical else 'NO'} | {pair.steps:,} |")
    if memory:
        lines += ["", "| peak memory | T | peak traced memory (MiB) | wall s (traced) |",
                  "|---|---:|---:|---:|"]
        for peak in memory:
            lines.append(f"| {peak.policy} | {peak.horizon:,} | {peak.peak_mib:.2f} | "
                         f"{peak.seconds:.0f} |")
    return "\n".join(lines)


def run_benchmark(short_horizon: int = 3000, long_horizon: int | None = 100_000,
                  n_seeds: int = 10, long_seeds: int = 3, batch_replicates: int = 64,
                  batch_horizon: int = 3000, batch_repeats: int = 3,
                  memory_horizon: int | None = 1_000_000,
                  memory_labels: Sequence[str] = ("linucb", "gloc", "ecolog", "laplace-ts"),
                  max_seconds_per_run: float = 60.0,
                  labels: Sequence[str] | None = None,
                  log: Callable[[str], None] = lambda text: None,
                  progress: bool = False) -> str:
    """Run the whole benchmark and return its Markdown tables.

    ``labels`` restricts the policy table to those variants (default: all).
    ``progress=True`` draws a bar on stderr with one step per row of the tables
    (a policy at each horizon, a batch comparison, a memory measurement) and an ETA.
    """
    get_family(FAMILY)
    variants = policy_variants(short_horizon)
    n_policies = sum(1 for label in variants if labels is None or label in labels)
    batch_labels = ("linucb", "ucb-glm (lazy)")
    total = (n_policies * (2 if long_horizon else 1)
             + (len(batch_labels) if batch_replicates else 0)
             + (sum(1 for label in memory_labels if label in variants) if memory_horizon else 0))
    with progress_bar(total, progress, "bench", unit="row") as bar:
        def row_done(text: str) -> None:
            log(text)
            bar.set_postfix_str(text.strip(), refresh=False)
            bar.update(1)

        log(f"policies at T={short_horizon} over {n_seeds} seeds")
        rows = bench_policies(short_horizon, n_seeds, labels=labels, log=row_done)
        if long_horizon:
            speed = {row.policy: row.rounds_per_second for row in rows}
            log(f"policies at T={long_horizon} over {long_seeds} seeds")
            rows += bench_policies(long_horizon, long_seeds, labels=labels,
                                   speed_at=(short_horizon, speed),
                                   max_seconds_per_run=max_seconds_per_run, log=row_done)
        batch = bench_batch(batch_horizon, batch_replicates, batch_repeats, batch_labels,
                            log=row_done) if batch_replicates else []
        memory = bench_memory(memory_horizon, memory_labels, log=row_done) \
            if memory_horizon else []
    return format_table(rows, batch, memory)
