"""The constants and bounds of Li, Lu & Zhou (2017), as functions.

Every helper checks its inputs and returns a finite float (or array); the rules:

* **Illegal inputs are refused** with a ValueError (a TypeError for a wrong kind) naming
  the parameter, the expected values and the one given: δ outside [1e-50, 1), dimensions,
  horizons and action counts below 1, non-positive σ, κ, L_μ, and inputs for which the
  formula means nothing (Theorem 2's bound for a horizon T < dδ, where log(T/(dδ)) < 0
  would make the "bound" negative; Theorem 3's for T <= d). Every real parameter obeys
  the package's magnitude rule (``glmbandits._validation``): 1e-50 <= |v| <= 1e50 unless
  0, so log(1/δ) <= 115.1.
* **Legal inputs give finite values**, however extreme: nothing overflows to inf on the
  way to a representable result (``normality_width`` rescales x and V first). When the
  exact value itself lies beyond the largest float (about 1.8e308; e.g. eq. (4) with
  κ = 1e-50) the helper raises a ValueError saying so and giving the value's order of
  magnitude, never inf or an OverflowError. A positive value below the smallest float
  rounds to 0.0 (e.g. eq. (4) with tiny M_μ and σ), except κ: :func:`kappa` refuses a
  radius on which μ' underflows to 0, as every bound divides by κ.

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
    MIN_MAGNITUDE,
    as_float_array,
    check_finite,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
    format_value,
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

    Raises
    ------
    ValueError
        When κ is 0 in floating point: μ' underflows on the radius (logistic or
        Poisson beyond about 745, probit beyond about 38) or vanishes at infinity.
        Every bound divides by κ, so no theorem gives a finite constant there.
    """
    value = get_family(family, "kappa").kappa(radius)
    if not value > 0.0:
        raise ValueError(f"kappa: κ = inf of μ'(z) over |z| <= radius is 0 in floating point "
                         f"for radius = {format_value(radius)} (μ' underflows or vanishes "
                         "there); no theorem gives a finite constant: use a smaller radius")
    return value


def kappa_and_sigma(family: Any, theta_norm: float, sigma: float | None = None,
                    owner: str = "kappa_and_sigma") -> tuple[float, float]:
    """κ of Assumption 1 at radius ``‖θ*‖ + 1`` and the noise's sub-Gaussian σ, eq. (2).

    σ is the family's own constant unless given (Poisson has none: pass it).
    Used by the policies' ``from_theory`` constructors.

    Raises
    ------
    ValueError
        When κ at radius ``theta_norm + 1`` is below 1e-50, the smallest κ the other
        helpers accept (logistic: ‖θ*‖ beyond about 114): the message names
        ``theta_norm`` and the κ it gives.

    Examples
    --------
    >>> kappa_, sigma_ = kappa_and_sigma("logistic", 0.0)
    >>> round(kappa_, 4), sigma_
    (0.1966, 0.5)
    """
    family = get_family(family, owner)
    radius = check_nonnegative(theta_norm, owner, "theta_norm") + 1.0
    sigma = family.sub_gaussian_sigma() if sigma is None else check_positive(sigma, owner, "sigma")
    kappa_ = family.kappa(radius)
    if not kappa_ >= MIN_MAGNITUDE:
        raise ValueError(f"{owner}: theta_norm = {format_value(theta_norm)} gives kappa = "
                         f"{kappa_:.3g} at radius ‖θ*‖ + 1, below {MIN_MAGNITUDE:g}, the "
                         "smallest kappa the theory helpers accept (1/κ⁴ in eq. (4) would "
                         "overflow); the theorems' constants are vacuous for so flat a link")
    return kappa_, sigma


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
    if T < d * delta:
        raise ValueError(f"{owner}: horizon must be >= n_features * delta = "
                         f"{format_value(d * delta)} (below it log(T/(dδ)) < 0 and the bound "
                         f"would be negative), got {T}")
    log_term = max(math.log(T / (d * delta)), 0.0)  # T = dδ may round to a ratio below 1
    return tau + 2.0 * lipschitz * sigma * d / kappa * log_term * math.sqrt(T)


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
    return _ceil(8.0 * sigma**2 / kappa**2 * d * math.log(T))


def _ceil(value: float) -> int:
    """⌈value⌉, forgiving a relative rounding error of 1e-12 above an integer (0 for 0)."""
    return math.ceil(value * (1.0 - 1e-12))


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
    root = math.isqrt(d * T)  # exact for every int, where a float √ is not beyond 2**53
    return root if root * root == d * T else root + 1


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

    ``‖x‖_{V⁻¹}`` is computed as ``(max|x| / √max|V|) · ‖L⁻¹ x̃‖`` with x̃ = x / max|x|
    and L the Cholesky factor of V / max|V|, so entries of x up to 1e50 and of V down to
    the smallest float give a finite width whenever the width itself is a float.

    Parameters
    ----------
    x : array-like of shape (d,) or (K, d)
        One direction, or K directions (then K widths are returned).
    V : array-like of shape (d, d)
        Symmetric positive-definite Gram matrix ``Σ X_t X_t'``.

    Raises
    ------
    ValueError
        When V is not symmetric (to 1e-10 of its largest entry) or not positive
        definite, and when a width exceeds the largest float.

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
    v_scale = float(np.max(np.abs(V))) if V.size else 0.0
    if v_scale == 0.0:
        raise ValueError(f"{owner}: V must be positive definite (it is zero)")
    V_scaled = V / v_scale
    asymmetry = float(np.max(np.abs(V_scaled - V_scaled.T)))
    if asymmetry > 1e-10:
        raise ValueError(f"{owner}: V must be symmetric (a Gram matrix Σ X_t X_t'), got "
                         f"|V - V'| up to {asymmetry:.3g} times its largest entry")
    try:
        factor = np.linalg.cholesky(0.5 * (V_scaled + V_scaled.T))
    except np.linalg.LinAlgError:
        raise ValueError(f"{owner}: V must be positive definite (its Cholesky factorisation "
                         "fails)") from None
    rows = np.atleast_2d(x)
    x_scale = np.max(np.abs(rows), axis=1)
    directions = rows / np.where(x_scale > 0.0, x_scale, 1.0)[:, None]
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        solved = np.linalg.solve(factor, directions.T)  # L⁻¹ x̃ (L is lower triangular)
        norms = np.sqrt(np.einsum("ij,ij->j", solved, solved))
        width = (3.0 * sigma / kappa * math.sqrt(math.log(1.0 / delta))) \
            * (x_scale / math.sqrt(v_scale)) * norms
    if not np.all(np.isfinite(width)):
        raise ValueError(f"{owner}: the width exceeds the largest float "
                         f"({np.finfo(float).max:.3g}): x up to {float(np.max(x_scale)):.3g}, "
                         f"V of largest entry {v_scale:.3g}, 3σ/κ = {3.0 * sigma / kappa:.3g}")
    return float(width[0]) if x.ndim == 1 else width


def normality_min_eigenvalue(n_features: int, delta: float, sigma: float, kappa: float,
                             m_mu: float) -> float:
    """Theorem 1's condition (4) on λ_min(V).

    ``λ_min(V) >= (512 M_μ² σ² / κ⁴) (d² + log(1/δ))``
    (Li, Lu & Zhou 2017, Theorem 1, eq. (4)).

    Raises
    ------
    ValueError
        When the required eigenvalue exceeds the largest float (e.g. κ = 1e-50 with
        σ = M_μ = 1): the message gives its order of magnitude. No Gram matrix of
        floats can meet such a condition.
    """
    owner = "normality_min_eigenvalue"
    d = check_int(n_features, owner, "n_features", minimum=1)
    delta, sigma, kappa = _common(owner, delta, sigma, kappa)
    m_mu = check_nonnegative(m_mu, owner, "m_mu")
    if m_mu == 0.0:
        return 0.0
    log_terms = d**2 + math.log(1.0 / delta)
    log10_value = (math.log10(512.0) + 2.0 * math.log10(m_mu) + 2.0 * math.log10(sigma)
                   - 4.0 * math.log10(kappa) + math.log10(log_terms))
    value = 512.0 * m_mu**2 * sigma**2 / kappa**4 * log_terms  # inf, not an error, when too big
    if not math.isfinite(value):
        raise ValueError(f"{owner}: the required λ_min(V) is about 1e+{log10_value:.0f}, beyond "
                         f"the largest float ({np.finfo(float).max:.3g}), for kappa = "
                         f"{format_value(kappa)}, sigma = {format_value(sigma)}, m_mu = "
                         f"{format_value(m_mu)}: condition (4) cannot be met in floating point")
    return value
