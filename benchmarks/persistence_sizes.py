"""Model-file size against the number of rounds t, for every policy class (docs/persistence.md).

    PYTHONPATH=src:tests python benchmarks/persistence_sizes.py [--d 10] [--rounds 1000 10000]

Each policy (default parameters, seed 0) plays t rounds of 10 unit-ball actions
with 0/1 rewards; the table gives the file size at each t and the growth in
bytes per round between the two largest t ("0" = constant size).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

import glmbandits
import policy_catalogue


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--rounds", type=int, nargs="+", default=[1000, 10000])
    args = parser.parse_args()
    checkpoints = sorted(args.rounds)
    print("| policy | " + " | ".join(f"t = {t:,}" for t in checkpoints)
          + " | bytes per round |")
    print("|---" * (len(checkpoints) + 2) + "|")
    with tempfile.TemporaryDirectory() as folder:
        for cls in policy_catalogue.POLICY_CLASSES:
            policy = cls(n_features=args.d, seed=0)
            rng = np.random.default_rng(1)
            sizes, played = [], 0
            for t in checkpoints:
                for _ in range(t - played):
                    X = policy_catalogue.unit_ball_contexts(rng, 10, args.d)
                    a = policy.select(X)
                    policy.update(X[a], float(rng.random() < 0.5))
                played = t
                path = glmbandits.save(policy, Path(folder) / "m.glmb")
                sizes.append(path.stat().st_size)
            growth = (sizes[-1] - sizes[-2]) / (checkpoints[-1] - checkpoints[-2])
            growth = 0.0 if abs(growth) < 0.05 else growth  # JSON float lengths jitter
            print(f"| {cls.__name__} | " + " | ".join(f"{s:,}" for s in sizes)
                  + f" | {growth:.1f} |", flush=True)


if __name__ == "__main__":
    main()
