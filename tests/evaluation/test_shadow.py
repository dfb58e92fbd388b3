"""Shadow-mode evaluation on simulated logs where the truth is known (seeded, wide margins)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from glmbandits.data import LoggedBanditData
from glmbandits.evaluation.shadow import ShadowEvaluation, evaluate_shadow
from glmbandits.families import get_family

LOGISTIC = get_family("logistic", "test")


def _softmax(scores: np.ndarray, temperature: float) -> np.ndarray:
    z = scores / temperature
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _world(seed: int, T: int = 4000, K: int = 8, d: int = 5, *, policy_temperature=0.3,
           randomized_default: bool = False, extra_effect: float = 0.0,
           default_avoids_last: bool = False):
    """A logistic world with θ*, a client default and a shadow policy's distributions.

    The default picks the action with the largest first feature (a heuristic that
    knows little of θ*; with ``default_avoids_last`` never the last action); the policy is a softmax of x'θ̂ with θ̂ near θ*. With
    ``extra_effect`` the expected reward of the last action gets an extra logit the
    features do not explain (a misspecified world for the GLM reward model).
    """
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=d)
    theta *= 2.5 / np.linalg.norm(theta)
    theta[0] = 0.5  # the default knows a little of θ*
    X = rng.normal(size=(T, K, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=2, keepdims=True))
    logits = X @ theta
    logits[:, -1] += extra_effect
    mu = LOGISTIC.mean(logits)
    if randomized_default:
        default_pi = _softmax(X[:, :, 0], 0.5)
        actions = np.array([rng.choice(K, p=row) for row in default_pi])
        propensities = default_pi[np.arange(T), actions]
    else:
        actions = np.argmax(X[:, : K - 1 if default_avoids_last else K, 0], axis=1)
        propensities = None
    rewards = (rng.random(T) < mu[np.arange(T), actions]).astype(float)
    theta_hat = theta + rng.normal(scale=0.3, size=d)
    pi = _softmax(X @ theta_hat, policy_temperature)
    truth_policy = float(np.mean(np.sum(pi * mu, axis=1)))
    truth_default = float(np.mean(mu[np.arange(T), actions])) if not randomized_default else \
        float(np.mean(np.sum(default_pi * mu, axis=1)))
    return LoggedBanditData(X, actions, rewards), pi, propensities, truth_policy, truth_default


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_dr_and_the_default_mean_find_the_truth_under_the_model(seed: int) -> None:
    log, pi, _, truth_policy, truth_default = _world(seed)
    result = evaluate_shadow(log, pi)
    assert result.logging == "deterministic"
    assert abs(result.default.value - truth_default) < 0.03
    assert result.default.ci_low - 0.01 <= truth_default <= result.default.ci_high + 0.01
    # DR's interval includes the reward model's estimation error: it covers the truth
    assert abs(result.policy_dr.value - truth_policy) < 0.05
    assert result.policy_dr.ci_low - 0.01 <= truth_policy <= result.policy_dr.ci_high + 0.01
    true_lift = truth_policy - truth_default
    assert true_lift > 0.1  # the policy is much better than the heuristic ...
    assert result.lift_dr.ci_low > 0.0  # ... and the evaluation says so
    assert result.lift_dr.ci_low - 0.01 <= true_lift <= result.lift_dr.ci_high + 0.01
    # the log cannot see most of the policy's mass, and the result says it
    assert result.model_share > 0.5 and result.agreement == pytest.approx(1 - result.model_share)
    diagnostics = result.policy_dr.diagnostics
    assert diagnostics.deterministic_share == 1.0 and diagnostics.unsupported_share > 0.9
    assert diagnostics.poor
    assert not result.dr_unbiased and not result.snips_unbiased
    assert any("reward model" in note for note in result.notes)
    # the model-free bounds always contain the truth, and they are wide
    low, high = result.value_bounds
    assert low <= truth_policy <= high and high - low == pytest.approx(result.model_share)
    lift_low, lift_high = result.lift_bounds
    assert lift_low <= true_lift <= lift_high


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_snips_with_a_deterministic_client_is_not_the_policys_value(seed: int) -> None:
    """A policy that keeps 20% on the default and puts 80% on its own best guess: SNIPS
    only averages the default's rewards (weighted 0.2, or 1 where the two coincide), so
    it misses most of the lift; DR finds it; the result marks SNIPS biased."""
    log, pi, _, _, truth_default = _world(seed)
    rounds = np.arange(log.n_rounds)
    mixed = np.zeros_like(pi)
    mixed[rounds, log.actions] += 0.2
    mixed[rounds, np.argmax(pi, axis=1)] += 0.8
    truth_policy = _truth(seed, mixed, extra_effect=0.0)
    assert truth_policy - truth_default > 0.1
    result = evaluate_shadow(log, mixed)
    assert not result.snips_unbiased
    assert result.policy_snips.value < truth_policy - 0.08
    assert result.policy_dr.ci_low - 0.01 <= truth_policy <= result.policy_dr.ci_high + 0.01
    assert any("SNIPS here is the default's mean reward" in note for note in result.notes)


@pytest.mark.slow
def test_a_misspecified_world_biases_dr_but_never_the_bounds() -> None:
    """The last action is much worse than its features say, the default never shows it
    and the policy gives it half its mass: the log holds no trace of the effect, DR
    (model-based) is far off, and the model-free bounds still hold the truth."""
    log, pi, _, truth_policy, _ = _world(3, extra_effect=-4.0, default_avoids_last=True)
    pi = 0.5 * pi
    pi[:, -1] += 0.5
    truth_policy = _truth(3, pi, extra_effect=-4.0)
    result = evaluate_shadow(log, pi)
    low, high = result.value_bounds
    assert low <= truth_policy <= high
    assert result.policy_dr.value > truth_policy + 0.1
    assert result.policy_dr.ci_low > truth_policy  # the interval cannot see a wrong model
    assert any("not a wrong model" in note for note in result.notes)


def _truth(seed: int, pi: np.ndarray, extra_effect: float, K: int = 8, d: int = 5) -> float:
    """V(π) for the contexts and θ* that ``_world(seed)`` draws (the same draws in order)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=d)
    theta *= 2.5 / np.linalg.norm(theta)
    theta[0] = 0.5
    X = rng.normal(size=(pi.shape[0], K, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=2, keepdims=True))
    logits = X @ theta
    logits[:, -1] += extra_effect
    return float(np.mean(np.sum(pi * LOGISTIC.mean(logits), axis=1)))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_a_randomizing_client_with_propensities_makes_dr_and_snips_unbiased(seed: int) -> None:
    log, pi, propensities, truth_policy, _ = _world(seed, randomized_default=True,
                                                    policy_temperature=1.0, extra_effect=1.0)
    result = evaluate_shadow(log, pi, default_propensities=propensities)
    assert result.logging == "randomized" and result.dr_unbiased and result.snips_unbiased
    assert result.value_bounds is None
    # with a misspecified reward model, DR is still right through the weights
    assert abs(result.policy_dr.value - truth_policy) < 0.04
    assert abs(result.policy_snips.value - truth_policy) < 0.05


def test_a_policy_that_always_agrees_is_worth_exactly_the_default() -> None:
    log, _, _, _, _ = _world(0, T=500)
    pi = np.zeros((500, 8))
    pi[np.arange(500), log.actions] = 1.0
    result = evaluate_shadow(log, pi)
    assert result.policy_dr.value == pytest.approx(result.default.value, abs=1e-12)
    assert result.policy_snips.value == pytest.approx(result.default.value, abs=1e-12)
    assert result.lift_dr.value == pytest.approx(0.0, abs=1e-12)
    assert result.model_share == 0.0 and result.agreement == 1.0
    assert result.value_bounds[0] == pytest.approx(result.value_bounds[1])
    assert not result.policy_dr.diagnostics.poor


def test_a_policy_that_never_agrees_has_no_snips() -> None:
    log, _, _, _, _ = _world(1, T=300)
    pi = np.zeros((300, 8))
    pi[np.arange(300), (log.actions + 1) % 8] = 1.0
    result = evaluate_shadow(log, pi)
    assert result.policy_snips is None and result.model_share == 1.0
    assert result.value_bounds == (0.0, 1.0)


def test_the_result_is_frozen_and_serialises_to_json() -> None:
    log, pi, _, _, _ = _world(2, T=400)
    result = evaluate_shadow(log, pi)
    assert isinstance(result, ShadowEvaluation)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.agreement = 1.0
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["logging"] == "deterministic"
    assert data["policy_dr"]["estimator"] == "dr"
    assert data["policy_dr"]["diagnostics"]["poor"] is True
    assert data["policy_dr"]["diagnostics"]["reasons"]
    assert data["default"]["value"] == pytest.approx(result.default.value)
    assert data["value_bounds"] == list(result.value_bounds)
    assert isinstance(data["notes"], list) and data["notes"]


def test_non_finite_numbers_become_null_in_json() -> None:
    from glmbandits.evaluation.shadow import _json_ready
    assert _json_ready({"a": float("nan"), "b": (1, np.float64(np.inf)), "c": np.bool_(True)}) \
        == {"a": None, "b": [1, None], "c": True}


@pytest.mark.parametrize("kwargs, error, match", [
    ({"policy_probabilities": np.full((10, 3), 0.5)}, ValueError,
     "probabilities must sum to 1"),
    ({"policy_probabilities": np.full((9, 3), 1 / 3)}, ValueError,
     r"probabilities must have shape \(10, 3\)"),
    ({"default_propensities": np.zeros(10)}, ValueError,
     r"default_propensities must lie in \(0, 1\], got 0.0 in round 0"),
    ({"default_propensities": np.ones(3)}, ValueError,
     r"default_propensities must have shape \(10,\)"),
    ({"reward_range": (1.0, 0.0)}, ValueError, "reward_range must be finite with low < high"),
    ({"reward_range": (0.0, 0.5)}, ValueError, "every reward must lie in reward_range"),
    ({"reward_range": "wide"}, TypeError, "reward_range must be a pair"),
    ({"confidence": 1.5}, ValueError, "confidence must lie in"),
    ({"intercept": 1}, TypeError, "intercept must be a bool"),
])
def test_bad_input_raises_naming_the_parameter(kwargs, error, match) -> None:
    rng = np.random.default_rng(0)
    log = LoggedBanditData(rng.normal(size=(10, 3, 2)), rng.integers(0, 3, 10),
                           (rng.random(10) < 0.5).astype(float))
    arguments = {"policy_probabilities": np.full((10, 3), 1 / 3), **kwargs}
    with pytest.raises(error, match=match):
        evaluate_shadow(log, **arguments)
    with pytest.raises(TypeError, match="log must be a LoggedBanditData"):
        evaluate_shadow({"actions": []}, np.ones((1, 1)))
