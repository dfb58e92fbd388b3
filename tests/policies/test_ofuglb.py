"""The maths of OFUGLB (Lee, Yun & Jun 2024): the per-arm optimistic value and its screen."""

import math

import numpy as np
import pytest
from scipy import optimize

from glmbandits import OFUGLB
from glmbandits.families import get_family
from glmbandits.policies.ofuglb import RidgePotential, optimistic_value, screening_metric


def _problem(family_name, n=150, d=3, seed=0, l2=1.0):
    rng = np.random.default_rng(seed)
    family = get_family(family_name)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    theta_star = np.array([1.5, -1.0, 0.5])[:d]
    y = family.sample(family.mean(X @ theta_star), rng).astype(float)
    potential = RidgePotential(X, y, family, l2)
    theta_hat, f_hat, H_hat = potential.tilted_minimiser(0.0, np.zeros(d), np.zeros(d))
    arms = rng.normal(size=(6, d))
    arms /= np.linalg.norm(arms, axis=1, keepdims=True)
    return potential, theta_hat, f_hat, H_hat, arms


@pytest.mark.parametrize("family_name", ["logistic", "probit", "poisson"])
def test_optimistic_value_matches_slsqp_and_lies_on_the_boundary(family_name):
    potential, theta_hat, f_hat, H_hat, arms = _problem(family_name)
    beta = 4.0
    # θ̂ is the minimiser: zero gradient
    X, y, family = potential.X, potential.y, potential.family
    grad = X.T @ (family.mean(X @ theta_hat) - y) + potential.l2 * theta_hat
    assert np.max(np.abs(grad)) < 1e-8
    for x in arms:
        value, theta = optimistic_value(potential, x, theta_hat, f_hat, H_hat, beta)
        assert potential.value(theta) - f_hat == pytest.approx(beta, abs=1e-6)
        assert value == pytest.approx(float(x @ theta))
        constraint = {"type": "ineq", "fun": lambda th: beta - (potential.value(th) - f_hat),
                      "jac": lambda th: -(X.T @ (family.mean(X @ th) - y) + potential.l2 * th)}
        direct = optimize.minimize(lambda th: -float(x @ th), theta_hat, jac=lambda th: -x,
                                   method="SLSQP", constraints=[constraint],
                                   options={"maxiter": 500, "ftol": 1e-10})
        # SLSQP's own point is feasible (up to its tolerance) and gives the same value
        assert potential.value(direct.x) - f_hat <= beta + 1e-6
        assert value == pytest.approx(-direct.fun, abs=1e-5)
        assert value > float(x @ theta_hat)


def test_linear_family_has_the_closed_form_ellipsoid():
    # F quadratic: the set is the ellipsoid ‖θ - θ̂‖_H <= sqrt(2β), value x'θ̂ + sqrt(2β)‖x‖_{H⁻¹}
    potential, theta_hat, f_hat, H_hat, arms = _problem("linear", l2=2.0)
    beta = 3.0
    for x in arms:
        value, _ = optimistic_value(potential, x, theta_hat, f_hat, H_hat, beta)
        closed = float(x @ theta_hat) + math.sqrt(2 * beta * float(x @ np.linalg.solve(H_hat, x)))
        assert value == pytest.approx(closed, rel=1e-9)


@pytest.mark.parametrize("family_name", ["logistic", "poisson"])
def test_screening_bound_is_an_upper_bound_of_the_exact_value(family_name):
    potential, theta_hat, f_hat, H_hat, arms = _problem(family_name, seed=3)
    beta = 6.0
    M = screening_metric(potential, theta_hat, beta)
    # refinement tightens the metric but never exceeds the curvature at θ̂
    assert np.all(np.linalg.eigvalsh(M - potential.l2 * np.eye(3)) >= -1e-12)
    assert np.all(np.linalg.eigvalsh(H_hat - M) >= -1e-9)
    for x in arms:
        value, _ = optimistic_value(potential, x, theta_hat, f_hat, H_hat, beta)
        bound = float(x @ theta_hat) + math.sqrt(2 * beta * float(x @ np.linalg.solve(M, x)))
        assert value <= bound + 1e-9


def test_screened_choice_equals_the_exact_argmax():
    rng = np.random.default_rng(7)
    theta_star = np.array([2.0, -1.0, 1.0])
    policy = OFUGLB(n_features=3, seed=0)
    family = policy.family
    for t in range(150):
        X = rng.normal(size=(12, 3))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        action = policy.select(X)
        if t % 10 == 9:
            potential = policy.potential()
            theta_hat, f_hat, H_hat = potential.tilted_minimiser(0.0, np.zeros(3),
                                                                 policy.estimate_.theta)
            exact = [optimistic_value(potential, x, theta_hat, f_hat, H_hat, policy.beta())[0]
                     for x in X]
            assert action == int(np.argmax(exact))
        policy.update(X[action], float(rng.random() < family.mean(X[action] @ theta_star)))
    assert policy.n_screened_ > 0  # the screen did skip arms
    assert policy.n_exact_solves_ + policy.n_screened_ == 150 * 12


def test_beta_is_the_theorem_radius_times_the_scale():
    policy = OFUGLB(n_features=3, beta_scale=1.0, radius=2.0, l2=1.0, delta=0.1, seed=0)
    x = np.array([0.6, 0.0, 0.0])
    for reward in (1.0, 0.0, 1.0):
        policy.update(x, reward)
    # logistic: |μ(z) - y| <= 1, so the Lipschitz constant is at most Σ‖x_s‖ + l2·S
    assert policy.lipschitz_ <= 3 * 0.6 + 2.0 + 1e-12
    assert policy.lipschitz_ > 2.0
    expected = (math.log(10.0) + 3 * math.log(max(math.e, 2 * math.e * 2.0 * policy.lipschitz_ / 3))
                + 0.5 * 1.0 * 4.0)
    assert policy.beta() == pytest.approx(expected)
    scaled = OFUGLB(n_features=3, beta_scale=0.1, radius=2.0, l2=1.0, delta=0.1, seed=0)
    for reward in (1.0, 0.0, 1.0):
        scaled.update(x, reward)
    assert scaled.beta() == pytest.approx(0.1 * expected)


@pytest.mark.parametrize("param, value", [("beta_scale", 0.0), ("radius", -1.0), ("l2", 0.0),
                                          ("delta", 1.5)])
def test_bad_hyperparameters_raise(param, value):
    with pytest.raises(ValueError, match=f"OFUGLB: {param}"):
        OFUGLB(n_features=3, **{param: value})
