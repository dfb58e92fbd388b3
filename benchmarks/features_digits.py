"""sklearn's digits through glmbandits.features into UCB-GLM, against LinUCB per arm.

The classic "one user context, K arms" data set: each round is one 8×8 digit image
(the user context, 64 pixels), the 10 classes are the arms, and the reward is 1 when
the chosen arm is the true class (a full-information bandit, so the regret is the
number of mistakes). Both policies see the same features, built once by
``glmbandits.features``:

    x_{t,a} = e_a ⊗ P'(standardised pixels, 1) / c

(``OneHotAction`` ⊗ ``Concat(UserFeatures(standardize=True), Intercept())``, low-rank
with the leading ``RANK`` directions, scaled into the unit ball), so UCB-GLM's one
shared θ holds one weight vector per class, and LinUCB on the same rows *is* the
disjoint per-arm LinUCB of Li et al. (2010): its ridge Gram matrix is block-diagonal
over the arms.

Run (needs the ``data`` extra for scikit-learn)::

    PYTHONPATH=src python benchmarks/features_digits.py --seeds 0 1 2

It prints the markdown table that docs/features.md shows.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from glmbandits import UCBGLM, LinUCB
from glmbandits.features import Concat, Intercept, Interaction, OneHotAction, UnitBall, UserFeatures


def run(policy, builder, pixels, labels, seed):
    order = np.random.default_rng(seed).permutation(labels.shape[0])
    mistakes = 0
    for i in order:
        X = builder.transform(pixels[i])  # (10, d), the builder's reused buffer
        a = policy.select(X)
        reward = float(a == labels[i])
        policy.update(X[a], reward)  # the policy copies the row it keeps
        mistakes += int(reward == 0.0)
    return mistakes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--rank", type=int, default=10)
    args = parser.parse_args()
    from sklearn.datasets import load_digits

    digits = load_digits()
    pixels, labels = digits.data.astype(float), digits.target.astype(int)
    builder = UnitBall(Interaction(OneHotAction(10),
                                   Concat(UserFeatures(standardize=True), Intercept()),
                                   rank=(None, args.rank)))
    builder.fit(users=pixels)
    d, T = builder.n_features_out_, labels.shape[0]
    policies = {
        "UCB-GLM (logistic, shared θ)": lambda s: UCBGLM(n_features=d, family="logistic", seed=s),
        "LinUCB per arm (disjoint)": lambda s: LinUCB(n_features=d, seed=s),
    }
    print(f"digits: T = {T} rounds (one pass), K = 10 arms, d = {d} (rank {args.rank}), "
          f"seeds {args.seeds}\n")
    print("| policy | regret (mistakes), mean ± sd | accuracy | seconds per run |")
    print("|---|---|---|---|")
    for name, make in policies.items():
        regrets, seconds = [], []
        for seed in args.seeds:
            start = time.perf_counter()
            regrets.append(run(make(seed), builder, pixels, labels, seed))
            seconds.append(time.perf_counter() - start)
        r = np.array(regrets, dtype=float)
        print(f"| {name} | {r.mean():.1f} ± {r.std(ddof=1) if r.size > 1 else 0.0:.1f} "
              f"({', '.join(map(str, regrets))}) | {1 - r.mean() / T:.3f} | "
              f"{np.mean(seconds):.1f} |")


if __name__ == "__main__":
    main()
