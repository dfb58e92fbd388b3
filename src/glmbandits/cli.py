"""The ``glmbandits`` command line. Thin: it parses arguments and calls the library.

Subcommands register themselves in :data:`SUBCOMMANDS` (name -> (add_arguments, handler)).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

__all__ = ["main", "build_parser", "SUBCOMMANDS"]

DEFAULT_ALGORITHMS = "ucb-glm,supcb-glm,linucb,random"


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    from .families import FAMILY_NAMES
    from .policies.registry import policy_names

    parser.add_argument("--horizon", "-T", type=_positive_int, default=3000,
                        help="number of rounds T per run (default: 3000)")
    parser.add_argument("--seeds", type=_positive_int, default=5,
                        help="number of independent replicates per algorithm (default: 5)")
    parser.add_argument("--seed", type=int, default=0,
                        help="master seed; replicate seeds are spawned from it (default: 0)")
    parser.add_argument("--n-features", "-d", type=_positive_int, default=10,
                        help="feature dimension d (default: 10)")
    parser.add_argument("--n-actions", "-K", type=_positive_int, default=20,
                        help="actions per round K (default: 20)")
    parser.add_argument("--family", choices=FAMILY_NAMES, default="logistic",
                        help="reward family / link (default: logistic)")
    parser.add_argument("--theta-norm", type=float, default=3.0,
                        help="norm of the true parameter θ* (default: 3.0)")
    parser.add_argument("--algorithms", default=DEFAULT_ALGORITHMS,
                        help=f"comma-separated algorithms from {policy_names()} "
                             f"(default: {DEFAULT_ALGORITHMS})")
    parser.add_argument("--jobs", type=_positive_int, default=min(2, os.cpu_count() or 1),
                        help="parallel worker processes (default: min(2, cores))")
    parser.add_argument("--out", default="glmbandits-results",
                        help="folder for runs.csv, curves.csv and regret.png "
                             "(default: ./glmbandits-results)")
    parser.add_argument("--no-plot", action="store_true",
                        help="do not draw regret.png (matplotlib is not needed then)")


def _run(args: argparse.Namespace) -> int:
    from .experiments import compare_policies
    from .policies.registry import ProblemSpec

    algorithms = [name.strip().lower() for name in args.algorithms.split(",") if name.strip()]
    problem = ProblemSpec(args.n_features, args.n_actions, args.family, args.horizon,
                          args.theta_norm)
    print(f"glmbandits run: {args.family}, d={args.n_features}, K={args.n_actions}, "
          f"||theta*||={args.theta_norm:g}, T={args.horizon}, {args.seeds} seeds, "
          f"algorithms: {', '.join(algorithms)}", flush=True)
    try:
        result = compare_policies(algorithms, problem, n_seeds=args.seeds, seed=args.seed,
                                  n_jobs=args.jobs)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(result.format_table())
    out = Path(args.out)
    runs_path, curves_path = result.write_csv(out)
    print(f"wrote {runs_path} and {curves_path}")
    if not args.no_plot:
        try:
            from .experiments.plots import plot_regret_curves
            print(f"wrote {plot_regret_curves(result, out / 'regret.png')}")
        except ImportError:
            print("matplotlib is not installed: skipped regret.png "
                  "(pip install 'glmbandits[plot]')")
    return 0


#: name -> (help, add_arguments, handler)
SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None],
                             Callable[[argparse.Namespace], int]]] = {
    "run": ("compare algorithms on a synthetic GLM bandit and write a table, CSVs and a plot",
            _add_run_arguments, _run),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="glmbandits",
        description="Generalized linear contextual bandits (Li, Lu & Zhou 2017 and successors).")
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
