"""The client against a real ``glmbandits serve`` with a ``[features]`` schema (clientkit's
NAMED_CONFIG: a categorical context feature, a categorical and a numeric action feature, their
interaction, the unit ball with a declared norm bound), one process for the module: the
catalogue's put/get/list/delete, named decides by id and inline, rewards, explanations, the
refusals naming their field, the served OpenAPI document, and a named decide and a PUT
retried after a lost answer, each logged once; and one shadow-mode process for the ids of a
shadow decide."""

from __future__ import annotations

import asyncio

import pytest

from clientkit import (NAMED_CONFIG, NAMED_D, LosesTheFirstAnswer, drift, logged, named_config,
                       serving)
from glmbandits.client import (ActionResult, AsyncClient, Client, Conflict, InvalidRequest,
                               NotFound, RetryPolicy)

from servicekit import KEY, ServerProcess  # (put on the path by clientkit)

pytestmark = pytest.mark.slow

ARTICLES = {"news/2024 #1": {"topic": "news", "length": 300},
            "..": {"topic": "tech", "length": 800},
            "sport-7": {"topic": "sports", "length": 450}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from serving(tmp_path_factory, "client-named", named_config)


def _client(server, **kwargs) -> Client:
    return Client(server.url, api_key=KEY, retry=RetryPolicy(seed=0), **kwargs)


def test_the_catalogue_round_trip(server) -> None:
    with _client(server) as client:
        for action_id, features in ARTICLES.items():  # ids with "/", " ", "#" and dots only
            put = client.actions.put(action_id, features)
            assert put == ActionResult(action_id, features, "created") and put.created
        again = client.actions.put("news/2024 #1", ARTICLES["news/2024 #1"])
        changed = client.actions.put("sport-7", {"topic": "sports", "length": 500})
        assert (again.status, again.created, changed.status) == ("unchanged", False, "updated")
        assert client.actions.get("..") == ActionResult("..", ARTICLES[".."])
        client.actions.put("old", {"topic": "news", "length": 100})
        assert client.actions.delete("old") == ActionResult("old", None, "deleted")
        assert client.actions.delete("old").status == "already deleted"
        catalogue = client.actions.list()
        model = client.model()
    assert [action.id for action in catalogue.actions] == [*ARTICLES]
    assert catalogue.actions[2].features == {"topic": "sports", "length": 500}
    assert catalogue.retired == ("old",)
    assert model.catalogue == {"actions": 3, "retired": 1}
    assert model.feature_names is not None and len(model.feature_names) == model.n_features
    assert model.n_features == NAMED_D and model.feature_names[0] == "country=DE"


def test_the_catalogue_refusals_are_typed(server) -> None:
    with _client(server) as client:
        client.actions.put("retired-1", {"topic": "news", "length": 1})
        client.actions.delete("retired-1")
        with pytest.raises(Conflict, match="never reused") as retired:
            client.actions.put("retired-1", {"topic": "news", "length": 1})
        with pytest.raises(NotFound) as gone:
            client.actions.get("retired-1")
        with pytest.raises(NotFound) as never:
            client.actions.delete("never-put")
        with pytest.raises(InvalidRequest, match="'length'") as missing:
            client.actions.put("incomplete", {"topic": "news"})
        with pytest.raises(InvalidRequest) as unknown:
            client.actions.put("extra", {"topic": "news", "length": 1, "colour": "red"})
        with pytest.raises(InvalidRequest) as control:
            client.actions.put("tab\there", {"topic": "news", "length": 1})
        assert "incomplete" not in [action.id for action in client.actions.list().actions]
    assert (retired.value.status, retired.value.field) == (409, "action_id")
    assert (gone.value.status, never.value.status, never.value.field) == (404, 404, "action_id")
    assert (missing.value.status, missing.value.field) == (422, "features.length")
    assert unknown.value.field == "features.colour"
    assert control.value.field == "action_id"


def _put_articles(client: Client) -> None:
    for action_id, features in ARTICLES.items():
        client.actions.put(action_id, features)


def test_named_decides_by_id_and_inline(server) -> None:
    with _client(server) as client:
        _put_articles(client)
        ids = ["news/2024 #1", "..", "sport-7"]
        decision = client.decide(context={"country": "DE"}, action_ids=ids,
                                 excluded_ids=[".."], explain=True)
        assert decision.action_id in ("news/2024 #1", "sport-7")
        assert decision.action_id == ids[decision.action]
        assert list(decision.probabilities_by_id) == ids
        assert decision.probabilities_by_id[".."] == 0.0
        assert list(decision.probabilities_by_id.values()) == list(decision.probabilities)
        assert decision.propensity == decision.probabilities_by_id[decision.action_id]
        assert decision.explanation is not None and decision.policy_action_id is None
        # a retry with the same decision_id is answered as the first
        assert client.decide(context={"country": "DE"}, action_ids=ids, excluded_ids=[".."],
                             explain=True, decision_id=decision.decision_id) == decision
        assert client.reward(decision.decision_id, 1.0).status == "learned"
        inline = client.decide(context={"country": "FR"},
                               actions={"x": {"topic": "tech", "length": 120},
                                        "y": {"topic": "news", "length": 900}})
        assert inline.action_id in ("x", "y") and set(inline.probabilities_by_id) == {"x", "y"}
        # refusals naming the field
        with pytest.raises(InvalidRequest, match="no action 'missing'") as unknown:
            client.decide(context={"country": "DE"}, action_ids=["sport-7", "missing"])
        with pytest.raises(InvalidRequest) as excluded:
            client.decide(context={"country": "DE"}, action_ids=["sport-7"],
                          excluded_ids=["news/2024 #1"])
        with pytest.raises(InvalidRequest) as feature:
            client.decide(context={"country": "DE"}, actions={"x": {"topic": "tech"}})
        with pytest.raises(InvalidRequest) as context:
            client.decide(context={"country": "DE", "age": 3}, action_ids=["sport-7"])
    assert (unknown.value.status, unknown.value.field) == (422, "action_ids[1]")
    assert excluded.value.field == "excluded_ids[0]"
    assert feature.value.field == "actions[0].features.length"
    assert context.value.field == "context.age"
    events = [event for event in logged(server.url, KEY)
              if event.get("decision_id") == decision.decision_id]
    assert [event["kind"] for event in events].count("decision") == 1


def test_a_named_decide_and_a_put_retried_after_a_lost_answer(server) -> None:
    """The first answer is lost on the way back (the server did the work): the retry, with
    the same decision_id (the same PUT), is answered from what was done, logged once."""
    with _client(server) as client:
        _put_articles(client)
    decide_transport, put_transport = LosesTheFirstAnswer(), LosesTheFirstAnswer()
    with _client(server, transport=decide_transport, sleep=lambda seconds: None) as client:
        decision = client.decide(context={"country": "US"}, action_ids=["..", "sport-7"],
                                 explain=True)
    assert decide_transport.attempts == 2
    assert decide_transport.lost["decision_id"] == decision.decision_id
    assert decide_transport.lost["action_id"] == decision.action_id
    assert decide_transport.lost["probabilities_by_id"] == decision.probabilities_by_id
    with _client(server, transport=put_transport, sleep=lambda seconds: None) as client:
        put = client.actions.put("lost-answer", {"topic": "news", "length": 10})
    assert put_transport.attempts == 2 and put_transport.lost["status"] == "created"
    # the retry finds the action as put: unchanged (a lost 201 reads as unchanged)
    assert (put.id, put.status, put.created) == ("lost-answer", "unchanged", False)
    events = logged(server.url, KEY)
    kinds = [event["kind"] for event in events
             if event.get("decision_id") == decision.decision_id]
    assert kinds.count("decision") == 1
    puts = [event for event in events if event["kind"] == "catalogue"
            and event["request"]["id"] == "lost-answer"]
    assert len(puts) == 1 and puts[0]["status"] == "put"


def test_the_async_client_against_the_named_server(server) -> None:
    async def main() -> None:
        async with AsyncClient(server.url, api_key=KEY) as client:
            put = await client.actions.put("async-1", {"topic": "tech", "length": 50})
            assert put.created and (await client.actions.get("async-1")).features == {
                "topic": "tech", "length": 50}
            assert "async-1" in [a.id for a in (await client.actions.list()).actions]
            decision = await client.decide(context={"country": "FR"},
                                           action_ids=["async-1", "sport-7"],
                                           excluded_ids=["sport-7"], explain=True)
            assert decision.action_id == "async-1" and decision.explanation is not None
            assert (await client.reward(decision.decision_id, 0.0)).status == "learned"
            assert (await client.actions.delete("async-1")).status == "deleted"
            with pytest.raises(NotFound):
                await client.actions.get("async-1")
            with pytest.raises(Conflict):
                await client.actions.put("async-1", {"topic": "tech", "length": 50})
            with pytest.raises(InvalidRequest) as caught:
                await client.decide(context={}, action_ids=["async-1"])
            assert caught.value.field == "action_ids[0]"

    asyncio.run(main())


def test_the_served_schema_matches_the_client(server) -> None:
    import httpx

    document = httpx.get(f"{server.url}/v1/openapi.json", timeout=30).json()
    assert drift(document, named=True, n_features=NAMED_D) == []


def test_a_named_decide_in_shadow_mode(tmp_path) -> None:
    """The client's choice is shown (default_action_id), the policy's is named by id."""
    assert NAMED_CONFIG.count("[decisions]\n") == 1
    config = tmp_path / "shadow.toml"
    config.write_text(NAMED_CONFIG.replace("[decisions]\n", '[decisions]\nmode = "shadow"\n'))
    server = ServerProcess(config, f"sqlite:///{tmp_path / 'shadow.db'}")
    try:
        with _client(server) as client:
            _put_articles(client)
            decision = client.decide(context={"country": "US"}, action_ids=[*ARTICLES],
                                     default_action_id="sport-7")
            with pytest.raises(InvalidRequest) as missing:
                client.decide(context={"country": "US"}, action_ids=[*ARTICLES])
    finally:
        assert server.terminate() == 0, server.output()
    assert (decision.action_id, decision.action, decision.propensity) == ("sport-7", 2, None)
    assert decision.policy_action_id == [*ARTICLES][decision.policy_action]
    assert missing.value.status == 422 and "required in shadow mode" in missing.value.message
