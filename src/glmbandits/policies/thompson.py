"""Thompson-sampling choice with a Monte-Carlo propensity, shared by the TS policies."""

from __future__ import annotations

import numpy as np

from .base import ActionScores

__all__ = ["thompson_choice"]


def thompson_choice(X: np.ndarray, mean: np.ndarray, samples: np.ndarray
                    ) -> tuple[int, ActionScores, float]:
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
    (action, scores, propensity)
        ``propensity = (1 + #{m : argmax X θ̃_m = action}) / (1 + M)``, the
        fraction of all 1 + M draws that pick the chosen action (so it is never
        0; with M = 0 it is 1). ``scores.ucb`` holds ``X θ̃`` of the deciding draw
        and ``scores.width`` the difference from ``X θ̂``.
    """
    values = X @ samples  # (K, 1 + M)
    picks = np.argmax(values, axis=0)
    action = int(picks[0])
    propensity = float(np.count_nonzero(picks == action)) / picks.shape[0]
    centre = X @ mean
    sampled = values[:, 0]
    return action, ActionScores(ucb=sampled, mean=centre, width=sampled - centre), propensity
