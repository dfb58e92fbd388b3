"""The constants and bounds of Li, Lu & Zhou (2017), as functions.

Every helper checks its inputs and returns a finite float (or array).

Examples
--------
>>> from glmbandits import theory
>>> round(theory.ucb_glm_alpha(10, 1000, 0.1, 0.5, 0.1), 4)
26.8417
>>> theory.supcb_glm_tau(10, 1000)
100
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._validation import (
    as_float_array,
    check_finite,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
)
from .families import get_family

__all__ = [
    "kappa",
    "kappa_and_sigma",
    "ucb_glm_alpha",
    "ucb_glm_regret_bound",
    "ucb_glm_theorem4_alpha",
    "ucb_glm_theorem4_tau",
    "widen_for_refit_tol",
    "supcb_glm_alpha",
    "supcb_glm_tau",
    "supcb_glm_regret_bound",
    "normality_width",
    "normality_min_eigenvalue",
]


def kappa(family: Any, radius: float) -> float:
    """κ = inf of μ'(z) over |z| <= radius (Assumption 1).

    With ‖x‖ <= 1 and ‖θ - θ*‖ <= 1, |x'θ| <= ‖θ*‖ + 1, so Assumption 1 holds with
    ``kappa(family, ‖θ*‖ + 1)``.

    Examples
    --------
    >>> round(kappa("logistic", 0.0), 2)
    0.25
    """
    return get_family(family, "kappa").kappa(radius)


def kappa_and_sigma(family: Any, theta_norm: float, sigma: float | None = None,
                    owner: str = "kappa_and_sigma") -> tuple[float, float]:
    """κ of Assumption 1 at radius ``‖θ*‖ + 1`` and the noise's sub-Gaussian σ, eq. (2).

    σ is the family's own constant unless given (Poisson has none: pass it).
    Used by the policies' ``from_theory`` constructors.

    Examples
    --------
    >>> kappa_, sigma_ = kappa_and_sigma("logistic", 0.0)
    >>> round(kappa_, 4), sigma_
    (0.1966, 0.5)
    """
    family = get_family(family, owner)
    radius = check_nonnegative(theta_norm, owner, "theta_norm") + 1.0
    sigma = family.sub_gaussian_sigma() if sigma is None else check_positive(sigma, owner, "sigma")
    return family.kappa(radius), sigma


def _common(owner: str, delta: float, sigma: float, kappa_: float) -> tuple[float, float, float]:
    return (check_probability(delta, owner, "delta"), check_positive(sigma, owner, "sigma"),
            check_positive(kappa_, owner, "kappa"))


def ucb_glm_alpha(n_features: int, horizon: int, delta: float, sigma: float,
                  kappa: float) -> float:
    """Theorem 2's exploration parameter for UCB-GLM.

    ``α = (σ/κ) √( (d/2)·log(1 + 2T/d) + log(1/δ) )``
    (Li, Lu & Zhou 2017, Theorem 2; also the radius of Lemma 3's event E_Δ).
    """
    owner = "ucb_glm_alpha"
    d = check_int(n_features, owner, "n_features", minimum=1)
    T = check_int(horizon, owner, "horizon", minimum=1)
    delta, sigma, kappa = _common(owner, delta, sigma, kappa)
    return sigma / kappa * math.sqrt(d / 2.0 * math.log1p(2.0 * T / d) + math.log(1.0 / delta))


def ucb_glm_regret_bound(n_features: int, horizon: int, delta: float, sigma: float,
                         kappa: float, lipschitz: float, tau: float) -> float:
    """Theorem 2's high-probability regret bound for UCB-GLM.

    ``R_T <= τ + (2 L_μ σ d / κ) · log(T / (d δ)) · √T``, holding with
    probability at least 1 - 2δ (Li, Lu & Zhou 2017, Theorem 2).
    """
    owner = "ucb_glm_regret_bound"
    d = check_int(n_features, owner, "n_features", minimum=1)
    T = check_int(horizon, owner, "horizon", minimum=1)
    delta, sigma, kappa = _common(owner, delta, sigma, kappa)
    lipschitz = check_positive(lipschitz, owner, "lipschitz")
    tau = check_nonnegative(tau, owner, "tau")
    return tau + 2.0 * lipschitz * sigma * d / kappa * math.log(T / (d * delta)) * math.sqrt(T)


def ucb_glm_theorem4_alpha(sigma: float, kappa: float, lipschitz: float) -> float:
    """Theorem 4's exploration parameter for UCB-GLM: the largest allowed, α = L_μ σ / κ.

    Theorem 4 (Li, Lu & Zhou 2017, Section 7.1, "A better regret bound for UCB-GLM")
    takes any ``α <= L_μ σ/κ`` and ``τ = (8σ²/κ²) d log T`` (:func:`ucb_glm_theorem4_tau`)
    and, under its extra assumption (14) ``Σ_{t>τ} λ_min(V_t)^{-1/2} <= c√T`` (with
    probability 1 - δ, δ ∈ [1/T, 1)) and T = Ω((σR/(κL_μ)) d log² T), bounds the regret
    by ``C (L_μ σ/κ) √(d T log(T/δ))``.

    Examples
    --------
    >>> ucb_glm_theorem4_alpha(0.5, 0.1, 0.25)
    1.25
    """
    owner = "ucb_glm_theorem4_alpha"
    sigma = check_positive(sigma, owner, "sigma")
    kappa = check_positive(kappa, owner, "kappa")
    lipschitz = check_positive(lipschitz, owner, "lipschitz")
    return lipschitz * sigma / kappa


def ucb_glm_theorem4_tau(n_features: int, horizon: int, sigma: float, kappa: float) -> int:
    """Theorem 4's number of initial random rounds, ``τ = (8σ²/κ²) d log T``, rounded up.

    Li, Lu & Zhou (2017), Theorem 4 (Section 7.1).

    Examples
    --------
    >>> ucb_glm_theorem4_tau(10, 1000, 0.5, 0.25)
    2211
    """
    owner = "ucb_glm_theorem4_tau"
    d = check_int(n_features, owner, "n_features", minimum=1)
    T = check_int(horizon, owner, "horizon", minimum=1)
    sigma = check_positive(sigma, owner, "sigma")
    kappa = check_positive(kappa, owner, "kappa")
    return math.ceil(8.0 * sigma**2 / kappa**2 * d * math.log(T) - 1e-9)


def widen_for_refit_tol(alpha: float, refit_tol: float, owner: str = "widen_for_refit_tol"
                        ) -> float:
    """The α that pays for refits solved to tolerance ε: ``α/(1 - ε)``, for 0 <= ε < 1.

    A refit with ``‖θ̂ - θ̂_exact‖_V <= εα'`` (the policies' ``refit_tol``) moves every
    index ``x'θ̂ + α'‖x‖_{V⁻¹}`` by at most ``εα'‖x‖_{V⁻¹}`` (Cauchy–Schwarz). If
    ``|x'(θ̂_exact - θ*)| <= α‖x‖_{V⁻¹}`` (Lemma 3's event), the perturbed index is still
    optimistic as soon as ``α'(1 - ε) >= α``, and the one-step regret of the proof of
    Theorem 2 becomes ``(α + (1 + ε)α')‖x_t‖_{V⁻¹} = 2α'‖x_t‖_{V⁻¹}`` at
    ``α' = α/(1 - ε)``; the elliptical-potential sum (Lemma 2) is unchanged, so the bound
    of Theorem 2 is multiplied by ``1/(1 - ε)``. The same holds for CB-GLM's widths in
    Theorem 3 (``|m_a - x_a'θ*| <= w_a`` keeps holding with ``w_a = α'‖x_a‖_{V⁻¹}``).

    Examples
    --------
    >>> round(widen_for_refit_tol(2.0, 0.2), 6)
    2.5
    """
    alpha = check_positive(alpha, owner, "alpha")
    refit_tol = check_nonnegative(refit_tol, owner, "refit_tol")
    if refit_tol >= 1.0:
        raise ValueError(f"{owner}: refit_tol must be < 1 for a theorem's α to be widened "
                         f"to α/(1 - refit_tol), got {refit_tol:g}")
    return alpha / (1.0 - refit_tol)


def supcb_glm_alpha(horizon: int, n_actions: int, delta: float, sigma: float,
                    kappa: float) -> float:
    """Theorem 3's exploration parameter for SupCB-GLM.

    ``α = (3σ/κ) √( 2 log(T K / δ) )`` (Li, Lu & Zhou 2017, Theorem 3 and Lemma 5).
    """
    owner = "supcb_glm_alpha"
    T = check_int(horizon, owner, "horizon", minimum=1)
    K = check_int(n_actions, owner, "n_actions", minimum=1)
    delta, sigma, kappa = _common(owner, delta, sigma, kappa)
    return 3.0 * sigma / kappa * math.sqrt(2.0 * math.log(T * K / delta))


def supcb_glm_tau(n_features: int, horizon: int) -> int:
    """Theorem 3's number of initial random rounds, τ = √(dT), rounded up to an int."""
    owner = "supcb_glm_tau"
    d = check_int(n_features, owner, "n_features", minimum=1)
    T = check_int(horizon, owner, "horizon", minimum=1)
    return math.ceil(math.sqrt(d * T) - 1e-9)


def supcb_glm_regret_bound(n_features: int, horizon: int, n_actions: int, delta: float,
                           sigma: float, kappa: float, lipschitz: float) -> float:
    """Theorem 3's high-probability regret bound for SupCB-GLM.

    ``R_T <= 45 (σ L_μ / κ) √( log T · log(T K / δ) · log(T / d) ) · √(d T)``,
    with probability at least 1 - δ, for T >= T_0 of eq. (8)
    (Li, Lu & Zhou 2017, Theorem 3). Requires T > d so that log(T/d) > 0.
    """
    owner = "supcb_glm_regret_bound"
    d = check_int(n_features, owner, "n_features", minimum=1)
    T = check_int(horizon, owner, "horizon", minimum=2)
    K = check_int(n_actions, owner, "n_actions", minimum=1)
    delta, sigma, kappa = _common(owner, delta, sigma, kappa)
    lipschitz = check_positive(lipschitz, owner, "lipschitz")
    if T <= d:
        raise ValueError(f"{owner}: horizon must exceed n_features ({d}) so that log(T/d) > 0, "
                         f"got {T}")
    logs = math.log(T) * math.log(T * K / delta) * math.log(T / d)
    return 45.0 * sigma * lipschitz / kappa * math.sqrt(logs) * math.sqrt(d * T)


def normality_width(x: Any, V: Any, delta: float, sigma: float, kappa: float) -> Any:
    """Theorem 1's confidence width ``(3σ/κ) √(log(1/δ)) ‖x‖_{V⁻¹}``.

    With probability at least 1 - 3δ, ``|x'(θ̂ - θ*)|`` is at most this width for
    every x, provided λ_min(V) satisfies eq. (4)
    (:func:`normality_min_eigenvalue`); Li, Lu & Zhou (2017), Theorem 1, eq. (5).

    Parameters
    ----------
    x : array-like of shape (d,) or (K, d)
        One direction, or K directions (then K widths are returned).
    V : array-like of shape (d, d)
        Positive-definite Gram matrix ``Σ X_t X_t'``.

    Examples
    --------
    >>> import numpy as np
    >>> round(float(normality_width([1.0, 0.0], 4 * np.eye(2), np.exp(-1), 1.0, 0.5)), 6)
    3.0
    """
    owner = "normality_width"
    delta, sigma, kappa = _common(owner, delta, sigma, kappa)
    V = as_float_array(V, "V", owner)
    if V.ndim != 2 or V.shape[0] != V.shape[1]:
        raise ValueError(f"{owner}: V must be a finite square matrix, got shape {V.shape}")
    check_finite(V, owner, "V")
    x = as_float_array(x, "x", owner)
    if x.shape[-1:] != V.shape[:1] or x.ndim not in (1, 2):
        raise ValueError(f"{owner}: x must have shape ({V.shape[0]},) or (K, {V.shape[0]}), "
                         f"got {x.shape}")
    check_finite(x, owner, "x")
    try:
        solved = np.linalg.solve(V, np.atleast_2d(x).T)
    except np.linalg.LinAlgError:
        raise ValueError(f"{owner}: V must be positive definite (it is singular)") from None
    quadratic = np.einsum("ij,ji->i", np.atleast_2d(x), solved)
    if np.any(quadratic < 0):
        raise ValueError(f"{owner}: V must be positive definite")
    width = 3.0 * sigma / kappa * math.sqrt(math.log(1.0 / delta)) * np.sqrt(quadratic)
    return float(width[0]) if x.ndim == 1 else width


def normality_min_eigenvalue(n_features: int, delta: float, sigma: float, kappa: float,
                             m_mu: float) -> float:
    """Theorem 1's condition (4) on λ_min(V).

    ``λ_min(V) >= (512 M_μ² σ² / κ⁴) (d² + log(1/δ))``
    (Li, Lu & Zhou 2017, Theorem 1, eq. (4)).
    """
    owner = "normality_min_eigenvalue"
    d = check_int(n_features, owner, "n_features", minimum=1)
    delta, sigma, kappa = _common(owner, delta, sigma, kappa)
    m_mu = check_nonnegative(m_mu, owner, "m_mu")
    return 512.0 * m_mu**2 * sigma**2 / kappa**4 * (d**2 + math.log(1.0 / delta))
