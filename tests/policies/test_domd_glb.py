"""DOMD-GLB (Lee & Oh 2026): discounted online mirror descent, against the recursion written out."""

import numpy as np
import pytest

import policy_catalogue
from glmbandits import DOMDGLB, UCBGLM, load, save, simulate
from glmbandits.environments import PiecewiseStationaryGLMEnv
from glmbandits.families import get_family
from glmbandits.policies.registry import ProblemSpec, make_policy


def _stream(family, n, d, seed):
    rng = np.random.default_rng(seed)
    X = policy_catalogue.unit_ball_contexts(rng, n, d)
    theta = np.linspace(1.0, -1.0, d)
    return X, family.sample(family.mean(X @ theta), rng)


def _textbook(X, y, family, gamma, eta, l2):
    """The recursion as written: H̃ = H + ημ'(x'θ)xx', θ ← θ - η H̃⁻¹(μ(x'θ) - y)x,
    H ← γH + μ'(x'θ_new)xx' + (1-γ)λI, from θ = 0, H = λI (no projection)."""
    d = X.shape[1]
    theta, H = np.zeros(d), l2 * np.eye(d)
    for x, r in zip(X, y):
        z = x @ theta
        H_tilde = H + eta * family.dmean(z) * np.outer(x, x)
        theta = theta - eta * (family.mean(z) - r) * np.linalg.solve(H_tilde, x)
        H = gamma * H + family.dmean(x @ theta) * np.outer(x, x) + (1 - gamma) * l2 * np.eye(d)
    return theta, H


@pytest.mark.parametrize("family_name", ["logistic", "probit", "linear", "poisson"])
def test_the_updates_equal_the_textbook_recursion(family_name):
    family = get_family(family_name)
    X, y = _stream(family, 60, 3, seed=1)
    policy = DOMDGLB(3, family_name, gamma=0.9, eta=1.5, l2=0.7, radius=100.0)
    for t, (x, r) in enumerate(zip(X, y)):
        policy.update(x, float(r))
        if t in (0, 1, 10, 59):
            theta, H = _textbook(X[:t + 1], y[:t + 1], family, 0.9, 1.5, 0.7)
            np.testing.assert_allclose(policy.theta_, theta, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(policy.H_inv_, np.linalg.inv(H), rtol=1e-9, atol=1e-12)
    assert policy.n_projections_ == 0


def test_leaving_the_ball_projects_in_the_local_norm():
    family = get_family("logistic")
    policy = DOMDGLB(2, gamma=0.5, eta=50.0, radius=0.5)
    x = np.array([1.0, 0.0])
    H_tilde = policy.gram_.V + 50.0 * 0.25 * np.outer(x, x)
    step = -50.0 * (0.5 - 1.0) * np.linalg.solve(H_tilde, x)
    assert np.linalg.norm(step) > 0.5  # the unconstrained step leaves the ball
    policy.update(x, 1.0)
    assert policy.n_projections_ == 1
    assert np.linalg.norm(policy.theta_) == pytest.approx(0.5, rel=1e-9)
    assert family.mean(policy.theta_[0]) > 0.5


@pytest.mark.parametrize("kwargs, error, message", [
    ({"gamma": 1.0}, ValueError, r"DOMDGLB: gamma must lie in \(0, 1\), got 1"),
    ({"gamma": 0.0}, ValueError, r"DOMDGLB: gamma must lie in \(0, 1\), got 0"),
    ({"eta": 0.0}, ValueError, "DOMDGLB: eta must be > 0, got 0"),
    ({"radius": -1.0}, ValueError, "DOMDGLB: radius must be > 0, got -1"),
    ({"l2": 0.0}, ValueError, "DOMDGLB: l2 must be > 0, got 0"),
    ({"gamma": "0.9"}, TypeError, "DOMDGLB: gamma must be a real number"),
])
def test_bad_hyperparameters_are_refused_by_name(kwargs, error, message):
    with pytest.raises(error, match=message):
        DOMDGLB(3, **kwargs)


def test_save_and_load_continue_bit_for_bit(tmp_path):
    rng = np.random.default_rng(0)
    policy = DOMDGLB(3, gamma=0.95, seed=2)
    for _ in range(30):
        X = policy_catalogue.unit_ball_contexts(rng, 4, 3)
        policy.update(X[policy.select(X)], float(rng.random() < 0.5))
    loaded = load(save(policy, tmp_path / "domd.glmb"))
    for first in (policy, loaded):
        stream = np.random.default_rng(7)
        for _ in range(20):
            X = policy_catalogue.unit_ball_contexts(stream, 4, 3)
            first.update(X[first.select(X)], float(stream.random() < 0.5))
    np.testing.assert_array_equal(policy.theta_, loaded.theta_)
    np.testing.assert_array_equal(policy.H_inv_, loaded.H_inv_)
    np.testing.assert_array_equal(policy.last_scores_.ucb, loaded.last_scores_.ucb)


def test_the_state_does_not_grow_with_t():
    policy = DOMDGLB(3, seed=0)
    X, y = _stream(get_family("logistic"), 500, 3, seed=4)
    sizes = []
    for t, (x, r) in enumerate(zip(X, y)):
        policy.update(x, float(r))
        if t in (9, 499):
            sizes.append(sum(a.nbytes for a in vars(policy.gram_).values()
                             if isinstance(a, np.ndarray)) + policy.theta_.nbytes)
    assert sizes[0] == sizes[1]


def test_the_registry_builds_it_with_the_problems_radius():
    policy = make_policy("domd-glb", ProblemSpec(3, 5, "probit", 100, theta_norm=1.5), seed=0)
    assert isinstance(policy, DOMDGLB) and policy.radius == 1.5 and policy.family.name == "probit"


@pytest.mark.slow
def test_forgetting_helps_after_an_abrupt_change():
    """θ* (‖θ*‖ = 2, d = 2, K = 10) flips at T/2: about 59 against 600 on these seeds."""
    def regret(policy, seed, horizon=2000):
        env = PiecewiseStationaryGLMEnv(2, 10, "logistic", theta_norm=2.0, breakpoints=1,
                                        horizon=horizon, jump="flip", seed=seed)
        return float(simulate(policy, env, horizon, seed=seed).cumulative_regret[-1])
    forgetting = [regret(DOMDGLB(2, radius=2.0, seed=s), s) for s in range(4)]
    stationary = [regret(UCBGLM(2, seed=s), s) for s in range(4)]
    assert np.mean(forgetting) < 0.5 * np.mean(stationary), (forgetting, stationary)
