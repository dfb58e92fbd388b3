"""Named features and the action catalogue in the service: ``PUT/GET/DELETE /v1/actions``,
``POST /v1/decide`` with ``context`` and ``actions`` or ``action_ids``, the request kept in
the log, the catalogue rebuilt by recovery, refusals naming the field (in process, over
ASGI)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import msgspec
import numpy as np
import pytest

from glmbandits.service.app import create_app
from glmbandits.service.config import load_config
from glmbandits.service.core import DecisionService
from glmbandits.service.errors import Conflict
from glmbandits.service.named_body import parse_named
from glmbandits.service.named_operations import (catalogue_operation, delete_action_operation,
                                                 put_action_operation)
from glmbandits.service.replay import rebuild_from_log
from glmbandits.service.schemas import AnyDecideRequest, DecideResponse, ModelResponse
from glmbandits.service.store import open_store
from servicekit import (HEADERS, KEY, NAMED_ARTICLES, NAMED_FEATURES, assert_same_state,
                        write_config, write_named_config)

FEATURES, ARTICLES = NAMED_FEATURES, NAMED_ARTICLES


class Http:
    """Requests to an ASGI app in process (httpx's ASGI transport), with the test key."""

    def __init__(self, app: Any, service: DecisionService, headers: dict | None = None) -> None:
        self.app, self.service = app, service
        self.headers = HEADERS if headers is None else headers

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1",
                                         headers=self.headers) as client:
                return await client.request(method, path, **kwargs)

        return asyncio.run(send())

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("PUT", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("DELETE", path, **kwargs)


def _config(folder: Path, decisions: str = "") -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    return load_config(write_named_config(folder, decisions=decisions))


def _service(folder: Path, decisions: str = "") -> DecisionService:
    config = _config(folder, decisions)
    clock = iter(range(1_000_000, 2_000_000))
    return DecisionService(config, open_store(f"sqlite:///{folder / 'log.db'}"),
                           clock=lambda: float(next(clock))).start()


@pytest.fixture
def http(tmp_path: Path):
    service = _service(tmp_path)
    app = create_app(service.config, service, environ={"GLMBANDITS_API_KEYS": KEY})
    yield Http(app, service)
    if service.running:
        service.stop(snapshot=False)


def _put_all(client: Http) -> None:
    for action_id, features in ARTICLES.items():
        answer = client.put(f"/v1/actions/{action_id}", json={"features": features})
        assert answer.status_code == 201, answer.text
        assert answer.json() == {"id": action_id, "features": features, "status": "created"}


def test_the_catalogue_routes(http: Http) -> None:
    _put_all(http)
    again = http.put("/v1/actions/a1", json={"features": ARTICLES["a1"]})
    assert again.status_code == 200 and again.json()["status"] == "unchanged"
    changed = http.put("/v1/actions/a1", json={"features": {"topic": "tech", "fresh": True}})
    assert changed.status_code == 200 and changed.json()["status"] == "updated"
    assert http.get("/v1/actions/a1").json() == {"id": "a1",
                                                 "features": {"topic": "tech", "fresh": True}}
    assert http.delete("/v1/actions/a2").json() == {"id": "a2", "status": "deleted"}
    assert http.delete("/v1/actions/a2").json() == {"id": "a2", "status": "already deleted"}
    listed = http.get("/v1/actions").json()
    assert [a["id"] for a in listed["actions"]] == ["a1", "a3", "a4"]
    assert listed["retired"] == ["a2"]
    odd = "news/2026 café"  # any id of the decision-id rule, "/" included
    assert http.put(f"/v1/actions/{odd.replace('/', '%2F')}",
                    json={"features": ARTICLES["a3"]}).status_code == 201
    assert odd in [a["id"] for a in http.get("/v1/actions").json()["actions"]]
    info = http.get("/v1/model").json()
    msgspec.convert(info, ModelResponse)
    assert info["catalogue"] == {"actions": 4, "retired": 1}
    assert info["n_features"] == len(info["feature_names"]) and "intercept" in \
        info["feature_names"]


@pytest.mark.parametrize("method, path, body, status, field", [
    ("PUT", "/v1/actions/a2", {"features": ARTICLES["a2"]}, 409, "action_id"),  # retired
    ("PUT", "/v1/actions/b1", {"features": {"topic": "news"}}, 422, "features.fresh"),
    ("PUT", "/v1/actions/b1", {"features": {"topic": 1.5, "fresh": True}}, 422, "features.topic"),
    ("PUT", "/v1/actions/b1", {"features": {"topic": "news", "fresh": True, "x": 1}}, 422,
     "features.x"),
    ("PUT", "/v1/actions/b1", {"feature": {}}, 422, "feature"),
    ("PUT", "/v1/actions/b%00", {"features": ARTICLES["a1"]}, 422, "action_id"),
    ("GET", "/v1/actions/nope", None, 404, "action_id"),
    ("GET", "/v1/actions/a2", None, 404, "action_id"),
    ("DELETE", "/v1/actions/nope", None, 404, "action_id"),
])
def test_catalogue_refusals_name_the_field_and_change_nothing(http: Http, method, path,
                                                              body, status, field) -> None:
    _put_all(http)
    http.delete("/v1/actions/a2")
    before = (http.get("/v1/actions").json(), http.service.store.last_seq())
    answer = http.request(method, path, json=body)
    assert answer.status_code == status, answer.text
    assert answer.json()["field"] == field, answer.json()
    assert (http.get("/v1/actions").json(), http.service.store.last_seq()) == before


def test_named_decides_by_id_and_inline_build_the_same_rows(http: Http) -> None:
    _put_all(http)
    context = {"country": "DE", "age": 34}
    by_id = http.post("/v1/decide", json={"decision_id": "r1", "context": context,
                                          "action_ids": ["a3", "a1", "a2"],
                                          "excluded_ids": ["a2"]})
    assert by_id.status_code == 200, by_id.text
    answer = by_id.json()
    msgspec.convert(answer, DecideResponse)
    assert answer["action_id"] == ["a3", "a1", "a2"][answer["action"]] != "a2"
    assert set(answer["probabilities_by_id"]) == {"a1", "a2", "a3"}
    assert answer["probabilities_by_id"]["a2"] == 0.0
    assert answer["propensity"] == answer["probabilities_by_id"][answer["action_id"]]
    inline = http.post("/v1/decide", json={
        "decision_id": "r2", "context": context, "explain": True,
        "actions": [{"id": i, "features": ARTICLES[i]} for i in ("a3", "a1", "a2")],
        "excluded_ids": ["a2"]}).json()
    events = [e for e in http.service.store.events() if e.kind == "decision"]
    first, second = events
    np.testing.assert_array_equal(first.contexts, second.contexts)  # same rows either way
    assert first.excluded == second.excluded == (2,)
    assert json.loads(first.request) == {"context": context, "action_ids": ["a3", "a1", "a2"],
                                         "excluded_ids": ["a2"]}
    assert json.loads(second.request)["actions"][0] == {"id": "a3", "features": ARTICLES["a3"]}
    explanation = inline["explanation"]
    assert explanation["chosen"]["action_id"] == inline["action_id"]
    runner_up = explanation["runner_up"]
    assert runner_up is None or runner_up["action_id"] == ["a3", "a1", "a2"][
        runner_up["action"]]
    latest = http.get("/v1/model").json()["explanation"]
    assert latest["explanation"]["chosen"]["action_id"] == inline["action_id"]
    names = {c["name"] for c in explanation["chosen"]["contributions"]}
    assert names <= {"country", "age", "topic", "fresh", "context*action",
                     "country*topic", "country*fresh", "age*topic", "age*fresh"}
    assert http.post("/v1/reward", json={"decision_id": "r1", "reward": 1.0}).json()[
        "status"] == "learned"
    # a dense body still works on a service with a schema
    d = http.service.config.policy.n_features
    dense = http.post("/v1/decide", json={"decision_id": "r3",
                                          "contexts": (np.eye(2, d) * 0.5).tolist()})
    assert dense.status_code == 200 and "action_id" not in dense.json()


@pytest.mark.parametrize("body, field", [
    ({"context": {"country": "DE", "age": 3}, "action_ids": ["a1", "zz"]}, "action_ids[1]"),
    ({"context": {"country": "DE", "age": 3}, "action_ids": ["a1", "a2"]}, "action_ids[1]"),
    ({"context": {"country": "DE", "age": "3"}, "action_ids": ["a1"]}, "context.age"),
    ({"context": {"country": "DE", "age": 3, "x": 1}, "action_ids": ["a1"]}, "context.x"),
    ({"context": {"country": "DE"}, "action_ids": ["a1"]}, "context.age"),
    ({"context": {"country": "DE", "age": 3},
      "actions": [{"id": "n1", "features": {"topic": "news", "fresh": 3}}]},
     "actions[0].features.fresh"),
    ({"context": {"country": "DE", "age": 3}, "action_ids": ["a1", "a1"]}, "action_ids[1]"),
    ({"context": {"country": "DE", "age": 3}, "action_ids": []}, "action_ids"),
    ({"context": {"country": "DE", "age": 3}, "action_ids": ["a1"],
      "actions": [{"id": "a1", "features": {}}]}, "actions"),
    ({"context": {"country": "DE", "age": 3}, "action_ids": ["a1"], "excluded_ids": ["a3"]},
     "excluded_ids[0]"),
    ({"context": {"country": "DE", "age": 3}, "action_ids": ["a1"], "excluded_ids": ["a1"]},
     "excluded_ids"),
    ({"context": {"country": "DE", "age": 3}, "action_ids": ["a1"], "contexts": [[0.0]]},
     "context"),
    ({"context": {"country": "DE", "age": 3}, "action_ids": ["a\x01"]}, "action_ids[0]"),
    ({"context": {"country": "DE", "age": 3}, "action_ids": ["a1"] * 9}, "action_ids"),
])
def test_named_decide_refusals_name_the_field_and_log_nothing(http: Http, body,
                                                              field) -> None:
    _put_all(http)
    http.delete("/v1/actions/a2")
    before = http.service.store.last_seq()
    answer = http.post("/v1/decide", json={"decision_id": "bad", **body})
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field, answer.json()
    assert http.service.store.last_seq() == before


def test_a_retry_repeats_and_a_changed_catalogue_is_a_conflict(http: Http) -> None:
    _put_all(http)
    body = {"decision_id": "r1", "context": {"country": "FR", "age": 50},
            "action_ids": ["a1", "a3"]}
    first = http.post("/v1/decide", json=body).json()
    assert http.post("/v1/decide", json=body).json() == first
    http.put("/v1/actions/a3", json={"features": {"topic": "sport", "fresh": False}})
    assert http.post("/v1/decide", json=body).status_code == 409  # other rows, same id


def test_a_service_without_a_schema_has_no_catalogue(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path))
    service = DecisionService(config, open_store(f"sqlite:///{tmp_path / 'log.db'}")).start()
    client = Http(create_app(config, service, environ={"GLMBANDITS_API_KEYS": KEY}), service)
    try:
        answer = client.put("/v1/actions/a1", json={"features": {}})
        assert answer.status_code == 404 and answer.json()["field"] == "features"
        named = client.post("/v1/decide", json={"context": {}, "action_ids": ["a1"]})
        assert named.status_code == 422 and named.json()["field"] == "context"
        assert "no feature schema" in named.json()["detail"]
        assert "/v1/actions" not in client.get("/v1/openapi.json").json()["paths"]
    finally:
        service.stop(snapshot=False)


def test_restart_and_the_offline_rebuild_replay_the_catalogue(tmp_path: Path) -> None:
    service = _service(tmp_path)
    rng = np.random.default_rng(3)

    def decide(t: int) -> dict:
        ids = [i for i in ARTICLES if i in service.catalogue]
        request = msgspec.convert({"decision_id": f"d{t}", "action_ids": ids, "context": {
            "country": ["DE", "FR", "US"][t % 3], "age": int(rng.integers(18, 80))}},
            AnyDecideRequest)
        return service.decide_named(parse_named(request, 8))

    for action_id, features in ARTICLES.items():
        service.submit(put_action_operation(service, action_id, features)).result()
    for t in range(40):
        answer = decide(t)
        service.reward(answer["decision_id"], float(answer["action_id"] in ("a1", "a3")))
        if t == 20:
            service.submit(delete_action_operation(service, "a4")).result()
            service.submit(put_action_operation(service, "a1", ARTICLES["a2"])).result()
    items, retired = service.catalogue.items(), service.catalogue.retired
    policy = service.policy
    service.stop(snapshot=True)
    again = _service(tmp_path)  # snapshot + tail: the catalogue from its events
    try:
        assert again.catalogue.items() == items and again.catalogue.retired == retired == ["a4"]
        assert_same_state(again.policy, policy)
        rebuilt = rebuild_from_log(again.config, again.store)
        assert_same_state(rebuilt, policy)
        assert rebuilt.feature_schema_.fingerprint_ == again.config.features.fingerprint_
        totals = again.totals()
        assert totals["catalogue_put"] == 5 and totals["catalogue_delete"] == 1
    finally:
        again.stop(snapshot=False)


def test_shadow_mode_takes_the_default_action_by_id(tmp_path: Path) -> None:
    service = _service(tmp_path, decisions='mode = "shadow"')
    client = Http(create_app(service.config, service, environ={"GLMBANDITS_API_KEYS": KEY}),
                  service)
    try:
        _put_all(client)
        body = {"decision_id": "s1", "context": {"country": "US", "age": 20},
                "action_ids": ["a1", "a3", "a4"]}
        missing = client.post("/v1/decide", json=body)
        assert missing.status_code == 422 and missing.json()["field"] == "default_action_id"
        assert "default_action_id is required in shadow mode" in missing.json()["detail"]
        answer = client.post("/v1/decide", json={**body, "default_action_id": "a3"}).json()
        assert answer["action_id"] == "a3" and answer["action"] == 1
        assert answer["propensity"] is None
        assert answer["policy_action_id"] == ["a1", "a3", "a4"][answer["policy_action"]]
        wrong = client.post("/v1/decide", json={**body, "decision_id": "s2",
                                                "default_action_id": "a2"})
        assert wrong.status_code == 422 and wrong.json()["field"] == "default_action_id"
    finally:
        service.stop(snapshot=False)


def test_api_processes_sharing_a_log_see_each_others_catalogue(tmp_path: Path,
                                                               postgres_url: str) -> None:
    from glmbandits.service.api_role import api_service
    from glmbandits.service.postgres_store import PostgresStore

    config = _config(tmp_path)
    first = api_service(config, PostgresStore(postgres_url)).start()
    second = api_service(config, PostgresStore(postgres_url)).start()
    try:
        first.submit(put_action_operation(first, "a1", ARTICLES["a1"])).result()
        first.submit(put_action_operation(first, "a3", ARTICLES["a3"])).result()
        request = msgspec.convert({"decision_id": "p1", "action_ids": ["a1", "a3"],
                                   "context": {"country": "DE", "age": 30}}, AnyDecideRequest)
        answer = second.decide_named(parse_named(request, 8))  # the other process's PUTs
        assert answer["action_id"] in ("a1", "a3")
        for process in (second, first):  # a retry, in either process: the logged answer
            assert process.decide_named(parse_named(request, 8)) == answer
        second.submit(delete_action_operation(second, "a3")).result()
        with pytest.raises(Conflict, match="never reused"):
            first.submit(put_action_operation(first, "a3", ARTICLES["a3"])).result()
        listed = first.submit(catalogue_operation(first)).result()
        assert [a["id"] for a in listed["actions"]] == ["a1"] and listed["retired"] == ["a3"]
    finally:
        first.stop(snapshot=False)
        second.stop(snapshot=False)


def test_the_recovery_plan_keeps_a_log_with_catalogue_changes_whole(tmp_path: Path) -> None:
    from glmbandits.service.recover import plan_recovery

    service = _service(tmp_path)
    for action_id, features in ARTICLES.items():
        service.submit(put_action_operation(service, action_id, features)).result()
    for t in range(6):
        request = msgspec.convert({"decision_id": f"d{t}", "action_ids": ["a1", "a3"],
                                   "context": {"country": "US", "age": 40}}, AnyDecideRequest)
        service.decide_named(parse_named(request, 8))
        service.reward(f"d{t}", 1.0)
        service.submit(put_action_operation(service, f"n{t}", ARTICLES["a2"])).result()
    config, url = service.config, f"sqlite:///{tmp_path / 'log.db'}"
    service.stop(snapshot=True)
    store = open_store(url)
    try:
        plan = plan_recovery(config, store)
        assert plan.reason is None and plan.restores
        assert plan.kept == plan.events == store.last_seq() and plan.kept_seq == plan.last_seq
    finally:
        store.close()


def test_max_catalogue_bounds_the_live_actions(tmp_path: Path) -> None:
    service = _service(tmp_path, decisions="max_catalogue = 2")
    client = Http(create_app(service.config, service, environ={"GLMBANDITS_API_KEYS": KEY}),
                  service)
    try:
        for action_id in ("a1", "a2"):
            assert client.put(f"/v1/actions/{action_id}",
                              json={"features": ARTICLES[action_id]}).status_code == 201
        before = service.store.last_seq()
        full = client.put("/v1/actions/a3", json={"features": ARTICLES["a3"]})
        assert full.status_code == 409 and full.json()["field"] == "action_id"
        assert "max_catalogue" in full.json()["detail"] and service.store.last_seq() == before
        assert client.delete("/v1/actions/a1").status_code == 200
        assert client.put("/v1/actions/a3", json={"features": ARTICLES["a3"]}).status_code == 201
    finally:
        service.stop(snapshot=False)
