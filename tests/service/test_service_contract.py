"""Contract tests of every endpoint and error path, against a real server on 127.0.0.1."""

from __future__ import annotations

import json
import time

import httpx
import numpy as np
import pytest

from servicekit import KEY, unit_rows

pytestmark = pytest.mark.slow

ROWS = unit_rows(np.random.default_rng(0), 4, 3).tolist()


def last_seq(server) -> int:
    return server.client.get("/v1/model").json()["last_seq"]


def test_health_and_openapi_need_no_key(server):
    bare = httpx.Client(base_url=server.url, timeout=60)
    assert bare.get("/v1/health").json() == {"status": "ok"}
    schema = bare.get("/v1/openapi.json").json()
    assert schema["openapi"].startswith("3.1")
    assert set(schema["paths"]) == {"/v1/decide", "/v1/reward", "/v1/health", "/v1/ready",
                                    "/v1/model",
                                    "/v1/events", "/v1/evaluation", "/metrics",
                                    "/v1/openapi.json"}
    page = bare.get("/")  # the dashboard: static files, no key, no data
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert bare.get("/dashboard.js").status_code == 200
    assert bare.get("/no-such-file.js").status_code == 404
    bare.close()


@pytest.mark.parametrize("method,path", [("POST", "/v1/decide"), ("POST", "/v1/reward"),
                                         ("GET", "/v1/model"), ("GET", "/v1/events"),
                                         ("GET", "/v1/evaluation"), ("GET", "/metrics")])
@pytest.mark.parametrize("authorization", [None, "Bearer wrong-key", f"Basic {KEY}",
                                           "Bearer", f"Bearer {KEY}x"])
def test_every_other_endpoint_needs_a_valid_key(server, method, path, authorization):
    headers = {} if authorization is None else {"Authorization": authorization}
    body = {"decision_id": "auth", "contexts": ROWS} if path == "/v1/decide" else None
    before = last_seq(server)
    response = httpx.request(method, server.url + path, headers=headers, json=body, timeout=60)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert response.headers["www-authenticate"] == "Bearer"
    assert last_seq(server) == before
    assert KEY not in server.output()


def test_decide_then_reward_then_duplicate(server):
    client = server.client
    answer = client.post("/v1/decide", json={"decision_id": "c1", "contexts": ROWS})
    assert answer.status_code == 200
    body = answer.json()
    assert set(body) == {"decision_id", "action", "probabilities", "propensity",
                         "model_version"}
    assert body["decision_id"] == "c1" and 0 <= body["action"] < 4
    assert np.isclose(sum(body["probabilities"]), 1.0)
    assert body["propensity"] == body["probabilities"][body["action"]]
    again = client.post("/v1/decide", json={"decision_id": "c1", "contexts": ROWS})
    assert again.json() == body  # a retry gets the same answer
    other = client.post("/v1/decide", json={"decision_id": "c1", "contexts": ROWS[:2]})
    assert other.status_code == 409 and other.json()["field"] == "decision_id"
    version = body["model_version"]
    first = client.post("/v1/reward", json={"decision_id": "c1", "reward": 1})
    assert first.json() == {"decision_id": "c1", "status": "learned",
                            "model_version": version + 1}
    repeat = client.post("/v1/reward", json={"decision_id": "c1", "reward": 0})
    assert repeat.status_code == 200 and repeat.json()["status"] == "duplicate"
    assert repeat.json()["model_version"] == version + 1
    closed = client.post("/v1/decide", json={"decision_id": "c1", "contexts": ROWS})
    assert closed.status_code == 409


def test_decide_without_an_id_and_with_exclusions(server):
    answer = server.client.post("/v1/decide", json={"contexts": ROWS, "excluded": [0, 2]})
    body = answer.json()
    assert len(body["decision_id"]) == 36  # a UUID4
    assert body["action"] in (1, 3)
    assert body["probabilities"][0] == body["probabilities"][2] == 0.0


def test_reward_for_an_unknown_id_is_404_and_writes_nothing(server):
    before = last_seq(server)
    response = server.client.post("/v1/reward", json={"decision_id": "never", "reward": 1.0})
    assert response.status_code == 404
    assert "'never'" in response.json()["detail"]
    assert last_seq(server) == before


def test_a_late_reward_is_acknowledged_logged_and_not_learned(server):
    client = server.client
    client.post("/v1/decide", json={"decision_id": "late1", "contexts": ROWS})
    version = client.get("/v1/model").json()["model_version"]
    time.sleep(2.5)  # past reward_wait = 2 s
    response = client.post("/v1/reward", json={"decision_id": "late1", "reward": 1.0})
    assert response.status_code == 200 and response.json()["status"] == "late"
    model = client.get("/v1/model").json()
    assert model["model_version"] == version
    assert model["counts"]["rewards_late"] >= 1
    lines = client.get("/v1/events", params={"after": 0}).text.splitlines()
    rewards = [json.loads(line) for line in lines if '"late1"' in line]
    assert [e["kind"] for e in rewards][-1] == "reward" and rewards[-1]["status"] == "late"


MALFORMED = [
    ("NaN", b'{"contexts": [[NaN, 0, 0]]}', "contexts[0][0]"),
    ("Infinity", b'{"contexts": [[0, Infinity, 0]]}', "contexts[0][1]"),
    ("-Infinity", b'{"contexts": [[0, 0, -Infinity]]}', "contexts[0][2]"),
    ("overflow", b'{"contexts": [[0, 0, 1e999]]}', "contexts[0][2]"),
    ("string number", b'{"contexts": [["0.1", 0, 0]]}', "contexts[0][0]"),
    ("wrong dimension", b'{"contexts": [[0, 0]]}', "contexts[0]"),
    ("three levels", b'{"contexts": [[[0, 0, 0]]]}', "contexts[0][0]"),
    ("flat", b'{"contexts": [0, 0, 0]}', "contexts[0]"),
    ("no actions", b'{"contexts": []}', "contexts"),
    ("K above the limit", json.dumps({"contexts": [[0, 0, 0]] * 9}).encode(), "contexts"),
    ("excluded out of range", b'{"contexts": [[0, 0, 0]], "excluded": [1]}', "excluded[0]"),
    ("excluded negative", b'{"contexts": [[0, 0, 0], [0, 0, 0]], "excluded": [-1]}',
     "excluded[0]"),
    ("excluded all", b'{"contexts": [[0, 0, 0], [0, 0, 0]], "excluded": [0, 1]}', "excluded"),
    ("excluded string", b'{"contexts": [[0, 0, 0]], "excluded": ["0"]}', "excluded[0]"),
    ("unknown field", b'{"contexts": [[0, 0, 0]], "actions": 3}', "actions"),
    ("missing contexts", b'{"decision_id": "x"}', "contexts"),
    ("id too long", json.dumps({"decision_id": "x" * 257, "contexts": [[0, 0, 0]]}).encode(),
     "decision_id"),
    ("id a number", b'{"decision_id": 5, "contexts": [[0, 0, 0]]}', "decision_id"),
    ("lone surrogate", b'{"decision_id": "\\ud800", "contexts": [[0, 0, 0]]}', "body"),
    ("not JSON", b'{"contexts": [[0, 0, 0]', "body"),
    ("not an object", b'[1, 2]', "body"),
]


@pytest.mark.parametrize("name,body,field", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_decide_is_422_naming_the_field_and_writes_nothing(server, name, body,
                                                                       field):
    before = last_seq(server)
    response = server.client.post("/v1/decide", content=body,
                                  headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field, response.json()
    assert last_seq(server) == before


REWARDS = [
    ("NaN", b'{"decision_id": "c1", "reward": NaN}', "reward"),
    ("string", b'{"decision_id": "c1", "reward": "1"}', "reward"),
    ("outside the family", b'{"decision_id": "pending1", "reward": 3.5}', "reward"),
    ("missing id", b'{"reward": 1}', "decision_id"),
    ("unknown field", b'{"decision_id": "c1", "reward": 1, "weight": 2}', "weight"),
]


@pytest.mark.parametrize("name,body,field", REWARDS, ids=[m[0] for m in REWARDS])
def test_a_malformed_reward_is_422_naming_the_field_and_writes_nothing(server, name, body,
                                                                       field):
    server.client.post("/v1/decide", json={"decision_id": "pending1", "contexts": ROWS})
    before = server.client.get("/v1/model").json()
    response = server.client.post("/v1/reward", content=body,
                                  headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    after = server.client.get("/v1/model").json()
    assert (after["last_seq"], after["model_version"]) == (before["last_seq"],
                                                            before["model_version"])


def test_a_body_above_the_limit_is_413(server):
    before = last_seq(server)
    big = json.dumps({"contexts": [[0.123456789] * 3] * 4000}).encode()
    assert len(big) > 65536
    response = server.client.post("/v1/decide", content=big)
    assert response.status_code == 413
    def chunks():  # no Content-Length: the limit is counted while reading
        for start in range(0, len(big), 8192):
            yield big[start:start + 8192]
    streamed = server.client.post("/v1/decide", content=chunks())
    assert streamed.status_code == 413
    assert last_seq(server) == before


def test_model_reports_the_fixed_fields(server):
    model = server.client.get("/v1/model").json()
    for key in ("n_features", "max_actions", "model_version", "decisions", "rewards"):
        assert isinstance(model[key], int), key
    assert (model["n_features"], model["max_actions"], model["class"]) == (3, 8, "UCBGLM")
    assert model["model_version"] == model["counts"].get("rewards_learned", 0) + \
        model["counts"].get("expiries_default", 0)


def test_metrics_are_prometheus_text(server):
    server.client.post("/v1/decide", content=b"{}")
    text = server.client.get("/metrics").text
    assert "# TYPE glmbandits_decisions_total counter" in text
    assert 'glmbandits_rejected_requests_total{endpoint="decide",status="422"}' in text
    assert 'glmbandits_request_seconds_bucket{endpoint="decide",le="+Inf"}' in text
    assert "glmbandits_pending_decisions" in text


def test_events_stream_as_ndjson_after_a_sequence_number(server):
    lines = server.client.get("/v1/events").text.splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert {"decision", "reward"} <= {e["kind"] for e in events}
    tail = server.client.get("/v1/events", params={"after": 3, "limit": 2}).text.splitlines()
    assert [json.loads(line)["seq"] for line in tail] == [4, 5]
    bad = server.client.get("/v1/events", params={"after": "-1"})
    assert bad.status_code == 422 and bad.json()["field"] == "after"


def test_metrics_count_commits_and_the_requests_they_cover(server):
    """``glmbandits_commits_total`` and ``glmbandits_committed_requests_total`` (their ratio
    is how many requests share one fsync) move with every request that logs an event (reads
    do not: test_service_doors.py)."""
    def counts() -> tuple[int, int]:
        values = dict(line.split() for line in server.client.get("/metrics").text.splitlines()
                      if line.startswith(("glmbandits_commits_total ",
                                          "glmbandits_committed_requests_total ")))
        return (int(values["glmbandits_commits_total"]),
                int(values["glmbandits_committed_requests_total"]))

    commits, requests = counts()
    assert 0 <= commits <= requests
    server.client.post("/v1/decide", json={"contexts": ROWS})
    after_commits, after_requests = counts()
    assert after_commits >= commits + 1 and after_requests >= requests + 1
