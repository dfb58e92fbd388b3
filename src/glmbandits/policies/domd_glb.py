"""DOMD-GLB: discounted online mirror descent for non-stationary GLM bandits (Lee & Oh 2026)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import SeedLike, check_positive, check_probability
from ..estimation.discounted import DiscountedGram
from ..estimation.online import omd_glm_step, project_ball
from ..families import GLMFamily
from .base import ActionScores, Policy, ucb_scores

__all__ = ["DOMDGLB"]


class DOMDGLB(Policy):
    """DOMD-GLB: optimism on a one-pass estimate that forgets, O(1) time and memory in t.

    State: θ_t and the discounted curvature matrix
    ``H_t = γH_{t-1} + μ'(x_{t-1}'θ_t) x_{t-1} x_{t-1}' + (1-γ)λI``, i.e.
    ``H_t = λI + Σ_{s<t} γ^{t-1-s} μ'(x_s'θ_{s+1}) x_s x_s'`` (``H_1 = λI``), with its
    inverse. Each update with (x_t, y_t):

    1. OMD step in the local norm (:func:`~glmbandits.estimation.online.omd_glm_step`):
       ``θ_{t+1} = argmin_{‖θ‖<=S} ⟨∇ℓ_t(θ_t), θ⟩ + ‖θ - θ_t‖²_{H̃_t}/(2η)`` with
       ``ℓ_t(θ) = m(x_t'θ) - y_t x_t'θ`` and ``H̃_t = H_t + η μ'(x_t'θ_t) x_t x_t'``:
       the unconstrained point ``θ_t - η H̃_t⁻¹ ∇ℓ_t(θ_t)``, projected onto
       ``{‖θ‖ <= radius}`` in ‖·‖_{H̃_t} only when it leaves the ball;
    2. ``H_{t+1} = γH_t + μ'(x_t'θ_{t+1}) x_t x_t' + (1-γ)λI``
       (:class:`~glmbandits.estimation.discounted.DiscountedGram`, fed ``√μ'·x_t``).

    Selection: ``argmax_a x_a'θ_t + α‖x_a‖_{H_t⁻¹}`` (ties uniform). With γ = 1 it is
    the stationary OMD estimator of Zhang et al. (2025); γ < 1 down-weights old
    curvature, so the steps stay of order (1-γ) instead of 1/t and θ_t tracks a moving
    θ*: an effective memory of about 1/(1-γ) rounds.

    Which equations come from where. Lee & Oh (2026) (arXiv:2605.25590) was found, but
    only its abstract could be read here (discounted OMD, O(1) computation and memory
    per round, dynamic regret Õ(c_μ^{-1/2} d^{3/4} P_T^{1/4} T^{3/4}) under drift and
    Õ(c_μ^{-1/3} d^{2/3} Γ_T^{1/3} T^{2/3}) with Γ_T change points); its equation and
    algorithm numbers, confidence radius and tuned γ could not be checked. Step 1 is
    the OMD update of Zhang, Xu, Zhao & Sugiyama (2025), the same one-pass step as
    ECOLog's (Faury et al. 2022, eq. (7), there solved exactly) in the mirror-descent
    form; step 2 discounts its curvature matrix as D-LinUCB discounts its Gram matrix
    (Russac, Vernade & Cappé 2019, Algorithm 1: ``V_t = γV_{t-1} + x x' + (1-γ)λI``,
    so that ``H_t >= λI``). The width multiplier α stands for the paper's radius (as in
    :class:`~glmbandits.GLOC`); no ``from_theory`` is offered, as the paper's constants
    could not be read.

    Per-round cost: O(d²) for the OMD step, O(d³) for ``H_{t+1}⁻¹`` (the ``(1-γ)λI``
    term is not rank-one: a Cholesky factorisation; an O(d³) eigendecomposition also in
    the rare projected rounds), O(K d²) to score. Memory: θ and a few d×d matrices.
    Nothing depends on t: no sample is stored
    (``benchmarks/bench_window_policies.py`` measures it at t = 10³ and 10⁴).

    Parameters
    ----------
    n_features : int
    family : str or GLMFamily, default "logistic"
    alpha : float, default 1.0
        α > 0, the width multiplier.
    gamma : float, default 0.99
        The discount γ in (0, 1) (memory of about 1/(1-γ) rounds).
    eta : float, default 1.0
        The OMD step size η > 0.
    l2 : float, default 1.0
        λ > 0.
    radius : float, default 3.0
        S, the bound on ‖θ*‖ of the projection.
    seed : int, Generator, SeedSequence or None
        Tie-breaking and the exploration floor.
    exploration_floor : float in [0, 1], default 0.0
        Play an action drawn uniformly at random with probability ε (see
        :class:`~glmbandits.policies.base.Policy`).

    Attributes
    ----------
    theta_ : ndarray of shape (d,)
        θ_t.
    gram_ : DiscountedGram
        ``H_t`` (as ``M_ + λI``) and ``H_t⁻¹`` (``V_inv_``), saved with the policy.
    n_projections_ : int
        Rounds in which the projection was active.

    References
    ----------
    Lee & Oh (2026), "Nonstationary Generalized Linear Bandits with Discounted Online
    Mirror Descent", arXiv:2605.25590 (DOMD-GLB). Zhang, Xu, Zhao & Sugiyama (2025),
    arXiv:2507.11847 (the OMD estimator, step 1). Russac, Vernade & Cappé (2019),
    NeurIPS, Algorithm 1 (the discounted matrix, step 2).

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import DOMDGLB
    >>> policy = DOMDGLB(n_features=2, seed=0)
    >>> for _ in range(3):
    ...     policy.update(np.array([1.0, 0.0]), 1.0)
    >>> bool(policy.theta_[0] > 0), policy.n_updates_
    (True, 3)
    """

    #: Always a family here (the family-free policies of ``Policy`` keep ``None``).
    family: GLMFamily

    _finite_state = ("theta_", "H_inv_")

    def __init__(self, n_features: int, family: Any = "logistic", alpha: float = 1.0,
                 gamma: float = 0.99, eta: float = 1.0, l2: float = 1.0, radius: float = 3.0,
                 seed: SeedLike = None, *, exploration_floor: float = 0.0) -> None:
        super().__init__(n_features, family, seed, exploration_floor)
        owner = type(self).__name__
        self.alpha = check_positive(alpha, owner, "alpha")
        self.gamma = check_probability(gamma, owner, "gamma")
        self.eta = check_positive(eta, owner, "eta")
        self.l2 = check_positive(l2, owner, "l2")
        self.radius = check_positive(radius, owner, "radius")
        self.gram_ = DiscountedGram(self.n_features, self.gamma, self.l2)
        self.theta_ = np.zeros(self.n_features)
        self.n_projections_ = 0

    @property
    def H_inv_(self) -> np.ndarray:
        """``H_t⁻¹``."""
        return self.gram_.V_inv_

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        return self._choose_max(ucb_scores(X, self.theta_, self.gram_.V_inv_, self.alpha))

    def _learn(self, x: np.ndarray, reward: float) -> None:
        gram = self.gram_
        theta, curvature = omd_glm_step(self.theta_, gram.V_inv_, x, reward, self.family,
                                        self.eta)
        if float(np.linalg.norm(theta)) > self.radius:
            local = gram.V + (self.eta * curvature) * np.outer(x, x)  # H̃_t
            theta = project_ball(theta, self.radius, local)
            self.n_projections_ += 1
        gram.add(math.sqrt(float(self.family.dmean(float(x @ theta)))) * x)
        self.theta_ = theta
