"""The ``glmbandits`` command line. Thin: it parses arguments and calls the library.

One module per command group (:mod:`.run`, :mod:`.results`, :mod:`.reproduce`,
:mod:`.replay`, :mod:`.bench`, :mod:`.serve`), each with an ``add_*_arguments(parser)`` and a
``run_*(args) -> exit code``; :data:`SUBCOMMANDS` puts them together.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any, Callable, Sequence

from .._version import __version__
from .bench import add_bench_arguments, run_bench
from .replay import add_replay_arguments, run_replay
from .reproduce import add_reproduce_arguments, run_reproduce
from .results import add_plot_arguments, add_results_arguments, run_plot, run_results
from .run import add_run_arguments, run_run
from .serve import (add_export_arguments, add_recover_arguments, add_serve_arguments,
                    run_export, run_recover, run_serve)

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
             "from a results store, each experiment apart (one folder each)",
             add_plot_arguments, run_plot),
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
    "recover": ("rebuild a decision service whose log does not replay (written by two "
                "processes at once) from the events it can trust: report, then --apply",
                add_recover_arguments, run_recover),
}


class _CommandParser(argparse.ArgumentParser):
    """The parser of one subcommand: its arguments are added when it is used (so that
    ``glmbandits --version`` or another subcommand imports nothing of it), and a flag it
    does not know is refused with its own usage, not the top-level one."""

    def __init__(self, *args: object,
                 add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
                 **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._add_arguments = add_arguments

    def _complete(self) -> None:
        if self._add_arguments is not None:
            add_arguments, self._add_arguments = self._add_arguments, None
            add_arguments(self)

    def parse_known_args(  # type: ignore[override]
            self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._complete()
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}{self._did_you_mean(extras)}")
        return namespace, extras

    def _did_you_mean(self, extras: list[str]) -> str:
        known = [flag for action in self._actions for flag in action.option_strings]
        hints = []
        for extra in extras:
            if extra.startswith("--"):
                close = difflib.get_close_matches(extra.split("=", 1)[0], known, n=1)
                if close:
                    hints.append(f"{extra.split('=', 1)[0]}: did you mean {close[0]}?")
        return f" ({'; '.join(hints)})" if hints else ""

    def format_usage(self) -> str:
        self._complete()
        return super().format_usage()

    def format_help(self) -> str:
        self._complete()
        return super().format_help()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="glmbandits",
        description="Generalized linear contextual bandits (Li, Lu & Zhou 2017 and successors).")
    parser.add_argument("--version", action="version", version=f"glmbandits {__version__}",
                        help="print 'glmbandits VERSION' and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_CommandParser)
    for name, (help_text, add_arguments, handler) in SUBCOMMANDS.items():
        subparser = sub.add_parser(name, help=help_text, description=help_text,
                                   add_arguments=add_arguments)
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
