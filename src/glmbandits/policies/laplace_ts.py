"""Online Thompson sampling with a diagonal Laplace posterior (Chapelle & Li 2011)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import SeedLike, check_int, check_positive
from ..families import GLMFamily
from .base import ActionScores, Policy
from .thompson import thompson_distribution
from ..estimation.online import proximal_glm_step

__all__ = ["LaplaceTS"]


class LaplaceTS(Policy):
    """Thompson sampling with an online diagonal Laplace approximation.

    The posterior over θ is approximated by N(m, diag(1/q)) (Chapelle & Li
    2011, Algorithm 3, "regularized logistic regression with batch updates",
    here with batches of one sample, written for any family):

    * select: draw θ̃ ~ N(m, exploration·diag(1/q)), play ``argmax_a x_a'θ̃``;
    * update with (x, y): the new mean is the MAP
      ``m ← argmin_w ½Σ_i q_i (w_i - m_i)² + ℓ(x'w, y)`` (``ℓ`` the negative
      log-likelihood, ``ℓ' = μ - y``; for 0/1 rewards this is their
      ``log(1 + exp(-y w'x))`` with ±1 labels), solved exactly on the line
      ``m - c·x/q`` by a scalar Newton iteration
      (:func:`~glmbandits.estimation.online.proximal_glm_step`); then
      ``q_i ← q_i + μ'(x'm) x_i²``.

    Only the d means and d precisions are kept: O(d) memory and O(d) per update,
    O(K d (1 + M)) per selection, so it scales to large (sparse) d.

    Parameters
    ----------
    n_features : int
    family : str or GLMFamily, default "logistic"
    prior_precision : float, default 1.0
        λ, the initial q_i (prior N(0, I/λ)).
    exploration : float, default 1.0
        Multiplier of the posterior variance (Chapelle & Li's α, Section 4).
    n_propensity_samples : int, default 32
        Extra draws M for the Monte-Carlo propensity.
    seed : int, Generator, SeedSequence or None
    exploration_floor : float in [0, 1], default 0.0
        Play an action drawn uniformly at random with probability ε (see
        :class:`~glmbandits.policies.base.Policy`), so that the policy's own log
        has every propensity >= ε/K and supports off-policy evaluation.

    Attributes
    ----------
    m_, q_ : ndarray of shape (d,)
        Posterior means and precisions.

    References
    ----------
    Chapelle & Li (2011), "An Empirical Evaluation of Thompson Sampling",
    NeurIPS, Algorithm 3.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import LaplaceTS
    >>> policy = LaplaceTS(n_features=2, seed=0)
    >>> policy.update(np.array([1.0, 0.0]), 1.0)
    >>> bool(policy.m_[0] > 0), float(policy.q_[1])
    (True, 1.0)
    """

    #: Always a family here (the family-free policies of ``Policy`` keep ``None``).
    family: GLMFamily

    _finite_state = ("m_", "q_")

    def __init__(self, n_features: int, family: Any = "logistic", prior_precision: float = 1.0,
                 exploration: float = 1.0, n_propensity_samples: int = 32,
                 seed: SeedLike = None,
                 exploration_floor: float = 0.0) -> None:
        super().__init__(n_features, family, seed, exploration_floor)
        owner = type(self).__name__
        self.prior_precision = check_positive(prior_precision, owner, "prior_precision")
        self.exploration = check_positive(exploration, owner, "exploration")
        self.n_propensity_samples = check_int(n_propensity_samples, owner,
                                              "n_propensity_samples", minimum=0)
        self.m_ = np.zeros(self.n_features)
        self.q_ = np.full(self.n_features, self.prior_precision)

    @property
    def theta_(self) -> np.ndarray:
        return self.m_

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        noise = self.rng_.standard_normal((self.n_features, 1 + self.n_propensity_samples))
        scale = np.sqrt(self.exploration / self.q_)
        return thompson_distribution(X, self.m_, self.m_[:, None] + scale[:, None] * noise)

    def _learn(self, x: np.ndarray, reward: float) -> None:
        self.m_ = proximal_glm_step(self.m_, x / self.q_, x, reward, self.family)
        self.q_ = self.q_ + float(self.family.dmean(x @ self.m_)) * x * x
