"""The round of a UCB policy on the ``"numba"`` backend: compiled scores, argmax and update.

:class:`~glmbandits.LinUCB` and :class:`~glmbandits.UCBGLM` take
``backend="numba"`` (the ``compiled`` extra); their ``_choose`` then calls
:func:`ucb_choice` instead of :func:`~glmbandits.policies.scores.ucb_scores`
followed by :func:`~glmbandits.policies.scores.argmax_distribution`: one compiled
call (:func:`glmbandits.estimation._numba_kernels.ucb_one`) computes the K
indices ``x'θ̂ + α‖x‖_{V⁻¹}``, their argmax and how many tie. Ties are broken
by :func:`~glmbandits.policies.scores.argmax_distribution` on the same
generator, so the draws are those of the numpy round. Their ``_learn`` hands
:func:`rank_one_step` to the estimate's ``add``: the Sherman–Morrison step
compiled, on the estimate's fresh copy of V⁻¹ as on numpy. The scores and V⁻¹
agree with numpy's to rounding (``docs/performance.md``, "Backends and their
guarantees").

References
----------
Li, Lu & Zhou (2017), "Provably Optimal Algorithms for Generalized Linear
Contextual Bandits", ICML, Algorithm 1 step 2; Chu et al. (2011), LinUCB.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..estimation.compiled import kernels
from .scores import ActionScores, argmax_distribution

__all__ = ["ucb_choice", "rank_one_step"]


def ucb_choice(X: np.ndarray, theta: np.ndarray, V_inv: np.ndarray, alpha: float,
               rng: np.random.Generator) -> tuple[int, ActionScores, np.ndarray]:
    """(action, scores, probabilities) of the UCB rule, computed by the compiled kernels.

    The same as ``argmax_distribution(ucb_scores(X, θ̂, V⁻¹, α).ucb, rng)`` up to the
    rounding of the sums (the scores), with the generator drawn from only on a tie.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> action, scores, p = ucb_choice(X, np.array([0.5, 0.0]), np.eye(2), 1.0,
    ...                                np.random.default_rng(0))
    >>> action, scores.ucb.tolist(), p.tolist()
    (0, [1.5, 1.0], [1.0, 0.0])
    """
    if not X.flags.c_contiguous:
        X = np.ascontiguousarray(X)
    values, action, count = kernels("ucb_choice").ucb_one(X, theta, V_inv, alpha)
    scores = ActionScores(ucb=values[0], mean=values[1], width=values[2])
    if count == 1:
        probabilities = np.zeros(X.shape[0])
        probabilities[action] = 1.0
        return int(action), scores, probabilities
    action, probabilities = argmax_distribution(scores.ucb, rng)  # ties (or NaN): numpy's rule
    return action, scores, probabilities


def rank_one_step() -> Callable[[np.ndarray, np.ndarray], float]:
    """The compiled ``sherman_morrison_update`` (unit weight): ``rank_one`` of the estimates' ``add``.

    Examples
    --------
    >>> import numpy as np
    >>> V_inv = np.eye(2)
    >>> rank_one_step()(V_inv, np.array([1.0, 0.0]))
    1.0
    >>> V_inv.tolist()
    [[0.5, 0.0], [0.0, 1.0]]
    """
    step: Callable[[np.ndarray, np.ndarray], float] = kernels("rank_one_step").sherman_morrison
    return step
