"""``glmbandits replay``: evaluate policies offline on a logged dataset (thin wrapper)."""

from __future__ import annotations

import argparse
import sys

from .common import require_extra

__all__ = ["add_replay_arguments", "run_replay", "service_log_export_hint"]

DEFAULT_REPLAY_ALGORITHMS = "ucb-glm,linucb,random"
#: ``--log`` files with these suffixes are read as event logs (``glmbandits.EventLog``).
EVENT_LOG_SUFFIXES = (".sqlite", ".sqlite3", ".db")

#: What each bundled dataset needs beyond the core: (extra, modules of it) pairs.
DATASET_EXTRAS: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "obd-random": [("obd", ("obp",)), ("data", ("pandas",))],
    "obd-bts": [("obd", ("obp",)), ("data", ("pandas",))],
    "iris": [("data", ("sklearn",))],
    "wine": [("data", ("sklearn",))],
    "breast-cancer": [("data", ("sklearn",))],
    "digits": [("data", ("sklearn",))],
    "modechoice": [("data", ("statsmodels",))],
    "synthetic": [],
}


def add_replay_arguments(parser: argparse.ArgumentParser) -> None:
    from ..evaluation.report import ESTIMATORS, LOGGED_DATASETS

    source = parser.add_mutually_exclusive_group()
    source.add_argument("--dataset", choices=list(LOGGED_DATASETS), default="obd-random",
                        help="bundled dataset (default: obd-random; obd-* need "
                             "'pip install --no-deps obp==0.4.1', the others the data extra)")
    source.add_argument("--log", metavar="FILE.npz",
                        help="a log saved by LoggedBanditData.save (columns contexts, n_actions, "
                             "action, reward, propensity); a .sqlite or .db file is read as "
                             "an event log, a .parquet file as an export of one "
                             "(glmbandits.data.export_parquet, or 'glmbandits export' of a "
                             "service's log)")
    source.add_argument("--event-log", metavar="FILE.sqlite",
                        help="an event log written by glmbandits.EventLog: decisions joined "
                             "with the rewards the policy learned (defaults included, dropped "
                             "and pending decisions left out)")
    parser.add_argument("--algorithms", default=DEFAULT_REPLAY_ALGORITHMS,
                        help=f"comma-separated registered policies "
                             f"(default: {DEFAULT_REPLAY_ALGORITHMS})")
    parser.add_argument("--estimators", default=",".join(ESTIMATORS),
                        help=f"comma-separated subset of {','.join(ESTIMATORS)} (default: all)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="rounds of the log to use (OBD: the first ones; full-information "
                             "datasets: length of the uniform log, default one pass)")
    parser.add_argument("--train-fraction", type=float, default=0.5,
                        help="share of the log that trains the policy before ips/snips/dr "
                             "evaluate it on the rest (default: 0.5)")
    parser.add_argument("--family", default="logistic",
                        help="reward family of the policies and of DR's reward model "
                             "(default: logistic)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="confidence level of the intervals (default: 0.95)")
    parser.add_argument("--seed", type=int, default=0, help="master seed (default: 0)")


#: The tables of a decision service's SQLite log (``glmbandits serve``), which is not an
#: :class:`~glmbandits.EventLog` file: ``glmbandits export`` turns it into one replay reads.
SERVICE_LOG_TABLES = frozenset({"events", "snapshots", "meta"})


def service_log_export_hint(path: str) -> str | None:
    """The commands that replay a decision service's log, if ``path`` is one; else None.

    The file is read as it is on disk (SQLite's ``immutable`` mode: no lock, no journal,
    nothing written), and only its table names are looked at.
    """
    import shlex
    import sqlite3
    from pathlib import Path

    file = Path(path)
    if not file.is_file():
        return None
    try:
        connection = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return None
    try:
        tables = {row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return None
    finally:
        connection.close()
    if not SERVICE_LOG_TABLES <= tables:
        return None
    out = f"{file.stem}.parquet"
    return (f"{path} is a decision service's log (glmbandits serve), not an EventLog file; "
            f"export it, then replay the export: glmbandits export --db "
            f"{shlex.quote('sqlite:///' + str(path))} {shlex.quote(out)} && "
            f"glmbandits replay --log {shlex.quote(out)}")


def run_replay(args: argparse.Namespace) -> int:
    from ..data import LoggedBanditData
    from ..evaluation.report import evaluate_policies, format_rows, load_logged_dataset
    from ..policies.registry import ProblemSpec, make_policy

    event_log = args.event_log
    if args.log is not None and args.log.lower().endswith(EVENT_LOG_SUFFIXES):
        event_log = args.log
    if args.log is None and event_log is None:
        for extra, modules in DATASET_EXTRAS.get(args.dataset, []):
            if not require_extra("replay", extra, modules,
                                 purpose=f"for --dataset {args.dataset}"):
                return 2
    if event_log is not None:
        hint = service_log_export_hint(event_log)
        if hint is not None:
            print(f"error: {hint}", file=sys.stderr)
            return 2
    algorithms = [name.strip().lower() for name in args.algorithms.split(",") if name.strip()]
    estimators = [name.strip().lower() for name in args.estimators.split(",") if name.strip()]
    try:
        if event_log is not None:
            log = LoggedBanditData.from_event_log(event_log)
            counts = log.join_counts or {}
            print(f"glmbandits replay: event log {event_log}: {counts.get('decisions', 0)} "
                  f"decisions, {log.n_rounds} with a reward ({counts.get('learned', 0)} learned, "
                  f"{counts.get('sum', 0)} summed, {counts.get('default', 0)} default); left "
                  f"out {counts.get('dropped', 0)} dropped and {counts.get('pending', 0)} "
                  f"pending", flush=True)
            if args.rounds is not None:
                log = log.subset(range(min(args.rounds, log.n_rounds)))
        elif args.log is not None and args.log.lower().endswith(".parquet"):
            log = LoggedBanditData.from_parquet(args.log)
            counts = log.join_counts or {}
            print(f"glmbandits replay: export {args.log}: {counts.get('decisions', 0)} "
                  f"decisions, {log.n_rounds} with a reward", flush=True)
            if args.rounds is not None:
                log = log.subset(range(min(args.rounds, log.n_rounds)))
        elif args.log is not None:
            log = LoggedBanditData.load(args.log)
            if args.rounds is not None:
                log = log.subset(range(min(args.rounds, log.n_rounds)))
        else:
            log = load_logged_dataset(args.dataset, rounds=args.rounds, seed=args.seed)
        if log.n_rounds < 2:  # the policies train on a first part and are evaluated on the rest
            print(f"error: the log has {log.n_rounds} round(s) with a reward; glmbandits replay "
                  "trains on the first part of the log and evaluates on the rest, so it needs "
                  "at least 2 (log more traffic first)", file=sys.stderr)
            return 2
        problem = ProblemSpec(log.n_features, int(log.n_actions.max()), args.family,
                              log.n_rounds)
        for name in algorithms:  # fail early on an unknown name
            make_policy(name, problem, seed=0)
        K = log.n_actions
        k_text = str(int(K[0])) if K.min() == K.max() else f"{int(K.min())}-{int(K.max())}"
        logging = "uniform" if log.is_uniform() else (
            "no propensities" if log.propensities is None else "non-uniform")
        print(f"glmbandits replay: {log.name}, T={log.n_rounds}, K={k_text}, d={log.n_features}, "
              f"mean logged reward {log.rewards.mean():.4f}, logging {logging}; "
              f"ips/snips/dr train on the first {args.train_fraction:g} of the rounds", flush=True)
        rows = evaluate_policies(lambda name, seed: make_policy(name, problem, seed=seed),
                                 algorithms, log, estimators=estimators,
                                 train_fraction=args.train_fraction, family=args.family,
                                 confidence=args.confidence, seed=args.seed)
    except (ValueError, TypeError, OSError, ImportError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(format_rows(rows, args.confidence))
    return 0
