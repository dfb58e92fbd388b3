"""The client against a real ``glmbandits serve`` process on loopback: the round trip, the
typed refusals, the served OpenAPI document, and a decide retried across a connection error
and a lost answer that the log holds once."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest

from clientkit import LosesTheFirstAnswer, drift, logged, serving
from glmbandits.client import (AsyncClient, Client, Conflict, InvalidRequest, NotFound,
                               RetryPolicy, Unauthorized)

from servicekit import KEY, environment, unit_rows, write_config  # (put on the path by clientkit)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from serving(tmp_path_factory, "client-serve", write_config)


def test_decide_reward_model_round_trip(server) -> None:
    rng = np.random.default_rng(0)
    X = unit_rows(rng, 5, 3)
    with Client(server.url, api_key=KEY, retry=RetryPolicy(seed=0)) as client:
        assert client.health() == "ok" and client.ready()
        before = client.model()
        decision = client.decide(X, excluded=[0])
        assert decision.action in range(1, 5) and len(decision.probabilities) == 5
        assert decision.probabilities[0] == 0.0 and decision.propensity is not None
        assert client.decide(X.tolist(), decision.decision_id, excluded=[0]) == decision
        reward = client.reward(decision.decision_id, 1.0)
        assert (reward.decision_id, reward.status) == (decision.decision_id, "learned")
        model = client.model()
    assert model.decisions == before.decisions + 1 and model.rewards == before.rewards + 1
    assert (model.n_features, model.max_actions, model.policy) == (3, 8, "ucb-glm")
    assert model.raw["model_version"] == model.model_version
    assert len([event for event in logged(server.url, KEY)  # its decision and reward
                if event.get("decision_id") == decision.decision_id]) >= 2


def check_refusals(decide, reward, anonymous_decide) -> None:
    """The typed refusals of one client (sync or async, given as plain callables)."""
    X = [[0.1, 0.2, 0.3], [0.3, 0.2, 0.1]]
    with pytest.raises(Unauthorized, match="API key") as caught:
        anonymous_decide(X)
    assert caught.value.status == 401
    with pytest.raises(NotFound, match="no decision has decision_id") as caught:
        reward("never-decided", 1.0)
    assert caught.value.field == "decision_id"
    decide(X, "conflicting")
    with pytest.raises(Conflict, match="a retry must repeat the request exactly") as caught:
        decide([[0.3, 0.2, 0.1], [0.1, 0.2, 0.3]], "conflicting")
    assert caught.value.field == "decision_id"
    with pytest.raises(InvalidRequest, match="n_features = 3") as caught:
        decide([[0.1, 0.2, 0.3, 0.4]], None)
    assert caught.value.field == "contexts[0]" and caught.value.status == 422
    with pytest.raises(InvalidRequest) as caught:
        reward("conflicting", 2.0)  # outside the logistic family's [0, 1]
    assert caught.value.field == "reward"


def test_the_refusals_are_typed(server) -> None:
    with Client(server.url, api_key=KEY) as client, Client(server.url) as anonymous:
        check_refusals(lambda X, i: client.decide(X, i), client.reward,
                       lambda X: anonymous.decide(X))
    with Client(server.url, api_key="wrong-key") as wrong, pytest.raises(Unauthorized):
        wrong.model()


def test_the_async_client_against_the_server(server) -> None:
    async def main() -> None:
        async with AsyncClient(server.url, api_key=KEY) as client, \
                AsyncClient(server.url) as anonymous:
            decision = await client.decide(np.eye(3), explain=True)
            assert decision.explanation is not None
            assert (await client.reward(decision.decision_id, 0.0)).status == "learned"
            assert (await client.model()).decisions >= 1
            loop = asyncio.get_running_loop()

            def run(coroutine):  # the refusals' checks are synchronous callables
                return asyncio.run_coroutine_threadsafe(coroutine, loop).result(60)

            await loop.run_in_executor(None, lambda: check_refusals(
                lambda X, i: run(client.decide(X, i.replace("c", "async-c") if i else i)),
                lambda i, v: run(client.reward(i.replace("c", "async-c"), v)),
                lambda X: run(anonymous.decide(X))))

    asyncio.run(main())


def test_a_service_without_features_has_no_catalogue(server) -> None:
    with Client(server.url, api_key=KEY) as client:
        for call in (client.actions.list, lambda: client.actions.get("a1"),
                     lambda: client.actions.put("a1", {"topic": "news"}),
                     lambda: client.actions.delete("a1")):
            with pytest.raises(NotFound, match=r"\[features\] table") as caught:
                call()
            assert caught.value.field == "features"
        with pytest.raises(InvalidRequest) as named:
            client.decide(context={"country": "DE"}, action_ids=["a1"])
        model = client.model()
    assert named.value.field == "context"
    assert (model.feature_names, model.catalogue) == (None, None)


def test_the_served_schema_matches_the_client(server) -> None:
    document = httpx.get(f"{server.url}/v1/openapi.json", timeout=30).json()
    assert drift(document) == []


# -- a retry across a connection error and a lost answer ---------------------------------------
def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_decide_retried_across_failures_is_logged_once(tmp_path) -> None:
    port = _free_port()
    config = write_config(tmp_path)
    log = tmp_path / "server.log"
    processes: list[subprocess.Popen] = []

    def start_the_service(seconds: float) -> None:  # the client's first wait
        if processes:
            return
        with open(log, "wb") as out:
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "glmbandits", "serve", str(config), "--host",
                 "127.0.0.1", "--port", str(port), "--db", f"sqlite:///{tmp_path / 'log.db'}",
                 "--log-level", "info"], stdout=out, stderr=subprocess.STDOUT,
                env=environment()))
        deadline = time.monotonic() + 60
        while "Uvicorn running on" not in log.read_text(errors="replace"):
            assert processes[0].poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)

    transport = LosesTheFirstAnswer()
    url = f"http://127.0.0.1:{port}"
    try:
        with Client(url, api_key=KEY, transport=transport, sleep=start_the_service,
                    retry=RetryPolicy(max_retries=3, deadline=120.0, seed=0)) as client:
            decision = client.decide(unit_rows(np.random.default_rng(1), 4, 3))
        # refused (nothing listened), then decided with its answer lost, then the retry
        assert transport.attempts == 3 and processes
        assert transport.lost["decision_id"] == decision.decision_id
        assert transport.lost["action"] == decision.action
        assert transport.lost["probabilities"] == list(decision.probabilities)
        kinds = [event["kind"] for event in logged(url, KEY)
                 if event.get("decision_id") == decision.decision_id]
        assert kinds.count("decision") == 1, kinds
    finally:
        for process in processes:
            process.terminate()
            process.wait(60)
