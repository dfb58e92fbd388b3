"""Reproduce a published GLM-bandit setup from an experiment config and print its table.

Usage::

    python benchmarks/published_setups.py experiments/faury2022-fig1.toml --seeds 5 --jobs 2

Runs every (policy, replicate) of the config exactly as ``glmbandits run CONFIG``
does (same tasks, same seeds: :func:`glmbandits.experiments.runner.plan_tasks`
and :func:`~glmbandits.experiments.runner.execute_task`), then prints a Markdown
table per algorithm: mean ± sd cumulative regret at T, the instance's
empirical κ and κ*, and the time per round.

* κ = max over every arm shown in the run of 1/μ'(x'θ*) (Faury et al. 2020's
  κ restricted to the arms actually offered), mean over replicates;
* κ* = 1/μ'(x*'θ*) at the optimal arm (Abeille et al. 2021), averaged over the
  rounds (one value for a fixed arm set), mean over replicates.

The instances are rebuilt from the same environment seeds, and an instance's
contexts do not depend on the actions played (one reward draw per round
whatever the action), so the statistics describe the runs' own instances.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from glmbandits.experiments.runner import replicate_seeds
from glmbandits.experiments.config import load_config
from glmbandits.experiments.runner import execute_task, plan_tasks


def instance_kappas(cell, env_seed, horizon: int) -> tuple[float, float]:
    """(κ, κ*) of the instance the runs of ``cell`` see with ``env_seed``."""
    env = cell.make_environment(seed=env_seed)
    contexts = env.reset()  # simulate() starts with reset(seed=None) too
    worst, star = 0.0, []
    for _ in range(horizon):
        eta = contexts @ env.theta_star
        inverse = 1.0 / env.family.dmean(eta)
        worst = max(worst, float(inverse.max()))
        star.append(float(inverse[int(np.argmax(eta))]))
        if not env.redraw_contexts:
            break
        contexts, _, _ = env.step(0)
    return worst, float(np.mean(star))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    config = load_config(args.config)
    if args.seeds is not None:
        config = config.with_seeds(args.seeds)
    tasks = plan_tasks(config)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        runs = list(pool.map(execute_task, tasks))
    cell = config.cells()[0]
    kappas = [instance_kappas(cell, env_seed, cell.horizon)
              for env_seed, _ in replicate_seeds(config.seed, config.seeds)]
    kappa = float(np.mean([k for k, _ in kappas]))
    kappa_star = float(np.mean([k for _, k in kappas]))
    print(f"{config.name}: {config.description}")
    print(f"seeds: {config.seeds} replicates from master seed {config.seed}; "
          f"per-replicate kappa = {[round(k, 1) for k, _ in kappas]}, "
          f"kappa* = {[round(k, 1) for _, k in kappas]}")
    print()
    print(f"| algorithm | regret at T={cell.horizon} (mean ± sd) | κ | κ* | ms/round | runs |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in dict.fromkeys(run.label for run in runs):  # label: name plus any params
        mine = [run for run in runs if run.label == name]
        final = np.array([run.final_regret for run in mine])
        sd = final.std(ddof=1) if final.size > 1 else 0.0
        ms = 1e3 * np.median([run.seconds / run.horizon for run in mine])
        print(f"| {name} | {final.mean():.1f} ± {sd:.1f} | {kappa:.1f} | {kappa_star:.1f} "
              f"| {ms:.3f} | {len(mine)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
