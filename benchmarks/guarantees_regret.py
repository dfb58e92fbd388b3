"""Issue 12 (item 4): regret of the theorems' algorithms against the practical defaults.

Prints the Markdown table of ``docs/guarantees.md``: logistic rewards, d=3, K=10,
‖θ*‖=2, T=2000, seeds 0–9; cumulative pseudo-regret at T (min–max over seeds) for
``UCBGLM.from_theory`` (Theorem 2 and Theorem 4), ``SupCBGLM.from_theory`` (Theorem 3),
the practical defaults of both classes and uniform random play.

Usage: python benchmarks/guarantees_regret.py [--seeds N] [--horizon T]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from glmbandits import RandomPolicy, SupCBGLM, UCBGLM
from glmbandits.environments import SyntheticGLMEnv
from glmbandits.simulation import simulate

D, K, NORM = 3, 10, 2.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--horizon", type=int, default=2000)
    args = parser.parse_args(argv)
    T = args.horizon
    makers = {
        "UCBGLM.from_theory (Theorem 2)": lambda s: UCBGLM.from_theory(D, T, theta_norm=NORM,
                                                                        seed=s),
        "UCBGLM.from_theory(theorem=4)": lambda s: UCBGLM.from_theory(D, T, theta_norm=NORM,
                                                                       seed=s, theorem=4),
        "SupCBGLM.from_theory (Theorem 3)": lambda s: SupCBGLM.from_theory(D, T, K,
                                                                            theta_norm=NORM,
                                                                            seed=s),
        "UCBGLM() practical defaults": lambda s: UCBGLM(D, seed=s),
        "SupCBGLM() practical defaults": lambda s: SupCBGLM(D, horizon=T, seed=s),
        "RandomPolicy": lambda s: RandomPolicy(D, seed=s),
    }
    print(f"logistic, d={D}, K={K}, ||theta*||={NORM:g}, T={T}, seeds 0-{args.seeds - 1}")
    print("| policy | α | τ | λ (l2) | refit_tol | regret at T (mean) | min–max over seeds |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, make in makers.items():
        regrets = []
        for seed in range(args.seeds):
            policy = make(seed)
            env = SyntheticGLMEnv(D, K, "logistic", NORM, seed=seed)
            regrets.append(float(simulate(policy, env, T, seed=seed).cumulative_regret[-1]))
        alpha = f"{policy.alpha:.3g}" if hasattr(policy, "alpha") else "–"
        tau = str(policy.tau) if hasattr(policy, "tau") else "–"
        l2 = f"{policy.l2:g}" if hasattr(policy, "l2") else "–"
        tol = f"{policy.refit_tol:g}" if hasattr(policy, "refit_tol") else "–"
        print(f"| {name} | {alpha} | {tau} | {l2} | {tol} | {np.mean(regrets):.1f} | "
              f"{min(regrets):.1f}–{max(regrets):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
