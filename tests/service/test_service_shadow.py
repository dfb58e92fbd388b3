"""Shadow mode of the service (``[decisions] mode = "shadow"``), against real server processes:
decide with the client's default action, reward, retry, the evaluation endpoint, the 422s,
a restart that rebuilds the policy bit for bit, and switching modes across restarts."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest

from glmbandits.service.config import load_config
from glmbandits.service.core import DecisionService
from glmbandits.service.replay import rebuild_from_log
from glmbandits.service.store import open_store
from servicekit import ServerProcess, assert_same_state, unit_rows, write_config

pytestmark = pytest.mark.slow

SHADOW = 'mode = "shadow"\n'
ROWS = unit_rows(np.random.default_rng(0), 4, 3).tolist()


@pytest.fixture(scope="module")
def shadow(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shadow")
    process = ServerProcess(write_config(folder, decisions=SHADOW),
                            f"sqlite:///{folder / 'log.db'}")
    yield process
    assert process.terminate() == 0, process.output()


def last_seq(server: ServerProcess) -> int:
    return server.client.get("/v1/model").json()["last_seq"]


def traffic(server: ServerProcess, n: int, seed: int, prefix: str, *,
            default: bool = True) -> list[dict]:
    """n decisions (a default action from a fixed client rule when ``default``), each
    rewarded; every fifth retried first."""
    rng = np.random.default_rng(seed)
    answers = []
    for t in range(n):
        X = unit_rows(rng, 5, 3)
        body = {"decision_id": f"{prefix}{t}", "contexts": X.tolist()}
        if default:
            body["default_action"] = int(np.argmax(X[:, 0]))
        answer = server.client.post("/v1/decide", json=body)
        assert answer.status_code == 200, answer.text
        if t % 5 == 0:
            assert server.client.post("/v1/decide", json=body).json() == answer.json()
        reward = float(rng.random() < 0.3 + 0.4 * (X[answer.json()["action"], 1] > 0))
        status = server.client.post("/v1/reward", json={"decision_id": f"{prefix}{t}",
                                                        "reward": reward})
        assert status.json()["status"] == "learned"
        answers.append(answer.json())
    return answers


# -- the contract -------------------------------------------------------------------------------
def test_a_shadow_decision_answers_the_default_and_logs_the_policys_choice(shadow):
    client = shadow.client
    answer = client.post("/v1/decide", json={"decision_id": "s1", "contexts": ROWS,
                                             "default_action": 2})
    assert answer.status_code == 200
    body = answer.json()
    assert set(body) == {"decision_id", "action", "probabilities", "propensity",
                         "model_version", "policy_action"}
    assert body["action"] == 2 and body["propensity"] is None
    assert 0 <= body["policy_action"] < 4 and body["probabilities"][body["policy_action"]] > 0
    assert np.isclose(sum(body["probabilities"]), 1.0)
    # a retry repeats the request, default action included
    before = last_seq(shadow)
    again = client.post("/v1/decide", json={"decision_id": "s1", "contexts": ROWS,
                                            "default_action": 2})
    assert again.json() == body
    other = client.post("/v1/decide", json={"decision_id": "s1", "contexts": ROWS,
                                            "default_action": 1})
    assert other.status_code == 409 and other.json()["field"] == "decision_id"
    assert "default_action" in other.json()["detail"]
    assert last_seq(shadow) == before + 1  # the retry, not the conflict
    reward = client.post("/v1/reward", json={"decision_id": "s1", "reward": 1.0})
    assert reward.json()["status"] == "learned"
    events = [json.loads(line) for line in
              client.get("/v1/events", params={"after": before - 1}).text.splitlines()]
    decision, retry, learned = events
    assert decision["kind"] == "decision" and decision["action"] == 2
    assert decision["policy_action"] == body["policy_action"] and "propensity" not in decision
    assert retry["kind"] == "retry" and retry["action"] == 2
    assert learned["kind"] == "reward" and learned["status"] == "learned"
    model = client.get("/v1/model").json()
    assert model["mode"] == "shadow"


@pytest.mark.parametrize("name, extra, message", [
    ("missing", {}, "default_action is required in shadow mode"),
    ("out of range", {"default_action": 4}, r"default_action must lie in \[0, 3\]"),
    ("negative", {"default_action": -1}, "default_action must be an integer >= 0"),
    ("not an int", {"default_action": 1.5}, r"must be an integer >= 0 \(a row number\), "
                                            "got 1.5"),
    ("a string", {"default_action": "1"}, "Expected `int | float | null`, got `str`"),
    ("excluded", {"default_action": 1, "excluded": [1]}, "default_action 1 is excluded"),
])
def test_a_bad_or_missing_default_action_is_422_and_writes_nothing(shadow, name, extra,
                                                                   message):
    before = last_seq(shadow)
    response = shadow.client.post("/v1/decide", json={"decision_id": f"bad-{name}",
                                                      "contexts": ROWS, **extra})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "default_action"
    assert re.search(message, response.json()["detail"]), response.json()["detail"]
    assert last_seq(shadow) == before


def test_the_evaluation_appears_once_shadow_decisions_have_rewards(shadow):
    client = shadow.client
    first = client.get("/v1/evaluation")
    assert first.status_code == 200
    assert first.json()["available"] is False and "at least 10" in first.json()["reason"]
    traffic(shadow, 40, seed=1, prefix="e")
    deadline = time.monotonic() + 60
    while not (body := client.get("/v1/evaluation").json())["available"]:
        assert time.monotonic() < deadline, body
        time.sleep(0.3)
    assert body["n_rounds"] >= 40 and body["logging"] == "deterministic"
    for name in ("default", "policy_dr", "lift_dr"):
        assert body[name]["ci_low"] <= body[name]["value"] <= body[name]["ci_high"], name
    assert body["policy_snips"] is None or "value" in body["policy_snips"]
    assert isinstance(body["policy_dr"]["diagnostics"]["poor"], bool)
    assert 0.0 <= body["agreement"] <= 1.0 and body["notes"]
    assert body["window"]["rewarded_rounds"] == body["n_rounds"]
    # the default's value is the mean logged reward of the rewarded shadow rounds
    events = [json.loads(line) for line in client.get("/v1/events").text.splitlines()]
    learned = [e["reward"] for e in events if e["kind"] == "reward"
               and e["status"] == "learned"]
    assert body["default"]["value"] == pytest.approx(np.mean(learned))
    assert httpx_status(shadow, "/v1/evaluation", None) == 401


def httpx_status(server: ServerProcess, path: str, key: str | None) -> int:
    import httpx

    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    return httpx.get(server.url + path, headers=headers, timeout=60).status_code


def test_events_pages_are_capped(shadow):
    assert shadow.client.get("/v1/events", params={"limit": 1001}).status_code == 422
    assert shadow.client.get("/v1/events", params={"limit": 1001}).json()["field"] == "limit"
    assert len(shadow.client.get("/v1/events", params={"limit": 3}).text.splitlines()) == 3


# -- restarts ---------------------------------------------------------------------------------
def _offline_equals_restored(config_path: Path, db: Path) -> None:
    """The policy a service restores (snapshot + tail) equals a replay of the whole log."""
    config = load_config(config_path)
    restored = DecisionService(config, open_store(f"sqlite:///{db}")).start()
    try:
        assert_same_state(restored.policy, rebuild_from_log(config, restored.store))
    finally:
        restored.stop(snapshot=False)


def test_a_killed_shadow_service_restarts_with_the_same_policy(tmp_path):
    config, db = write_config(tmp_path, decisions=SHADOW), tmp_path / "log.db"
    first = ServerProcess(config, f"sqlite:///{db}")
    traffic(first, 60, seed=2, prefix="k")
    X = unit_rows(np.random.default_rng(9), 5, 3).tolist()
    pending = first.client.post("/v1/decide", json={"decision_id": "open", "contexts": X,
                                                    "default_action": 3}).json()
    model = first.client.get("/v1/model").json()
    first.kill()  # kill -9: no final snapshot, the tail is replayed
    second = ServerProcess(config, f"sqlite:///{db}")
    try:
        again = second.client.get("/v1/model").json()
        assert again["model_version"] == model["model_version"] == 60
        assert again["counts"]["pending"] == 1
        # the pending shadow decision survived: its retry answers exactly as before
        assert second.client.post("/v1/decide", json={"decision_id": "open", "contexts": X,
                                                      "default_action": 3}).json() == pending
    finally:
        assert second.terminate() == 0, second.output()
    _offline_equals_restored(config, db)


def test_switching_modes_across_restarts_keeps_the_log(tmp_path):
    db = tmp_path / "log.db"
    live_config = write_config(tmp_path)
    server = ServerProcess(live_config, f"sqlite:///{db}")
    live = traffic(server, 10, seed=3, prefix="live-")
    assert all("policy_action" not in answer for answer in live)
    assert all(answer["propensity"] is not None for answer in live)
    assert server.terminate() == 0

    shadow_config = write_config(tmp_path, decisions=SHADOW)  # the same file, now shadow
    server = ServerProcess(shadow_config, f"sqlite:///{db}")
    try:
        assert server.client.get("/v1/model").json()["mode"] == "shadow"
        assert server.client.get("/v1/model").json()["model_version"] == 10
        missing = server.client.post("/v1/decide", json={"contexts": ROWS})
        assert missing.status_code == 422 and missing.json()["field"] == "default_action"
        shadowed = traffic(server, 12, seed=4, prefix="shadow-")
        assert all(answer["propensity"] is None for answer in shadowed)
        opened = {"decision_id": "open", "contexts": ROWS, "default_action": 3}
        pending = server.client.post("/v1/decide", json=opened).json()  # no reward yet
    finally:
        assert server.terminate() == 0

    live_config = write_config(tmp_path)  # and back to live
    server = ServerProcess(live_config, f"sqlite:///{db}")
    try:
        model = server.client.get("/v1/model").json()
        assert model["mode"] == "live" and model["model_version"] == 22
        # in live mode default_action is ignored: the policy's choice is answered
        answer = server.client.post("/v1/decide", json={"contexts": ROWS,
                                                        "default_action": 0}).json()
        assert "policy_action" not in answer and answer["propensity"] is not None
        # a retry of a decision still pending from shadow mode is judged by that mode
        assert server.client.post("/v1/decide", json=opened).json() == pending
        other = server.client.post("/v1/decide", json={**opened, "default_action": 2})
        assert other.status_code == 409
        assert server.client.post("/v1/reward", json={"decision_id": "open",
                                                      "reward": 1.0}).status_code == 200
        # the shadow rounds stay in the log and are still evaluated
        deadline = time.monotonic() + 60
        while not (body := server.client.get("/v1/evaluation").json())["available"]:
            assert time.monotonic() < deadline, body
            time.sleep(0.3)
        assert body["n_rounds"] == 13
    finally:
        assert server.terminate() == 0
    _offline_equals_restored(live_config, db)


def test_a_restored_shadow_service_equals_the_live_one_bit_for_bit(tmp_path):
    """In process: the live policy, the one restored from snapshot + tail by a second
    service on the same file, and an offline replay of the whole log are identical."""
    config = load_config(write_config(tmp_path, decisions=SHADOW))
    live = DecisionService(config, open_store(f"sqlite:///{tmp_path / 'log.db'}")).start()
    rng = np.random.default_rng(5)
    for t in range(70):  # snapshot_every = 25: snapshots, then a tail to replay
        X = unit_rows(rng, int(rng.integers(2, 7)), 3)
        default = int(rng.integers(0, X.shape[0]))
        answer = live.decide(X, decision_id=f"d{t}", default_action=default)
        assert answer["action"] == default and answer["propensity"] is None
        if t % 4 == 0:
            assert live.decide(X, decision_id=f"d{t}", default_action=default) == answer
        if t % 3:
            live.reward(f"d{t}", float(rng.random() < 0.5))
    assert live.snapshot_seq > 0 and live.store.last_seq() > live.snapshot_seq
    restored = DecisionService(config, open_store(live.store.url)).start()
    try:
        assert restored.restored_from["replayed_events"] > 0
        assert_same_state(live.policy, restored.policy)
        assert_same_state(live.policy, rebuild_from_log(config, live.store))
    finally:
        restored.stop(snapshot=False)
        live.stop(snapshot=False)


def test_mode_is_checked_documented_and_not_in_the_fingerprint():
    import tomllib

    from glmbandits.service.config import ConfigError, example_config, parse_config

    text = example_config()
    assert 'mode = "live"' in text
    live = parse_config(tomllib.loads(text))
    shadow = parse_config(tomllib.loads(text.replace('mode = "live"', 'mode = "shadow"')))
    assert (live.decisions.mode, shadow.decisions.mode) == ("live", "shadow")
    assert live.fingerprint() == shadow.fingerprint()  # switching keeps the log usable
    for bad in ('"apprentice"', "1"):
        with pytest.raises(ConfigError, match=r"\[decisions\] mode must be 'live' or 'shadow'"):
            parse_config(tomllib.loads(text.replace('mode = "live"', f"mode = {bad}")))


def test_the_parquet_export_of_the_service_log_has_policy_action(tmp_path):
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from glmbandits.service.export import export_parquet

    config = load_config(write_config(tmp_path, decisions=SHADOW))
    service = DecisionService(config, open_store(f"sqlite:///{tmp_path / 'log.db'}")).start()
    answer = service.decide(unit_rows(np.random.default_rng(1), 3, 3), "x", default_action=1)
    service.stop(snapshot=False)
    for layout in ({"events": True}, {}):  # one row per event; one per decision (joined)
        export_parquet(f"sqlite:///{tmp_path / 'log.db'}", str(tmp_path / "log.parquet"),
                       **layout)
        table = pq.read_table(tmp_path / "log.parquet")
        assert table.column("policy_action").to_pylist() == [answer["policy_action"]]
        assert table.column("propensity").to_pylist() == [None]
        assert table.column("action").to_pylist() == [1]
