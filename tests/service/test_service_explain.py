"""``"explain": true`` in ``POST /v1/decide``: the answer's ``explanation`` (in process and
over HTTP), the other fields unchanged, refusals naming ``explain``, the schema."""

from __future__ import annotations

import json
import time
from pathlib import Path

import msgspec
import numpy as np
import pytest

from glmbandits.features import Categorical, FeatureSchema, Numeric, attach_schema
from glmbandits.service.config import load_config
from glmbandits.service.core import DecisionService, Invalid
from glmbandits.service.schemas import DecideResponse, ModelResponse, parse_decide
from glmbandits.service.store import open_store
from servicekit import ServerProcess, unit_rows, write_config

TAU0 = "[policy.params]\ntau = 0\n"


def start(folder: Path, **config_kw) -> DecisionService:
    folder.mkdir(parents=True, exist_ok=True)
    config = load_config(write_config(folder, **config_kw))
    clock = iter(range(1_000_000, 2_000_000))
    return DecisionService(config, open_store(f"sqlite:///{folder / 'log.db'}"),
                           clock=lambda: float(next(clock))).start()


def play(service: DecisionService, explain: bool | None, rounds: int = 30) -> list[dict]:
    rng = np.random.default_rng(5)
    answers = []
    for t in range(rounds):
        X = unit_rows(rng, int(rng.integers(2, 7)), 3)
        excluded = [0] if t % 4 == 3 else None
        kwargs = {} if explain is None else {"explain": explain}
        answers.append(service.decide(X, decision_id=f"d{t}", excluded=excluded, **kwargs))
        service.reward(f"d{t}", float(rng.random() < 0.5))
    return answers


def test_explained_answers_differ_only_by_their_explanation(tmp_path):
    plain, explained = start(tmp_path / "a", extra=TAU0), start(tmp_path / "b", extra=TAU0)
    try:
        without, with_ = play(plain, None), play(explained, True)
    finally:
        plain.stop()
        explained.stop()
    for t, (a, b) in enumerate(zip(without, with_)):
        assert "explanation" not in a
        body = dict(b)
        explanation = body.pop("explanation")
        assert msgspec.json.encode(body) == msgspec.json.encode(a)  # byte for byte
        msgspec.convert(b, DecideResponse)  # the schema's shape, strictly
        json.dumps(b, allow_nan=False)
        chosen = explanation["chosen"]
        assert explanation["kind"] == "scored" and chosen["action"] == b["action"]
        runner_up = explanation["runner_up"]  # None with one candidate row
        assert explanation["chosen_is_best"]
        assert runner_up is None or (runner_up["action"] != b["action"]
                                     and runner_up["index"] <= chosen["index"])
        assert t % 4 != 3 or runner_up is None or runner_up["action"] != 0  # excluded
        total = sum(c["value"] for c in chosen["contributions"]) + chosen["other"] + \
            chosen["intercept"]
        scale = sum(abs(c["value"]) for c in chosen["contributions"]) + abs(chosen["other"])
        assert abs(total - chosen["linear_predictor"]) <= 1e-12 * max(scale, 1e-300)
        low, high = chosen["interval"]
        assert low <= chosen["predicted_reward"] <= high
        assert 0.0 <= chosen["bonus_share"] <= 1.0
    info = explained.model_info_operation()()  # the stopped service's last view
    assert info["explanation"]["decision_id"] == "d29"
    msgspec.convert(info, ModelResponse)


def test_retry_keeps_its_explanation_and_the_latest_is_served(tmp_path):
    service = start(tmp_path, extra=TAU0)
    try:
        X = np.eye(3) * 0.5
        first = service.decide(X, decision_id="r", explain=True)
        assert service.decide(X, decision_id="r", explain=True) == first
        plain = service.decide(X, decision_id="p")
        assert "explanation" not in plain
        assert service.decide(X, decision_id="p", explain=True)["explanation"] is None
        info = service.submit(service.model_info_operation()).result()
        assert info["explanation"] == {"decision_id": "r", "model_version": 0,
                                       "action": first["action"],
                                       "explanation": first["explanation"]}
    finally:
        service.stop()


def test_names_come_from_the_served_policys_schema(tmp_path):
    schema = FeatureSchema(context=[Numeric("age", scale=(40.0, 10.0))],
                           action=[Categorical("topic", vocabulary=["news"])],
                           unit_ball=False).fit()
    service = start(tmp_path, extra=TAU0, n_features=schema.n_features_out_)
    try:
        service.submit(lambda: attach_schema(service.policy, schema)).result()
        for t in range(5):
            X = schema.transform({"age": 30.0 + t}, [{"topic": "news"}, {"topic": "x"}])
            service.decide(X.copy(), decision_id=f"s{t}")
            service.reward(f"s{t}", 1.0)
        X = schema.transform({"age": 50.0}, [{"topic": "news"}, {"topic": "x"}]).copy()
        answer = service.decide(X, decision_id="named", explain=True)
    finally:
        service.stop()
    names = {c["name"] for c in answer["explanation"]["chosen"]["contributions"]}
    assert names == {"age", "topic"}


def test_a_policy_that_cannot_explain_is_refused_naming_explain(tmp_path):
    service = start(tmp_path, name="supcb-glm")
    try:
        with pytest.raises(Invalid) as refused:
            service.decide(np.eye(3) * 0.5, decision_id="s", explain=True)
        assert refused.value.field == "explain"
        assert "explanation" not in service.decide(np.eye(3) * 0.5, decision_id="s")
    finally:
        service.stop()


@pytest.mark.parametrize("value", ["1", '"true"', "null", "[true]"])
def test_a_non_bool_explain_is_refused_naming_it(value):
    with pytest.raises(Invalid) as refused:
        parse_decide(b'{"contexts": [[0.1, 0.2]], "explain": %s}' % value.encode(), 2, 4)
    assert refused.value.field == "explain"


def test_a_real_server_explains_on_request(tmp_path):
    server = ServerProcess(write_config(tmp_path, extra=TAU0), f"sqlite:///{tmp_path / 'l.db'}")
    try:
        client = server.client
        rows = (np.eye(3) * 0.5).tolist()
        plain = client.post("/v1/decide", json={"contexts": rows, "decision_id": "h0"})
        assert plain.status_code == 200 and "explanation" not in plain.json()
        answer = client.post("/v1/decide", json={"contexts": rows, "decision_id": "h1",
                                                 "explain": True})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["explanation"]["chosen"]["action"] == body["action"]
        assert [c["name"] for c in body["explanation"]["chosen"]["contributions"]] == \
            ["x[0]", "x[1]", "x[2]"]
        bad = client.post("/v1/decide", json={"contexts": rows, "explain": "yes"})
        assert bad.status_code == 422 and bad.json()["field"] == "explain"
        deadline = time.monotonic() + 60
        while (model := client.get("/v1/model").json())["explanation"] is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert model["explanation"]["decision_id"] == "h1"
        document = client.get("/v1/openapi.json").json()
        request = document["components"]["schemas"]["DecideRequest"]["properties"]
        assert request["explain"]["type"] == "boolean" and "explanation" in \
            document["components"]["schemas"]["DecideResponse"]["properties"]
    finally:
        assert server.terminate() == 0
