"""Issue 25, item 3: what restarting on a drift alarm buys UCB-GLM, and what it costs.

Problems: d = 5, K = 10 actions redrawn every round, logistic rewards, ‖θ*‖ = 2,
T rounds (``--horizon``, default 10⁴), seeds 0..``--seeds``-1 (default 10):

* abrupt: θ* → −θ* at T/2 (``PiecewiseStationaryGLMEnv(jump="flip")``);
* stationary: θ* fixed (``SyntheticGLMEnv``), where every alarm is a false one.

Policies: UCB-GLM alone; UCB-GLM carrying a ``DriftMonitor(window=200, alpha=0.01)``
that only counts alarms (``action="none"``) or restarts the estimate on an alarm
(``action="restart"``); and SW-GLUCB from its theory (one breakpoint), a drift-aware
policy that forgets all the time, for reference. Each run is ``simulate`` with the
run's seed for the environment and the policy.

Reported per problem and policy: the mean dynamic regret at T over the seeds with its
standard error, the mean number of alarms, and the delay of the first alarm after the
change (median over the seeds that raised one; abrupt problem only).

With ``--false-alarms N`` it prints instead the share of N stationary streams (5 000
calibrated predictions each, windows of 100, α = 0.05: 49 checks) on which the monitor
raised any alarm, for three families: the quantity its bound α is about.

Usage: PYTHONPATH=src python benchmarks/bench_drift_monitor.py [--horizon 10000] [--seeds 10]
       PYTHONPATH=src python benchmarks/bench_drift_monitor.py --false-alarms 1000
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any, Callable

import numpy as np

from glmbandits import SWGLUCB, UCBGLM, simulate
from glmbandits.environments import PiecewiseStationaryGLMEnv, SyntheticGLMEnv
from glmbandits.evaluation import DriftMonitor

D, K, NORM, WINDOW, ALPHA = 5, 10, 2.0, 200, 0.01


def policies(horizon: int) -> dict[str, Callable[[int], Any]]:
    """Name -> ``make(seed)``."""
    def monitored(action: str) -> Callable[[int], Any]:
        return lambda seed: UCBGLM(D, seed=seed).monitor_drift(
            DriftMonitor(window=WINDOW, alpha=ALPHA, action=action))

    return {
        "UCB-GLM": lambda seed: UCBGLM(D, seed=seed),
        "UCB-GLM + monitor (count only)": monitored("none"),
        "UCB-GLM + restart on alarm": monitored("restart"),
        "SW-GLUCB (theory, G = 1)": lambda seed: SWGLUCB.from_theory(
            D, horizon, 1, theta_norm=NORM, seed=seed),
    }


def problem(name: str, horizon: int, seed: int) -> Any:
    if name == "abrupt":
        return PiecewiseStationaryGLMEnv(D, K, "logistic", theta_norm=NORM, breakpoints=1,
                                         horizon=horizon, jump="flip", seed=seed)
    return SyntheticGLMEnv(n_features=D, n_actions=K, family="logistic", theta_norm=NORM,
                           seed=seed)


def play(policy: Any, env: Any, horizon: int, seed: int) -> tuple[float, list[int]]:
    """Play like ``simulate`` (select, step, update): the dynamic regret at T and the
    rounds (1-based) at which the monitor raised an alarm."""
    contexts, regret, rounds = env.reset(seed=seed), 0.0, []
    for t in range(horizon):
        action = policy.select(contexts)
        following, reward, info = env.step(action)
        policy.update(contexts[action], reward)
        regret += info["regret"]
        contexts = following
        if policy.drift_.alarms > len(rounds):
            rounds.append(t + 1)
    return regret, rounds


def stationary_stream(family: str, n: int, rng: np.random.Generator
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Calibrated predictions and their rewards (the model is right, nothing changes)."""
    if family == "logistic":
        p = rng.uniform(0.02, 0.98, n)
        return p, (rng.random(n) < p).astype(float)
    if family == "poisson":
        p = rng.uniform(0.1, 5.0, n)
        return p, rng.poisson(p).astype(float)
    p = rng.normal(size=n)
    return p, p + 0.5 * rng.normal(size=n)


def false_alarms(seeds: int, n: int = 5000, window: int = 100, alpha: float = 0.05) -> None:
    print(f"| family | streams with an alarm (of {seeds}) | rate | bound α |")
    print("|---|---:|---:|---:|")
    for family in ("logistic", "poisson", "linear"):
        alarmed = 0
        for seed in range(seeds):
            monitor = DriftMonitor(window=window, alpha=alpha, family=family)
            p, y = stationary_stream(family, n, np.random.default_rng(seed))
            for predicted, reward in zip(p.tolist(), y.tolist()):
                monitor.observe(predicted, reward)
            alarmed += monitor.status().alarms > 0
        print(f"| {family} | {alarmed} | {alarmed / seeds:.3f} | {alpha} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--false-alarms", type=int, default=0, metavar="N")
    args = parser.parse_args()
    if args.false_alarms:
        false_alarms(args.false_alarms)
        return
    T = args.horizon
    print("| problem | policy | dynamic regret at T (mean ± se) | alarms (mean) | "
          "first alarm after the change (median, seeds) |")
    print("|---|---|---:|---:|---:|")
    for name in ("abrupt", "stationary"):
        for label, make in policies(T).items():
            regrets, alarms, delays = [], [], []
            for seed in range(args.seeds):
                policy, env = make(seed), problem(name, T, seed)
                if policy.drift_ is None:
                    regrets.append(float(simulate(policy, env, T, seed=seed)
                                         .cumulative_regret[-1]))
                    continue
                regret, rounds = play(policy, env, T, seed)
                regrets.append(regret)
                alarms.append(len(rounds))
                after = [r for r in rounds if r > T // 2]
                if name == "abrupt" and after:
                    delays.append(after[0] - T // 2)
            se = statistics.stdev(regrets) / np.sqrt(len(regrets)) if len(regrets) > 1 else 0
            alarm_text = f"{np.mean(alarms):.1f}" if alarms else "–"
            delay_text = (f"{statistics.median(delays):.0f} ({len(delays)}/{args.seeds})"
                          if delays else "–")
            print(f"| {name} | {label} | {np.mean(regrets):.0f} ± {se:.0f} | {alarm_text} | "
                  f"{delay_text} |", flush=True)


if __name__ == "__main__":
    main()
