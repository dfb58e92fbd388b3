"""The service's logs as JSON lines (``--log-format json``, ``[service] log_format``): one
JSON object a line, for the service's own lines and uvicorn's (its error and access logs,
through uvicorn's ``log_config``), with the standard library's :mod:`logging` only.

Every line has ``timestamp`` (ISO 8601, UTC, milliseconds), ``level``, ``logger`` and
``message``; a line about a request adds what it knows of ``method``, ``path``, ``status``,
``client``, ``http_version``, ``duration_ms`` and ``decision_id`` (uvicorn's access lines:
method, path with its query, status, client, HTTP version; a line logged with
``extra={"decision_id": ...}`` and the like: those); a line with an exception adds
``exception`` (the traceback as text).
"""

from __future__ import annotations

import json
import logging
import logging.config
import time
from typing import Any

__all__ = ["JsonFormatter", "json_log_config", "use_json_logs", "REQUEST_FIELDS"]

#: The request fields a line carries when its record has them (``extra=``).
REQUEST_FIELDS = ("method", "path", "status", "client", "http_version", "duration_ms",
                  "decision_id")


class JsonFormatter(logging.Formatter):
    """A :class:`logging.Formatter` writing one JSON object per record (see the module).

    Examples
    --------
    >>> record = logging.LogRecord("glmbandits.service", logging.INFO, __file__, 1,
    ...                            "decided %s", ("r1",), None)
    >>> record.created = 0.0
    >>> record.decision_id = "r1"
    >>> JsonFormatter().format(record)
    '{"timestamp": "1970-01-01T00:00:00.000Z", "level": "INFO", "logger": "glmbandits.service", "message": "decided r1", "decision_id": "r1"}'
    """

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.created * 1000) % 1000:03d}Z",
            "level": record.levelname, "logger": record.name,
            "message": record.getMessage()}
        if record.name == "uvicorn.access" and isinstance(record.args, tuple) \
                and len(record.args) == 5:
            # uvicorn's access line: (client, method, path with query, HTTP version, status)
            client, method, path, version, status = record.args
            line.update(client=client, method=method, path=path, http_version=version,
                        status=status)
        for name in REQUEST_FIELDS:
            if name in record.__dict__:
                line[name] = record.__dict__[name]
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def json_log_config(level: str = "info") -> dict[str, Any]:
    """A :func:`logging.config.dictConfig` config (uvicorn's ``log_config``) that writes every
    line, the service's and uvicorn's, as JSON to standard error at ``level``.

    Examples
    --------
    >>> config = json_log_config("warning")
    >>> sorted(config["loggers"]), config["root"]["level"]
    (['uvicorn', 'uvicorn.access', 'uvicorn.error'], 'WARNING')
    """
    level = level.upper()
    return {
        "version": 1, "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json",
                                "stream": "ext://sys.stderr"}},
        "root": {"handlers": ["stderr"], "level": level},
        "loggers": {name: {"handlers": [], "level": level, "propagate": True}
                    for name in ("uvicorn", "uvicorn.error", "uvicorn.access")},
    }


def use_json_logs(level: str = "info") -> dict[str, Any]:
    """Log as JSON from now on (:func:`json_log_config`, warnings included); returns the
    config, for uvicorn's ``log_config``. A later ``logging.basicConfig`` (the learner's,
    the server's text default) changes nothing, as the root logger has its handler."""
    config = json_log_config(level)
    logging.config.dictConfig(config)
    logging.captureWarnings(True)
    return config
