"""Thompson-sampling choice with a Monte-Carlo propensity, shared by the TS policies."""

from __future__ import annotations

import numpy as np

from .base import ActionScores

__all__ = ["thompson_choice"]


def thompson_choice(X: np.ndarray, mean: np.ndarray, samples: np.ndarray
                    ) -> tuple[int, ActionScores, np.ndarray]:
    """Pick ``argmax_a x_a'θ̃`` for the first sampled θ̃; estimate its propensity.

    Parameters
    ----------
    X : ndarray of shape (K, d)
        The round's contexts.
    mean : ndarray of shape (d,)
        The posterior centre (only used for ``scores.mean``).
    samples : ndarray of shape (d, 1 + M)
        Column 0 is the θ̃ that decides the action; columns 1..M are extra
        independent draws from the same distribution.

    Returns
    -------
    (action, scores, probabilities)
        ``probabilities[a] = #{m in 0..M : argmax X θ̃_m = a} / (1 + M)``: the
        Monte-Carlo estimate of Thompson sampling's action distribution from all
        1 + M draws (the deciding one included, so the chosen action's
        propensity is never 0; with M = 0 it is the one-hot of the action).
        Every entry is a multiple of 1/(1 + M). ``scores.ucb`` holds ``X θ̃`` of the deciding draw
        and ``scores.width`` the difference from ``X θ̂``.
    """
    values = X @ samples  # (K, 1 + M)
    picks = np.argmax(values, axis=0)
    action = int(picks[0])
    probabilities = np.bincount(picks, minlength=X.shape[0]) / picks.shape[0]
    centre = X @ mean
    sampled = values[:, 0]
    return action, ActionScores(ucb=sampled, mean=centre, width=sampled - centre), probabilities
