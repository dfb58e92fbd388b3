"""D-LinUCB: discounted LinUCB for drifting parameters (Russac, Vernade & Cappé 2019)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import (SeedLike, check_int, check_nonnegative, check_positive,
                           check_probability, format_value)
from ..estimation.discounted import DiscountedRidgeEstimate
from .base import ActionScores, Policy, ucb_scores

__all__ = ["DLinUCB", "discount_for_budget", "noise_radius", "noise_sigma"]


def discount_for_budget(horizon: int, n_features: int, budget: float,
                        owner: str = "discount_for_budget") -> float:
    """The discount of the discounted policies' corollaries: ``γ = 1 - (B/(dT))^{2/3}``.

    With B the drift budget B_T (D-LinUCB: Russac, Vernade & Cappé 2019, Corollary 1,
    dynamic regret Õ(d^{2/3} B_T^{1/3} T^{2/3})) or the number of breakpoints G
    (D-GLUCB: Russac, Cappé & Garivier 2020, Õ(d^{2/3} G^{1/3} T^{2/3})). The
    effective memory ``1/(1 - γ) = (dT/B)^{2/3}`` is SW-GLUCB's window
    ``τ = (dT/G)^{2/3}``.

    Raises
    ------
    ValueError
        ``budget`` is not in (0, dT): γ would not lie in (0, 1).

    Examples
    --------
    >>> round(discount_for_budget(10_000, 5, 10.0), 5)
    0.99658
    """
    T = check_int(horizon, owner, "horizon", minimum=1)
    d = check_int(n_features, owner, "n_features", minimum=1)
    budget = check_positive(budget, owner, "budget")
    if budget >= d * T:
        raise ValueError(f"{owner}: budget must be < n_features * horizon = {d * T} (else "
                         f"γ = 1 - (B/(dT))^(2/3) <= 0), got {format_value(budget)}")
    return 1.0 - math.pow(budget / (d * T), 2.0 / 3.0)


def noise_radius(t: int, n_features: int, gamma: float, l2: float, delta: float,
                 sigma: float) -> float:
    """``σ sqrt(2 log(1/δ) + d log(1 + (1 - γ^{2t})/(λ d (1 - γ²))))``: the noise part of β_t.

    The weighted self-normalised bound of Russac, Vernade & Cappé (2019), Theorem 1,
    with ``log(det Ṽ_t/λ^d)`` bounded for ‖x‖ <= L = 1 (their Proposition 2); at
    γ = 1 the ratio ``(1 - γ^{2t})/(1 - γ²)`` is its limit t (the stationary bound).
    Arguments as the policies validate them (t >= 0, 0 < γ <= 1, λ, σ > 0, 0 < δ < 1).

    Examples
    --------
    >>> round(noise_radius(0, 2, 0.9, 1.0, 0.05, 1.0), 4)  # σ sqrt(2 log 20)
    2.4477
    """
    ratio = float(t) if gamma == 1.0 else (1.0 - gamma ** (2 * t)) / (1.0 - gamma * gamma)
    return sigma * math.sqrt(2.0 * math.log(1.0 / delta)
                             + n_features * math.log1p(ratio / (l2 * n_features)))


def noise_sigma(sigma: float | None, family: Any) -> float:
    """The σ a width uses: the given one, else the family's sub-Gaussian constant, else 1.

    Without a family, or for Poisson (whose noise is not sub-Gaussian, so the family
    has no constant), the default is 1: pass ``sigma`` for a bound valid on your data.
    """
    if sigma is not None:
        return sigma
    if family is None or family.name == "poisson":
        return 1.0
    value: float = family.sub_gaussian_sigma()
    return value


class DLinUCB(Policy):
    """D-LinUCB (Russac, Vernade & Cappé 2019, Algorithm 1): LinUCB that forgets at rate γ.

    Every round t (t - 1 samples learned):

    1. ``θ̂ = V⁻¹b``, the discounted least squares, with ``V = Σ_s γ^{t-1-s} x_s x_s' + λI``,
       ``Ṽ = Σ_s γ^{2(t-1-s)} x_s x_s' + λI`` and ``b = Σ_s γ^{t-1-s} r_s x_s``
       (:class:`~glmbandits.estimation.discounted.DiscountedRidgeEstimate`: the
       paper's recursions ``V ← γV + xx' + (1-γ)λI``, ``Ṽ ← γ²Ṽ + xx' + (1-γ²)λI``,
       ``b ← γb + r x``);
    2. ``a_t = argmax_a x_a'θ̂ + α β_{t-1} sqrt(x_a' V⁻¹ Ṽ V⁻¹ x_a)`` (ties uniform),
       with Algorithm 1's radius
       ``β_{t-1} = √λ S + σ sqrt(2 log(1/δ) + d log(1 + (1-γ^{2(t-1)})/(λd(1-γ²))))``
       (:meth:`beta`, :func:`noise_radius`; ‖x‖ <= L = 1). ``alpha = 1`` is
       the algorithm as analysed (Theorem 1 makes the index optimistic, up to the
       bias of the drift, with probability 1 - δ); ``alpha < 1`` explores less.

    Per-round cost: O(d³) per update (the exact ``V⁻¹`` re-factored: the
    ``(1-γ)λI`` term makes the update not rank-one, see
    :mod:`glmbandits.estimation.discounted`) plus O(K d²) per select; no history
    is kept, and nothing grows with t.

    Parameters
    ----------
    n_features : int
        Feature dimension d.
    gamma : float, default 0.99
        Discount γ in (0, 1): a sample k rounds old weighs γ^k; the memory is
        about 1/(1 - γ) rounds. :meth:`from_theory` sets it from the drift budget.
    alpha : float, default 1.0
        Multiplier α > 0 of the width (1: Algorithm 1).
    l2 : float, default 1.0
        Regularisation λ > 0.
    delta : float, default 0.05
        Confidence level δ in (0, 1) of β.
    sigma : float, optional
        Sub-Gaussian constant σ of the reward noise; default: the family's
        (logistic and probit 0.5, linear its ``noise_sd``), or 1 without a family
        or for Poisson.
    theta_norm : float, default 1.0
        S >= 0, a bound on ‖θ*_t‖ for every t.
    seed : int, Generator, SeedSequence or None
        Randomness of tie-breaking (and of the exploration floor).
    exploration_floor : float in [0, 1], default 0.0
        Uniform exploration ε (see :class:`~glmbandits.policies.base.Policy`).
    family : str or GLMFamily or None, default None
        Used only to check rewards (and for the default σ); the model is linear.

    Attributes
    ----------
    estimate_ : DiscountedRidgeEstimate
        ``θ̂``, ``b`` and the Gram matrices.
    theta_ : ndarray of shape (d,)
        θ̂.

    References
    ----------
    Russac, Vernade & Cappé (2019), "Weighted Linear Bandits for Non-Stationary
    Environments", NeurIPS: Algorithm 1 (D-LinUCB), Theorem 1 (the confidence
    ellipsoid in the norm of ``V Ṽ⁻¹ V``) and Corollary 1 (the discount).

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import DLinUCB
    >>> policy = DLinUCB(n_features=2, gamma=0.9, seed=0)
    >>> policy.update([1.0, 0.0], 1.0)
    >>> policy.select(np.array([[1.0, 0.0], [0.0, 1.0]]))
    1
    >>> DLinUCB(n_features=2, gamma=1.5)
    Traceback (most recent call last):
    ...
    ValueError: DLinUCB: gamma must lie in (0, 1), got 1.5
    """

    def __init__(self, n_features: int, gamma: float = 0.99, alpha: float = 1.0,
                 l2: float = 1.0, delta: float = 0.05, sigma: float | None = None,
                 theta_norm: float = 1.0, seed: SeedLike = None,
                 exploration_floor: float = 0.0, family: Any = None) -> None:
        owner = type(self).__name__
        gamma = check_probability(gamma, owner, "gamma")
        alpha = check_positive(alpha, owner, "alpha")
        l2 = check_positive(l2, owner, "l2")
        delta = check_probability(delta, owner, "delta")
        sigma = None if sigma is None else check_positive(sigma, owner, "sigma")
        theta_norm = check_nonnegative(theta_norm, owner, "theta_norm")
        super().__init__(n_features, family, seed, exploration_floor)
        self.gamma, self.alpha, self.l2, self.delta = gamma, alpha, l2, delta
        self.sigma, self.theta_norm = sigma, theta_norm
        self.estimate_ = DiscountedRidgeEstimate(self.n_features, gamma, l2)

    @classmethod
    def from_theory(cls, n_features: int, horizon: int, drift_budget: float, *,
                    theta_norm: float = 1.0, delta: float = 0.05, sigma: float | None = None,
                    l2: float = 1.0, family: Any = None, seed: SeedLike = None) -> "DLinUCB":
        """D-LinUCB as Corollary 1 tunes it: ``γ = 1 - (B_T/(dT))^{2/3}``, α = 1.

        The dynamic regret is then Õ(d^{2/3} B_T^{1/3} T^{2/3}) with probability
        1 - δ, where ``B_T = Σ_t ‖θ*_t - θ*_{t+1}‖`` is the drift budget
        (:func:`discount_for_budget`; for G abrupt changes of a
        θ* of norm <= S, ``B_T <= 2SG``).

        Examples
        --------
        >>> policy = DLinUCB.from_theory(5, 10_000, drift_budget=10.0)
        >>> round(policy.gamma, 5), policy.alpha
        (0.99658, 1.0)
        """
        owner = f"{cls.__name__}.from_theory"
        gamma = discount_for_budget(horizon, n_features, drift_budget, owner)
        return cls(n_features, gamma, 1.0, l2, delta, sigma, theta_norm, seed, family=family)

    @property
    def theta_(self) -> np.ndarray:
        return self.estimate_.theta_

    def beta(self, t: int) -> float:
        """Algorithm 1's ``β_t = √λ S + σ sqrt(2 log(1/δ) + d log(1 + (1-γ^{2t})/(λd(1-γ²))))``.

        Theorem 1: ``‖θ̂_t - θ‖_{V_t Ṽ_t⁻¹ V_t} <= β_t`` for all t with probability
        1 - δ (in a stationary stretch), t the number of samples learned; the
        round-t index uses ``β_{t-1}``.
        """
        return math.sqrt(self.l2) * self.theta_norm + noise_radius(
            t, self.n_features, self.gamma, self.l2, self.delta,
            noise_sigma(self.sigma, self.family))

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        estimate = self.estimate_
        radius = self.alpha * self.beta(estimate.gram_.n_)
        return self._choose_max(ucb_scores(X, estimate.theta_, estimate.gram_.width_matrix_,
                                           radius))

    def _learn(self, x: np.ndarray, reward: float) -> None:
        self.estimate_.add(x, reward)
