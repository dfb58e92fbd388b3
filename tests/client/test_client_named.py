"""The client's named-feature decide and action catalogue against httpx.MockTransport (no
network, no sleeps): the bodies and paths it sends, the results it reads, its retries, and
what it refuses before sending anything."""

from __future__ import annotations

import asyncio
import json

import httpx
import numpy as np
import pytest

from glmbandits.client import (ActionResult, AsyncClient, Catalogue, Client, Conflict,
                               InvalidRequest, NotFound, RetryPolicy)


class FakeNamedService:
    """A fake named service: answers every request from ``answers`` ((method, path) ->
    (status, body), or an exception class raised once per entry in ``failures``), and
    records every request."""

    def __init__(self, answers: dict, failures: list | None = None) -> None:
        self.answers, self.failures, self.seen = answers, list(failures or []), []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.raw_path.decode()
        self.seen.append((request.method, path, request.content))
        if self.failures:
            failure = self.failures.pop(0)
            if isinstance(failure, int):
                return httpx.Response(failure, json={"error": "busy", "detail": "busy",
                                                     "field": None})
            raise failure("scripted failure", request=request)
        status, body = self.answers[(request.method, path)]
        if callable(body):
            body = body(json.loads(request.content) if request.content else None)
        return httpx.Response(status, json=body)


def _decision(body: dict) -> dict:
    ids = body.get("action_ids") or [action["id"] for action in body["actions"]]
    return {"decision_id": body["decision_id"], "action": 1,
            "probabilities": [0.25, 0.75][:len(ids)], "propensity": None,
            "model_version": 2, "policy_action": 0, "action_id": ids[1],
            "probabilities_by_id": dict(zip(ids, [0.25, 0.75])), "policy_action_id": ids[0]}


def _client(service: FakeNamedService, waits: list | None = None) -> Client:
    return Client("http://service", api_key="k", transport=httpx.MockTransport(service),
                  retry=RetryPolicy(max_retries=3, seed=0),
                  sleep=(waits if waits is not None else []).append)


def test_a_named_decide_sends_the_named_body_and_reads_the_ids() -> None:
    service = FakeNamedService({("POST", "/v1/decide"): (200, _decision)})
    with _client(service) as client:
        decision = client.decide(context={"country": "DE", "age": np.int64(34)},
                                 action_ids=["a-1", "a/2"], excluded_ids=["a-1"],
                                 default_action_id="a/2", explain=True, decision_id="n-1")
        inline = client.decide(context={"country": "FR"},
                               actions={"x": {"topic": "news", "length": np.float32(0.5)},
                                        "y": {"topic": "tech", "length": 1}})
        listed = client.decide(actions=[{"id": "x", "features": {"v": np.array([1.0, 2.0])}},
                                        {"id": "y", "features": {"v": (3, 4)}}])
    sent = [json.loads(content) for _, _, content in service.seen]
    assert sent[0] == {"decision_id": "n-1", "context": {"country": "DE", "age": 34},
                       "action_ids": ["a-1", "a/2"], "excluded_ids": ["a-1"],
                       "default_action_id": "a/2", "explain": True}
    assert sent[1]["actions"] == [{"id": "x", "features": {"topic": "news", "length": 0.5}},
                                  {"id": "y", "features": {"topic": "tech", "length": 1}}]
    assert len(sent[1]["decision_id"]) == 36 and "contexts" not in sent[1]
    assert sent[2]["context"] == {} and sent[2]["actions"][0]["features"] == {"v": [1.0, 2.0]}
    assert sent[2]["actions"][1]["features"] == {"v": [3, 4]}
    assert (decision.action, decision.action_id, decision.policy_action_id) == (1, "a/2", "a-1")
    assert decision.probabilities_by_id == {"a-1": 0.25, "a/2": 0.75}
    assert (inline.action_id, listed.action_id) == ("y", "y")


def test_a_dense_answer_has_no_ids() -> None:
    def dense(body: dict) -> dict:
        return {"decision_id": body["decision_id"], "action": 0, "probabilities": [1.0],
                "propensity": 1.0, "model_version": 1}

    service = FakeNamedService({("POST", "/v1/decide"): (200, dense)})
    with _client(service) as client:
        decision = client.decide(contexts=[[0.1, 0.2]])
    assert (decision.action_id, decision.probabilities_by_id, decision.policy_action_id) == \
        (None, None, None)


@pytest.mark.parametrize("arguments, error, match", [
    ({"contexts": [[0.1]], "context": {"a": 1}, "action_ids": ["x"]}, TypeError,
     "not both: got contexts= and context="),
    ({"contexts": [[0.1]], "action_ids": ["x"]}, TypeError, "got contexts= and action_ids="),
    ({"contexts": [[0.1]], "excluded_ids": ["x"]}, TypeError, "got contexts= and excluded_ids="),
    ({"action_ids": ["x"], "excluded": [0]}, TypeError, "got excluded= and action_ids="),
    ({"action_ids": ["x"], "default_action": 0}, TypeError,
     "got default_action= and action_ids="),
    ({}, TypeError, "pass contexts= .* got none of them"),
    ({"excluded": [0]}, TypeError, "pass contexts="),
    ({"context": {"a": 1}}, TypeError, "exactly one of the two, got neither"),
    ({"actions": {"x": {}}, "action_ids": ["x"]}, TypeError, "exactly one of the two, got both"),
    ({"action_ids": "x"}, TypeError, "action_ids must be a sequence of action ids"),
    ({"action_ids": ["x", 2]}, TypeError, r"action_ids\[1\] must be an action id \(a str\)"),
    ({"action_ids": ["x"], "excluded_ids": "x"}, TypeError, "excluded_ids must be a sequence"),
    ({"action_ids": ["x"], "default_action_id": 0}, TypeError,
     "default_action_id must be an action id"),
    ({"actions": [{"id": "x"}]}, ValueError,
     r"actions\[0\] must be a mapping with the keys 'id' and 'features', got \['id'\]"),
    ({"actions": [{"id": 1, "features": {}}]}, TypeError, r"actions\[0\].id must be"),
    ({"actions": {"x": [1.0]}}, TypeError, r"actions\[0\].features must be a mapping"),
    ({"actions": "x"}, TypeError, "actions must be a sequence of"),
    ({"context": {1: "a"}, "action_ids": ["x"]}, TypeError, "context must have str feature"),
    ({"context": [("a", 1)], "action_ids": ["x"]}, TypeError, "context must be a mapping"),
    ({"context": {"age": float("nan")}, "action_ids": ["x"]}, ValueError,
     "context.age must be a finite number"),
    ({"context": {"when": object()}, "action_ids": ["x"]}, TypeError,
     "decide: a request value must be a JSON value .* got object"),
])
def test_a_bad_decide_is_refused_before_anything_is_sent(arguments, error, match) -> None:
    service = FakeNamedService({})
    with _client(service) as client, pytest.raises(error, match=match):
        client.decide(**arguments)
    assert service.seen == []


CATALOGUE = {"actions": [{"id": "a-1", "features": {"topic": "news"}},
                         {"id": "a/2", "features": {"topic": "tech"}}], "retired": ["gone"]}


def _catalogue_service(*failures) -> FakeNamedService:
    put = lambda status: lambda body: {"id": "a/2", "features": body["features"],  # noqa: E731
                                       "status": status}
    return FakeNamedService({
        ("PUT", "/v1/actions/a%2F2"): (201, put("created")),
        ("PUT", "/v1/actions/a-1"): (200, lambda body: {"id": "a-1", **body,
                                                        "status": "unchanged"}),
        ("PUT", "/v1/actions/%2E%2E"): (200, lambda body: {"id": "..", **body,
                                                           "status": "updated"}),
        ("GET", "/v1/actions/a%2F2"): (200, {"id": "a/2", "features": {"topic": "tech"}}),
        ("GET", "/v1/actions"): (200, CATALOGUE),
        ("DELETE", "/v1/actions/a%2F2"): (200, {"id": "a/2", "status": "deleted"}),
        ("DELETE", "/v1/actions/news%2F2024%20%231%3F"): (200, {"id": "news/2024 #1?",
                                                                "status": "already deleted"}),
        ("PUT", "/v1/actions/gone"): (409, {"error": "conflict", "field": "action_id",
                                            "detail": "the action id 'gone' was retired"}),
        ("PUT", "/v1/actions/bad"): (422, {"error": "invalid request", "detail": "no",
                                           "field": "features.topic"}),
        ("GET", "/v1/actions/never"): (404, {"error": "not found", "detail": "no action",
                                             "field": "action_id"}),
    }, list(failures))


def test_the_catalogue_calls_their_routes_with_the_id_percent_encoded() -> None:
    service = _catalogue_service()
    with _client(service) as client:
        created = client.actions.put("a/2", {"topic": "tech", "length": np.int16(3)})
        unchanged = client.actions.put("a-1", {"topic": "news"})
        dots = client.actions.put("..", {})
        got = client.actions.get("a/2")
        catalogue = client.actions.list()
        deleted = client.actions.delete("a/2")
        again = client.actions.delete("news/2024 #1?")
    assert [(method, path) for method, path, _ in service.seen] == [
        ("PUT", "/v1/actions/a%2F2"), ("PUT", "/v1/actions/a-1"), ("PUT", "/v1/actions/%2E%2E"),
        ("GET", "/v1/actions/a%2F2"), ("GET", "/v1/actions"), ("DELETE", "/v1/actions/a%2F2"),
        ("DELETE", "/v1/actions/news%2F2024%20%231%3F")]
    assert json.loads(service.seen[0][2]) == {"features": {"topic": "tech", "length": 3}}
    assert created == ActionResult("a/2", {"topic": "tech", "length": 3}, "created")
    assert created.created and not unchanged.created and unchanged.status == "unchanged"
    assert dots.id == ".." and got == ActionResult("a/2", {"topic": "tech"})
    assert catalogue == Catalogue((ActionResult("a-1", {"topic": "news"}),
                                   ActionResult("a/2", {"topic": "tech"})), ("gone",))
    assert (deleted.status, deleted.features, again.status) == ("deleted", None,
                                                                 "already deleted")


def test_put_and_delete_retry_with_the_same_request() -> None:
    service, waits = _catalogue_service(httpx.ConnectError, 503), []
    with _client(service, waits) as client:
        assert client.actions.put("a/2", {"topic": "tech"}).created
        service.failures = [httpx.ReadError]
        assert client.actions.delete("a/2").status == "deleted"
    puts = [seen for seen in service.seen if seen[0] == "PUT"]
    assert len(puts) == 3 and len(set(puts)) == 1 and len(waits) == 3
    assert [seen[:2] for seen in service.seen[3:]] == [("DELETE", "/v1/actions/a%2F2")] * 2


def test_catalogue_refusals_are_typed_and_bad_input_is_refused_first() -> None:
    service = _catalogue_service()
    with _client(service) as client:
        with pytest.raises(Conflict, match="was retired") as conflict:
            client.actions.put("gone", {"topic": "news"})
        with pytest.raises(InvalidRequest) as invalid:
            client.actions.put("bad", {"topic": 3})
        with pytest.raises(NotFound, match="no action") as missing:
            client.actions.get("never")
        sent = len(service.seen)
        with pytest.raises(TypeError, match="action_id must be a str, got int"):
            client.actions.put(3, {"topic": "news"})  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="action_id must be a non-empty str"):
            client.actions.delete("")
        with pytest.raises(TypeError, match="features must be a mapping"):
            client.actions.put("a-1", ["news"])  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="features.length must be a finite number"):
            client.actions.put("a-1", {"length": float("inf")})
    assert (conflict.value.status, conflict.value.field) == (409, "action_id")
    assert (invalid.value.status, invalid.value.field) == (422, "features.topic")
    assert missing.value.status == 404 and len(service.seen) == sent == 3


def test_the_async_client_has_the_same_catalogue_and_named_decide() -> None:
    service = _catalogue_service(httpx.ConnectError)
    service.answers[("POST", "/v1/decide")] = (200, _decision)
    waits: list = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def main() -> tuple:
        async with AsyncClient("http://service", transport=httpx.MockTransport(service),
                               retry=RetryPolicy(seed=0), sleep=sleep) as client:
            created = await client.actions.put("a/2", {"topic": "tech"})
            got = await client.actions.get("a/2")
            catalogue = await client.actions.list()
            deleted = await client.actions.delete("a/2")
            decision = await client.decide(context={"country": "DE"},
                                           action_ids=["a-1", "a/2"], decision_id="n-2")
            with pytest.raises(TypeError, match="not both"):
                await client.decide([[0.1]], action_ids=["a-1"])
            with pytest.raises(NotFound):
                await client.actions.get("never")
        return created, got, catalogue, deleted, decision

    created, got, catalogue, deleted, decision = asyncio.run(main())
    assert created.created and got.features == {"topic": "tech"} and len(waits) == 1
    assert catalogue.retired == ("gone",) and deleted.status == "deleted"
    assert (decision.decision_id, decision.action_id) == ("n-2", "a/2")
    assert len(service.seen) == 7
