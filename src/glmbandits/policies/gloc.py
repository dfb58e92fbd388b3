"""GLOC of Jun, Bhargava, Nowak & Willett (2017): online-to-confidence-set conversion."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._params import keep_given
from .._validation import SeedLike, check_positive
from ..estimation import sherman_morrison_update
from ..families import GLMFamily
from .base import ActionScores, Policy, ucb_scores
from ..estimation.online import project_ball

__all__ = ["GLOC"]


class GLOC(Policy):
    """GLOC: Generalized Linear Online-to-confidence-set Conversion, with ONS-GLM.

    Keeps no history. With ``V_t = l2·I + Σ_{s<=t} X_s X_s'`` (used both as the
    online Newton matrix A_t, taking the paper's ε = λ, and as the Gram matrix of
    the conversion), every update with (x_t, y_t) does (Jun et al. 2017):

    1. ``z_t = x_t'θ_t``, the online learner's prediction made before y_t;
    2. ``V_t = V_{t-1} + x_t x_t'`` (Sherman–Morrison on V⁻¹) and
       ``b_t = b_{t-1} + z_t x_t``; the conversion's centre is the ridge
       regression of the predictions, ``θ̂_t = V_t⁻¹ b_t`` (Algorithm 1, eq. (6));
    3. ONS-GLM (Algorithm 2): ``θ'_{t+1} = θ_t - (μ(z_t) - y_t)/κ · V_t⁻¹ x_t``
       and ``θ_{t+1}`` its projection onto ``{‖θ‖ <= radius}`` in ‖·‖_{V_t}.

    Selection: ``argmax_a x_a'θ̂_t + α‖x_a‖_{V_t⁻¹}``, where α stands for the
    paper's sqrt(β_t) (whose constants are conservative).

    Per-round cost: O(d²) for the updates and O(K d²) to score; the projection
    costs O(d³) but only in rounds where θ'_{t+1} leaves the ball. The state is
    three d-vectors and two d×d matrices, whatever t.

    Parameters
    ----------
    n_features : int
    family : str or GLMFamily, default "logistic"
    alpha : float, default 1.0
        Confidence width multiplier (sqrt(β_t) of the paper).
    radius : float, default 3.0
        S, the bound on ‖θ*‖ used by the ONS projection.
    kappa : float, optional
        The ONS step is 1/κ; default ``max(family.kappa(radius), 0.05)`` (the
        worst-case κ over ‖θ‖ <= S, floored so the step stays moderate).
    l2 : float, default 1.0
        λ (= ε of ONS).
    seed : int, Generator, SeedSequence or None
        Tie-breaking only.
    exploration_floor : float in [0, 1], default 0.0
        Play an action drawn uniformly at random with probability ε (see
        :class:`~glmbandits.policies.base.Policy`), so that the policy's own log
        has every propensity >= ε/K and supports off-policy evaluation.

    References
    ----------
    Jun, Bhargava, Nowak & Willett (2017), "Scalable Generalized Linear Bandits:
    Online Computation and Hashing", NeurIPS, Algorithm 1 (GLOC) and
    Algorithm 2 (ONS-GLM).

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import GLOC
    >>> policy = GLOC(n_features=2, seed=0)
    >>> for _ in range(3):
    ...     policy.update(np.array([1.0, 0.0]), 1.0)
    >>> bool(policy.theta_online_[0] > 0)
    True
    """

    #: Always a family here (the family-free policies of ``Policy`` keep ``None``).
    family: GLMFamily

    _finite_state = ("V_", "V_inv_", "b_", "theta_", "theta_online_")

    def __init__(self, n_features: int, family: Any = "logistic", alpha: float = 1.0,
                 radius: float = 3.0, kappa: float | None = None, l2: float = 1.0,
                 seed: SeedLike = None,
                 exploration_floor: float = 0.0) -> None:
        super().__init__(n_features, family, seed, exploration_floor)
        owner = type(self).__name__
        self.alpha = check_positive(alpha, owner, "alpha")
        self.radius = check_positive(radius, owner, "radius")
        self.kappa = (max(self.family.kappa(self.radius), 0.05) if kappa is None
                      else check_positive(kappa, owner, "kappa"))
        keep_given(self, kappa=kappa)  # get_params reports kappa as given (None: resolved)
        self.l2 = check_positive(l2, owner, "l2")
        d = self.n_features
        self.V_ = self.l2 * np.eye(d)
        self.V_inv_ = np.eye(d) / self.l2
        self.b_ = np.zeros(d)
        self.theta_ = np.zeros(d)
        self.theta_online_ = np.zeros(d)
        self.n_projections_ = 0

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        return self._choose_max(ucb_scores(X, self.theta_, self.V_inv_, self.alpha))

    def _learn(self, x: np.ndarray, reward: float) -> None:
        z = float(x @ self.theta_online_)
        sherman_morrison_update(self.V_inv_, x)
        self.V_ += np.outer(x, x)
        self.b_ += z * x
        self.theta_ = self.V_inv_ @ self.b_
        gradient = float(self.family.mean(z)) - reward
        step = self.theta_online_ - (gradient / self.kappa) * (self.V_inv_ @ x)
        if float(np.linalg.norm(step)) > self.radius:
            step = project_ball(step, self.radius, self.V_)
            self.n_projections_ += 1
        self.theta_online_ = step
