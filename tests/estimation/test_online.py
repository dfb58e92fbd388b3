"""The shared machinery of the modern policies: proximal step, projection, TS propensity."""

import numpy as np
import pytest
from scipy import optimize

from glmbandits.families import get_family
from glmbandits.policies.thompson import thompson_choice
from glmbandits.estimation.online import project_ball, proximal_glm_step, solve_proximal_scalar


@pytest.mark.parametrize("family_name", ["logistic", "probit", "linear", "poisson"])
@pytest.mark.parametrize("y", [0.0, 1.0, 0.3])
def test_proximal_step_matches_direct_minimisation(family_name, y):
    family = get_family(family_name)
    rng = np.random.default_rng(1)
    d = 4
    A = rng.normal(size=(d, d))
    V = A @ A.T + np.eye(d)
    theta0 = rng.normal(size=d) * 0.5
    x = rng.normal(size=d)
    x /= np.linalg.norm(x)
    weight = 2.0 if family_name == "logistic" else 1.0

    def objective(theta):
        z = x @ theta
        diff = theta - theta0
        return 0.5 * diff @ V @ diff + weight * (float(family.antiderivative(z)) - y * z)

    expected = optimize.minimize(objective, theta0, method="BFGS", options={"gtol": 1e-10}).x
    got = proximal_glm_step(theta0, np.linalg.solve(V, x), x, y, family, weight)
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_scalar_solver_handles_extreme_curvature():
    family = get_family("logistic")
    z = solve_proximal_scalar(family, 0.0, 1.0, 1e6)
    assert np.isfinite(z)
    assert abs(z - 0.0 + 1e6 * (float(family.mean(z)) - 1.0)) < 1e-6 * max(1.0, abs(z))


def test_project_ball_euclidean_and_metric():
    rng = np.random.default_rng(2)
    d = 3
    A = rng.normal(size=(d, d))
    M = A @ A.T + 0.5 * np.eye(d)
    theta = np.array([3.0, -2.0, 1.0])
    inside = np.array([0.1, 0.2, 0.0])
    np.testing.assert_array_equal(project_ball(inside, 1.0, M), inside)
    np.testing.assert_allclose(project_ball(theta, 2.0), theta * 2.0 / np.linalg.norm(theta))
    got = project_ball(theta, 2.0, M)
    assert np.linalg.norm(got) == pytest.approx(2.0, abs=1e-8)
    result = optimize.minimize(lambda u: (u - theta) @ M @ (u - theta), got * 0.9,
                               constraints=[{"type": "ineq", "fun": lambda u: 4.0 - u @ u}],
                               method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    np.testing.assert_allclose(got, result.x, atol=1e-5)


def test_thompson_choice_propensity_counts_agreeing_draws():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    samples = np.array([[1.0, 1.0, 0.0, 2.0], [0.0, 0.5, 1.0, 0.0]])  # picks 0, 0, 1, 0
    action, scores, propensity = thompson_choice(X, np.zeros(2), samples)
    assert action == 0
    assert propensity == pytest.approx(3 / 4)
    np.testing.assert_array_equal(scores.ucb, [1.0, 0.0])
