"""The plain-ASGI decide and reward routes (service/hot_routes.py), driven in-process.

The contract, npy and fuzz tests run them over HTTP against a real server; these
cover what those cannot reach: a route mounted under a ``root_path``, a body sent in
many ASGI messages, a client that disconnects mid-body, a bug in the core (500,
logged, the service goes on), another method (405), and that everything else still
reaches the Starlette app.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from glmbandits.service.app import create_app
from glmbandits.service.config import load_config
from glmbandits.service.core import DecisionService
from glmbandits.service.hot_routes import HotRoutes
from glmbandits.service.store import open_store
from servicekit import KEY, write_config

AUTH = (b"authorization", f"Bearer {KEY}".encode())


@pytest.fixture
def app(tmp_path: Path):
    config = load_config(write_config(tmp_path, n_features=3, max_actions=8))
    service = DecisionService(config, open_store(f"sqlite:///{tmp_path / 'log.db'}")).start()
    application = create_app(config, service, environ={"GLMBANDITS_API_KEYS": KEY})
    yield application
    if service.running:
        service.stop(snapshot=False)


def call(app: Any, method: str, path: str, chunks: list[bytes] | None = None,
         headers: list[tuple[bytes, bytes]] | None = None, query: bytes = b"",
         root_path: str = "", disconnect_after: int | None = None) -> tuple[int, dict, bytes]:
    """One ASGI request; returns (status, headers, body); status 0 if nothing was sent."""
    chunks = chunks if chunks is not None else [b""]
    messages = [{"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
                for i, chunk in enumerate(chunks)]
    if disconnect_after is not None:
        messages = messages[:disconnect_after] + [{"type": "http.disconnect"}]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": method, "scheme": "http", "path": root_path + path,
             "raw_path": (root_path + path).encode(), "query_string": query,
             "root_path": root_path, "server": ("127.0.0.1", 8000),
             "client": ("127.0.0.1", 1), "headers": headers if headers is not None else [AUTH]}
    sent: list[dict] = []

    async def receive() -> dict:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    if not sent:
        return 0, {}, b""
    head = {k.decode(): v.decode() for k, v in sent[0]["headers"]}
    return sent[0]["status"], head, b"".join(m.get("body", b"") for m in sent[1:])


def decide_body(rows: int = 3, decision_id: str = "r1") -> bytes:
    contexts = np.eye(rows, 3).tolist()
    return json.dumps({"decision_id": decision_id, "contexts": contexts}).encode()


def test_create_app_puts_the_hot_routes_in_front_of_starlette(app):
    assert isinstance(app, HotRoutes)
    assert app.state.service is app.service


def test_a_body_in_many_messages_is_joined(app):
    body = decide_body()
    chunks = [body[i:i + 7] for i in range(0, len(body), 7)]
    status, head, answer = call(app, "POST", "/v1/decide", chunks)
    assert status == 200 and head["content-type"] == "application/json"
    assert int(head["content-length"]) == len(answer)
    assert json.loads(answer)["decision_id"] == "r1"
    status, _, answer = call(app, "POST", "/v1/reward",
                             [b'{"decision_id": "r1",', b' "reward": 1}'])
    assert status == 200 and json.loads(answer)["status"] == "learned"


def test_a_streamed_body_past_the_limit_is_413_before_the_rest_is_read(app):
    chunk = b" " * 30_000  # max_body_bytes = 65536 in write_config
    status, _, answer = call(app, "POST", "/v1/decide", [chunk] * 3)
    assert status == 413 and json.loads(answer)["error"] == "body too large"
    assert app.service.totals().get("decisions", 0) == 0


def test_a_client_that_disconnects_mid_body_gets_nothing_and_nothing_is_logged(app):
    body = decide_body()
    status, _, _ = call(app, "POST", "/v1/decide", [body[:10], body[10:]], disconnect_after=1)
    assert status == 0
    assert app.service.totals().get("decisions", 0) == 0
    assert call(app, "POST", "/v1/decide", [body])[0] == 200  # the id is still free


def test_routes_under_a_root_path(app):
    status, _, answer = call(app, "POST", "/v1/decide", [decide_body()], root_path="/api")
    assert status == 200 and json.loads(answer)["decision_id"] == "r1"
    status, _, answer = call(app, "GET", "/v1/model", root_path="/api")
    assert status == 200 and json.loads(answer)["decisions"] == 1


@pytest.mark.parametrize("path", ["/v1/decide", "/v1/reward"])
def test_another_method_is_405_naming_post(app, path):
    status, head, answer = call(app, "GET", path)
    assert status == 405 and head["allow"] == "POST"
    assert json.loads(answer) == {"error": "method not allowed",
                                  "detail": f"GET {path}: Method Not Allowed", "field": None}


def test_refusal_order_401_then_415_then_413_then_422(app):
    big = b"x" * 70_000
    assert call(app, "POST", "/v1/decide", [big], headers=[(b"content-type", b"text/x")])[0] \
        == 401
    assert call(app, "POST", "/v1/decide", [big],
                headers=[AUTH, (b"content-type", b"text/x")])[0] == 415
    assert call(app, "POST", "/v1/decide", [big],
                headers=[AUTH, (b"content-length", b"70000")])[0] == 413
    status, head, answer = call(app, "POST", "/v1/decide", [b"{}"])
    assert status == 422 and json.loads(answer)["field"] == "contexts"
    status, head, _ = call(app, "POST", "/v1/reward", [b"{}"], headers=[])
    assert status == 401 and head["www-authenticate"] == "Bearer"


def test_an_npy_decide_reads_its_query(app):
    buffer = io.BytesIO()
    np.save(buffer, np.eye(4, 3))
    status, _, answer = call(app, "POST", "/v1/decide", [buffer.getvalue()],
                             headers=[AUTH, (b"content-type", b"application/x-npy")],
                             query=b"decision_id=n1&excluded=0,1")
    assert status == 200
    answer = json.loads(answer)
    assert answer["decision_id"] == "n1" and answer["probabilities"][:2] == [0.0, 0.0]


def test_a_bug_in_the_core_is_a_logged_500_and_the_service_goes_on(app, caplog):
    service = app.service

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    service.decide_async = broken
    with caplog.at_level(logging.ERROR, logger="glmbandits.service"):
        status, _, answer = call(app, "POST", "/v1/decide", [decide_body()])
    assert status == 500 and json.loads(answer)["error"] == "internal server error"
    assert "a bug" in caplog.text and KEY not in caplog.text
    del service.decide_async
    assert call(app, "POST", "/v1/decide", [decide_body()])[0] == 200
    metrics = call(app, "GET", "/metrics")[2].decode()
    assert 'glmbandits_rejected_requests_total{endpoint="decide",status="500"} 1' in metrics


def test_other_paths_reach_starlette(app):
    assert call(app, "GET", "/v1/health", headers=[])[0] == 200
    assert call(app, "GET", "/v1/nothing-here")[0] == 404
    status, head, _ = call(app, "GET", "/", headers=[])
    assert status == 200 and head["content-type"].startswith("text/html")
