"""SW-GLUCB (Russac, Cappé & Garivier 2020): the sliding-window MLE policy."""

import math

import numpy as np
import pytest

import policy_catalogue
from glmbandits import SWGLUCB, UCBGLM, load, save, simulate
from glmbandits.environments import PiecewiseStationaryGLMEnv
from glmbandits.policies.registry import ProblemSpec, make_policy


def _feed(policy, n, seed, d=3):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        X = policy_catalogue.unit_ball_contexts(rng, 5, d)
        a = policy.select(X)
        policy.update(X[a], float(rng.random() < 0.5))


@pytest.mark.parametrize("kwargs, error, message", [
    ({"window": 0}, ValueError, "SWGLUCB: window must be >= 1, got 0"),
    ({"window": 2.5}, TypeError, "SWGLUCB: window must be an int, got float"),
    ({"l2": 0.0}, ValueError, "SWGLUCB: l2 must be > 0, got 0"),
    ({"alpha": -1.0}, ValueError, "SWGLUCB: alpha must be > 0, got -1"),
    ({"family": "cauchit"}, ValueError, "SWGLUCB: family must be one of"),
])
def test_bad_hyperparameters_are_refused_by_name(kwargs, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(")):
        SWGLUCB(3, **kwargs)


@pytest.mark.parametrize("args, kwargs, message", [
    ((3, 100, 0), {"theta_norm": 1.0}, "SWGLUCB.from_theory: breakpoints must be >= 1, got 0"),
    ((3, 0, 1), {"theta_norm": 1.0}, "SWGLUCB.from_theory: horizon must be >= 1, got 0"),
    ((3, 100, 1), {"theta_norm": 1.0, "delta": 1.5},
     r"SWGLUCB.from_theory: delta must lie in \(0, 1\), got 1.5"),
])
def test_from_theory_refuses_bad_problems(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        SWGLUCB.from_theory(*args, **kwargs)


def test_from_theory_takes_the_window_of_the_rate_and_the_self_normalised_width():
    d, T, G = 4, 20_000, 5
    policy = SWGLUCB.from_theory(d, T, G, theta_norm=1.0, delta=0.1, seed=0)
    tau = math.ceil((d * T / G) ** (2 / 3))
    assert policy.window == tau
    kappa = 1 / (2 + 2 * math.cosh(2.0))  # logistic μ' at radius ‖θ*‖ + 1 = 2
    beta = 1.0 + 0.5 * math.sqrt(2 * math.log(T / 0.1) + d * math.log(1 + tau / d))
    assert policy.alpha == pytest.approx(0.25 * beta / kappa, rel=1e-12)
    # more breakpoints, a shorter window; the window stays within [d, T]
    assert SWGLUCB.from_theory(d, T, 50, theta_norm=1.0).window < tau
    assert SWGLUCB.theory_window(d, 10, 1) == 10 and SWGLUCB.theory_window(5, 6, 6) == 5


def test_a_window_at_least_the_horizon_is_ucb_glms_estimate():
    T = 80
    window, full = SWGLUCB(3, window=T, seed=0), UCBGLM(3, tau=0, l2=1.0, seed=0, refit_tol=0.0)
    rng = np.random.default_rng(2)
    for _ in range(T):
        X = policy_catalogue.unit_ball_contexts(rng, 5, 3)
        window.select(X)
        full.select(X)
        x, y = X[int(rng.integers(5))], float(rng.random() < 0.5)
        window.update(x, y)
        full.update(x, y)
        np.testing.assert_allclose(window.estimate_.theta, full.estimate_.theta, atol=1e-6)
        np.testing.assert_array_equal(window.V_inv_, full.V_inv_)


def test_the_window_forgets_samples_older_than_tau():
    policy = SWGLUCB(2, window=4, seed=0)
    for _ in range(20):  # old samples: the first feature always rewarded
        policy.update(np.array([1.0, 0.0]), 1.0)
    for _ in range(4):  # the window now holds only unrewarded ones
        policy.update(np.array([1.0, 0.0]), 0.0)
    assert policy.estimate_.theta[0] < 0
    np.testing.assert_allclose(policy.V_inv_, np.diag([1 / 5, 1.0]), atol=1e-14)


def test_save_and_load_continue_bit_for_bit_with_a_full_window(tmp_path):
    policy = SWGLUCB(3, window=6, seed=4)
    _feed(policy, 23, seed=1)  # the ring buffer has wrapped
    loaded = load(save(policy, tmp_path / "sw.glmb"))
    np.testing.assert_array_equal(loaded.estimate_.window_.X_, policy.estimate_.window_.X_)
    assert loaded.estimate_.window_.next_ == policy.estimate_.window_.next_
    _feed(policy, 15, seed=9)
    _feed(loaded, 15, seed=9)
    np.testing.assert_array_equal(policy.estimate_.theta, loaded.estimate_.theta)
    np.testing.assert_array_equal(policy.V_inv_, loaded.V_inv_)
    np.testing.assert_array_equal(policy.last_scores_.ucb, loaded.last_scores_.ucb)


def test_a_refused_update_leaves_the_window_unchanged():
    policy = SWGLUCB(2, window=3, seed=0)
    _feed(policy, 5, seed=3, d=2)
    before = (policy.estimate_.window_.X_.copy(), policy.V_inv_.copy(),
              policy.estimate_.window_.next_)
    with pytest.raises(ValueError, match="reward"):
        policy.update(np.array([0.5, 0.5]), 2.0)  # outside the logistic domain
    assert policy.estimate_.window_.next_ == before[2]
    np.testing.assert_array_equal(policy.estimate_.window_.X_, before[0])
    np.testing.assert_array_equal(policy.V_inv_, before[1])


def test_the_registry_builds_it():
    policy = make_policy("sw-glucb", ProblemSpec(3, 5, "poisson", 100), seed=0, window=10)
    assert isinstance(policy, SWGLUCB) and policy.family.name == "poisson" and policy.window == 10


def flip_regret(policy, seed, horizon=2000):
    """Dynamic regret when θ* (‖θ*‖ = 2, d = 2, K = 10) flips to -θ* at T/2."""
    env = PiecewiseStationaryGLMEnv(2, 10, "logistic", theta_norm=2.0, breakpoints=1,
                                    horizon=horizon, jump="flip", seed=seed)
    return float(simulate(policy, env, horizon, seed=seed).cumulative_regret[-1])


@pytest.mark.slow
def test_forgetting_helps_after_an_abrupt_change():
    """θ* flips at T/2: the window forgets the old θ*, the full MLE drags it along
    (about 77 against 600 on these seeds)."""
    forgetting = [flip_regret(SWGLUCB(2, window=150, seed=s), s) for s in range(4)]
    stationary = [flip_regret(UCBGLM(2, seed=s), s) for s in range(4)]
    assert np.mean(forgetting) < 0.5 * np.mean(stationary), (forgetting, stationary)
