"""``glmbandits bench``: a short version of the issue-6 performance benchmark."""

from __future__ import annotations

import argparse
import sys

from .common import add_quiet_argument, show_progress


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--horizon", "-T", type=int, default=1000,
                        help="rounds per run (default: 1000; the full benchmark uses 3000 "
                             "and 100000: python benchmarks/bench_performance.py)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per policy (default: 3)")
    parser.add_argument("--replicates", type=int, default=16,
                        help="replicates R of the lockstep batch figures (default: 16; 0: skip)")
    parser.add_argument("--batch-horizon", type=int, default=500,
                        help="rounds of the lockstep batch runs (default: 500)")
    add_quiet_argument(parser)


def run_bench(args: argparse.Namespace) -> int:
    from ..experiments.benchmark import run_benchmark

    for name in ("horizon", "seeds", "batch_horizon"):
        if getattr(args, name) < 1:
            print(f"error: --{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}",
                  file=sys.stderr)
            return 2
    if args.replicates < 0:
        print(f"error: --replicates must be >= 0, got {args.replicates}", file=sys.stderr)
        return 2
    print(f"glmbandits bench: logistic, d=10, K=20, ||theta*||=3, T={args.horizon}, "
          f"{args.seeds} seeds (policy time only; medians; ratios from this run)", flush=True)
    table = run_benchmark(short_horizon=args.horizon, long_horizon=None, n_seeds=args.seeds,
                          batch_replicates=args.replicates, batch_horizon=args.batch_horizon,
                          batch_repeats=1, memory_horizon=None,
                          progress=show_progress(args))
    print(table)
    return 0
