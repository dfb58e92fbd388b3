"""Helpers shared by the command modules: argument types and the default results store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["positive_int", "default_store", "add_store_arguments", "open_runs"]


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def default_store() -> str:
    """The results store used when no path is given (``glmbandits-results.sqlite``)."""
    from ..experiments.store import DEFAULT_STORE

    return DEFAULT_STORE


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("store", nargs="?", default=None, metavar="STORE",
                        help=f"SQLite results store (default: ./{default_store()})")
    parser.add_argument("--experiment", default=None,
                        help="only this experiment (default: all in the store)")


def open_runs(args: argparse.Namespace) -> list | None:
    from ..experiments.store import ResultStore, StoreError

    path = args.store or default_store()
    if not Path(path).is_file():
        print(f"error: STORE must be an existing results file, got {path!r}", file=sys.stderr)
        return None
    try:
        with ResultStore(path) as store:
            runs, left_out = store.current_runs(args.experiment)
    except StoreError as error:
        print(f"error: {error}", file=sys.stderr)
        return None
    if left_out:
        print(f"note: {left_out} stored runs come from an earlier seed or a larger --seeds "
              "than the experiment's last run; they are left out", file=sys.stderr)
    return runs
