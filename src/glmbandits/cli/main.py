"""The ``glmbandits`` command line. Thin: it parses arguments and calls the library.

One module per command group (:mod:`.run`, :mod:`.results`, :mod:`.reproduce`,
:mod:`.replay`, :mod:`.bench`, :mod:`.serve`), each with an ``add_*_arguments(parser)`` and a
``run_*(args) -> exit code``; :data:`SUBCOMMANDS` puts them together.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

from .._version import __version__
from .bench import add_bench_arguments, run_bench
from .replay import add_replay_arguments, run_replay
from .reproduce import add_reproduce_arguments, run_reproduce
from .results import add_plot_arguments, add_results_arguments, run_plot, run_results
from .run import add_run_arguments, run_run
from .serve import add_export_arguments, add_serve_arguments, run_export, run_serve

__all__ = ["main", "build_parser", "SUBCOMMANDS"]


#: name -> (help, add_arguments, handler)
SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None],
                             Callable[[argparse.Namespace], int]]] = {
    "run": ("compare algorithms on a synthetic GLM bandit (or run a TOML experiment) and "
            "write a table, CSVs and a plot; the runs also go to the results store that "
            "'glmbandits results' and 'glmbandits plot' read",
            add_run_arguments, run_run),
    "results": ("list and summarise a results store (mean ± sd per cell)",
                add_results_arguments, run_results),
    "plot": ("draw regret curves, log-log regret, regret against d and time per round "
             "from a results store", add_plot_arguments, run_plot),
    "reproduce": ("check the paper's Theorems 1-2, the regret scaling and Section 5.1's "
                  "condition empirically; writes a Markdown report with figures",
                  add_reproduce_arguments, run_reproduce),
    "replay": ("evaluate policies offline on a logged dataset (replay, IPS, SNIPS, DR) and "
               "print value ± CI per policy", add_replay_arguments, run_replay),
    "bench": ("benchmark speed (rounds/s), regret and memory of every policy and refit mode, "
              "and the lockstep batch simulator (short version)", add_bench_arguments, run_bench),
    "serve": ("run the decision service: decide/reward over HTTP with a durable event log, "
              "recovery, API keys and metrics (docs/service.md)",
              add_serve_arguments, run_serve),
    "export": ("write a decision service's event log as a Parquet file",
               add_export_arguments, run_export),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="glmbandits",
        description="Generalized linear contextual bandits (Li, Lu & Zhou 2017 and successors).")
    parser.add_argument("--version", action="version", version=f"glmbandits {__version__}",
                        help="print 'glmbandits VERSION' and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_text, add_arguments, handler) in SUBCOMMANDS.items():
        subparser = sub.add_parser(name, help=help_text, description=help_text)
        add_arguments(subparser)
        subparser.set_defaults(handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 2
    return int(args.handler(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
