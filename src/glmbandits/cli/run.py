"""``glmbandits run``: compare policies on one synthetic problem, or run a TOML experiment.

Both are one experiment config run by :func:`~glmbandits.experiments.runner.run_experiment`:
the flags describe a config of their own (one problem, each algorithm with its defaults),
so a problem and ``--seed`` give the same replicates with or without a CONFIG file.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import (add_quiet_argument, default_store, missing_extra, positive_int,
                     require_extra, show_progress)

if TYPE_CHECKING:  # pragma: no cover
    from ..experiments.config import ExperimentConfig
    from ..experiments.runner import ExperimentReport
    from ..experiments.store import StoredRun

__all__ = ["DEFAULT_ALGORITHMS", "add_run_arguments", "run_run"]

DEFAULT_ALGORITHMS = "ucb-glm,supcb-glm,linucb,random"


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    from ..families import FAMILY_NAMES
    from ..policies.registry import policy_names

    parser.add_argument("config", nargs="?", default=None, metavar="CONFIG",
                        help="a TOML experiment config (environments x policies x grids x "
                             "seeds); results go to --store. Without it, the flags below "
                             f"describe one problem, and its runs go to ./{default_store()} "
                             "(an experiment named run-FAMILY-dD-KK-normN-TT, replaced by "
                             "the next run of the same problem). Either way 'glmbandits "
                             "results' and 'glmbandits plot' then read them")
    parser.add_argument("--horizon", "-T", type=positive_int, default=None,
                        help="number of rounds T per run (default: 3000; with a CONFIG, "
                             "overrides its horizon)")
    parser.add_argument("--seeds", type=positive_int, default=None,
                        help="number of independent replicates per algorithm (default: 5, "
                             "or the config's 'seeds', which this flag overrides)")
    parser.add_argument("--seed", type=int, default=None,
                        help="master seed; replicate seeds are spawned from it (default: 0; "
                             "with a CONFIG, overrides its seed)")
    parser.add_argument("--n-features", "-d", type=positive_int, default=None,
                        help="feature dimension d (default: 10; with a CONFIG, overrides "
                             "environment.n_features)")
    parser.add_argument("--n-actions", "-K", type=positive_int, default=None,
                        help="actions per round K (default: 20; with a CONFIG, overrides "
                             "environment.n_actions)")
    parser.add_argument("--family", choices=FAMILY_NAMES, default=None,
                        help="reward family / link (default: logistic; with a CONFIG, "
                             "overrides environment.family)")
    parser.add_argument("--theta-norm", type=float, default=None,
                        help="norm of the true parameter θ* (default: 3.0; with a CONFIG, "
                             "overrides environment.theta_norm)")
    parser.add_argument("--algorithms", default=None,
                        help=f"comma-separated algorithms from {policy_names()} "
                             f"(default: {DEFAULT_ALGORITHMS}; with a CONFIG, keeps only "
                             "these policies: the config's tables of these names, with their "
                             "params, or the algorithm with its defaults)")
    parser.add_argument("--jobs", type=positive_int, default=None,
                        help="parallel worker processes (default: min(2, cores); with a "
                             "CONFIG, all cores)")
    parser.add_argument("--scheduler", default=None,
                        help="with a CONFIG: Dask scheduler address tcp://HOST:PORT "
                             "(overrides the config's [dask] table; needs glmbandits[cluster])")
    parser.add_argument("--store", default=None,
                        help=f"with a CONFIG: SQLite results store; finished runs are skipped "
                             f"(default: ./{default_store()})")
    parser.add_argument("--out", default="glmbandits-results",
                        help="folder for runs.csv, curves.csv and regret.png "
                             "(default: ./glmbandits-results)")
    parser.add_argument("--no-plot", action="store_true",
                        help="do not draw regret.png (matplotlib is not needed then; without "
                             "matplotlib the plots are skipped with a note at the start)")
    add_quiet_argument(parser)


#: Flags that describe one problem: their defaults without a CONFIG, and what they override
#: in a CONFIG (a top-level key, or a key of its [environment] table).
_PROBLEM_FLAGS = {
    "seed": (0, "seed"),
    "horizon": (3000, "horizon"),
    "n_features": (10, "environment.n_features"),
    "n_actions": (20, "environment.n_actions"),
    "family": ("logistic", "environment.family"),
    "theta_norm": (3.0, "environment.theta_norm"),
    "algorithms": (DEFAULT_ALGORITHMS, "policies"),
}


def _plot_wanted(args: argparse.Namespace) -> bool:
    """Whether to draw the plots: not with --no-plot, and not without matplotlib, which is
    said up front (with the pip line) rather than after the runs."""
    if args.no_plot:
        return False
    if missing_extra("plot"):
        print("note: matplotlib is not installed, so the plots will be skipped: "
              "pip install 'glmbandits[plot]' (or pass --no-plot to silence this)",
              file=sys.stderr, flush=True)
        return False
    return True


def run_run(args: argparse.Namespace) -> int:
    if args.config is not None:
        return _run_config(args)
    for flag in ("store", "scheduler"):
        if getattr(args, flag) is not None:
            print(f"error: --{flag} applies only with a CONFIG (an experiment file), got "
                  f"--{flag} {getattr(args, flag)} without one", file=sys.stderr)
            return 2
    from ..experiments.config import ConfigError
    from ..experiments.store import ResultStore, StoreError

    if args.jobs is None:
        args.jobs = min(2, os.cpu_count() or 1)
    try:  # checked (sizes against memory, names, values) before anything is built
        config = _flags_config(args)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    store = default_store()
    if Path(store).exists():  # a file there that is not a results store: refuse before the work
        try:
            ResultStore(store).close()
        except StoreError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    plot = _plot_wanted(args)
    algorithms = [spec.name for spec in config.policies]
    print(f"glmbandits run: {args.family}, d={args.n_features}, K={args.n_actions}, "
          f"||theta*||={args.theta_norm:g}, T={args.horizon}, {config.seeds} seeds, "
          f"algorithms: {', '.join(algorithms)}", flush=True)
    # the next run of the same problem replaces its runs (no resume)
    done = _execute(config, store, args, replace=True)
    if done is None:
        return 2
    report, runs = done
    _print_failed(report)
    from ..experiments.summary import format_comparison, format_execution, write_runs_csv

    if format_execution(report.lockstep, report.sequential):
        print(format_execution(report.lockstep, report.sequential))

    ok = [run for run in runs if run.ok]
    print(format_comparison(ok))
    out = Path(args.out)
    runs_path, curves_path = write_runs_csv(ok, out)
    print(f"wrote {runs_path} and {curves_path}")
    if plot and ok:
        from ..experiments.plots import plot_regret_curves
        print(f"wrote {plot_regret_curves(ok, out / 'regret.png')}")
    print(f"wrote the runs to {store} (experiment {config.name}; 'glmbandits results' lists "
          "them)")
    return 1 if report.failed else 0


def _flags_config(args: argparse.Namespace) -> "ExperimentConfig":
    """The experiment the flags describe: one problem, each algorithm with its defaults,
    named ``run-FAMILY-dD-KK-normN-TT`` (one experiment per problem). Raises ConfigError."""
    from ..experiments.config import parse_config

    for name, (default, _) in _PROBLEM_FLAGS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    name = (f"run-{args.family}-d{args.n_features}-K{args.n_actions}-"
            f"norm{args.theta_norm:g}-T{args.horizon}")
    data: dict[str, Any] = {"name": name, "seeds": 5 if args.seeds is None else args.seeds,
                            "environment": {}, "policies": []}
    _apply_flags(data, args)
    return parse_config(data, "glmbandits run")


def _execute(config: "ExperimentConfig", store: str, args: argparse.Namespace,
             replace: bool = False) -> "tuple[ExperimentReport, list[StoredRun]] | None":
    """Run ``config`` into ``store`` (the progress bar as the CLI decides) and read this
    run's rows back, in the config's order; None, after the one-line error, when the store
    cannot be used."""
    from ..experiments.runner import run_experiment
    from ..experiments.store import StoreError

    try:
        report = run_experiment(config, store, scheduler=args.scheduler, n_jobs=args.jobs,
                                progress=show_progress(args), replace=replace)
        return report, report.runs()
    except StoreError as error:
        print(f"error: {error}", file=sys.stderr)
        return None


def _print_failed(report: "ExperimentReport") -> None:
    for run in report.failed:
        print(f"FAILED {run.label} [{run.environment}] replicate {run.replicate}: {run.error}",
              file=sys.stderr)


def _run_config(args: argparse.Namespace) -> int:
    from ..experiments.config import ConfigError, load_config
    from ..experiments.summary import format_summary, summarise

    try:
        config = load_config(args.config)
        config, overrides = _override_config(config, args)
        if args.seeds is not None:
            config = config.with_seeds(args.seeds)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.scheduler is not None and not require_extra("run", "cluster",
                                                        purpose="for --scheduler"):
        return 2
    plot = _plot_wanted(args)
    for text in overrides:
        print(f"override: {text}", flush=True)
    store = args.store or default_store()
    cells = config.cells()
    print(f"glmbandits run {args.config}: experiment {config.name!r}, {len(cells)} cells x "
          f"{config.seeds} seeds, store {store}", flush=True)
    done = _execute(config, store, args)
    if done is None:
        return 2
    report, runs = done
    print(f"{report.n_ok} runs done, {report.n_skipped} already in the store (skipped), "
          f"{len(report.failed)} failed, {report.seconds:.1f} s")
    from ..experiments.summary import format_execution

    if format_execution(report.lockstep, report.sequential):
        print(format_execution(report.lockstep, report.sequential))
    if report.n_stale:
        print(f"note: {report.n_stale} stored runs of experiment {config.name!r} come from "
              "another seed, --seeds or cell definition; they are not part of this run and "
              "are left out of the summary")
    _print_failed(report)
    print(format_summary(summarise(runs)))
    if plot:
        from ..experiments.plots import plot_store
        for path in plot_store(runs, args.out):
            print(f"wrote {path}")
    return 1 if report.failed else 0


def _override_config(config: "ExperimentConfig", args: argparse.Namespace
                     ) -> tuple["ExperimentConfig", list[str]]:
    """The config with the problem flags given on the command line applied to it.

    Returns the re-validated config and one line per override (``key = new (config: old)``).
    """
    from ..experiments.config import parse_config

    data = config.to_dict()
    lines = _apply_flags(data, args)
    if not lines:
        return config, []
    return parse_config(data, f"glmbandits run {args.config} (with command-line overrides)"), lines


def _apply_flags(data: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """Write the problem flags given (not None) into the config mapping ``data`` (see
    ``_PROBLEM_FLAGS``); return one line per flag (``key = new (config: old)``)."""
    lines = []
    for name, (_, key) in _PROBLEM_FLAGS.items():
        value = getattr(args, name)
        if value is None:
            continue
        if key == "policies":
            wanted = list(dict.fromkeys(n.strip().lower() for n in value.split(",")
                                        if n.strip()))
            old = [p["name"] for p in data["policies"]]
            data["policies"] = [p for n in wanted for p in data["policies"] if p["name"] == n] \
                + [{"name": n} for n in wanted if n not in old]
            lines.append(f"policies = {', '.join(wanted)} (config: {', '.join(old)})")
            continue
        table, _, field = key.rpartition(".")
        target = data[table] if table else data
        old_text = repr(target[field]) if field in target else "default"
        target[field] = value
        lines.append(f"{key} = {value!r} (config: {old_text})")
    return lines
