"""Issue 23, item 1: what one select/update round costs, against its floor and its internals.

Prints CPU µs per round (``time.process_time``) for d=10, K=20 and d=50, K=200 of

* ``numpy floor``: a bare numpy round that scores K actions (``x'θ + α‖x‖_{V⁻¹}``) and
  does one Sherman–Morrison update (the least any UCB round does);
* ``UCB-GLM lazy (internals)``: ``policy._choose(X)`` and ``policy._learn(x, r)``, the
  round without the public checks and the update transaction;
* ``UCB-GLM lazy (select/update)``: the same policy through ``select``/``update``;
* ``LinUCB (internals)`` and ``LinUCB (select/update)`` alike;

and the ratios public / internals. Rewards are logistic from a fixed θ* (‖θ*‖ = 3),
precomputed with the contexts (unit ball) so the harness costs the same in every row.

Each measurement runs in a subprocess whose ``PYTHONPATH`` points at one tree's ``src``:
the checkout this script is in (``current``) and, with ``--against COMMIT``, that commit
checked out into a temporary ``git worktree`` (removed afterwards). The trees alternate
subprocess by subprocess, and inside a subprocess the rows alternate repeat by repeat;
a figure is the median of all its repeats (``--repeats`` subprocesses of ``--inner``
repeats of ``--rounds`` timed rounds each, after untimed warm-up rounds). The
subprocesses use one BLAS thread unless ``OPENBLAS_NUM_THREADS`` (etc.) is set.

Usage: python benchmarks/bench_single_round.py [--against COMMIT] [--repeats 5]
       [--inner 3] [--rounds 2000] [--sizes 10x20,50x200]
Timings on a shared machine are noisy: compare the ratios measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measured_trees import measured_trees  # noqa: E402 (this checkout and --against)

ROWS = ("numpy floor", "UCB-GLM lazy (internals)", "UCB-GLM lazy (select/update)",
        "LinUCB (internals)", "LinUCB (select/update)")
RATIOS = (("UCB-GLM lazy: select/update / internals", "UCB-GLM lazy (select/update)",
           "UCB-GLM lazy (internals)"),
          ("LinUCB: select/update / internals", "LinUCB (select/update)", "LinUCB (internals)"),
          ("UCB-GLM lazy select/update / numpy floor", "UCB-GLM lazy (select/update)",
           "numpy floor"))
WARMUP = 300


def _problem(d: int, k: int, rounds: int) -> tuple[Any, list[list[float]]]:
    """Contexts (rounds, K, d) in the unit ball and every action's logistic reward draw."""
    import numpy as np

    rng = np.random.default_rng(1)
    theta = rng.normal(size=d)
    theta *= 3.0 / np.linalg.norm(theta)
    X = rng.normal(size=(rounds, k, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=2, keepdims=True))
    means = 1.0 / (1.0 + np.exp(-(X @ theta)))
    rewards = (rng.random((rounds, k)) < means).astype(float).tolist()
    return X, rewards


def _floor_round(d: int) -> Callable[[Any, list[float]], None]:
    """The bare numpy round: score K actions, argmax, one Sherman–Morrison update."""
    import numpy as np

    theta = np.zeros(d)
    V_inv = np.eye(d)

    def play(X: Any, rewards: list[float]) -> None:
        mean = X @ theta
        width = np.sqrt(np.einsum("ij,ij->i", X @ V_inv, X))
        a = int(np.argmax(mean + width))
        x = X[a]
        u = V_inv @ x
        V_inv.__isub__((1.0 / (1.0 + float(x @ u))) * (u[:, None] * u))
    return play


def _policy_round(name: str, public: bool, d: int) -> Callable[[Any, list[float]], None]:
    import glmbandits

    if name == "UCBGLM":
        policy = glmbandits.UCBGLM(n_features=d, seed=0, refit="lazy")
    else:
        policy = glmbandits.LinUCB(n_features=d, seed=0)
    if public:
        select, update = policy.select, policy.update

        def play(X: Any, rewards: list[float]) -> None:
            a = select(X)
            update(X[a], rewards[a])
    else:
        choose, learn = policy._choose, policy._learn

        def play(X: Any, rewards: list[float]) -> None:
            chosen = choose(X)
            a = chosen[0] if isinstance(chosen, tuple) else chosen  # older interfaces
            learn(X[a], rewards[a])
    return play


def worker(d: int, k: int, rounds: int, inner: int) -> dict[str, list[float]]:
    """µs per round of every row, ``inner`` interleaved repeats each (one tree)."""
    makers: dict[str, Callable[[], Callable[[Any, list[float]], None]]] = {
        ROWS[0]: lambda: _floor_round(d),
        ROWS[1]: lambda: _policy_round("UCBGLM", False, d),
        ROWS[2]: lambda: _policy_round("UCBGLM", True, d),
        ROWS[3]: lambda: _policy_round("LinUCB", False, d),
        ROWS[4]: lambda: _policy_round("LinUCB", True, d),
    }
    X, rewards = _problem(d, k, WARMUP + rounds)
    results: dict[str, list[float]] = {row: [] for row in ROWS}
    for repeat in range(inner):
        order = ROWS[repeat % len(ROWS):] + ROWS[:repeat % len(ROWS)]  # rotate who goes first
        for row in order:
            play = makers[row]()  # a fresh policy: every repeat plays the same trajectory
            for t in range(WARMUP):
                play(X[t], rewards[t])
            start = time.process_time()
            for t in range(WARMUP, WARMUP + rounds):
                play(X[t], rewards[t])
            results[row].append((time.process_time() - start) / rounds * 1e6)
    return results


#: One BLAS thread unless the caller says otherwise: CPU time then counts one core's work,
#: not the spinning of idle BLAS threads (which made the d=50 rows noisy).
THREADS = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def _measure(src: Path, d: int, k: int, rounds: int, inner: int) -> dict[str, list[float]]:
    env = {**THREADS, **os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, __file__, "--worker", f"{d}x{k}", "--rounds", str(rounds),
         "--inner", str(inner)], env=env, check=True, capture_output=True, text=True)
    measured: dict[str, list[float]] = json.loads(out.stdout)
    return measured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--against", help="a commit to measure interleaved with the checkout")
    parser.add_argument("--repeats", type=int, default=5, help="subprocesses per tree")
    parser.add_argument("--inner", type=int, default=3, help="repeats per subprocess")
    parser.add_argument("--rounds", type=int, default=2000, help="timed rounds per repeat")
    parser.add_argument("--sizes", default="10x20,50x200", help="d x K pairs")
    args = parser.parse_args(argv)
    if args.worker:
        d, k = (int(v) for v in args.worker.split("x"))
        print(json.dumps(worker(d, k, args.rounds, args.inner)))
        return 0
    sizes = [tuple(int(v) for v in size.split("x")) for size in args.sizes.split(",")]
    results: dict[tuple[int, int, str], dict[str, list[float]]] = {}
    with measured_trees(args.against, "bench-single-round-") as trees:
        for d, k in sizes:
            for _ in range(args.repeats):
                for label, src in trees.items():  # interleaved: current, against, current, ...
                    measured = _measure(src, d, k, args.rounds, args.inner)
                    pooled = results.setdefault((d, k, label), {row: [] for row in ROWS})
                    for row in ROWS:
                        pooled[row] += measured[row]
    labels = list(trees)
    print(f"CPU µs per round (time.process_time), median of {args.repeats} interleaved "
          f"subprocesses x {args.inner} interleaved repeats of {args.rounds} rounds "
          f"(after {WARMUP} untimed)\n")
    for d, k in sizes:
        med = {label: {row: statistics.median(results[(d, k, label)][row]) for row in ROWS}
               for label in labels}
        head = " | ".join(labels)
        extra = f" | current / {labels[1].split()[0]}" if len(labels) > 1 else ""
        print(f"d={d}, K={k}\n\n| CPU µs per round | {head}{extra} |")
        print("|---|" + "---:|" * (len(labels) + (len(labels) > 1)))
        for row in ROWS:
            cells = " | ".join(f"{med[label][row]:.1f}" for label in labels)
            ratio = (f" | {med[labels[0]][row] / med[labels[1]][row]:.2f}"
                     if len(labels) > 1 else "")
            print(f"| {row} | {cells}{ratio} |")
        for name, top, bottom in RATIOS:
            cells = " | ".join(f"{med[label][top] / med[label][bottom]:.2f}x" for label in labels)
            print(f"| {name} | {cells}{' | ' if len(labels) > 1 else ''} |")
        print()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"python {platform.python_version()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
