"""``glmbandits results`` and ``glmbandits plot``: read a results store (thin wrappers)."""

from __future__ import annotations

import argparse
import sys

from .common import add_store_arguments, open_runs, require_extra

__all__ = ["add_results_arguments", "run_results", "add_plot_arguments", "run_plot"]


def add_results_arguments(parser: argparse.ArgumentParser) -> None:
    from ..experiments.summary import SUMMARY_FORMATS

    add_store_arguments(parser)
    parser.add_argument("--format", choices=SUMMARY_FORMATS, default="markdown",
                        help="table format (default: markdown)")


def run_results(args: argparse.Namespace) -> int:
    from ..experiments.summary import format_summary, summarise

    runs = open_runs(args)
    if runs is None:
        return 2
    print(format_summary(summarise(runs), args.format))
    return 0


def add_plot_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_arguments(parser)
    parser.add_argument("--out", default="glmbandits-plots",
                        help="folder for the figures, one subfolder per experiment (each "
                             "experiment is drawn apart; default: ./glmbandits-plots)")
    parser.add_argument("--formats", default="png,svg",
                        help="comma-separated image formats (default: png,svg)")


def run_plot(args: argparse.Namespace) -> int:
    if not require_extra("plot", "plot", purpose="draws the figures"):
        return 2
    from ..experiments.plots import plot_experiments

    runs = open_runs(args)
    if runs is None:
        return 2
    try:
        paths = plot_experiments(runs, args.out,
                                 [f.strip() for f in args.formats.split(",")])
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path}")
    return 0
