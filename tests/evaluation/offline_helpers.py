"""Test-only policies with known behaviour, for the offline-evaluation tests."""

from __future__ import annotations

import numpy as np

from glmbandits.policies.base import ActionScores, Policy, ucb_scores


class FixedThetaPolicy(Policy):
    """Greedy on a fixed θ (never learns): its value on a full-information log is exact."""

    def __init__(self, theta: np.ndarray, seed: int = 0) -> None:
        super().__init__(len(theta), None, seed)
        self.theta = np.asarray(theta, dtype=float)

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, float]:
        return self._choose_max(ucb_scores(X, self.theta, np.zeros((len(self.theta),) * 2), 0.0))

    def _learn(self, x: np.ndarray, reward: float) -> None:
        """Frozen."""


class FirstActionPolicy(FixedThetaPolicy):
    """Always action 0."""

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, float]:
        scores = np.zeros(X.shape[0])
        scores[0] = 1.0
        return 0, ActionScores(scores, scores, np.zeros_like(scores)), 1.0
