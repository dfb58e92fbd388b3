"""Certified error bounds for an approximate root of the GLM estimating equation.

Given the exact gradient of eq. (3) of Li, Lu & Zhou (2017) at a candidate θ,
:func:`certified_v_norm_error` bounds ``‖θ - θ̂‖_V`` without knowing the root θ̂.
The policies' ``refit_tol`` stops a refit as soon as this certificate is below a
fraction of the UCB width (Algorithm 1, step 2), so every action's estimated mean
is provably within that fraction of its width of the exact-MLE one. Used by the
incremental solver (:mod:`.incremental`), the stacked lazy solver (:mod:`.lazy`)
and the lockstep batch kernels.

References
----------
Li, Lu & Zhou (2017), ICML, eq. (3) and Algorithm 1; Nocedal & Wright (2006),
Numerical Optimization, the strong-convexity argument of Section 3.3.
"""

from __future__ import annotations

import math

import numpy as np

from ..families import GLMFamily

__all__ = ["MAX_CERTIFY_RADIUS", "KAPPA_GRID", "certified_v_norm_error", "certified_v_norm_errors"]

#: Largest V-norm radius ρ a certificate is issued for (see :func:`certified_v_norm_error`).
MAX_CERTIFY_RADIUS = 0.5
#: κ is memoised on a grid of this step in the radius (rounded up: a valid lower bound).
KAPPA_GRID = 1.0 / 64.0


def certified_v_norm_error(gradient: np.ndarray, eta_max: float, V_inv: np.ndarray,
                           family: GLMFamily, l2: float, kappa_cache: dict | None = None,
                           radius: float = MAX_CERTIFY_RADIUS) -> float:
    """A certified bound on ``‖θ - θ̂‖_V`` from the exact gradient at θ (O(d²)).

    Let ``g = g(θ)`` be the gradient of eq. (3) at θ computed exactly on all n
    samples, ``m = max_i |X_i'θ|`` (``eta_max``), ``V = l2·I + Σ X_i X_i'`` with
    ``l2 > 0``, θ̂ the exact root, and ``0 < ρ <= 1/2`` (``radius``). Returns
    ``r = ‖g‖_{V⁻¹} / κ̃`` with ``κ̃ = min(1, κ(m + ρ))``, where
    ``κ(t) = inf_{|z|<=t} μ'(z)`` is the family's
    :meth:`~glmbandits.families.GLMFamily.kappa`, if ``r <= ρ``, and ``inf``
    otherwise. Claim: ``‖θ - θ̂‖_V <= r``.

    Proof. Every sample satisfies ``‖X_i‖_{V⁻¹} < 1`` (``V ⪰ l2·I + X_i X_i'``), so
    on the V-ball of radius ρ around θ, ``|X_i'ϑ| < m + ρ``, and the Jacobian of
    eq. (3), ``H(ϑ) = Σ μ'(X_i'ϑ) X_i X_i' + l2·I``, satisfies ``H(ϑ) ⪰ κ̃ V`` there.
    Eq. (3) is the gradient of a convex function f. Along the ray from θ towards
    θ̂ (direction u with ``‖u‖_V = 1``) the directional derivative
    ``h(s) = u'g(θ + s u)`` is non-decreasing, and for ``s <= ρ``,
    ``h(s) >= h(0) + κ̃ s >= -‖g‖_{V⁻¹} + κ̃ s``, which is > 0 for ``s > r``.
    So if ``r <= ρ`` then f increases along the ray past ``s = r``, and its
    minimiser θ̂, which lies on the ray, has ``‖θ̂ - θ‖_V <= r``. ∎

    The smaller ρ, the larger κ̃ (the curvature is only needed near θ): callers
    that accept ``r <= tol`` pass ``ρ = min(tol, 1/2)``.

    Consequence (used by the policies' ``refit_tol``): for every x,
    ``|x'θ - x'θ̂| <= ‖x‖_{V⁻¹} ‖θ - θ̂‖_V <= r ‖x‖_{V⁻¹}`` (Cauchy–Schwarz), i.e.
    the estimated mean of every action is within ``r/α`` times its UCB width
    ``α‖x‖_{V⁻¹}`` of the exact-MLE one (Li, Lu & Zhou 2017, Algorithm 1 step 2).

    ``kappa_cache`` (a dict, optional) memoises κ on a grid: ``m + ρ`` is rounded
    *up* to a multiple of 1/64, which can only lower κ (an infimum over a larger
    interval), so the bound stays valid.
    """
    if l2 <= 0.0 or not 0.0 < radius <= MAX_CERTIFY_RADIUS:
        return math.inf
    kappa = _curvature_floor(eta_max + radius, family, kappa_cache)
    if not kappa > 0.0:
        return math.inf
    with np.errstate(over="ignore", invalid="ignore"):
        quadratic = float(gradient @ (V_inv @ gradient))
    if not -math.inf < quadratic < math.inf:  # overflow (±inf or NaN): no certificate
        return math.inf
    error = math.sqrt(max(quadratic, 0.0)) / kappa
    return error if error <= radius else math.inf


def _curvature_floor(reach: float, family: GLMFamily, kappa_cache: dict | None) -> float:
    """``κ̃ = min(1, κ(reach))``, memoised on the 1/64 grid (rounded up); 0 if reach is infinite."""
    if not reach < math.inf:
        return 0.0
    if kappa_cache is None:
        return min(family._kappa(reach), 1.0)
    return _bucket_curvature(math.ceil(reach / KAPPA_GRID), family, kappa_cache)


def _bucket_curvature(bucket: int, family: GLMFamily, kappa_cache: dict | None) -> float:
    """``min(1, κ(bucket/64))``, memoised in ``kappa_cache``."""
    kappa = None if kappa_cache is None else kappa_cache.get(bucket)
    if kappa is None:
        kappa = family._kappa(bucket * KAPPA_GRID)
        if kappa_cache is not None:
            kappa_cache[bucket] = kappa
    return min(kappa, 1.0)


def certified_v_norm_errors(gradients: np.ndarray, eta_max: np.ndarray, V_inv: np.ndarray,
                            family: GLMFamily, l2: float, radius: np.ndarray,
                            kappa_cache: dict | None = None) -> np.ndarray:
    """:func:`certified_v_norm_error` for r rows at once: shapes (r, d), (r,), (r, d, d), (r,).

    Row i's bound is that of row i alone (``inf`` where no certificate is
    issued, e.g. ``radius[i] <= 0``); the quadratic forms are batched.
    """
    if l2 <= 0.0:
        return np.full(gradients.shape[0], math.inf)
    column = gradients[:, :, None]
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: no certificate (below)
        quadratic = np.matmul(np.swapaxes(column, 1, 2), np.matmul(V_inv, column))[:, 0, 0]
    errors = []
    for square, rho, eta in zip(quadratic.tolist(), radius.tolist(), eta_max.tolist()):
        error = math.inf  # row by row in scalar arithmetic: the same whatever r is
        # an overflowed quadratic form (±inf or NaN, e.g. Poisson weights e^η of a far
        # iterate) certifies nothing
        if 0.0 < rho <= MAX_CERTIFY_RADIUS and -math.inf < square < math.inf:
            kappa = _curvature_floor(eta + rho, family, kappa_cache)
            if kappa > 0.0:
                bound = math.sqrt(max(square, 0.0)) / kappa
                if bound <= rho:
                    error = bound
        errors.append(error)
    return np.array(errors)
