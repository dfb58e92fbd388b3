"""DriftMonitor: its stated false-alarm bound, detection of a flip, refusals, the policy hook
(select/update, decide/reward, shadow, registered decisions), restart on alarm, save/load."""

from __future__ import annotations

import math

import numpy as np
import pytest

from glmbandits import LinUCB, UCBGLM, simulate
from glmbandits.environments import PiecewiseStationaryGLMEnv, SyntheticGLMEnv
from glmbandits.evaluation import DriftMonitor, restart_policy
from glmbandits.families import get_family


def _stream(monitor: DriftMonitor, predicted: np.ndarray, rewards: np.ndarray) -> None:
    for p, y in zip(predicted.tolist(), rewards.tolist()):
        monitor.observe(p, y)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["logistic", "poisson", "linear"])
def test_false_alarm_rate_on_stationary_streams_is_within_alpha(family):
    # 300 stationary streams of 2 000 calibrated predictions (19 checks each): the share
    # with any alarm is at most alpha = 0.05, up to three binomial standard errors.
    alpha, seeds, n = 0.05, 300, 2000
    with_alarm = 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        if family == "logistic":
            p = rng.uniform(0.02, 0.98, n)
            y = (rng.random(n) < p).astype(float)
        elif family == "poisson":
            p = rng.uniform(0.1, 5.0, n)
            y = rng.poisson(p).astype(float)
        else:
            p = rng.normal(size=n)
            y = p + 0.5 * rng.normal(size=n)
        monitor = DriftMonitor(window=100, alpha=alpha, family=family)
        _stream(monitor, p, y)
        assert monitor.status().observed == n
        with_alarm += monitor.status().alarms > 0
    assert with_alarm / seeds <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / seeds), with_alarm


def test_a_constant_bias_or_a_wrong_dispersion_is_not_drift():
    # predictions 0.2 too high everywhere, Gaussian noise 3x the family's noise_sd: the
    # level of the residuals and their scale are not what the test looks at
    rng = np.random.default_rng(1)
    p = rng.normal(size=3000)
    monitor = DriftMonitor(window=200, alpha=0.01, family="linear")
    _stream(monitor, p + 0.2, p + 1.5 * rng.normal(size=3000))
    assert monitor.status().alarms == 0 and monitor.status().checks == 13


@pytest.mark.slow
def test_ucb_glm_on_a_stationary_problem_raises_no_alarm():
    # a learning UCB policy: its predictions of the chosen actions may be biased (the winner's
    # curse) by an amount that shrinks with t; adjacent windows cancel a slowly moving bias
    alarms = 0
    for seed in range(10):
        env = SyntheticGLMEnv(n_features=5, n_actions=10, family="logistic", seed=seed)
        policy = UCBGLM(5, seed=seed).monitor_drift(DriftMonitor(window=200, alpha=0.05))
        simulate(policy, env, 3000, seed=seed)
        status = policy.drift_
        assert status.observed == 3000 and len(status.history_observed) == 14
        alarms += status.alarms
    assert alarms <= 2, alarms  # alpha = 0.05 bounds the expected count by 0.5


def _first_alarm(policy, env, horizon, seed):
    contexts, first = env.reset(seed=seed), None
    for t in range(horizon):
        action = policy.select(contexts)
        contexts_next, reward, _ = env.step(action)
        policy.update(contexts[action], reward)
        contexts = contexts_next
        if first is None and policy.drift_.alarms:
            first = t + 1
    return first


@pytest.mark.slow
def test_an_abrupt_flip_is_detected_within_two_windows():
    # theta* -> -theta* at t = 2100 (inside a block): the first alarm comes within
    # 2 * window = 400 rewarded decisions on at least 9 of 10 seeds, and none before it
    delays = []
    for seed in range(10):
        env = PiecewiseStationaryGLMEnv(5, 10, "logistic", theta_norm=2.0,
                                        breakpoints=[2100], horizon=3000, jump="flip",
                                        seed=seed)
        policy = UCBGLM(5, seed=seed).monitor_drift(DriftMonitor(window=200, alpha=0.05))
        first = _first_alarm(policy, env, 3000, seed)
        assert first is None or first > 2100, (seed, first)
        delays.append(math.inf if first is None else first - 2100)
    assert sum(delay <= 400 for delay in delays) >= 9, delays


def test_restart_on_alarm_empties_the_estimate_and_keeps_the_version():
    monitor = DriftMonitor(window=50, alpha=0.05, warmup=0, action="restart")
    policy = UCBGLM(2, seed=0).monitor_drift(monitor)
    X = np.eye(2)
    for t in range(200):  # the world flips at 100: action rewards swap
        a = policy.select(X)
        policy.update(X[a], float((a == 0) == (t < 100)))
    status = policy.drift_
    assert status.alarms >= 1
    assert policy.n_updates_ == 200
    assert policy.estimate_.history.y.size == 200 - status.last_alarm_at
    assert policy.drift_monitor_ is monitor


def test_the_prediction_is_the_decision_time_mean_of_the_learned_row():
    family = get_family("logistic")
    policy = UCBGLM(3, seed=0).monitor_drift(DriftMonitor(window=10, warmup=0))
    rng = np.random.default_rng(0)
    predicted = []
    for i in range(10):
        X = rng.normal(size=(4, 3)) / 2
        shadow = i % 2 == 0
        decision = policy.decide(X, f"d{i}", excluded=[3] if i % 3 == 0 else None,
                                 default_action=1 if shadow else None, now=float(i))
        row = int(np.flatnonzero(decision.candidates == decision.action)[0])
        predicted.append(float(family.mean(decision.scores.mean[row])))
        policy.reward(f"d{i}", float(i % 2), now=float(i))
    status = policy.drift_
    assert status.observed == 10 and status.unscored == 0
    assert status.history_predicted == (sum(predicted) / 10,)
    assert status.history_observed == (0.5,)


def test_rewards_without_a_prediction_are_counted_not_tested():
    policy = UCBGLM(2, seed=0).monitor_drift(DriftMonitor(window=10))
    policy.update([1.0, 0.0], 1.0)  # no select before
    policy.register_decision("r1", np.eye(2), 0, [0.5, 0.5], model_version=0, timestamp=0.0)
    policy.reward("r1", 1.0, now=1.0)  # scores computed elsewhere (NaN)
    a = policy.select(np.eye(2))
    policy.update(np.eye(2)[a], 0.0)
    policy.update(np.eye(2)[a], 0.0)  # the select's prediction is used once
    assert (policy.drift_.observed, policy.drift_.unscored) == (1, 3)


def test_a_failed_batch_leaves_the_monitor_as_it_was():
    policy = UCBGLM(2, seed=0).monitor_drift(DriftMonitor(window=10, warmup=0))
    for i in range(3):
        policy.decide(np.eye(2), f"d{i}", now=0.0)

    class Broken:
        def record_reward(self, *args, **kwargs):
            if args[0] == "d2":
                raise OSError("disk full")

    before = dict(vars(policy.drift_monitor_))
    policy.event_log = Broken()
    with pytest.raises(OSError):
        policy.reward_batch(["d0", "d1", "d2"], [1.0, 0.0, 1.0], now=1.0)
    policy.event_log = None
    assert vars(policy.drift_monitor_) == before
    assert policy.drift_.observed == 0


@pytest.mark.parametrize("kwargs, message", [
    ({"window": 5}, "DriftMonitor: window must be >= 10, got 5"),
    ({"window": 1.5}, "DriftMonitor: window must be an int, got float"),
    ({"alpha": 1.5}, "DriftMonitor: alpha must lie in (0, 1), got 1.5"),
    ({"alpha": 0.0}, "DriftMonitor: alpha must lie in (0, 1), got 0"),
    ({"warmup": -1}, "DriftMonitor: warmup must be >= 0, got -1"),
    ({"min_variance": 0.0}, "DriftMonitor: min_variance must be > 0, got 0"),
    ({"action": "panic"}, "DriftMonitor: action must be one of ['none', 'restart'], got 'panic'"),
    ({"family": "gamma"}, "DriftMonitor: family must be one of"),
])
def test_bad_parameters_are_refused_by_name(kwargs, message):
    with pytest.raises((ValueError, TypeError)) as error:
        DriftMonitor(**kwargs)
    assert str(error.value).startswith(message)


def test_bad_observations_and_attachments_are_refused_and_change_nothing():
    monitor = DriftMonitor(window=10)
    before = dict(vars(monitor))
    with pytest.raises(ValueError, match="DriftMonitor.observe: reward must be finite, got nan"):
        monitor.observe(0.5, math.nan)
    with pytest.raises(TypeError, match="DriftMonitor.observe: predicted must be a real"):
        monitor.observe("0.5", 1.0)
    assert vars(monitor) == before
    policy = UCBGLM(2, seed=0)
    with pytest.raises(TypeError, match="UCBGLM.monitor_drift: monitor must be a DriftMonitor"):
        policy.monitor_drift("drift")
    with pytest.raises(ValueError, match="UCBGLM.monitor_drift: the monitor's family must be "
                                         "the policy's"):
        policy.monitor_drift(DriftMonitor(family="poisson"))
    assert policy.drift_ is None and "drift_monitor_" not in vars(policy)
    assert LinUCB(2, seed=0).monitor_drift(DriftMonitor()).drift_monitor_.family is None
    policy.monitor_drift(DriftMonitor())
    assert policy.drift_monitor_.family == get_family("logistic")
    assert policy.monitor_drift(None).drift_ is None


def _play(policy, rounds, seed):
    rng = np.random.default_rng(seed)
    actions = []
    for t in range(rounds):
        X = rng.normal(size=(5, 3)) / 2
        a = policy.select(X)
        actions.append(a)
        policy.update(X[a], float(rng.random() < 0.7 if t % 400 < 200 else rng.random() < 0.2))
    return actions


def _state(monitor):
    return {key: value.tolist() if isinstance(value, np.ndarray) else value
            for key, value in vars(monitor).items()}


@pytest.mark.parametrize("action", ["none", "restart"])
def test_a_monitored_policy_saves_and_loads_exactly(tmp_path, action):
    policy = UCBGLM(3, seed=0).monitor_drift(DriftMonitor(window=40, alpha=0.1, action=action))
    _play(policy, 450, seed=1)
    assert policy.drift_.alarms >= 1  # the stream above changes every 200 rounds
    path = policy.save(tmp_path / "model.glmb")
    loaded = UCBGLM.load(path)
    assert type(loaded.drift_monitor_) is DriftMonitor
    assert _state(loaded.drift_monitor_) == _state(policy.drift_monitor_)
    assert loaded.drift_ == policy.drift_
    assert _play(loaded, 300, seed=2) == _play(policy, 300, seed=2)
    assert _state(loaded.drift_monitor_) == _state(policy.drift_monitor_)


def test_restart_policy_refuses_a_policy_without_its_parameters():
    class Odd(UCBGLM):
        def __init__(self, d):
            super().__init__(n_features=d, seed=0)

    with pytest.raises(ValueError, match="restart_policy: policy must keep its constructor"):
        restart_policy(Odd(2))
    with pytest.raises(ValueError, match="Odd.monitor_drift: action='restart' needs"):
        Odd(2).monitor_drift(DriftMonitor(action="restart"))


@pytest.mark.parametrize("change, message", [
    (lambda m: setattr(m, "alpha", 5.0), "DriftMonitor: alpha must lie in (0, 1), got 5"),
    (lambda m: setattr(m, "window", 3), "DriftMonitor: window must be >= 10, got 3"),
    (lambda m: setattr(m, "alarms_", -1), "alarms_ must be >= 0, got -1"),
    (lambda m: setattr(m, "history_observed_", np.zeros((2, 2))), "two float64 vectors"),
    (lambda m: setattr(m, "extra", 1), "DriftMonitor (loaded): attributes must be"),
])
def test_a_crafted_monitor_in_a_model_file_is_refused(tmp_path, change, message):
    from glmbandits.exceptions import ModelFileError

    policy = UCBGLM(2, seed=0).monitor_drift(DriftMonitor(window=10))
    change(policy.drift_monitor_)
    path = policy.save(tmp_path / "crafted.glmb")
    with pytest.raises(ModelFileError, match="cannot be loaded") as error:
        UCBGLM.load(path)
    assert message in str(error.value)
