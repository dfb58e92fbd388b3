"""The uniformly random policy: the floor every learner must beat."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import SeedLike
from .base import ActionScores, Policy, tied_scores

__all__ = ["RandomPolicy"]


class RandomPolicy(Policy):
    """Choose one of the K actions uniformly at random every round.

    All scores are zero (every action ties), so ``last_propensity_`` is 1/K.

    Parameters
    ----------
    n_features : int
    seed : int, Generator, SeedSequence or None
    exploration_floor : float in [0, 1], default 0.0
        Accepted like every policy's (the distribution is uniform either way).
    family : str or GLMFamily or None, default None
        The rewards' family, used only to check them (a reward outside its domain
        is refused, as by every policy); ``None`` accepts any finite reward.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import RandomPolicy
    >>> policy = RandomPolicy(n_features=2, seed=0)
    >>> policy.select(np.zeros((4, 2))) in range(4), policy.last_propensity_
    (True, 0.25)
    """

    def __init__(self, n_features: int, seed: SeedLike = None,
                 exploration_floor: float = 0.0, family: Any = None) -> None:
        super().__init__(n_features, family, seed, exploration_floor)

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        return self._choose_max(tied_scores(X.shape[0]))

    def _learn(self, x: np.ndarray, reward: float) -> None:
        """A random policy learns nothing."""
