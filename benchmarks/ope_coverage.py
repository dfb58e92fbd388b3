"""Bias and 95 % interval coverage of IPS / SNIPS / DR over many logging seeds.

Repeats the train/test protocol of ``glmbandits replay`` on a full-information
dataset for seeds 0..N-1 (:func:`glmbandits.evaluation.calibration.estimator_calibration`):
each seed logs one fresh uniformly random pass (new visiting order, new logged
actions), trains each policy on the first half, freezes it and estimates its
value on the second half, where its true value is known. A mean error within
about 2 standard errors of 0 is consistent with an unbiased estimator; the
coverage should be close to 0.95.

Usage::

    python benchmarks/ope_coverage.py --dataset modechoice --seeds 1000
"""

from __future__ import annotations

import argparse
import time

from glmbandits.evaluation.calibration import estimator_calibration
from glmbandits.evaluation.report import load_logged_dataset
from glmbandits.policies.registry import ProblemSpec, make_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="modechoice",
                        help="a full-information dataset of glmbandits replay (default: modechoice)")
    parser.add_argument("--algorithms", default="ucb-glm,linucb,random")
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=None,
                        help="log length (default: one pass over the samples)")
    args = parser.parse_args()
    start = time.perf_counter()
    first = load_logged_dataset(args.dataset, rounds=args.rounds, seed=0)
    problem = ProblemSpec(first.n_features, int(first.n_actions.max()), "logistic",
                          first.n_rounds)
    rows = estimator_calibration(
        lambda seed: load_logged_dataset(args.dataset, rounds=args.rounds, seed=seed),
        lambda name, seed: make_policy(name, problem, seed=seed),
        args.algorithms.split(","), range(args.seeds))
    print(f"{args.dataset}: seeds 0..{args.seeds - 1}, one uniform log each "
          f"(T={first.n_rounds}), trained on the first half, 95% intervals")
    header = f"{'policy':<10} {'estimator':<9} {'mean error':>10} {'± 2 se':>7} " \
             f"{'coverage':>8} {'mean half-width':>15}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(f"{row.policy:<10} {row.estimator:<9} {row.mean_error:+10.4f} "
              f"{2 * row.std_error:7.4f} {row.coverage:8.3f} {row.mean_half_width:15.4f}")
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
