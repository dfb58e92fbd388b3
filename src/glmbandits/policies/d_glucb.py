"""D-GLUCB: the discounted GLM-UCB of Russac, Cappé & Garivier (2020)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import (MIN_MAGNITUDE, SeedLike, check_nonnegative, check_positive,
                           check_probability, format_value)
from ..estimation.discounted import TRUNCATION, DiscountedGLMEstimate, discount_memory
from ..families import GLMFamily
from .base import ActionScores, Policy, gram_norms
from .d_linucb import discount_for_budget, noise_radius, noise_sigma

__all__ = ["DGLUCB"]


class DGLUCB(Policy):
    """D-GLUCB (Russac, Cappé & Garivier 2020): a GLM-UCB whose MLE forgets at rate γ.

    Every round t (t - 1 samples learned):

    1. θ̂_t is the discounted, penalised MLE, the root of
       ``Σ_{s<t} γ^{t-1-s} (μ(x_s'θ) - r_s) x_s + λ c_μ θ = 0``
       (:class:`~glmbandits.estimation.discounted.DiscountedGLMEstimate`, solved by
       :func:`~glmbandits.estimation.mle.solve_estimating_equation` with weights
       ``γ^{t-1-s}``, warm-started at θ̂_{t-1});
    2. ``a_t = argmax_a μ(x_a'θ̂_t) + α ρ_{t-1} ‖x_a‖_{V_{t-1}⁻¹}`` (ties uniform),
       ``V_{t-1} = Σ_{s<t} γ^{t-1-s} x_s x_s' + λI``, with the width
       ``ρ_{t-1} = (2k_μ/c_μ)(√λ c_μ S + σ sqrt(2 log(1/δ)
       + d log(1 + (1-γ^{2(t-1)})/(λd(1-γ²)))))``
       (:meth:`rho`: the D-LinUCB deviation bound in the norm of
       ``Ṽ = Σ γ^{2(t-1-s)} x_s x_s' + λI`` carried to the GLM through
       ``c_μ = inf μ'`` and ``k_μ = sup μ'`` over ``|z| <= S``). ``alpha = 1`` is
       that width; ``alpha < 1`` explores less.

    Not implemented: the paper's projection of θ̂ onto ``{‖θ‖ <= S}`` in the
    geometry of ``g_t(θ) = Σ γ^{t-1-s} μ(x_s'θ) x_s + λc_μθ`` (a non-convex
    problem, used by the analysis when ‖θ̂_t‖ > S). θ̂_t itself is used, as by
    :class:`~glmbandits.policies.glm_ucb.GLMUCB` without ``projection``; the
    penalty ``λc_μ > 0`` keeps it finite.

    Per-round cost: the Gram matrices O(d³) per update (exact, see
    :mod:`glmbandits.estimation.discounted`); the refit one to three Newton passes
    over the last ``W = ⌈log ε/log γ⌉`` samples only (``ε = truncation``: the
    samples dropped carry a fraction ε of the total weight, and move the root by
    at most ``ε R/((1-γ)λc_μ)``), O(W d² + d³), independent of t once t > W; no
    exact recursive form of a GLM root exists. Memory O(W d).

    Parameters
    ----------
    n_features : int
        Feature dimension d.
    family : str or GLMFamily, default "logistic"
        Reward family (link μ).
    gamma : float, default 0.99
        Discount γ in (0, 1). :meth:`from_theory` sets it from the number of
        breakpoints.
    alpha : float, default 1.0
        Multiplier α > 0 of the width ρ.
    l2 : float, default 1.0
        λ > 0 (the equation's penalty is ``λ c_μ``).
    delta : float, default 0.05
        Confidence level δ in (0, 1).
    sigma : float, optional
        Sub-Gaussian constant σ of the reward noise; default: the family's, or 1
        for Poisson (whose noise is not sub-Gaussian: pass a bound).
    theta_norm : float, default 1.0
        S > 0, a bound on ‖θ*_t‖; ``c_μ = family.kappa(S)`` and
        ``k_μ = family.lipschitz(S)`` (‖x‖ <= 1).
    truncation : float, default 1e-12
        ε in (0, 1): the fraction of the discounted weight the refit may drop
        (:func:`~glmbandits.estimation.discounted.discount_memory`).
    seed : int, Generator, SeedSequence or None
        Randomness of tie-breaking (and of the exploration floor).
    exploration_floor : float in [0, 1], default 0.0
        Uniform exploration ε (see :class:`~glmbandits.policies.base.Policy`).

    Attributes
    ----------
    estimate_ : DiscountedGLMEstimate
        The window of samples, θ̂ and the Gram matrices.
    c_mu_, k_mu_ : float
        ``c_μ`` and ``k_μ``.

    References
    ----------
    Russac, Cappé & Garivier (2020), "Algorithms for Non-Stationary Generalized
    Linear Bandits", arXiv:2003.10113 (D-GLUCB: the discounted MLE and its
    confidence width; γ = 1 - (G/(dT))^{2/3} for G breakpoints); Russac, Vernade &
    Cappé (2019), NeurIPS, Theorem 1 (the weighted self-normalised bound); Filippi
    et al. (2010), GLM-UCB (the index on the mean scale).

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import DGLUCB
    >>> policy = DGLUCB(n_features=2, gamma=0.95, alpha=0.1, seed=0)
    >>> for _ in range(3):
    ...     policy.update([1.0, 0.0], 1.0)
    >>> policy.select(np.array([[1.0, 0.0], [0.0, 1.0]]))
    0
    >>> policy.estimate_.window_.size  # W = ⌈log 1e-12 / log 0.95⌉
    539
    """

    #: Always a family here (the family-free policies of ``Policy`` keep ``None``).
    family: GLMFamily

    def __init__(self, n_features: int, family: Any = "logistic", gamma: float = 0.99,
                 alpha: float = 1.0, l2: float = 1.0, delta: float = 0.05,
                 sigma: float | None = None, theta_norm: float = 1.0,
                 truncation: float = TRUNCATION, seed: SeedLike = None,
                 exploration_floor: float = 0.0) -> None:
        owner = type(self).__name__
        gamma = check_probability(gamma, owner, "gamma")
        alpha = check_positive(alpha, owner, "alpha")
        l2 = check_positive(l2, owner, "l2")
        delta = check_probability(delta, owner, "delta")
        sigma = None if sigma is None else check_positive(sigma, owner, "sigma")
        theta_norm = check_positive(theta_norm, owner, "theta_norm")
        truncation = check_probability(truncation, owner, "truncation")
        super().__init__(n_features, family, seed, exploration_floor)
        c_mu = self.family.kappa(theta_norm)
        if not c_mu >= MIN_MAGNITUDE:
            raise ValueError(f"{owner}: theta_norm = {format_value(theta_norm)} gives c_mu = "
                             f"{c_mu:.3g} for the {self.family.name} family, below "
                             f"{MIN_MAGNITUDE:g}: the width 2k_μ/c_μ would be infinite")
        self.gamma, self.alpha, self.l2, self.delta = gamma, alpha, l2, delta
        self.sigma, self.theta_norm, self.truncation = sigma, theta_norm, truncation
        self.c_mu_ = c_mu
        self.k_mu_ = self.family.lipschitz(theta_norm)
        self.estimate_ = DiscountedGLMEstimate(self.n_features, self.family, gamma, l2,
                                               l2 * c_mu, discount_memory(gamma, truncation))

    @classmethod
    def from_theory(cls, n_features: int, horizon: int, breakpoints: int,
                    family: Any = "logistic", *, theta_norm: float = 1.0,
                    delta: float = 0.05, sigma: float | None = None, l2: float = 1.0,
                    seed: SeedLike = None) -> "DGLUCB":
        """D-GLUCB tuned for G breakpoints: ``γ = 1 - (G/(dT))^{2/3}``, α = 1.

        The dynamic regret is then Õ(d^{2/3} G^{1/3} T^{2/3}) with probability
        1 - δ (Russac, Cappé & Garivier 2020); the memory ``1/(1-γ) = (dT/G)^{2/3}``
        equals SW-GLUCB's window for the same G
        (:func:`~glmbandits.policies.d_linucb.discount_for_budget`).

        Examples
        --------
        >>> policy = DGLUCB.from_theory(5, 10_000, breakpoints=4)
        >>> round(policy.gamma, 5), policy.alpha
        (0.99814, 1.0)
        """
        owner = f"{cls.__name__}.from_theory"
        gamma = discount_for_budget(horizon, n_features, breakpoints, owner)
        return cls(n_features, family, gamma, 1.0, l2, delta, sigma, theta_norm, seed=seed)

    @property
    def theta_(self) -> np.ndarray:
        return self.estimate_.theta_

    def rho(self, t: int) -> float:
        """The width on the mean scale after t samples, ``ρ_t = (2 k_μ / c_μ) β_t``.

        ``β_t = √λ c_μ S + σ sqrt(2 log(1/δ) + d log(1 + (1-γ^{2t})/(λd(1-γ²))))``
        bounds ``‖g_t(θ̂_t) - g_t(θ*)‖_{Ṽ_t⁻¹}`` for ``g_t(θ) = Σ_s γ^{t-s} μ(x_s'θ) x_s
        + λ c_μ θ``: the noise term is D-LinUCB's weighted self-normalised bound
        (Russac et al. 2019, Theorem 1; :func:`~glmbandits.policies.d_linucb.noise_radius`)
        and ``‖λ c_μ θ*‖_{Ṽ⁻¹} <= √λ c_μ S`` the penalty's bias. As ``Ṽ_t ≼ V_t``
        (γ^{2k} <= γ^k) and ``g_t(θ) - g_t(θ') = G(θ - θ')`` with ``G ≽ c_μ V_t`` on
        ``‖θ‖ <= S``, ``|x'(θ - θ*)| <= ‖x‖_{V_t⁻¹} β_t / c_μ``; the projection onto
        the ball doubles it, and μ is k_μ-Lipschitz there:
        ``|μ(x'θ̃_t) - μ(x'θ*)| <= ρ_t ‖x‖_{V_t⁻¹}``.
        """
        noise = noise_radius(t, self.n_features, self.gamma, self.l2, self.delta,
                             noise_sigma(self.sigma, self.family))
        return 2.0 * self.k_mu_ / self.c_mu_ * (
            math.sqrt(self.l2) * self.c_mu_ * self.theta_norm + noise)

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        estimate = self.estimate_
        eta = X @ estimate.theta
        width = (self.alpha * self.rho(estimate.gram_.n_)) * gram_norms(
            X, estimate.gram_.V_inv_)
        return self._choose_max(ActionScores(ucb=self.family.mean(eta) + width, mean=eta,
                                             width=width, scale="reward"))

    def _learn(self, x: np.ndarray, reward: float) -> None:
        self.estimate_.add(x, reward)
