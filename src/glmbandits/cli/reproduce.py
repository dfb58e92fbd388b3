"""``glmbandits reproduce``: check the paper's theorems empirically and write a report."""

from __future__ import annotations

import argparse

from .common import add_quiet_argument, positive_int, require_extra, show_progress

__all__ = ["add_reproduce_arguments", "run_reproduce"]


def add_reproduce_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--full", action="store_true",
                        help="larger settings (more seeds, longer horizons; tens of minutes)")
    parser.add_argument("--out", default="glmbandits-reproduction",
                        help="folder for REPORT.md and its figures "
                             "(default: ./glmbandits-reproduction)")
    parser.add_argument("--seed", type=int, default=0, help="master seed (default: 0)")
    parser.add_argument("--jobs", type=positive_int, default=None,
                        help="worker processes for the sweeps (default: all cores)")
    add_quiet_argument(parser)


def run_reproduce(args: argparse.Namespace) -> int:
    if not require_extra("reproduce", "plot", purpose="the report's figures"):
        return 2
    from ..experiments.reproduce import reproduce

    path = reproduce(args.out, full=args.full, seed=args.seed, n_jobs=args.jobs,
                     command="glmbandits reproduce" + (" --full" if args.full else "")
                     + f" --out {args.out}" + (f" --seed {args.seed}" if args.seed else ""),
                     progress=show_progress(args))
    print(f"wrote {path}")
    return 0
