"""ε-greedy over the GLM maximum-likelihood estimate: the simple baseline."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._params import keep_given
from .._validation import SeedLike, check_int, check_nonnegative, check_real
from ..families import GLMFamily
from .base import ActionScores, Policy, argmax_random_tie, tied_scores
from ..estimation.estimates import GLMEstimate

__all__ = ["EpsilonGreedy"]


class EpsilonGreedy(Policy):
    """ε-greedy on the (ridge) GLM MLE.

    After ``tau`` uniformly random rounds, each round:

    1. with probability ``ε_t = min(1, epsilon · t^(-decay))`` play an action
       uniformly at random;
    2. otherwise play ``argmax_a x_{t,a}'θ̂_t`` (ties uniform), where θ̂_t solves
       the estimating equation of Li, Lu & Zhou (2017), eq. (3), with ridge l2.

    Exactly one uniform number is drawn per round, so the random stream (and
    hence the actions for a seed) does not depend on the data. The propensity is
    exact: ``(1 - ε_t)/m + ε_t/K`` for a greedy action tied with m - 1 others,
    ``ε_t/K`` otherwise.

    Per-round cost: O(n_t d²) for the warm-started refit plus O(K d).

    Parameters
    ----------
    n_features : int
        Feature dimension d.
    family : str or GLMFamily, default "logistic"
    epsilon : float, default 0.1
        Exploration probability (before decay), in [0, 1].
    decay : float, default 0.0
        ε_t = min(1, epsilon · t^(-decay)); 0 keeps ε constant, 1/3 gives the
        classical T^(2/3)-regret schedule.
    tau : int, optional
        Initial uniformly random rounds; default ``2 * n_features``.
    l2 : float, default 1.0
        Ridge strength of the estimate.
    seed : int, Generator, SeedSequence or None
    exploration_floor : float in [0, 1], default 0.0
        Play an action drawn uniformly at random with probability ε (see
        :class:`~glmbandits.policies.base.Policy`), so that the policy's own log
        has every propensity >= ε/K and supports off-policy evaluation.

    References
    ----------
    Sutton & Barto (2018), "Reinforcement Learning", Section 2.2 (ε-greedy);
    Li, Lu & Zhou (2017), eq. (3) for the estimate.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import EpsilonGreedy
    >>> policy = EpsilonGreedy(n_features=2, epsilon=0.2, tau=0, seed=0)
    >>> a = policy.select(np.eye(2))
    >>> policy.last_propensity_ in (0.5,)
    True
    """

    #: Always a family here (the family-free policies of ``Policy`` keep ``None``).
    family: GLMFamily

    def __init__(self, n_features: int, family: Any = "logistic", epsilon: float = 0.1,
                 decay: float = 0.0, tau: int | None = None, l2: float = 1.0,
                 seed: SeedLike = None,
                 exploration_floor: float = 0.0) -> None:
        super().__init__(n_features, family, seed, exploration_floor)
        owner = type(self).__name__
        self.epsilon = check_real(epsilon, owner, "epsilon")
        if not 0.0 <= self.epsilon <= 1.0:
            raise ValueError(f"{owner}: epsilon must lie in [0, 1], got {self.epsilon}")
        self.decay = check_nonnegative(decay, owner, "decay")
        self.tau = 2 * self.n_features if tau is None else check_int(tau, owner, "tau", minimum=0)
        keep_given(self, tau=tau)  # get_params reports tau as given (None: 2d)
        self.l2 = check_nonnegative(l2, owner, "l2")
        self.estimate_ = GLMEstimate(self.n_features, self.family, self.l2)

    @property
    def theta_(self) -> np.ndarray:
        return self.estimate_.theta_

    def current_epsilon(self) -> float:
        """ε_t for the coming round t = n_updates_ + 1."""
        t = self.n_updates_ + 1
        epsilon: float = self.epsilon * t ** (-self.decay)
        return min(1.0, epsilon)

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        K = X.shape[0]
        if self.estimate_.n < self.tau:
            return self._choose_max(tied_scores(K))
        eps = self.current_epsilon()
        explore = self.rng_.random() < eps
        mean = X @ self.estimate_.theta
        scores = ActionScores(ucb=mean, mean=mean, width=np.zeros(K))
        greedy = np.flatnonzero(mean == mean.max())
        if explore:
            action = int(self.rng_.integers(K))
        else:
            action, _ = argmax_random_tie(mean, self.rng_)
        probabilities = np.full(K, eps / K)
        probabilities[greedy] += (1.0 - eps) / greedy.shape[0]
        return action, scores, probabilities

    def _learn(self, x: np.ndarray, reward: float) -> None:
        self.estimate_.add(x, reward)
