"""The ``glmbandits`` command line. Thin: it parses arguments and calls the library.

Subcommands register themselves in :data:`SUBCOMMANDS` (name -> (add_arguments, handler)).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

from ._cli_bench import add_bench_arguments, run_bench
from ._cli_replay import add_replay_arguments, run_replay

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

    parser.add_argument("config", nargs="?", default=None, metavar="CONFIG",
                        help="a TOML experiment config (environments x policies x grids x "
                             "seeds); results go to --store. Without it, the flags below "
                             "describe one problem")
    parser.add_argument("--horizon", "-T", type=_positive_int, default=3000,
                        help="number of rounds T per run (default: 3000)")
    parser.add_argument("--seeds", type=_positive_int, default=None,
                        help="number of independent replicates per algorithm (default: 5, "
                             "or the config's 'seeds', which this flag overrides)")
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
    parser.add_argument("--jobs", type=_positive_int, default=None,
                        help="parallel worker processes (default: min(2, cores); with a "
                             "CONFIG, all cores)")
    parser.add_argument("--scheduler", default=None,
                        help="with a CONFIG: Dask scheduler address tcp://HOST:PORT "
                             "(overrides the config's [dask] table; needs glmbandits[cluster])")
    parser.add_argument("--store", default=None,
                        help=f"with a CONFIG: SQLite results store; finished runs are skipped "
                             f"(default: ./{_default_store()})")
    parser.add_argument("--out", default="glmbandits-results",
                        help="folder for runs.csv, curves.csv and regret.png "
                             "(default: ./glmbandits-results)")
    parser.add_argument("--no-plot", action="store_true",
                        help="do not draw regret.png (matplotlib is not needed then)")


def _default_store() -> str:
    from .experiments.store import DEFAULT_STORE

    return DEFAULT_STORE


def _run(args: argparse.Namespace) -> int:
    if args.config is not None:
        return _run_config(args)
    if args.seeds is None:
        args.seeds = 5
    if args.jobs is None:
        args.jobs = min(2, os.cpu_count() or 1)
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


def _run_config(args: argparse.Namespace) -> int:
    from .experiments.config import ConfigError, load_config
    from .experiments.runner import run_experiment
    from .experiments.store import format_summary, summarise

    try:
        config = load_config(args.config)
        if args.seeds is not None:
            config = config.with_seeds(args.seeds)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    store = args.store or _default_store()
    cells = config.cells()
    print(f"glmbandits run {args.config}: experiment {config.name!r}, {len(cells)} cells x "
          f"{config.seeds} seeds, store {store}", flush=True)
    report = run_experiment(config, store, scheduler=args.scheduler, n_jobs=args.jobs)
    print(f"{report.n_ok} runs done, {report.n_skipped} already in the store (skipped), "
          f"{len(report.failed)} failed, {report.seconds:.1f} s")
    for run in report.failed:
        print(f"FAILED {run.label} [{run.environment}] replicate {run.replicate}: {run.error}",
              file=sys.stderr)
    runs = report.runs()
    print(format_summary(summarise(runs)))
    if not args.no_plot:
        try:
            from .experiments.plots import plot_store
            for path in plot_store(runs, args.out):
                print(f"wrote {path}")
        except ImportError:
            print("matplotlib is not installed: skipped the plots "
                  "(pip install 'glmbandits[plot]')")
    return 1 if report.failed else 0


def _add_store_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("store", nargs="?", default=None, metavar="STORE",
                        help=f"SQLite results store (default: ./{_default_store()})")
    parser.add_argument("--experiment", default=None,
                        help="only this experiment (default: all in the store)")


def _open_runs(args: argparse.Namespace) -> list | None:
    from .experiments.store import ResultStore

    path = args.store or _default_store()
    if not Path(path).is_file():
        print(f"error: STORE must be an existing results file, got {path!r}", file=sys.stderr)
        return None
    with ResultStore(path) as store:
        return store.runs(args.experiment)


def _add_results_arguments(parser: argparse.ArgumentParser) -> None:
    from .experiments.store import SUMMARY_FORMATS

    _add_store_arguments(parser)
    parser.add_argument("--format", choices=SUMMARY_FORMATS, default="markdown",
                        help="table format (default: markdown)")


def _results(args: argparse.Namespace) -> int:
    from .experiments.store import format_summary, summarise

    runs = _open_runs(args)
    if runs is None:
        return 2
    print(format_summary(summarise(runs), args.format))
    return 0


def _add_plot_arguments(parser: argparse.ArgumentParser) -> None:
    _add_store_arguments(parser)
    parser.add_argument("--out", default="glmbandits-plots",
                        help="folder for the figures (default: ./glmbandits-plots)")
    parser.add_argument("--formats", default="png,svg",
                        help="comma-separated image formats (default: png,svg)")


def _plot(args: argparse.Namespace) -> int:
    from .experiments.plots import plot_store

    runs = _open_runs(args)
    if runs is None:
        return 2
    try:
        paths = plot_store(runs, args.out, [f.strip() for f in args.formats.split(",")])
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path}")
    return 0


def _add_reproduce_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--full", action="store_true",
                        help="larger settings (more seeds, longer horizons; tens of minutes)")
    parser.add_argument("--out", default="glmbandits-reproduction",
                        help="folder for REPORT.md and its figures "
                             "(default: ./glmbandits-reproduction)")
    parser.add_argument("--seed", type=int, default=0, help="master seed (default: 0)")
    parser.add_argument("--jobs", type=_positive_int, default=None,
                        help="worker processes for the sweeps (default: all cores)")


def _reproduce(args: argparse.Namespace) -> int:
    from .experiments.reproduce import reproduce

    path = reproduce(args.out, full=args.full, seed=args.seed, n_jobs=args.jobs,
                     command="glmbandits reproduce" + (" --full" if args.full else "")
                     + f" --out {args.out}" + (f" --seed {args.seed}" if args.seed else ""))
    print(f"wrote {path}")
    return 0


#: name -> (help, add_arguments, handler)
SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None],
                             Callable[[argparse.Namespace], int]]] = {
    "run": ("compare algorithms on a synthetic GLM bandit and write a table, CSVs and a plot",
            _add_run_arguments, _run),
    "results": ("list and summarise a results store (mean ± sd per cell)",
                _add_results_arguments, _results),
    "plot": ("draw regret curves, log-log regret, regret against d and time per round "
             "from a results store", _add_plot_arguments, _plot),
    "reproduce": ("check the paper's Theorems 1-2, the regret scaling and Section 5.1's "
                  "condition empirically; writes a Markdown report with figures",
                  _add_reproduce_arguments, _reproduce),
    "replay": ("evaluate policies offline on a logged dataset (replay, IPS, SNIPS, DR) and "
               "print value ± CI per policy", add_replay_arguments, run_replay),
    "bench": ("benchmark speed (rounds/s), regret and memory of every policy and refit mode, "
              "and the lockstep batch simulator (short version)", add_bench_arguments, run_bench),
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
