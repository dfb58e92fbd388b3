"""Structured logs (issue 26 item 5): with ``--log-format json`` (or ``[service] log_format``,
or GLMBANDITS_SERVICE_LOG_FORMAT) every line a real server writes, its own and uvicorn's
(access log included), is one JSON object with timestamp, level, logger and message; the
access lines carry the request's method, path and status."""

from __future__ import annotations

import json
import logging

import pytest

from glmbandits.service.logging_json import JsonFormatter
from servicekit import LEARNER_HOLDS, ServerProcess, environment, write_config


def _lines(process: ServerProcess) -> list[dict]:
    lines = [line for line in process.output().splitlines() if line.strip()]
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"not a JSON line: {line!r}\n{process.output()}") from None
    for entry in parsed:
        assert {"timestamp", "level", "logger", "message"} <= set(entry), entry
        assert entry["timestamp"].endswith("Z") and entry["level"] in (
            "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"), entry
    return parsed


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_every_line_is_json_with_the_request_fields(tmp_path, how):
    args, env = ("--access-log",), environment()
    if how == "flag":
        args += ("--log-format", "json")
    else:
        env["GLMBANDITS_SERVICE_LOG_FORMAT"] = "json"
    process = ServerProcess(write_config(tmp_path), f"sqlite:///{tmp_path / 'log.db'}",
                            args=args, env=env)
    try:
        decided = process.client.post("/v1/decide", json={
            "decision_id": "log-1", "contexts": [[0.1, 0.2, 0.3], [0.3, 0.2, 0.1]]})
        assert decided.status_code == 200, decided.text
        rewarded = process.client.post("/v1/reward", json={"decision_id": "log-1",
                                                             "reward": 1.0})
        assert rewarded.status_code == 200, rewarded.text
        assert process.client.get("/v1/nowhere").status_code == 404
    finally:
        assert process.terminate() == 0, process.output()
    lines = _lines(process)
    loggers = {entry["logger"] for entry in lines}
    assert {"glmbandits.service", "uvicorn.error", "uvicorn.access"} <= loggers, loggers
    access = [(entry["method"], entry["path"], entry["status"]) for entry in lines
              if entry["logger"] == "uvicorn.access"]
    assert access == [("POST", "/v1/decide", 200), ("POST", "/v1/reward", 200),
                      ("GET", "/v1/nowhere", 404)], access
    assert any("stopped cleanly" in entry["message"] for entry in lines)


def test_text_logs_stay_the_default(tmp_path):
    process = ServerProcess(write_config(tmp_path), f"sqlite:///{tmp_path / 'log.db'}")
    assert process.terminate() == 0, process.output()
    assert "INFO glmbandits serve" in process.output()
    with pytest.raises(json.JSONDecodeError):
        json.loads(process.output().splitlines()[0])


def test_the_formatter_adds_an_exception_and_the_fields_given():
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.getLogger("glmbandits.service").makeRecord(
            "glmbandits.service", logging.ERROR, __file__, 1, "failed", (), __import__(
                "sys").exc_info(), extra={"method": "POST", "path": "/v1/decide",
                                          "status": 500, "duration_ms": 1.5})
    line = json.loads(JsonFormatter().format(record))
    assert (line["method"], line["path"], line["status"], line["duration_ms"]) == (
        "POST", "/v1/decide", 500, 1.5)
    assert "ValueError: boom" in line["exception"]


def test_a_learner_logs_json_too(tmp_path, postgres_url):
    """--role learner serves no HTTP, yet its lines follow --log-format json as well."""
    process = ServerProcess(write_config(tmp_path), postgres_url, role="learner",
                            args=("--log-format", "json"))
    try:
        process.wait_for(LEARNER_HOLDS)
    finally:
        assert process.terminate() == 0, process.output()
    lines = _lines(process)
    assert any(LEARNER_HOLDS in entry["message"] for entry in lines), lines
    assert {entry["logger"] for entry in lines} == {"glmbandits.service"}
