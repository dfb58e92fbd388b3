"""Issue 25 in the service: the [drift] table (checked, off by default), the monitor in
GET /v1/model and /metrics, and the drift-aware policies served live and in shadow mode,
each restored from its snapshot and log with the model exactly equal (window, discounted
sums and monitor included)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from glmbandits.service.config import ConfigError, load_config, parse_config
from glmbandits.service.core import DecisionService
from glmbandits.service.metrics import drift_body
from glmbandits.service.replay import rebuild_from_log
from glmbandits.service.store import open_store
from servicekit import ServerProcess, assert_same_state, unit_rows, write_config

DRIFT = '[drift]\nwindow = 10\nwarmup = 0\nalpha = 0.2\naction = "restart"\n'
#: Small forgetting parameters, so that 80 rounds wrap SW-GLUCB's window and age the sums.
NEW_POLICIES = {
    "d-linucb": "gamma = 0.9\nalpha = 0.3\n",
    "d-glucb": "gamma = 0.9\nalpha = 0.3\n",
    "sw-glucb": "window = 20\nalpha = 0.3\n",
    "domd-glb": "gamma = 0.9\nalpha = 0.3\n",
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _minimal(**drift) -> dict:
    data: dict = {"policy": {"name": "ucb-glm", "n_features": 3}}
    if drift is not None:
        data["drift"] = drift
    return data


def start(folder: Path, clock, **config_kw) -> DecisionService:
    config = load_config(write_config(folder, **config_kw))
    return DecisionService(config, open_store(f"sqlite:///{folder / 'log.db'}"),
                           clock=clock).start()


def traffic(service: DecisionService, clock: FakeClock, rounds: int, seed: int, *,
            shadow: bool = False, flip_at: int | None = None) -> list[dict]:
    """Decisions (some excluding a row) and rewards (most, a few twice); the reward of an
    action depends on its first feature's sign, which flips at ``flip_at``."""
    rng = np.random.default_rng(seed)
    answers = []
    for t in range(rounds):
        clock.now += 1.0
        X = unit_rows(rng, int(rng.integers(2, 6)), 3)
        shown = int(np.argmax(X[:, 1])) if shadow else None
        answer = service.decide(X, decision_id=f"d{seed}-{t}",
                                excluded=[0] if shown != 0 and rng.random() < 0.2 else None,
                                default_action=shown)
        answers.append(answer)
        sign = 1.0 if flip_at is None or t < flip_at else -1.0
        good = sign * X[answer["action"], 0] > 0
        if rng.random() < 0.9:
            service.reward(f"d{seed}-{t}", float(rng.random() < (0.9 if good else 0.1)))
        if rng.random() < 0.05:
            service.reward(f"d{seed}-{t}", 1.0)  # a duplicate
    return answers


# -- the [drift] table -----------------------------------------------------------------------
@pytest.mark.parametrize("key, value, message", [
    ("window", 5, "[drift] window must be an integer >= 10, got 5"),
    ("alpha", 1.5, "[drift] alpha must be a number in (0, 1), got 1.5"),
    ("alpha", "0.1", "[drift] alpha must be a number in (0, 1), got '0.1' (str)"),
    ("warmup", -1, "[drift] warmup must be an integer >= 0, got -1"),
    ("action", "panic", "[drift] action must be 'none' or 'restart', got 'panic'"),
    ("every", 3, "unknown key(s) ['every'] in [drift]; expected some of ['action', 'alpha', "
                 "'warmup', 'window']"),
])
def test_a_bad_drift_key_is_refused_naming_it(key, value, message):
    with pytest.raises(ConfigError) as error:
        parse_config(_minimal(**{key: value}))
    assert str(error.value) == f"config '<config>': {message}"


def test_drift_is_off_by_default_and_on_with_the_table():
    plain = parse_config({"policy": {"name": "ucb-glm", "n_features": 3}})
    assert plain.drift is None and plain.build_policy().drift_ is None
    assert "drift" not in plain.fingerprint()  # stores made before [drift] still open
    on = parse_config(_minimal(window=50, alpha=0.05, action="restart"))
    status = on.build_policy().drift_
    assert (status.window, status.alpha, status.action) == (50, 0.05, "restart")
    assert on.fingerprint() != plain.fingerprint()
    assert parse_config(_minimal()).build_policy().drift_.window == 500  # the defaults


def test_the_monitor_is_in_the_model_body_and_survives_a_restart(tmp_path):
    clock = FakeClock()
    live = start(tmp_path, clock, extra=DRIFT.replace("window = 10", "window = 25"))
    traffic(live, clock, 300, seed=1, flip_at=150)
    info = live.submit(live.model_info_operation()).result()
    drift = info["drift"]
    assert drift == live.policy.drift_.as_dict() == drift_body(live.policy)
    assert drift["observed"] >= 250 and drift["unscored"] == 0
    assert drift["alarms"] >= 1 and drift["action"] == "restart"
    assert len(drift["history_observed"]) == drift["observed"] // 25
    for key in ("policy", "model_version", "counts", "last_seq", "snapshot_seq"):
        assert key in info  # every field of the body is still there
    # a second process on the same log (the first "crashed"): snapshot + replayed tail
    restored = DecisionService(live.config, open_store(live.store.url), clock=clock).start()
    try:
        assert restored.restored_from["replayed_events"] > 0
        assert_same_state(live.policy, restored.policy)
        assert_same_state(live.policy, rebuild_from_log(live.config, live.store))
    finally:
        restored.stop(snapshot=False)
        live.stop(snapshot=False)


def test_without_drift_the_body_says_null(tmp_path):
    service = start(tmp_path, FakeClock())
    try:
        assert service.submit(service.model_info_operation()).result()["drift"] is None
    finally:
        service.stop(snapshot=False)


# -- issue 25 item 4: the new policies in the service --------------------------------------------
@pytest.mark.parametrize("name", sorted(NEW_POLICIES))
def test_a_drift_aware_policy_is_served_and_restored_exactly(tmp_path, name):
    clock = FakeClock()
    live = start(tmp_path, clock, name=name, extra=DRIFT,
                 policy=f"[policy.params]\n{NEW_POLICIES[name]}")
    try:
        answers = traffic(live, clock, 80, seed=2, flip_at=40)
        assert type(live.policy).__name__ == {"d-linucb": "DLinUCB", "d-glucb": "DGLUCB",
                                              "sw-glucb": "SWGLUCB",
                                              "domd-glb": "DOMDGLB"}[name]
        assert len({answer["action"] for answer in answers}) > 1
        assert live.policy.model_version >= 60 and live.policy.drift_.observed >= 60
        assert live.snapshot_seq > 0 and live.store.last_seq() > live.snapshot_seq
        restored = DecisionService(live.config, open_store(live.store.url), clock=clock).start()
        try:
            assert_same_state(live.policy, restored.policy)
        finally:
            restored.stop(snapshot=False)
        assert_same_state(live.policy, rebuild_from_log(live.config, live.store))
    finally:
        live.stop(snapshot=False)


@pytest.mark.parametrize("name", sorted(NEW_POLICIES))
def test_a_drift_aware_policy_works_in_shadow_mode(tmp_path, name):
    clock = FakeClock()
    live = start(tmp_path, clock, name=name, decisions='mode = "shadow"\n',
                 policy=f"[policy.params]\n{NEW_POLICIES[name]}")
    try:
        answers = traffic(live, clock, 60, seed=3, shadow=True)
        rng_rows = [answer for answer in answers if answer.get("policy_action") is not None]
        assert rng_rows, "no answer carried the policy's own choice"
        assert all(answer["propensity"] is None for answer in answers)
        assert live.policy.model_version >= 50
        stopped_policy = live.policy
        live.stop(snapshot=True)  # a clean stop: the last snapshot holds everything
        restored = DecisionService(live.config, open_store(live.store.url),
                                   clock=clock).start()
        try:
            assert restored.restored_from["replayed_events"] == 0
            assert_same_state(stopped_policy, restored.policy)
        finally:
            restored.stop(snapshot=False)
    finally:
        if live.running:
            live.stop(snapshot=False)


# -- over HTTP ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_metrics_and_the_model_body_over_http(tmp_path):
    server = ServerProcess(write_config(tmp_path, extra=DRIFT), f"sqlite:///{tmp_path / 'log.db'}")
    try:
        assert server.client.get("/v1/model").json()["drift"]["observed"] == 0
        rng = np.random.default_rng(4)
        for t in range(40):
            X = unit_rows(rng, 4, 3)
            answer = server.client.post("/v1/decide", json={"decision_id": f"h{t}",
                                                            "contexts": X.tolist()}).json()
            server.client.post("/v1/reward", json={"decision_id": f"h{t}",
                                                   "reward": float(answer["action"] == 0)})
        drift = server.client.get("/v1/model").json()["drift"]
        assert drift["observed"] == 40 and len(drift["history_observed"]) == 4
        text = server.client.get("/metrics").text
        lines = dict(line.rsplit(" ", 1) for line in text.splitlines()
                     if line.startswith("glmbandits_drift_"))
        assert lines['glmbandits_drift_observations_total{scored="true"}'] == "40"
        assert lines["glmbandits_drift_alarms_total"] == str(drift["alarms"])
        assert float(lines['glmbandits_drift_window_mean{kind="observed"}']) == \
            drift["observed_mean"]
        assert float(lines['glmbandits_drift_window_mean{kind="predicted"}']) == \
            drift["predicted_mean"]
        assert float(lines['glmbandits_drift_statistic{value="z"}']) == drift["statistic"]
        assert "# TYPE glmbandits_drift_alarms_total counter" in text
    finally:
        assert server.terminate() == 0, server.output()

