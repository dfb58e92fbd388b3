"""Write throughput of :class:`glmbandits.EventLog`: durability "full" vs "normal" vs batched.

Each mode appends ``--decisions`` decisions (K actions × d features, float64 contexts and
the full distribution), each followed by its reward, to a fresh file in ``--folder``
(default: a temporary folder; the figures depend on the disk and its fsync cost, so give a
folder on the disk a service would use). Modes:

* ``full``: one committed, fsynced transaction per event (``synchronous=FULL``, survives a
  power loss);
* ``normal``: one committed transaction per event (``synchronous=NORMAL``: survives a crash
  of the process; the WAL is fsynced at checkpoints only);
* ``batch``: ``durability="full"`` with every 1,000 decisions in one ``log.batch()``
  (simulations: a crash loses the open batch).

It also times a policy's ``decide`` + ``reward`` (UCB-GLM, lazy refits) without a log and
with a ``normal`` log, to show the log's share of a round. Figures are decisions per second
(one decision + one reward = two events), measured in one run.

Usage::

    python benchmarks/event_log_throughput.py --decisions 2000 -K 20 -d 10
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from glmbandits import EventLog, UCBGLM


def write(path: Path, mode: str, contexts: np.ndarray, p: np.ndarray) -> float:
    n = contexts.shape[0]
    durability = "normal" if mode == "normal" else "full"
    with EventLog(path, durability=durability) as log:
        start = time.perf_counter()
        for begin in range(0, n, 1000 if mode == "batch" else n):
            chunk = range(begin, min(begin + (1000 if mode == "batch" else n), n))
            if mode == "batch":
                with log.batch():
                    for i in chunk:
                        log.record_decision(f"d{i}", float(i), contexts[i], p, 0, float(p[0]), i)
                        log.record_reward(f"d{i}", float(i), 1.0, "learned")
            else:
                for i in chunk:
                    log.record_decision(f"d{i}", float(i), contexts[i], p, 0, float(p[0]), i)
                    log.record_reward(f"d{i}", float(i), 1.0, "learned")
        elapsed = time.perf_counter() - start
        assert len(log) == 2 * n
    return n / elapsed


def policy_rounds(path: Path | None, contexts: np.ndarray, seed: int) -> float:
    policy = UCBGLM(contexts.shape[2], seed=seed, refit="lazy", exploration_floor=0.1)
    rng = np.random.default_rng(seed)
    log = None if path is None else EventLog(path, durability="normal")
    policy.event_log = log
    start = time.perf_counter()
    for i, X in enumerate(contexts):
        decision = policy.decide(X, decision_id=f"d{i}", now=float(i))
        policy.reward(decision.decision_id, float(rng.random() < 0.5), now=float(i))
    elapsed = time.perf_counter() - start
    if log is not None:
        log.close()
    return contexts.shape[0] / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=2000)
    parser.add_argument("-K", type=int, default=20)
    parser.add_argument("-d", type=int, default=10)
    parser.add_argument("--folder", default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    contexts = rng.standard_normal((args.decisions, args.K, args.d)) / np.sqrt(args.d)
    p = np.full(args.K, 1.0 / args.K)
    with tempfile.TemporaryDirectory(dir=args.folder) as folder:
        root = Path(folder)
        rates = {mode: write(root / f"{mode}.sqlite", mode, contexts, p)
                 for mode in ("full", "normal", "batch")}
        bare = policy_rounds(None, contexts, args.seed)
        logged = policy_rounds(root / "policy.sqlite", contexts, args.seed)
    print(f"EventLog throughput: {args.decisions} decisions (each + 1 reward), K={args.K}, "
          f"d={args.d}, folder {args.folder or tempfile.gettempdir()}")
    print(f"{'mode':<34}{'decisions/s':>12}{'vs full':>9}")
    for mode, label in (("full", "durability='full'"), ("normal", "durability='normal'"),
                        ("batch", "full, batches of 1,000")):
        print(f"{label:<34}{rates[mode]:>12,.0f}{rates[mode] / rates['full']:>8.1f}x")
    print(f"{'UCB-GLM decide+reward, no log':<34}{bare:>12,.0f}")
    print(f"{'UCB-GLM decide+reward, normal log':<34}{logged:>12,.0f}{'':>9}"
          f" (log: {100 * (1 - logged / bare):.0f}% of the round's time)")


if __name__ == "__main__":
    main()
