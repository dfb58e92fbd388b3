"""Issue 6 benchmark: speed, regret and memory of every policy and refit mode.

Prints Markdown tables (logistic, d=10, K=20, ‖θ*‖=3):
  * rounds/s (median over seeds), µs/round, regret at T (mean ± sd), peak traced
    memory, for every registered policy and mode at T=3000 and T=100,000 (modes
    whose per-round cost grows with t are skipped at 100,000 when a pilot run
    projects more than --max-seconds per run), with the "straightforward numpy"
    exact-refit baseline and the ratios measured in the same run;
  * lockstep batch (simulate_batch, R=64) against R sequential runs;
  * peak memory at T=10^6 for LinUCB, the online policies and lazy UCB-GLM.

Usage: python benchmarks/bench_performance.py [--quick]
Timings are noisy on a shared machine: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import numpy as np

from glmbandits.experiments.benchmark import bench_batch, bench_memory, format_table, run_benchmark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short version (as glmbandits bench)")
    parser.add_argument("--seeds", type=int, default=10, help="seeds at T=3000 (default 10)")
    parser.add_argument("--long-horizon", type=int, default=100_000)
    parser.add_argument("--long-seeds", type=int, default=3)
    parser.add_argument("--memory-horizon", type=int, default=1_000_000,
                        help="T of the peak-memory runs (0: skip them)")
    parser.add_argument("--memory-labels", default="linucb,gloc,ecolog,laplace-ts",
                        help="comma-separated policies of the peak-memory runs")
    parser.add_argument("--only-memory", action="store_true",
                        help="print only the peak-memory table")
    parser.add_argument("--replicates", type=int, default=64)
    parser.add_argument("--only-batch", action="store_true",
                        help="print only the lockstep batch table (R=--replicates, T=3000)")
    parser.add_argument("--batch-repeats", type=int, default=3,
                        help="batch runs per policy; the median is reported (default 3)")
    parser.add_argument("--max-seconds", type=float, default=60.0,
                        help="skip a T=long run projected to take longer (default 60)")
    parser.add_argument("--labels", default="",
                        help="semicolon-separated policy-table rows to run (default: all), "
                             "e.g. 'numpy-baseline (exact);ucb-glm (exact);ucb-glm (lazy)'")
    args = parser.parse_args(argv)
    if args.quick:
        settings = dict(short_horizon=1000, long_horizon=None, n_seeds=3, batch_replicates=16,
                        batch_horizon=500, batch_repeats=1, memory_horizon=None)
    else:
        settings = dict(n_seeds=args.seeds, long_horizon=args.long_horizon,
                        long_seeds=args.long_seeds, batch_replicates=args.replicates,
                        memory_horizon=args.memory_horizon, max_seconds_per_run=args.max_seconds)
    start = time.perf_counter()
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    labels = [name.strip() for name in args.memory_labels.split(",") if name.strip()]
    if args.only_batch:
        print(format_table([], bench_batch(3000, args.replicates, args.batch_repeats, log=log)))
        return 0
    if args.only_memory:
        table = format_table([], [], bench_memory(args.memory_horizon, labels, log=log))
        print(table)
        return 0
    settings["memory_labels"] = labels
    if args.labels:
        settings["labels"] = [name.strip() for name in args.labels.split(";") if name.strip()]
    table = run_benchmark(**settings, log=log)
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"{platform.machine()}; total {time.perf_counter() - start:.0f} s\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
