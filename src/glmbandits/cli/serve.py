"""``glmbandits serve`` (the decision service), ``glmbandits export`` (its log as Parquet) and
``glmbandits recover`` (a log that no longer replays, rebuilt from the events it can trust)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import require_extra

__all__ = ["add_serve_arguments", "run_serve", "add_export_arguments", "run_export",
           "add_recover_arguments", "run_recover"]


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", default=None, metavar="CONFIG",
                        help="the service's TOML config (see --example-config)")
    parser.add_argument("--host", default=None,
                        help="address to listen on (default: the config's, else 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None,
                        help="port to listen on (default: the config's, else 8000)")
    parser.add_argument("--db", default=None, metavar="URL",
                        help="event log: sqlite:///relative.db, sqlite:////absolute.db or "
                             "postgresql://user@host/database (default: the config's, else "
                             "CONFIG's name with .db next to it)")
    parser.add_argument("--role", default="all", choices=["all", "api", "learner"],
                        help="all (default): one process decides and learns; api: answer "
                             "decide/reward from the latest published model (any number of "
                             "processes); learner: the one process that learns from the log "
                             "and publishes models (no HTTP). api and learner need "
                             "--db postgresql://...")
    parser.add_argument("--example-config", action="store_true",
                        help="print a complete, commented config (it holds no API key: give "
                             "yours in GLMBANDITS_API_KEYS or [auth]), and exit")
    parser.add_argument("--log-level", default="info",
                        choices=["critical", "error", "warning", "info", "debug"],
                        help="server log level (default: info)")
    parser.add_argument("--access-log", action="store_true",
                        help="log every request (method, path, status; never headers)")
    parser.add_argument("--log-format", default=None, choices=["text", "json"],
                        help="json: one JSON object a line (timestamp, level, logger, "
                             "message, and the request's fields); default: the config's "
                             "[service] log_format (GLMBANDITS_SERVICE_LOG_FORMAT), else text")


def run_serve(args: argparse.Namespace) -> int:
    from ..service.config import ConfigError, example_config, load_config

    if args.example_config:
        print(example_config(), end="")
        return 0
    if args.config is None:
        print("error: glmbandits serve needs a CONFIG (write one with "
              "'glmbandits serve --example-config > service.toml')", file=sys.stderr)
        return 2
    if not require_extra("serve", "serve", ("starlette", "uvicorn", "msgspec", "pyarrow",
                                            "httptools"), purpose="the HTTP service"):
        return 2
    if args.port is not None and not 0 <= args.port <= 65535:
        print(f"error: --port must be 0-65535, got {args.port}", file=sys.stderr)
        return 2
    try:
        config = load_config(args.config)
        from ..service.store import parse_db_url

        scheme, _ = parse_db_url(args.db if args.db is not None else config.db)
    except (ConfigError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.role != "all" and scheme != "postgresql":
        print(f"error: --role {args.role} needs a PostgreSQL event log (--db "
              f"postgresql://user@host/database), got a {scheme} one; with SQLite use "
              "--role all", file=sys.stderr)
        return 2
    if args.role != "learner":
        try:
            keys = config.key_hashes()  # refuses the documentation's example keys
        except ConfigError as error:
            print(f"error: glmbandits serve: {error}", file=sys.stderr)
            return 2
        if not keys:
            print("error: glmbandits serve: at least one API key is needed: put its SHA-256 "
                  "in the config's [auth] api_key_sha256, or the key in GLMBANDITS_API_KEYS "
                  "(e.g. export GLMBANDITS_API_KEYS=$(python -c 'import secrets; "
                  "print(secrets.token_hex(16))'))", file=sys.stderr)
            return 2
    from ..service.errors import StoreMismatchError
    from ..service.log_lock import LogInUseError
    from ..service.replay import ReplayMismatchError
    from ..service.store import StoreUnavailableError

    try:
        if args.role == "learner":  # no HTTP: the learner imports no server
            from ..service.learner_role import run_learner

            if (args.log_format or config.log_format) == "json":
                from ..service.logging_json import use_json_logs

                use_json_logs(args.log_level)

            return run_learner(config, db=args.db, log_level=args.log_level)
        from ..service.server import run_server

        return run_server(config, host=args.host, port=args.port, db=args.db,
                          log_level=args.log_level, access_log=args.access_log,
                          role=args.role, log_format=args.log_format)
    except (LogInUseError, StoreUnavailableError) as error:
        print(f"error: glmbandits serve: {error}", file=sys.stderr)
        return 2
    except ReplayMismatchError as error:
        print(_does_not_replay(error, args.config, args.db or config.db), file=sys.stderr)
        return 2
    except (StoreMismatchError, ValueError, ImportError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _does_not_replay(error: Exception, config: str, db: str) -> str:
    """The one-paragraph answer to a log that does not replay: what, why, how to recover."""
    from ..data.postgres_locks import redact_url

    command = f"glmbandits recover {config} --db {redact_url(db)}"
    return (f"error: glmbandits serve: the event log {redact_url(db)} does not replay, so the "
            f"service did not start and nothing was changed: {error}. This is what a log "
            "written by two processes at once looks like (before the log lock, nothing "
            "stopped a second 'glmbandits serve' on the same log: both handed out actions "
            "and interleaved their events); a log written by another glmbandits, numpy or BLAS "
            "build, or a damaged one, looks the same (replay is exact only within one build: "
            "then go back to that build instead). To see which events can be trusted, run "
            f"'{command}': it replays the log from its first event and reports the longest "
            "prefix that replays exactly; with --apply it keeps that prefix, moves the events "
            "after it and the snapshots out of the log (into a file beside it; nothing is "
            "deleted) and writes a new snapshot, after which 'glmbandits serve' starts "
            "(docs/service.md, \"One service per log\").")


def add_recover_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", metavar="CONFIG", help="the service's TOML config")
    parser.add_argument("--db", default=None, metavar="URL",
                        help="the event log (default: the config's), as for glmbandits serve")
    parser.add_argument("--apply", action="store_true",
                        help="keep the trusted prefix: move the events after it and the "
                             "snapshots out of the log (nothing is deleted) and write a new "
                             "snapshot; without it, only report")


def run_recover(args: argparse.Namespace) -> int:
    from ..service.config import ConfigError, load_config

    if not require_extra("recover", "serve", purpose="the decision service's log"):
        return 2
    try:
        config = load_config(args.config)
        from ..service.store import parse_db_url

        db = args.db if args.db is not None else config.db
        scheme, location = parse_db_url(db)
    except (ConfigError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if scheme == "sqlite" and not Path(location).is_file():
        print(f"error: --db must name an existing event log, got {db!r}", file=sys.stderr)
        return 2
    from ..service.core import check_store_config
    from ..service.errors import StoreMismatchError
    from ..service.log_lock import LogInUseError
    from ..service.recover import apply_recovery, plan_recovery
    from ..service.store import open_store

    try:
        store = open_store(db)
    except (ValueError, ImportError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        store.claim_topology("single", holder="recover")  # no service writes meanwhile
        check_store_config(config, store)
        plan = plan_recovery(config, store)
        if plan.needed and args.apply:
            apply_recovery(config, store, plan)
    except (LogInUseError, StoreMismatchError, ValueError) as error:
        print(f"error: glmbandits recover: {error}", file=sys.stderr)
        return 2
    finally:
        store.close()
    print(plan.summary())
    if not plan.needed:
        print("nothing to recover: the service starts from this log as it is")
    elif not args.apply:
        print("nothing was changed; run again with --apply to keep the trusted prefix (the "
              "rest is moved out of the log, not deleted)")
    return 0


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", required=True, metavar="URL",
                        help="the service's event log, e.g. sqlite:///service.db")
    parser.add_argument("output", metavar="OUT.parquet", help="the Parquet file to write")
    parser.add_argument("--events", action="store_true",
                        help="one row per event (every column of the log) instead of the "
                             "default: one row per decision with the reward the policy "
                             "learned from it, which 'glmbandits replay --log OUT.parquet' "
                             "and LoggedBanditData.from_parquet read")
    parser.add_argument("--after", type=int, default=0,
                        help="with --events: only events with a sequence number above this "
                             "(default: 0)")


def run_export(args: argparse.Namespace) -> int:
    from ..service.store import parse_db_url

    if not require_extra("export", "serve", ("pyarrow",), purpose="Parquet files"):
        return 2
    try:
        scheme, location = parse_db_url(args.db)
    except ValueError as error:
        print(f"error: --{error}", file=sys.stderr)
        return 2
    if scheme == "sqlite" and not Path(location).is_file():
        print(f"error: --db must name an existing event log, got {args.db!r}", file=sys.stderr)
        return 2
    from ..service.export import export_parquet

    if args.after and not args.events:
        print("error: --after needs --events (a decision joins rewards logged after it)",
              file=sys.stderr)
        return 2
    count = export_parquet(args.db, args.output, events=args.events, after=args.after)
    print(f"wrote {count} {'events' if args.events else 'decisions'} to {args.output}")
    return 0
