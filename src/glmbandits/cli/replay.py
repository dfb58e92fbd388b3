"""``glmbandits replay``: evaluate policies offline on a logged dataset (thin wrapper)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import require_extra

__all__ = ["add_replay_arguments", "run_replay", "service_log_export_hint",
           "read_feature_schema"]

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
    parser.add_argument("--features", metavar="SCHEMA",
                        help="with --log FILE.parquet (a service's export with named "
                             "requests): featurise every logged request again with this "
                             "schema and evaluate its policies (feature evaluation offline): "
                             "a TOML file with a [features] table (the service config's "
                             "format; 'fit' values and a missing norm_bound are fitted on the "
                             "log) or a JSON file of FeatureSchema.declaration()")
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


def read_feature_schema(path: str) -> tuple[Any, float | None]:
    """The schema of ``--features FILE`` and the unit-ball factor it declares.

    A ``.toml`` file holds a ``[features]`` table in the service config's format, read by
    the config's own parser (every value declared, ``norm_bound`` given: the schema comes
    back fitted, the one a service with that table serves; its other tables are ignored,
    so a service's config works as it is). Any other file is JSON: a
    :meth:`~glmbandits.features.FeatureSchema.declaration`, optionally with
    ``"norm_bound"``; what it declares as fitted (``"fit"``) is fitted on the log. Refusals
    are ValueErrors that start with ``--features FILE``.
    """
    import json
    import tomllib

    from ..features import FeatureSchema

    where = f"--features {path}"
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except OSError as error:
        raise ValueError(f"{where}: cannot read the file: {error.strerror or error}") from None
    if path.lower().endswith(".toml"):
        from ..service.config import check_table_types, check_table_values
        from ..service.config_features import feature_schema

        try:
            data = tomllib.loads(text.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            raise ValueError(f"{where}: not a TOML file: {error}") from None
        if "features" not in data:
            raise ValueError(f"{where}: the file has no [features] table (the service "
                             f"config's format), got the tables {sorted(data)}")
        try:
            section = check_table_values(check_table_types(data, "features", path),
                                         "features", path)
            return feature_schema(section), None
        except ValueError as error:
            raise ValueError(f"{where}: {error} (a .toml file is read as a service's "
                             "[features] table, every value declared; to fit values on "
                             "the log, give a JSON declaration instead)") from None
    try:
        declaration = json.loads(text)
    except (UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{where}: not a JSON file (a .toml file is read as TOML): "
                         f"{error}") from None
    if not isinstance(declaration, dict):
        raise ValueError(f"{where}: the JSON must be an object (a FeatureSchema "
                         f"declaration), got {type(declaration).__name__}")
    norm_bound = declaration.pop("norm_bound", None)
    if norm_bound is not None and (isinstance(norm_bound, bool)
                                   or not isinstance(norm_bound, (int, float))):
        raise ValueError(f"{where}: norm_bound must be a number > 0, got {norm_bound!r}")
    try:
        schema = FeatureSchema.from_declaration(declaration)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: {error}") from None
    return schema, None if norm_bound is None else float(norm_bound)


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
    features = getattr(args, "features", None)
    if features is not None and (args.log is None or not args.log.lower().endswith(".parquet")):
        given = f"--log {args.log}" if args.log is not None else (
            f"--event-log {event_log}" if event_log is not None else f"--dataset {args.dataset}")
        print(f"error: --features featurises the named requests of a service's export: it "
              f"needs --log FILE.parquet (glmbandits export), got {given}", file=sys.stderr)
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
        elif features is not None:
            from ..evaluation.refeaturise import logged_from_requests

            schema, norm_bound = read_feature_schema(features)
            log = logged_from_requests(args.log, schema, norm_bound=norm_bound)
            counts = log.join_counts or {}
            print(f"glmbandits replay: export {args.log}: {counts.get('decisions', 0)} "
                  f"decisions, {log.n_rounds} with a reward, featurised again by the "
                  f"schema of {features}: fingerprint {schema.fingerprint_[:12]}, "
                  f"d={schema.n_features_out_}", flush=True)
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
