"""Issue 23 item 3: the numba backend against numpy (and torch on CPU), on both paths.

Two tables, policy-rounds per CPU-second (``time.process_time``), medians of
``--repeats`` interleaved repeats (each repeat runs every backend once, in turn):

* **single round** — one replicate of LinUCB and of lazy UCB-GLM (d, K) played for
  ``--rounds`` rounds after ``--warmup`` untimed rounds, at three depths:
  ``round`` (the arithmetic alone: score K actions, argmax, one Sherman–Morrison
  step: ``ucb_scores`` + ``argmax_distribution`` + ``sherman_morrison_update`` on
  numpy, ``ucb_choice`` + the compiled ``sherman_morrison`` on numba), ``internals``
  (``_choose`` + ``_learn``) and ``public`` (``select`` + ``update``);
* **lockstep** — the batch kernels alone (``ready``/``select``/``update``, no
  environment) for R replicates over ``--steps`` steps, on the backends of
  :func:`glmbandits.batch.backend.get_backend` that are installed.

Contexts are drawn in the unit ball, rewards are logistic (‖θ*‖ = 3). Compile time
is excluded: every backend runs a short warm-up first (numba compiles its kernels
once per machine, then loads them from its on-disk cache). The "same actions"
column compares each backend's actions with numpy's on the same run.

Usage: python benchmarks/bench_compiled.py [--repeats 5] [--replicates 1024] [--steps 100]
       [--rounds 3000] [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import statistics
import time
from typing import Any, Callable

import numpy as np

from glmbandits import LinUCB, UCBGLM
from glmbandits.batch.backend import get_backend
from glmbandits.batch.registry import make_batch_kernel
from glmbandits.estimation.compiled import kernels
from glmbandits.estimation.gram import sherman_morrison_update
from glmbandits.policies.compiled_round import ucb_choice
from glmbandits.policies.scores import argmax_distribution, ucb_scores

PROBLEMS = ((10, 20), (50, 200))
POLICIES: dict[str, Callable[..., Any]] = {
    "linucb": lambda d, seed, backend: LinUCB(d, seed=seed, backend=backend),
    "ucb-glm (lazy)": lambda d, seed, backend: UCBGLM(d, seed=seed, refit="lazy",
                                                      backend=backend),
}


def _contexts(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform in the unit ball (norms distinct: no exact ties between actions)."""
    X = rng.normal(size=shape)
    X *= rng.random(shape[:-1] + (1,)) ** (1.0 / shape[-1]) / np.linalg.norm(X, axis=-1,
                                                                           keepdims=True)
    return X


class Problem:
    """A pool of context sets and the rewards of each of their actions, per round."""

    def __init__(self, d: int, K: int, rounds: int, replicates: int = 1, pool: int = 16,
                 seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        theta = rng.normal(size=d)
        theta *= 3.0 / np.linalg.norm(theta)
        shape = (pool, K, d) if replicates == 1 else (pool, replicates, K, d)
        self.X = _contexts(rng, shape)
        means = 1.0 / (1.0 + np.exp(-self.X @ theta))
        self.pool = pool
        # reward of every action in round t: 1 when u_t < μ(x'θ*)
        self.rewards = (rng.random((rounds,) + means.shape[1:]) < means[
            np.arange(rounds) % pool]).astype(float)


# -- single round -----------------------------------------------------------------------
def single_round(depth: str, policy: Any, problem: Problem, start: int, rounds: int
                 ) -> tuple[float, np.ndarray]:
    """CPU seconds of ``rounds`` rounds at ``depth``, and the actions played."""
    X, rewards, pool = problem.X, problem.rewards, problem.pool
    actions = np.empty(rounds, dtype=np.int64)
    if depth == "round":
        est = policy.estimate_
        theta, V_inv, rng, alpha = est.theta_.copy(), est.V_inv_.copy(), policy.rng_, policy.alpha
        compiled = policy.backend == "numba"
        rank_one = kernels().sherman_morrison if compiled else sherman_morrison_update
        begin = time.process_time()
        for t in range(start, start + rounds):
            contexts = X[t % pool]
            if compiled:
                a = ucb_choice(contexts, theta, V_inv, alpha, rng)[0]
            else:
                a = argmax_distribution(ucb_scores(contexts, theta, V_inv, alpha).ucb, rng)[0]
            rank_one(V_inv, contexts[a])
            actions[t - start] = a
        return time.process_time() - begin, actions
    choose, learn = ((policy._choose, policy._learn) if depth == "internals"
                     else (policy.select, policy.update))
    begin = time.process_time()
    for t in range(start, start + rounds):
        contexts = X[t % pool]
        a = choose(contexts)
        if depth == "internals":
            a = a[0]
        learn(contexts[a], rewards[t, a])
        actions[t - start] = a
    return time.process_time() - begin, actions


def bench_single(args: argparse.Namespace, backends: list[str]) -> list[list[str]]:
    rows = []
    for d, K in PROBLEMS:
        problem = Problem(d, K, args.warmup + args.rounds)
        for name, factory in POLICIES.items():
            for depth in ("round", "internals", "public"):
                rates: dict[str, list[float]] = {b: [] for b in backends}
                same: dict[str, bool] = {b: True for b in backends}
                for backend in backends:  # warm-up: compile / load the compiled kernels
                    single_round(depth, factory(d, 0, backend), problem, 0, 30)
                for _ in range(args.repeats):
                    played = {}
                    for backend in backends:
                        policy = factory(d, 0, backend)
                        single_round("public", policy, problem, 0, args.warmup)  # untimed
                        seconds, played[backend] = single_round(depth, policy, problem,
                                                                args.warmup, args.rounds)
                        rates[backend].append(args.rounds / seconds)
                    for backend in backends:
                        same[backend] &= bool(np.array_equal(played[backend], played["numpy"]))
                rows.append(_row(f"{name}, {depth}", d, K, 1, rates, same, backends))
    return rows


# -- lockstep ----------------------------------------------------------------------------
def lockstep(policy: str, backend: str, problem: Problem, d: int, replicates: int, steps: int
             ) -> tuple[float, np.ndarray]:
    """CPU seconds of the kernel's work over ``steps`` steps, and the actions (steps, R)."""
    policies = [POLICIES[policy](d, seed, "numpy") for seed in range(replicates)]
    kernel = make_batch_kernel(policies, get_backend(backend))
    kernel.reserve(steps)
    active = np.ones(replicates, dtype=bool)
    played = np.full((steps, replicates), -1, dtype=np.int64)
    pending = np.zeros(replicates, dtype=np.int64)  # each replicate's next round
    seconds = 0.0
    for _ in range(steps):
        begin = time.process_time()
        rows = kernel.ready(active)
        seconds += time.process_time() - begin
        t = pending[rows]
        X = problem.X[pending % problem.pool, np.arange(replicates)]  # each one's round
        begin = time.process_time()
        actions, _ = kernel.select(X, None, rows)
        x = X[rows, actions]
        rewards = problem.rewards[t, rows, actions]
        kernel.update(rows, x, rewards)
        seconds += time.process_time() - begin
        played[t, rows] = actions
        pending[rows] += 1
    kernel.finalize()
    return seconds, played


def bench_lockstep(args: argparse.Namespace, backends: list[str]) -> list[list[str]]:
    rows = []
    for d, K in PROBLEMS:
        R = args.replicates if d == 10 else max(1, args.replicates // 4)
        problem = Problem(d, K, 2 * args.steps, R, pool=4)
        for name in POLICIES:
            rates: dict[str, list[float]] = {b: [] for b in backends}
            same: dict[str, bool] = {b: True for b in backends}
            for backend in backends:  # warm-up: compile / load the compiled kernels
                lockstep(name, backend, problem, d, min(R, 8), 5)
            for _ in range(args.repeats):
                played = {}
                for backend in backends:
                    seconds, played[backend] = lockstep(name, backend, problem, d, R, args.steps)
                    rates[backend].append(int((played[backend] >= 0).sum()) / seconds)
                for backend in backends:
                    same[backend] &= bool(np.array_equal(played[backend], played["numpy"]))
            rows.append(_row(name, d, K, R, rates, same, backends))
    return rows


# -- output ------------------------------------------------------------------------------
def _row(label: str, d: int, K: int, R: int, rates: dict[str, list[float]],
         same: dict[str, bool], backends: list[str]) -> list[str]:
    medians = {b: statistics.median(rates[b]) for b in backends}
    cells = [label, str(d), str(K), str(R)]
    cells += [f"{medians[b]:,.0f}" for b in backends]
    cells += [f"{medians[b] / medians['numpy']:.2f}x" for b in backends if b != "numpy"]
    cells += [", ".join(b for b in backends if b != "numpy" and same[b]) or "—"]
    return cells


def _table(title: str, rows: list[list[str]], backends: list[str]) -> None:
    others = [b for b in backends if b != "numpy"]
    head = (["policy, depth" if title == "single round" else "policy (lockstep kernel)",
             "d", "K", "R"] + [f"{b} rounds/CPU-s" for b in backends]
            + [f"{b} / numpy" for b in others] + ["same actions as numpy"])
    print(f"\n{title}:\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(head) - 1)) + "|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--replicates", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--only", choices=("single", "lockstep"), default=None)
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes (a smoke run): 1 repeat, R=16, 10 steps, 50 rounds")
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.replicates, args.steps, args.rounds, args.warmup = 1, 16, 10, 50, 30
    single = ["numpy", "numba"]
    batch = ["numpy", "numba"] + (["torch"] if importlib.util.find_spec("torch") else [])
    kernels()  # numba: imported (and its kernels loaded or compiled) before any timing
    start = time.time()
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"numba {__import__('numba').__version__}, {platform.machine()}; "
          f"{args.repeats} interleaved repeats, medians; compile time excluded (warm-up first)")
    if args.only != "lockstep":
        _table("single round", bench_single(args, single), single)
    if args.only != "single":
        _table("lockstep", bench_lockstep(args, batch), batch)
    print(f"\ntotal {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
