"""GLM-TSL of Kveton, Zaheer, Szepesvári, Li, Ghavamzadeh & Boutilier (2020)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._params import keep_given
from .._validation import SeedLike, check_int, check_positive
from ..families import GLMFamily
from .base import ActionScores, Policy, tied_scores
from ..estimation.estimates import GLMEstimate
from .thompson import thompson_distribution

__all__ = ["GLMTSL"]


class GLMTSL(Policy):
    """GLM-TSL: Thompson sampling from the Laplace approximation at the MLE.

    After ``tau`` uniformly random rounds, every round t (Kveton et al. 2020,
    Algorithm 1 "GLM-TSL"):

    1. θ̂_t is the (ridge) MLE of all past samples (warm-started Newton);
    2. ``H_t = l2·I + Σ_s μ'(X_s'θ̂_t) X_s X_s'`` is the Hessian of the negative
       log-likelihood at θ̂_t;
    3. θ̃_t ~ N(θ̂_t, a² H_t⁻¹), drawn as ``θ̂_t + a·L⁻ᵀξ`` with ``H_t = LLᵀ``;
    4. ``a_t = argmax_a x_{t,a}'θ̃_t``.

    The propensity of the chosen action is a Monte-Carlo estimate from
    ``n_propensity_samples`` extra draws of θ̃ (see
    :func:`glmbandits.policies.thompson.thompson_distribution`).

    Per-round cost: O(n_t d²) for the refit and the Hessian, O(d³) for its
    Cholesky factor, O(K d (1 + M)) to score M + 1 draws.

    Parameters
    ----------
    n_features : int
    family : str or GLMFamily, default "logistic"
    a : float, default 1.0
        Posterior inflation a > 0 (the paper's a).
    tau : int, optional
        Initial uniformly random rounds; default ``2 * n_features``.
    l2 : float, default 1.0
        Ridge strength in the MLE and in H.
    n_propensity_samples : int, default 32
        M, the extra draws used to estimate the propensity (0: report 1).
    seed : int, Generator, SeedSequence or None
    exploration_floor : float in [0, 1], default 0.0
        Play an action drawn uniformly at random with probability ε (see
        :class:`~glmbandits.policies.base.Policy`), so that the policy's own log
        has every propensity >= ε/K and supports off-policy evaluation.

    References
    ----------
    Kveton, Zaheer, Szepesvári, Li, Ghavamzadeh & Boutilier (2020),
    "Randomized Exploration in Generalized Linear Bandits", AISTATS, Algorithm 1.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import GLMTSL
    >>> policy = GLMTSL(n_features=2, tau=0, seed=0)
    >>> a = policy.select(np.eye(2))
    >>> 0 < policy.last_propensity_ <= 1
    True
    """

    #: Always a family here (the family-free policies of ``Policy`` keep ``None``).
    family: GLMFamily

    def __init__(self, n_features: int, family: Any = "logistic", a: float = 1.0,
                 tau: int | None = None, l2: float = 1.0, n_propensity_samples: int = 32,
                 seed: SeedLike = None,
                 exploration_floor: float = 0.0) -> None:
        super().__init__(n_features, family, seed, exploration_floor)
        owner = type(self).__name__
        self.a = check_positive(a, owner, "a")
        self.tau = 2 * self.n_features if tau is None else check_int(tau, owner, "tau", minimum=0)
        keep_given(self, tau=tau)  # get_params reports tau as given (None: 2d)
        self.l2 = check_positive(l2, owner, "l2")
        self.n_propensity_samples = check_int(n_propensity_samples, owner,
                                              "n_propensity_samples", minimum=0)
        self.estimate_ = GLMEstimate(self.n_features, self.family, self.l2)

    @property
    def theta_(self) -> np.ndarray:
        return self.estimate_.theta_

    def hessian(self) -> np.ndarray:
        """H_t = l2·I + Σ μ'(X_s'θ̂) X_s X_s' at the current MLE."""
        theta = self.estimate_.theta
        X = self.estimate_.history.X
        H: np.ndarray = (X.T * self.family.dmean(X @ theta)) @ X
        H.flat[:: self.n_features + 1] += self.l2
        return H

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        if self.estimate_.n < self.tau:
            return self._choose_max(tied_scores(X.shape[0]))
        theta = self.estimate_.theta
        noise = self.rng_.standard_normal((self.n_features, 1 + self.n_propensity_samples))
        with np.errstate(over="ignore", invalid="ignore"):
            hessian = self.hessian()
        try:
            if not np.isfinite(hessian).all():
                raise np.linalg.LinAlgError("the Hessian overflows")
            factor = np.linalg.cholesky(hessian)  # H = L L'
        except np.linalg.LinAlgError:
            # μ' so large (huge rows, Poisson) that H overflows: the Laplace posterior
            # N(θ̂, H⁻¹) has collapsed onto its mode, so every draw is θ̂.
            return thompson_distribution(X, theta,
                                         np.repeat(theta[:, None], noise.shape[1], axis=1))
        # L'⁻¹ξ ~ N(0, H⁻¹); numpy's solve is much faster than scipy's solve_triangular
        # for the small d of a bandit (per-call overhead dominates).
        draws = theta[:, None] + self.a * np.linalg.solve(factor.T, noise)
        return thompson_distribution(X, theta, draws)

    def _learn(self, x: np.ndarray, reward: float) -> None:
        self.estimate_.add(x, reward)
