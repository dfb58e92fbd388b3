"""Replay (Li et al. 2011): unbiased on uniform logs, K_t-varying logs, warnings, learning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from offline_helpers import FirstActionPolicy, FixedThetaPolicy

from glmbandits import LinUCB, RandomPolicy, SyntheticGLMEnv
from glmbandits.evaluation import LoggedBanditData, OffPolicyWarning, collect_log, replay, true_value

THETA = np.array([1.0, -2.0, 0.5])


@pytest.mark.slow
def test_replay_is_unbiased_on_uniform_logs_across_seeds() -> None:
    covered, errors = 0, []
    for seed in range(10):
        env = SyntheticGLMEnv(3, n_actions=4, theta=3.0 * THETA / np.linalg.norm(THETA), seed=0)
        log = collect_log(env, 4000, seed=seed)
        policy = FixedThetaPolicy(THETA, seed=seed)
        truth = true_value(FixedThetaPolicy(THETA), log)  # mean of μ(x'θ*) of its choices
        estimate = replay(policy, log)
        assert 800 < estimate.n_matched < 1200  # about T/K events
        covered += estimate.ci_low <= truth <= estimate.ci_high
        errors.append(estimate.value - truth)
    random_value = np.mean(log.reward_table)
    assert truth > random_value + 0.15  # the policy is clearly better than random
    assert covered >= 8
    assert abs(np.mean(errors)) < 0.02  # no systematic bias (sd of the mean ≈ 0.005)


def test_replay_rejection_step_removes_the_bias_of_varying_action_sets() -> None:
    rng = np.random.default_rng(0)
    T = 20000
    K = rng.integers(2, 7, size=T)
    contexts = [np.zeros((k, 1)) for k in K]
    actions = rng.integers(0, K)
    rewards = ((actions == 0) & (K == 2)).astype(float)  # action 0 pays only when K_t = 2
    log = LoggedBanditData(contexts, actions, rewards, 1.0 / K)
    estimate = replay(FirstActionPolicy(np.zeros(1)), log, seed=0)
    truth = 0.2  # P(K_t = 2)
    naive = 0.5 / np.sum(1.0 / np.arange(2, 7))  # matched-event mean without rejection ≈ 0.345
    assert estimate.ci_low <= truth <= estimate.ci_high
    assert not estimate.ci_low <= naive <= estimate.ci_high
    assert 2800 < estimate.n_matched < 3900  # ≈ T / max K


def test_replay_warns_on_missing_or_non_uniform_propensities() -> None:
    rng = np.random.default_rng(1)
    contexts, actions = rng.random((400, 2, 2)), rng.integers(2, size=400)
    rewards = rng.integers(2, size=400).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        replay(RandomPolicy(2, seed=5), LoggedBanditData(contexts, actions, rewards, np.full(400, 0.5)))
    with pytest.warns(OffPolicyWarning, match="no propensities"):
        replay(RandomPolicy(2, seed=5), LoggedBanditData(contexts, actions, rewards))
    skewed = np.where(actions == 0, 0.8, 0.2)
    with pytest.warns(OffPolicyWarning, match="not uniform"):
        replay(RandomPolicy(2, seed=5), LoggedBanditData(contexts, actions, rewards, skewed))


def test_replay_updates_the_policy_only_on_matched_events() -> None:
    env = SyntheticGLMEnv(3, n_actions=5, seed=2)
    log = collect_log(env, 500, seed=3)
    learner = LinUCB(3, seed=0)
    estimate = replay(learner, log)
    assert learner.n_updates_ == estimate.n_matched
    assert 60 < estimate.n_matched < 140
    frozen = LinUCB(3, seed=0)
    replay(frozen, log, learn=False)
    assert frozen.n_updates_ == 0


def test_replay_with_no_matched_event_raises_and_checks_dimensions() -> None:
    log = LoggedBanditData(np.zeros((1, 3, 1)), [2], [1.0], [1 / 3])
    with pytest.raises(ValueError, match="no logged event matched"):
        replay(FirstActionPolicy(np.zeros(1)), log)
    with pytest.raises(ValueError, match="policy.n_features must equal the log's"):
        replay(RandomPolicy(4, seed=0), log)
    with pytest.raises(TypeError, match="log must be a LoggedBanditData"):
        replay(RandomPolicy(1, seed=0), {"contexts": []})
    with pytest.raises(ValueError, match="confidence must lie in"):
        replay(RandomPolicy(1, seed=0), log, confidence=1.5)


def test_replay_interval_for_binary_rewards_is_not_degenerate() -> None:
    log = LoggedBanditData(np.zeros((50, 1, 1)), np.zeros(50, dtype=int), np.zeros(50),
                           np.ones(50))
    estimate = replay(FirstActionPolicy(np.zeros(1)), log)
    assert estimate.value == 0.0 and estimate.ci_low == 0.0
    assert 0.03 < estimate.ci_high < 0.1  # Wilson: about z²/(n + z²) ≈ 0.07
