"""Scoring a round: per-action scores, the upper-confidence rule and the tie-breaking argmax.

Shared by every policy (Li, Lu & Zhou 2017, Algorithm 1 step 2: the action with
the largest ``x'θ̂ + α‖x‖_{V⁻¹}``, ties broken uniformly at random).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..families import GLMFamily

__all__ = ["SCORE_SCALES", "ActionScores", "gram_norms", "ucb_scores", "tied_scores",
           "argmax_random_tie", "argmax_distribution"]


#: What ``ActionScores.scale`` may say about ``ucb`` and ``width``.
SCORE_SCALES = ("linear", "reward")


@dataclass(frozen=True)
class ActionScores:
    """Per-action scores of one ``select`` call, each of shape (K,).

    The three stored arrays are what the exploration rule computed; the two
    reward-scale views (:attr:`reward_mean`, :attr:`reward_ucb`) are derived
    from them here, in one place for every policy, with the family's own
    (numerically stable) mean function μ. ``Policy.select`` attaches the
    policy's family; a policy without a family (LinUCB, Random) uses the
    identity, so its reward-scale values are the linear ones.

    Attributes
    ----------
    ucb : ndarray
        The index the policy ranks actions by (``mean + width`` for UCB rules;
        ``x'θ̃`` of the deciding draw for Thompson sampling; for an action
        RS-GLinCB has eliminated, a finite value below every surviving action).
    mean : ndarray
        The estimated linear predictor ``x'θ̂``.
    width : ndarray
        The exploration bonus, e.g. ``α‖x‖_{V⁻¹}``, on the scale named by ``scale``.
    scale : {"linear", "reward"}
        The scale of ``ucb`` and ``width``: ``"linear"`` (the linear predictor:
        UCB-GLM, LinUCB, SupCB-GLM, GLOC, OFU-GLB, RS-GLinCB, the Thompson
        policies, ε-greedy) or ``"reward"`` (the rule adds its bonus to μ(x'θ̂):
        GLM-UCB of Filippi et al. 2010, ECOLog).
    family : GLMFamily or None
        The link used for the reward-scale views (``None``: the identity).

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits.families import get_family
    >>> s = ActionScores(ucb=np.array([1.0, 0.5]), mean=np.array([0.0, 0.5]),
    ...                  width=np.array([1.0, 0.0]), family=get_family("logistic"))
    >>> s.reward_mean.round(3), s.reward_ucb.round(3)
    (array([0.5  , 0.622]), array([0.731, 0.622]))
    """

    ucb: np.ndarray
    mean: np.ndarray
    width: np.ndarray
    scale: str = "linear"
    family: GLMFamily | None = field(default=None, repr=False, compare=False)

    @property
    def reward_mean(self) -> np.ndarray:
        """μ(x'θ̂) for every action: the predicted reward (e.g. a click probability).

        Computed on access (O(K), vectorised), never stored, so reading it does
        not change a pickled policy.
        """
        if self.family is None:
            return self.mean
        return self.family.mean(self.mean)

    @property
    def reward_ucb(self) -> np.ndarray:
        """The upper end on the reward scale for every action.

        * ``scale == "linear"``: ``μ(mean + width)``, μ of the UCB (equal to
          ``μ(ucb)`` wherever ``ucb = mean + width``; for RS-GLinCB, μ of the
          bound whatever value marks an eliminated action, and μ of the warm-up
          index ``x'θ̂_w + ‖x‖`` during its warm-up rounds).
        * ``scale == "reward"``: ``μ(mean) + width`` (the rule's own bound, which
          is already on the reward scale) clipped into the family's range of means.
        * Thompson sampling: ``width`` is the draw minus the centre, so this is
          μ(x'θ̃), the *sampled* mean reward of the deciding draw; it is an
          optimistic value only in the sense of the posterior sample and may lie
          below :attr:`reward_mean`.

        Li, Lu & Zhou (2017), Algorithm 1 step 2, and Filippi et al. (2010), GLM-UCB.
        """
        if self.family is None:
            bound: np.ndarray = self.mean + self.width
            return bound
        if self.scale == "reward":
            low, high = self.family.mean_range
            clipped: np.ndarray = np.clip(self.family.mean(self.mean) + self.width, low, high)
            return clipped
        return self.family.mean(self.mean + self.width)

    def _with_family(self, family: GLMFamily | None) -> "ActionScores":
        """These scores with ``family`` attached (in place: an O(1) attribute write)."""
        if self.family is not family:
            object.__setattr__(self, "family", family)
        return self


def gram_norms(X: np.ndarray, V_inv: np.ndarray) -> np.ndarray:
    """‖x_a‖_{V⁻¹} for every row of X: one (K, d)@(d, d) product, no loop over actions."""
    quadratic = np.einsum("ij,ij->i", X @ V_inv, X)
    norms: np.ndarray = np.sqrt(np.maximum(quadratic, 0.0))
    return norms


def ucb_scores(X: np.ndarray, theta: np.ndarray, V_inv: np.ndarray, alpha: float) -> ActionScores:
    """Upper confidence indices ``x'θ̂ + α‖x‖_{V⁻¹}``.

    Li, Lu & Zhou (2017), Algorithm 1 step 2; Chu et al. (2011), LinUCB.
    """
    mean = X @ theta
    width = alpha * gram_norms(X, V_inv)
    return ActionScores(ucb=mean + width, mean=mean, width=width)


def tied_scores(n_actions: int) -> ActionScores:
    """All-zero scores: every action ties, so the argmax is uniform at random."""
    zeros = np.zeros(n_actions)
    return ActionScores(ucb=zeros, mean=zeros, width=zeros)


def argmax_random_tie(values: np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
    """Index of the maximum, ties broken uniformly at random; also the number tied.

    The generator is drawn from only when there is a tie, so a run without ties
    consumes no randomness here.
    """
    best = (values == values.max()).nonzero()[0]  # = np.flatnonzero, without its overhead
    if best.shape[0] == 1:
        return int(best[0]), 1
    return int(best[rng.integers(best.shape[0])]), int(best.shape[0])


def argmax_distribution(values: np.ndarray, rng: np.random.Generator
                        ) -> tuple[int, np.ndarray]:
    """Index of the maximum (ties uniform at random) and the exact distribution of that choice.

    The distribution puts 1/m on each of the m tied maxima and 0 elsewhere. The
    generator is drawn from exactly as in :func:`argmax_random_tie` (only when
    there is a tie), so the two give the same action for the same generator.

    Examples
    --------
    >>> import numpy as np
    >>> action, p = argmax_distribution(np.array([1.0, 3.0, 3.0]), np.random.default_rng(0))
    >>> action in (1, 2), p.tolist()
    (True, [0.0, 0.5, 0.5])
    """
    best = (values == values.max()).nonzero()[0]
    probabilities = np.zeros(values.shape[0])
    if best.shape[0] == 1:
        action = int(best[0])
        probabilities[action] = 1.0
        return action, probabilities
    probabilities[best] = 1.0 / best.shape[0]
    return int(best[rng.integers(best.shape[0])]), probabilities
