"""Compare several policies on one synthetic problem over independent seeds."""

from __future__ import annotations

import csv
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .._validation import check_int
from .progress import progress_bar
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
    #: The master seed the replicates were spawned from (:func:`replicate_seeds`).
    seed: int = 0

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


    def experiment_name(self) -> str:
        """The name its runs get in a results store: one per problem, e.g.
        ``run-logistic-d10-K20-norm3-T3000``."""
        p = self.problem
        return (f"run-{p.family}-d{p.n_features}-K{p.n_actions}-norm{p.theta_norm:g}"
                f"-T{p.horizon}")

    def to_store(self, path: str | os.PathLike) -> str:
        """Write the runs to a SQLite results store, as an experiment of their own.

        The experiment is named by :meth:`experiment_name`; a later comparison of
        the same problem replaces its rows (and the recorded ``seed`` and ``seeds``
        leave runs of another master seed or of more replicates out of summaries),
        so ``glmbandits run`` followed by ``glmbandits results`` shows the last run.

        Parameters
        ----------
        path : path
            The store (created if missing; see
            :class:`~glmbandits.experiments.store.ResultStore`).

        Returns
        -------
        str
            The experiment name.

        Examples
        --------
        >>> from glmbandits.experiments.store import ResultStore
        >>> result = compare_policies(["random"], ProblemSpec(2, 3, "logistic", 20), n_seeds=2)
        >>> name = result.to_store(":memory:")
        >>> name
        'run-logistic-d2-K3-norm3-T20'
        """
        from .store import ResultStore, StoredRun

        p = self.problem
        name = self.experiment_name()
        n_seeds = 1 + max(run.replicate for run in self.runs)
        seeds = replicate_seeds(self.seed, n_seeds)
        environment = {"family": p.family, "n_features": p.n_features,
                       "n_actions": p.n_actions, "theta_norm": p.theta_norm}
        config = {"name": name, "seed": self.seed, "seeds": n_seeds, "horizon": p.horizon,
                  "environment": environment,
                  "policies": [{"name": policy} for policy in self.policies()]}
        with ResultStore(path) as store:
            store.save_experiment(name, config)
            for run in self.runs:
                env_seed, policy_seed = seeds[run.replicate]
                record = {"entropy": int(self.seed), "environment": list(env_seed.spawn_key),
                          "policy": list(policy_seed.spawn_key)}
                store.add_run(StoredRun(name, run.policy, run.replicate, run.policy, run.policy,
                                        {}, dict(environment), p.horizon, record, "ok",
                                        run.final_regret, run.seconds, run.rounds,
                                        run.cumulative_regret))
        return name


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
    progress: bool = False,
) -> ComparisonResult:
    """Run every policy on ``n_seeds`` independent instances of ``problem``.

    Replicate r of every policy sees the same problem instance (θ*, contexts and
    reward noise come from the r-th child of ``SeedSequence(seed)``), so the
    policies are compared on common random numbers. ``n_jobs > 1`` runs the
    (policy, replicate) pairs in that many processes. ``progress=True`` draws a
    bar of the (policy, replicate) runs done, with an ETA, on stderr.

    Examples
    --------
    >>> result = compare_policies(["random"], ProblemSpec(2, 3, "logistic", 20), n_seeds=2)
    >>> [run.replicate for run in result.runs]
    [0, 1]
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
    with progress_bar(len(tasks), progress, "run") as bar:
        if n_jobs == 1:
            runs = []
            for task in tasks:
                runs.append(_run_one(task))
                bar.set_postfix_str(f"{task[0]} replicate {task[2] + 1}/{n_seeds}",
                                    refresh=False)
                bar.update(1)
        else:
            with ProcessPoolExecutor(max_workers=n_jobs, initializer=exit_with_parent,
                                     initargs=(os.getpid(),)) as pool:
                futures = [pool.submit(_run_one, task) for task in tasks]
                for future in as_completed(futures):
                    record = future.result()
                    bar.set_postfix_str(f"{record.policy} replicate {record.replicate + 1}/"
                                        f"{n_seeds}", refresh=False)
                    bar.update(1)
                runs = [future.result() for future in futures]
    return ComparisonResult(problem, runs, seed)
