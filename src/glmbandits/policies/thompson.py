"""Thompson-sampling choice with a Monte-Carlo propensity or distribution, shared by the TS policies."""

from __future__ import annotations

import numpy as np

from .scores import ActionScores

__all__ = ["thompson_choice", "thompson_distribution"]


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


def thompson_distribution(X: np.ndarray, mean: np.ndarray, samples: np.ndarray
                          ) -> tuple[int, ActionScores, np.ndarray]:
    """:func:`thompson_choice` with the whole Monte-Carlo action distribution.

    Same action and scores; instead of the chosen action's propensity it returns
    ``probabilities[a] = #{m in 0..M : argmax X θ̃_m = a} / (1 + M)``, the
    Monte-Carlo estimate of Thompson sampling's action distribution from all
    1 + M draws (the deciding one included, so the chosen action's entry is
    never 0 and equals :func:`thompson_choice`'s propensity). Every entry is a
    multiple of 1/(1 + M). This is what the TS policies' ``_choose`` returns.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.eye(2)
    >>> samples = np.array([[1.0, 1.0, 0.0, 2.0], [0.0, 0.5, 1.0, 0.0]])
    >>> action, _, p = thompson_distribution(X, np.zeros(2), samples)
    >>> action, p.tolist()
    (0, [0.75, 0.25])
    """
    values = X @ samples  # (K, 1 + M)
    picks = np.argmax(values, axis=0)
    action = int(picks[0])
    probabilities = np.bincount(picks, minlength=X.shape[0]) / picks.shape[0]
    centre = X @ mean
    sampled = values[:, 0]
    return action, ActionScores(ucb=sampled, mean=centre, width=sampled - centre), probabilities
