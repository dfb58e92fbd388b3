"""GLM-UCB of Filippi, Cappé, Garivier & Szepesvári (2010), with its optional projection."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize

from .._params import keep_given
from .._validation import SeedLike, check_int, check_nonnegative, check_positive
from ..families import GLMFamily
from .base import ActionScores, Policy, gram_norms, tied_scores
from ..estimation.estimates import GLMEstimate
from ..estimation.online import project_ball

__all__ = ["GLMUCB"]


class GLMUCB(Policy):
    """GLM-UCB (Filippi et al. 2010, Algorithm 1).

    After ``tau`` uniformly random rounds (the paper's initialisation with d
    linearly independent actions), every round t:

    1. θ̂_t is the (ridge) MLE, the root of ``Σ_s (Y_s - μ(X_s'θ))X_s - l2·θ = 0``
       (the paper's eq. (6) with an optional ridge term);
    2. optional projection (eq. (7)): when ``‖θ̂_t‖ > radius``,
       ``θ̃_t = argmin_{‖θ‖ <= radius} ‖g_t(θ) - g_t(θ̂_t)‖_{V_t⁻¹}`` with
       ``g_t(θ) = Σ_s μ(X_s'θ)X_s`` (solved by SLSQP; otherwise θ̃ = θ̂);
    3. ``a_t = argmax_a μ(x_{t,a}'θ̃_t) + ρ(t)‖x_{t,a}‖_{V_t⁻¹}`` (ties uniform),
       with ``V_t = l2·I + Σ_s X_s X_s'`` kept by rank-one updates.

    The index is on the *mean* scale (μ(x'θ) + bonus), unlike UCB-GLM's
    linear-predictor scale. The paper's ``ρ(t) = (2k_μκR/c_μ)·
    sqrt(2d log t · log(2dT/δ))`` is far too conservative in practice; here
    ``ρ(t) = alpha·sqrt(log(t + 1))`` keeps its sqrt(log t) growth with a
    tunable constant.

    Per-round cost: O(n_t d²) for the warm-started refit, O(K d²) to score,
    plus O(n_t d²) per SLSQP iteration in the rare projected rounds.

    Parameters
    ----------
    n_features : int
    family : str or GLMFamily, default "logistic"
    alpha : float, default 1.0
        Constant of ρ(t).
    projection : bool, default False
        Apply the projection step 2.
    radius : float, default 3.0
        Radius S of the parameter set Θ = {‖θ‖ <= S} used by the projection.
    tau : int, optional
        Initial uniformly random rounds; default ``2 * n_features``.
    l2 : float, default 1.0
        Ridge strength (0 is the paper's plain MLE).
    seed : int, Generator, SeedSequence or None
    exploration_floor : float in [0, 1], default 0.0
        Play an action drawn uniformly at random with probability ε (see
        :class:`~glmbandits.policies.base.Policy`), so that the policy's own log
        has every propensity >= ε/K and supports off-policy evaluation.

    Attributes
    ----------
    n_projections_ : int
        Rounds in which the projection was active.

    References
    ----------
    Filippi, Cappé, Garivier & Szepesvári (2010), "Parametric Bandits: The
    Generalized Linear Case", NeurIPS, Algorithm 1, eqs. (6)-(7).

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import GLMUCB
    >>> policy = GLMUCB(n_features=2, tau=0, seed=0)
    >>> a = policy.select(np.eye(2)); policy.update(np.eye(2)[a], 1.0)
    >>> policy.n_updates_
    1
    """

    #: Always a family here (the family-free policies of ``Policy`` keep ``None``).
    family: GLMFamily

    def __init__(self, n_features: int, family: Any = "logistic", alpha: float = 1.0,
                 projection: bool = False, radius: float = 3.0, tau: int | None = None,
                 l2: float = 1.0, seed: SeedLike = None,
                 exploration_floor: float = 0.0) -> None:
        super().__init__(n_features, family, seed, exploration_floor)
        owner = type(self).__name__
        self.alpha = check_positive(alpha, owner, "alpha")
        if not isinstance(projection, (bool, np.bool_)):
            raise TypeError(f"{owner}: projection must be a bool, got {type(projection).__name__}")
        self.projection = bool(projection)
        self.radius = check_positive(radius, owner, "radius")
        self.tau = 2 * self.n_features if tau is None else check_int(tau, owner, "tau", minimum=0)
        keep_given(self, tau=tau)  # get_params reports tau as given (None: 2d)
        self.l2 = check_nonnegative(l2, owner, "l2")
        self.estimate_ = GLMEstimate(self.n_features, self.family, self.l2)
        self.n_projections_ = 0

    @property
    def theta_(self) -> np.ndarray:
        return self.estimate_.theta_

    def rho(self, t: int) -> float:
        """ρ(t) = alpha·sqrt(log(t + 1))."""
        return self.alpha * math.sqrt(math.log(t + 1.0))

    def projected_theta(self) -> np.ndarray:
        """θ̃_t: the MLE, projected by eq. (7) when enabled and ‖θ̂‖ > radius.

        SLSQP also evaluates the objective outside Θ = {‖θ‖ <= radius} (at ‖θ‖ in
        the thousands for a badly scaled objective, where a Poisson mean e^{x'θ}
        overflows). Each linear predictor is therefore clipped to its range over
        Θ, ``|X_s'θ| <= radius·‖X_s‖``: the objective and its gradient are exact on
        Θ and bounded outside it. If even that overflows (features of norm in the
        hundreds), the radial projection ``θ̂·radius/‖θ̂‖`` is used.
        """
        theta = self.estimate_.theta
        if not self.projection or float(np.linalg.norm(theta)) <= self.radius:
            return theta
        X, V_inv, family = self.estimate_.history.X, self.estimate_.V_inv, self.family
        start = project_ball(theta, self.radius)
        bound = self.radius * np.linalg.norm(X, axis=1)  # max of |X_s'θ| over Θ
        with np.errstate(over="ignore", invalid="ignore"):
            target = X.T @ family.mean(X @ theta)

            def objective(th: np.ndarray) -> tuple[float, np.ndarray]:
                raw = X @ th
                eta = np.clip(raw, -bound, bound)
                r = X.T @ family.mean(eta) - target
                Vr = V_inv @ r
                slope = np.where(np.abs(raw) <= bound, family.dmean(eta), 0.0)
                return float(r @ Vr), 2.0 * (X.T * slope) @ (X @ Vr)

            if not (np.all(np.isfinite(target)) and np.isfinite(objective(start)[0])):
                self.n_projections_ += 1
                return start

            def inside(th: np.ndarray) -> float:  # the constraint r² - ‖θ‖² >= 0
                return self.radius ** 2 - float(th @ th)

            def inside_gradient(th: np.ndarray) -> np.ndarray:
                return -2.0 * th

            result = optimize.minimize(
                objective, start, jac=True, method="SLSQP",
                constraints=[{"type": "ineq", "fun": inside, "jac": inside_gradient}],
                options={"maxiter": 100})
        candidate = result.x if np.all(np.isfinite(result.x)) else start
        self.n_projections_ += 1
        return project_ball(candidate, self.radius)  # SLSQP may end a hair outside

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        if self.estimate_.n < self.tau:
            return self._choose_max(tied_scores(X.shape[0]))
        theta = self.projected_theta()
        mean = self.family.mean(X @ theta)
        width = self.rho(self.estimate_.n + 1) * gram_norms(X, self.estimate_.V_inv)
        return self._choose_max(ActionScores(ucb=mean + width, mean=X @ theta, width=width,
                                             scale="reward"))

    def _learn(self, x: np.ndarray, reward: float) -> None:
        self.estimate_.add(x, reward)
