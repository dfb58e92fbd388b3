"""Helpers shared by the command modules: argument types, the default results store,
the progress decision and the check of optional extras."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Sequence

__all__ = ["positive_int", "default_store", "add_store_arguments", "open_runs", "EXTRAS",
           "module_available", "missing_extra", "require_extra", "add_quiet_argument",
           "stderr_is_terminal", "show_progress"]

#: Optional extras: name -> (the modules it provides, the command that installs it).
#: ``obd`` is not an extra of glmbandits: the Open Bandit Dataset sample ships with obp,
#: installed without its (heavy) dependencies.
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "plot": (("matplotlib",), "pip install 'glmbandits[plot]'"),
    "cluster": (("distributed",), "pip install 'glmbandits[cluster]'"),
    "data": (("pandas", "sklearn", "statsmodels"), "pip install 'glmbandits[data]'"),
    "serve": (("starlette", "uvicorn", "msgspec", "pyarrow"), "pip install 'glmbandits[serve]'"),
    "obd": (("obp",), "pip install --no-deps obp==0.4.1"),
}


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


# -- optional extras ----------------------------------------------------------------------
def module_available(name: str) -> bool:
    """Whether ``import name`` can find the module, without importing it."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False
    except ValueError:  # already imported, with no spec (e.g. __main__)
        return True


def missing_extra(extra: str, modules: Sequence[str] | None = None) -> list[str]:
    """The modules of ``extra`` (or only ``modules`` of it) that are not installed.

    Parameters
    ----------
    extra : str
        A key of :data:`EXTRAS`.
    modules : sequence of str, optional
        The modules of the extra that the caller needs (default: all of them).

    Returns
    -------
    list of str
        The missing ones; empty when everything is there.

    Examples
    --------
    >>> missing_extra("plot") in ([], ["matplotlib"])
    True
    """
    if extra not in EXTRAS:
        raise ValueError(f"missing_extra: extra must be one of {list(EXTRAS)}, got {extra!r}")
    wanted = EXTRAS[extra][0] if modules is None else tuple(modules)
    return [name for name in wanted if not module_available(name)]


def require_extra(command: str, extra: str, modules: Sequence[str] | None = None,
                  purpose: str = "") -> bool:
    """Check an optional extra before a command starts; on a miss, say how to fix it.

    Prints ``error: glmbandits COMMAND needs MODULE (PURPOSE): PIP LINE`` to stderr
    and returns False when a module is missing (the command then exits with 2).
    """
    missing = missing_extra(extra, modules)
    if not missing:
        return True
    what = f" ({purpose})" if purpose else ""
    print(f"error: glmbandits {command} needs {', '.join(missing)}{what}, which is not "
          f"installed: {EXTRAS[extra][1]}", file=sys.stderr)
    return False


# -- progress -----------------------------------------------------------------------------
def add_quiet_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bar (there is one on stderr only when stderr is a "
                             "terminal)")


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal (where progress bars go)."""
    return sys.stderr.isatty()


def show_progress(args: argparse.Namespace) -> bool:
    """The CLI's decision: a progress bar when stderr is a terminal and not ``--quiet``."""
    return not getattr(args, "quiet", False) and stderr_is_terminal()


# -- the results store ----------------------------------------------------------------------
def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("store", nargs="?", default=None, metavar="STORE",
                        help=f"SQLite results store (default: ./{default_store()}, where "
                             "'glmbandits run' writes its runs, with or without a CONFIG)")
    parser.add_argument("--experiment", default=None,
                        help="only this experiment (default: all in the store)")


def open_runs(args: argparse.Namespace) -> list | None:
    from ..experiments.store import ResultStore, StoreError

    path = args.store or default_store()
    if not Path(path).is_file():
        hint = (" (run 'glmbandits run' first: it writes there)"
                if args.store is None else "")
        print(f"error: STORE must be an existing results file, got {path!r}{hint}",
              file=sys.stderr)
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
