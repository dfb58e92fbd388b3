"""Issue 14 study: regret with rewards delivered in batches (after Chapelle & Li 2011, Table 1).

Every b rounds the rewards of the last b decisions arrive at once (``reward_batch``);
prints the cumulative regret (mean ± sd over seeds) and its ratio to b = 1 for
UCB-GLM, LinUCB, Laplace-TS and GLM-TSL (logistic, d=10, K=20, ‖θ*‖=3).

Usage: python benchmarks/delayed_rewards.py [--horizon 5000] [--seeds 5]
       [--batch-sizes 1,10,100,500,1000] [--policies UCBGLM,LinUCB,LaplaceTS,GLMTSL]
       [--fixed-arms]
"""

from __future__ import annotations

import argparse
import time

from glmbandits.experiments.delayed import (DEFAULT_BATCH_SIZES, DEFAULT_POLICIES,
                                            delayed_reward_regret)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=5000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0, help="master seed")
    parser.add_argument("--batch-sizes", default=",".join(map(str, DEFAULT_BATCH_SIZES)))
    parser.add_argument("--policies", default=",".join(DEFAULT_POLICIES))
    parser.add_argument("--fixed-arms", action="store_true",
                        help="one fixed arm set per seed instead of contexts redrawn each round")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    table = delayed_reward_regret(
        policies=[p for p in args.policies.split(",") if p],
        batch_sizes=[int(b) for b in args.batch_sizes.split(",") if b],
        horizon=args.horizon, n_seeds=args.seeds, seed=args.seed,
        redraw_contexts=not args.fixed_arms)
    print(table.to_markdown())
    print(f"\n({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
