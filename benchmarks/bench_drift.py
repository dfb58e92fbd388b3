"""Issue 25, item 5: stationary and drift-aware policies on abrupt drift, smooth drift and
no drift; dynamic regret (mean ± sd over seeds) and CPU cost per round.

Three problems, logistic rewards, d = 5, K = 10 actions redrawn every round (unit ball),
‖θ*‖ = 3, T = 10,000 (``--horizon``), the same instances for every policy (common random
numbers: replicate r uses environment seed r for every policy):

* ``abrupt``: θ* flips to -θ* at T/2 (:class:`PiecewiseStationaryGLMEnv`, one breakpoint);
* ``smooth``: θ* turns along a great circle at constant speed, half a turn over T (path
  length B_T = π‖θ*‖, :class:`SmoothlyDriftingGLMEnv`), so it also ends at -θ*_0;
* ``stationary``: :class:`SyntheticGLMEnv`, the same θ*_0, contexts and reward draws as the
  abrupt problem before its flip.

Policies: UCB-GLM and LinUCB (stationary), and the drift-aware ones registered when the
script runs (SW-GLUCB, D-GLUCB, D-LinUCB, DOMD-GLB), each with its library defaults except
its forgetting: the theory's window or discount for G = 1 breakpoint over T
(τ = ⌈(dT/G)^{2/3}⌉, γ = 1 - (G/(dT))^{2/3}; Russac, Cappé & Garivier 2020), the SAME
setting on all three problems, as a user who expects one change would pick it. The
stationary problem then shows the price of forgetting when nothing changes.

Dynamic regret: Σ_t max_a μ(x_{t,a}'θ*_t) - μ(x_{t,a_t}'θ*_t) (the environments' regret).
CPU cost: ``time.process_time`` of each whole ``simulate`` call (policy and environment;
the environment's share is the same for every policy) divided by T, median over the
runs; the runs are interleaved (seed by seed, problem by problem, policy by policy), so
load on a shared machine falls on every policy alike.

Usage: PYTHONPATH=src python benchmarks/bench_drift.py [--seeds 10] [--horizon 10000]
       [--policies ucb-glm,sw-glucb] [--jobs 1]
Prints one Markdown table per problem and the issue's two goals, met or missed.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from glmbandits.environments import (PiecewiseStationaryGLMEnv, SmoothlyDriftingGLMEnv,
                                     SyntheticGLMEnv)
from glmbandits.policies.registry import ProblemSpec, make_policy, policy_names
from glmbandits.simulation import simulate

D, K, FAMILY, NORM = 5, 10, "logistic", 3.0
PROBLEMS = ("abrupt", "smooth", "stationary")
STATIONARY = ("ucb-glm", "linucb")
DRIFT_AWARE = ("sw-glucb", "d-glucb", "d-linucb", "domd-glb")
LABELS = {"ucb-glm": "UCB-GLM", "linucb": "LinUCB", "sw-glucb": "SW-GLUCB",
          "d-glucb": "D-GLUCB", "d-linucb": "D-LinUCB", "domd-glb": "DOMD-GLB"}


def forgetting(name: str, horizon: int, breakpoints: int = 1) -> dict[str, Any]:
    """The policy's forgetting parameter for G breakpoints over T (none for the others):
    the library's τ = ⌈(dT/G)^{2/3}⌉ and γ = 1 - (G/(dT))^{2/3}."""
    from glmbandits.policies.d_linucb import discount_for_budget
    from glmbandits.policies.sw_glucb import SWGLUCB

    if name == "sw-glucb":
        return {"window": SWGLUCB.theory_window(D, horizon, breakpoints)}
    if name in ("d-glucb", "d-linucb", "domd-glb"):
        return {"gamma": discount_for_budget(horizon, D, breakpoints)}
    return {}


def make_env(problem: str, horizon: int, seed: int) -> Any:
    if problem == "abrupt":
        return PiecewiseStationaryGLMEnv(D, K, FAMILY, NORM, breakpoints=1, horizon=horizon,
                                         jump="flip", seed=seed)
    if problem == "smooth":
        return SmoothlyDriftingGLMEnv(D, K, FAMILY, NORM, path_length=math.pi * NORM,
                                      horizon=horizon, seed=seed)
    return SyntheticGLMEnv(D, K, FAMILY, NORM, seed=seed)


def run(task: tuple[str, str, int, int]) -> tuple[str, str, int, float, float]:
    """(problem, policy, seed, dynamic regret at T, CPU seconds per round)."""
    problem, name, seed, horizon = task
    policy = make_policy(name, ProblemSpec(D, K, FAMILY, horizon, NORM),
                         seed=np.random.SeedSequence([seed, 1]), **forgetting(name, horizon))
    env = make_env(problem, horizon, seed)
    start = time.process_time()
    result = simulate(policy, env, horizon, seed=seed)
    cpu = time.process_time() - start
    return problem, name, seed, float(result.cumulative_regret[-1]), cpu / horizon


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--horizon", type=int, default=10_000)
    parser.add_argument("--policies", default=None,
                        help="comma-separated registry names (default: all of "
                             f"{list(STATIONARY + DRIFT_AWARE)} that are registered)")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    registered = policy_names()
    wanted = args.policies.split(",") if args.policies else list(STATIONARY + DRIFT_AWARE)
    names = [name for name in wanted if name in registered]
    missing = [name for name in wanted if name not in registered]
    tasks = [(problem, name, seed, args.horizon) for seed in range(args.seeds)
             for problem in PROBLEMS for name in names]
    start = time.perf_counter()
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(run, tasks))
    else:
        results = [run(task) for task in tasks]
    wall = time.perf_counter() - start
    final = {(p, n): [r for q, m, _, r, _ in results if (q, m) == (p, n)] for p in PROBLEMS
             for n in names}
    cost = {(p, n): [c for q, m, _, _, c in results if (q, m) == (p, n)] for p in PROBLEMS
            for n in names}
    print(f"d={D}, K={K}, {FAMILY}, ‖θ*‖={NORM:g}, T={args.horizon}, {args.seeds} seeds; "
          f"forgetting for G=1: τ={forgetting('sw-glucb', args.horizon).get('window')}, "
          f"γ={forgetting('d-glucb', args.horizon)['gamma']:.6f}")
    if missing:
        print(f"not registered (left out): {', '.join(missing)}")
    for problem in PROBLEMS:
        print(f"\n{problem}\n")
        print("| policy | dynamic regret at T (mean ± sd) | vs UCB-GLM | CPU µs/round |")
        print("|---|---:|---:|---:|")
        reference = np.mean(final[(problem, "ucb-glm")]) if "ucb-glm" in names else math.nan
        for name in names:
            values = np.array(final[(problem, name)])
            sd = values.std(ddof=1) if len(values) > 1 else 0.0
            print(f"| {LABELS.get(name, name)} | {values.mean():.1f} ± {sd:.1f} "
                  f"| {values.mean() / reference:.2f} "
                  f"| {1e6 * statistics.median(cost[(problem, name)]):.0f} |")
    aware = [name for name in names if name in DRIFT_AWARE]
    if "ucb-glm" in names and aware:
        ucb = {p: np.mean(final[(p, "ucb-glm")]) for p in PROBLEMS}
        best = min(aware, key=lambda n: np.mean(final[("abrupt", n)]))
        ratio = np.mean(final[("abrupt", best)]) / ucb["abrupt"]
        print(f"\ngoal 1 (abrupt: best drift-aware <= 0.5 x UCB-GLM): {LABELS[best]} "
              f"{ratio:.2f} x -> {'met' if ratio <= 0.5 else 'missed'}")
        for name in aware:
            ratio = np.mean(final[("stationary", name)]) / ucb["stationary"]
            print(f"goal 2 (stationary: <= 1.5 x UCB-GLM): {LABELS[name]} {ratio:.2f} x -> "
                  f"{'met' if ratio <= 1.5 else 'missed'}")
    print(f"\n({wall:.0f} s wall, {len(tasks)} runs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
