"""Compare several policies on one synthetic problem over independent seeds."""

from __future__ import annotations

import csv
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .._validation import check_int
from .workers import exit_with_parent
from ..environments import SyntheticGLMEnv
from ..policies.registry import ProblemSpec, make_policy, policy_names
from ..simulation import simulate

__all__ = ["RunRecord", "ComparisonResult", "compare_policies", "curve_grid", "replicate_seeds",
           "run_replicate"]


def curve_grid(horizon: int, n_points: int = 200) -> np.ndarray:
    """Rounds (1-based) at which regret curves are stored: ~n_points, always including T."""
    return np.unique(np.linspace(1, horizon, min(n_points, horizon)).round().astype(int))


@dataclass(frozen=True)
class RunRecord:
    """One (policy, replicate) run: final regret, time and a down-sampled curve."""

    policy: str
    replicate: int
    final_regret: float
    seconds: float
    rounds: np.ndarray
    cumulative_regret: np.ndarray

    @property
    def rounds_per_second(self) -> float:
        return float(self.rounds[-1]) / self.seconds if self.seconds > 0 else float("inf")


@dataclass(frozen=True)
class ComparisonResult:
    """All runs of :func:`compare_policies`, with summaries and writers."""

    problem: ProblemSpec
    runs: list[RunRecord]

    def policies(self) -> list[str]:
        return list(dict.fromkeys(run.policy for run in self.runs))

    def summary(self) -> list[dict[str, float | str | int]]:
        """Per policy: mean and sd of the regret at T and median rounds per second."""
        rows = []
        for name in self.policies():
            runs = [run for run in self.runs if run.policy == name]
            final = np.array([run.final_regret for run in runs])
            rows.append({
                "policy": name,
                "n_runs": len(runs),
                "regret_mean": float(final.mean()),
                "regret_sd": float(final.std(ddof=1)) if len(runs) > 1 else 0.0,
                "rounds_per_second": float(np.median([run.rounds_per_second for run in runs])),
            })
        return rows

    def format_table(self) -> str:
        """The summary as a Markdown table."""
        T = self.problem.horizon
        lines = [f"| policy | regret at T={T} (mean ± sd) | rounds/s | runs |",
                 "|---|---:|---:|---:|"]
        for row in self.summary():
            lines.append(f"| {row['policy']} | {row['regret_mean']:.1f} ± {row['regret_sd']:.1f} "
                         f"| {row['rounds_per_second']:,.0f} | {row['n_runs']} |")
        return "\n".join(lines)

    def write_csv(self, directory: str | os.PathLike) -> tuple[Path, Path]:
        """Write ``runs.csv`` (one row per run) and ``curves.csv`` (long format)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        runs_path, curves_path = directory / "runs.csv", directory / "curves.csv"
        with runs_path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["policy", "replicate", "horizon", "final_regret", "seconds",
                             "rounds_per_second"])
            for run in self.runs:
                writer.writerow([run.policy, run.replicate, int(run.rounds[-1]),
                                 repr(run.final_regret), repr(run.seconds),
                                 repr(run.rounds_per_second)])
        with curves_path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["policy", "replicate", "round", "cumulative_regret"])
            for run in self.runs:
                for t, value in zip(run.rounds, run.cumulative_regret):
                    writer.writerow([run.policy, run.replicate, int(t), repr(float(value))])
        return runs_path, curves_path


def replicate_seeds(seed: int, n_seeds: int) -> list[tuple[np.random.SeedSequence,
                                                            np.random.SeedSequence]]:
    """(environment, policy) seed sequences of replicates 0..n_seeds-1.

    Replicate r uses the r-th child of ``SeedSequence(seed)``, split in two, so
    its seeds do not depend on ``n_seeds`` and every policy run as replicate r
    sees the same problem instance (common random numbers).

    Examples
    --------
    >>> env_seed, policy_seed = replicate_seeds(0, 3)[2]
    >>> env_seed.spawn_key, policy_seed.spawn_key
    ((2, 0), (2, 1))
    """
    children = np.random.SeedSequence(seed).spawn(n_seeds)
    return [tuple(child.spawn(2)) for child in children]  # type: ignore[misc]


def run_replicate(policy: object, env: SyntheticGLMEnv, horizon: int,
                  n_points: int = 200) -> tuple[float, float, np.ndarray, np.ndarray]:
    """Simulate once; return (final regret, seconds, curve rounds, down-sampled R_t)."""
    result = simulate(policy, env, horizon)
    grid = curve_grid(horizon, n_points)
    curve = result.cumulative_regret[grid - 1]
    return float(curve[-1]), result.seconds, grid, curve


def _run_one(task: tuple[str, ProblemSpec, int, np.random.SeedSequence,
                         np.random.SeedSequence]) -> RunRecord:
    name, problem, replicate, env_seed, policy_seed = task
    env = SyntheticGLMEnv(problem.n_features, problem.n_actions, problem.family,
                          problem.theta_norm, seed=env_seed)
    policy = make_policy(name, problem, seed=np.random.default_rng(policy_seed))
    final, seconds, grid, curve = run_replicate(policy, env, problem.horizon)
    return RunRecord(name, replicate, final, seconds, grid, curve)


def compare_policies(
    policies: Sequence[str],
    problem: ProblemSpec,
    n_seeds: int = 5,
    seed: int = 0,
    n_jobs: int = 1,
) -> ComparisonResult:
    """Run every policy on ``n_seeds`` independent instances of ``problem``.

    Replicate r of every policy sees the same problem instance (θ*, contexts and
    reward noise come from the r-th child of ``SeedSequence(seed)``), so the
    policies are compared on common random numbers. ``n_jobs > 1`` runs the
    (policy, replicate) pairs in that many processes.
    """
    owner = "compare_policies"
    unknown = [name for name in policies if name not in policy_names()]
    if unknown or not policies:
        raise ValueError(f"{owner}: policies must be a non-empty list from {policy_names()}, "
                         f"got {list(policies)!r}")
    n_seeds = check_int(n_seeds, owner, "n_seeds", minimum=1)
    n_jobs = check_int(n_jobs, owner, "n_jobs", minimum=1)
    seeds = replicate_seeds(check_int(seed, owner, "seed", minimum=0), n_seeds)
    tasks = [(name, problem, r, *seeds[r]) for name in policies for r in range(n_seeds)]
    if n_jobs == 1:
        runs = [_run_one(task) for task in tasks]
    else:
        with ProcessPoolExecutor(max_workers=n_jobs, initializer=exit_with_parent,
                                 initargs=(os.getpid(),)) as pool:
            runs = list(pool.map(_run_one, tasks))
    return ComparisonResult(problem, runs)
