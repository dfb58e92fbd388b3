"""IPS, SNIPS and DR on non-uniform logs with known values; the DR reward model."""

from __future__ import annotations

import numpy as np
import pytest
from offline_helpers import FirstActionPolicy, FixedThetaPolicy

from glmbandits import RandomPolicy, SyntheticGLMEnv, UCBGLM
from glmbandits.evaluation import (
    LoggedBanditData,
    collect_log,
    cross_fitted_reward_model,
    doubly_robust,
    fit_on_log,
    ips,
    snips,
    softmax_logging,
    target_actions,
    true_value,
)

THETA_STAR = np.array([2.0, -1.0, 1.5])
LOGGING_THETA = np.array([-1.5, 1.0, 0.0])  # logs favour actions the target does not pick


def _log(seed: int, horizon: int = 4000) -> LoggedBanditData:
    env = SyntheticGLMEnv(3, n_actions=5, theta=THETA_STAR, seed=0)
    return collect_log(env, horizon, softmax_logging(LOGGING_THETA, temperature=1.0), seed=seed)


@pytest.mark.slow
def test_ips_snips_and_dr_recover_the_value_on_a_non_uniform_log() -> None:
    covered = {"ips": 0, "snips": 0, "dr": 0}
    errors = {"ips": [], "snips": [], "dr": []}
    widths = {"ips": [], "dr": []}
    for seed in range(8):
        log = _log(seed)
        assert not log.is_uniform()
        policy = FixedThetaPolicy(THETA_STAR, seed=seed)
        actions = target_actions(policy, log)
        truth = true_value(policy, log, actions=actions)
        estimates = {"ips": ips(policy, log, actions=actions),
                     "snips": snips(policy, log, actions=actions),
                     "dr": doubly_robust(policy, log, actions=actions)}
        for name, estimate in estimates.items():
            covered[name] += estimate.ci_low <= truth <= estimate.ci_high
            errors[name].append(estimate.value - truth)
        widths["ips"].append(estimates["ips"].half_width)
        widths["dr"].append(estimates["dr"].half_width)
    assert log.rewards.mean() < truth - 0.2  # the naive logged mean is far off
    # sd of one estimate at T = 4000: about 0.06 (ips) and 0.025 (snips, dr); 8 seeds
    tolerance = {"ips": 0.06, "snips": 0.03, "dr": 0.03}
    for name in covered:
        assert covered[name] >= 6, name
        assert abs(np.mean(errors[name])) < tolerance[name], name
    assert np.mean(widths["dr"]) < 0.8 * np.mean(widths["ips"])  # a good model cuts variance


def test_dr_stays_unbiased_with_a_misspecified_reward_model() -> None:
    log = _log(11)
    policy = FixedThetaPolicy(THETA_STAR, seed=1)
    actions = target_actions(policy, log)
    truth = true_value(policy, log, actions=actions)
    estimate = doubly_robust(policy, log, family="poisson", actions=actions)  # wrong link
    assert estimate.ci_low <= truth <= estimate.ci_high


def test_ips_of_the_logging_policy_itself_is_the_logged_mean() -> None:
    rng = np.random.default_rng(4)
    T = 300
    log = LoggedBanditData(rng.random((T, 1, 2)), np.zeros(T, dtype=int),
                           rng.integers(2, size=T).astype(float), np.ones(T))
    for estimator in (ips, snips, doubly_robust):
        estimate = estimator(FirstActionPolicy(np.zeros(2)), log)
        assert estimate.value == pytest.approx(log.rewards.mean())
        assert estimate.n_matched == T


def test_snips_without_a_match_raises() -> None:
    log = LoggedBanditData(np.zeros((3, 2, 1)), [1, 1, 1], [1.0, 0.0, 1.0], [0.5] * 3)
    assert ips(FirstActionPolicy(np.zeros(1)), log).value == 0.0
    with pytest.raises(ValueError, match="self-normalised estimate is undefined"):
        snips(FirstActionPolicy(np.zeros(1)), log)


def test_cross_fitted_reward_model_recovers_theta_star() -> None:
    log = _log(7, horizon=3000)
    thetas, fold = cross_fitted_reward_model(log, "logistic", l2=0.1)
    assert fold.tolist()[:4] == [0, 1, 0, 1]
    for theta in thetas:  # θ* and a zero intercept
        assert np.linalg.norm(theta - np.append(THETA_STAR, 0.0)) < 0.6
    thetas, _ = cross_fitted_reward_model(log, "logistic", l2=0.1, intercept=False)
    assert thetas.shape == (2, 3) and np.linalg.norm(thetas[0] - THETA_STAR) < 0.6


def test_fit_on_log_trains_a_policy_that_beats_random_offline() -> None:
    log = _log(3, horizon=3000)
    train, test = log.split(0.5)
    policy = fit_on_log(UCBGLM(3, seed=0), train)
    assert policy.n_updates_ == train.n_rounds
    trained = true_value(policy, test)
    random = true_value(RandomPolicy(3, seed=0), test)
    assert trained > random + 0.15
    estimate = doubly_robust(policy, test)
    assert estimate.ci_low > random


def test_collect_log_takes_a_seed_sequence_as_its_seed_like_argument() -> None:
    # SeedLike includes SeedSequence; collect_log passed it to SeedSequence() (a TypeError)
    env = SyntheticGLMEnv(3, n_actions=5, theta=THETA_STAR, seed=0)
    first = collect_log(env, 50, seed=np.random.SeedSequence(7))
    again = collect_log(env, 50, seed=np.random.SeedSequence(7))
    assert np.array_equal(first.actions, again.actions)
    assert np.array_equal(first.rewards, again.rewards)
    assert np.array_equal(first.actions, collect_log(env, 50, seed=7).actions)
