"""GLMUCB's projection (Filippi et al. 2010, eq. (7)) with a Poisson link stays finite.

Issue 21, "Solver": ``GLMUCB(family="poisson", projection=True)`` leaked
``RuntimeWarning: overflow encountered in matmul`` from its SLSQP objective, which
SLSQP evaluated at ‖θ‖ ~ 4,000 for a ball of radius 1 (μ = e^{x'θ} overflows).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from glmbandits import GLMUCB


def _play(policy: GLMUCB, rounds: int, seed: int, d: int = 4) -> None:
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=d)
    theta *= 3.0 / np.linalg.norm(theta)  # outside the ball: the projection is active
    for _ in range(rounds):
        contexts = rng.normal(size=(5, d))  # raw features, norm ~2
        action = policy.select(contexts)
        assert np.all(np.isfinite(policy.last_scores_.ucb))
        policy.update(contexts[action], float(rng.poisson(np.exp(contexts[action] @ theta))))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_poisson_projection_emits_no_runtime_warning(seed):
    # Before: RuntimeWarning (overflow in matmul) at about round 8 for every seed.
    policy = GLMUCB(4, family="poisson", projection=True, radius=1.0, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _play(policy, 40, seed)
        projected = policy.projected_theta()
    assert policy.n_projections_ > 0
    assert np.all(np.isfinite(projected))
    assert np.linalg.norm(projected) <= 1.0 + 1e-9


def test_poisson_projection_is_no_worse_than_the_radial_one():
    policy = GLMUCB(4, family="poisson", projection=True, radius=1.0, seed=3)
    _play(policy, 40, 3)
    theta = policy.estimate_.theta
    assert np.linalg.norm(theta) > 1.0
    X, V_inv, family = policy.estimate_.history.X, policy.estimate_.V_inv, policy.family
    target = X.T @ family.mean(X @ theta)

    def gap(th: np.ndarray) -> float:
        r = X.T @ family.mean(X @ th) - target
        return float(r @ V_inv @ r)

    radial = theta / np.linalg.norm(theta)
    assert gap(policy.projected_theta()) <= gap(radial) * (1 + 1e-9)
