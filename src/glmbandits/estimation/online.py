"""Online GLM updates shared by the modern policies: a proximal step and projections.

* :func:`proximal_glm_step` solves ``argmin_θ ½‖θ - θ₀‖²_V + w·ℓ(x'θ, y)`` exactly,
  where ``ℓ(z, y) = m(z) - y z`` is the family's (quasi-)negative log-likelihood
  (``ℓ' = μ(z) - y``). The minimiser lies on the line ``θ₀ - c V⁻¹x``, so the
  problem reduces to one scalar equation in ``z = x'θ``:
  ``z + s·w·(μ(z) - y) = x'θ₀`` with ``s = ‖x‖²_{V⁻¹}``. It is the update of
  ECOLog (Faury et al. 2022, eq. (7), with V = W_t) and of the diagonal Laplace
  approximation (Chapelle & Li 2011, Algorithm 3, with V = diag(q)). Cost: O(d)
  given ``V⁻¹x`` plus a few scalar Newton iterations.
* :func:`omd_glm_step` is one online-mirror-descent step of a GLM loss in the local norm
  ``‖·‖_{H̃}``, ``H̃ = H + η μ'(x'θ₀) x x'`` (the OMD estimator of Zhang, Xu, Zhao &
  Sugiyama 2025 and of Lee & Oh's DOMD-GLB, with their discounted H). Given ``H⁻¹``
  it costs O(d²): ``H̃⁻¹x`` is one Sherman–Morrison step applied to a vector.
* :func:`project_ball` projects onto ``{‖θ‖ <= S}`` in the Euclidean norm or in
  a metric ``‖·‖_A`` (the online-Newton projection of GLOC, Jun et al. 2017,
  Algorithm 2). Nothing is done, O(d) or O(d²), when θ is already inside; the
  A-metric projection otherwise costs one O(d³) eigendecomposition.
"""

from __future__ import annotations

import math

import numpy as np

from ..families import GLMFamily

__all__ = ["solve_proximal_scalar", "proximal_glm_step", "omd_glm_step", "project_ball"]

_MAX_ITER = 100


def solve_proximal_scalar(family: GLMFamily, z0: float, y: float, curvature: float,
                          weight: float = 1.0, tol: float = 1e-12) -> float:
    """Root of ``f(z) = z - z0 + curvature·weight·(μ(z) - y)`` (f is increasing, f' >= 1).

    Safeguarded Newton: the root is first bracketed (f(z0) has the sign of
    ``μ(z0) - y``, and the bracket is grown geometrically in the other
    direction), then Newton steps that leave the bracket are replaced by
    bisection. Always returns a finite number.

    Examples
    --------
    >>> from glmbandits.families import get_family
    >>> z = solve_proximal_scalar(get_family("linear"), 2.0, 0.0, 1.0)
    >>> round(z, 12)  # z - 2 + z = 0
    1.0
    """
    c = curvature * weight
    if c <= 0.0:
        return float(z0)

    def f(z: float) -> float:
        return z - z0 + c * (float(family.mean(z)) - y)

    f0 = f(z0)
    if f0 == 0.0:
        return float(z0)
    direction = -1.0 if f0 > 0.0 else 1.0
    step = max(1.0, abs(f0))
    other = z0 + direction * step
    while f(other) * f0 > 0.0:
        step *= 2.0
        other = z0 + direction * step
        if step > 1e12:  # cannot happen for an increasing f with f' >= 1
            break
    lo, hi = (z0, other) if direction > 0 else (other, z0)
    z = 0.5 * (lo + hi)
    for _ in range(_MAX_ITER):
        value = f(z)
        if abs(value) <= tol * max(1.0, abs(z)):
            break
        if value > 0.0:
            hi = z
        else:
            lo = z
        newton = z - value / (1.0 + c * float(family.dmean(z)))
        z = newton if lo < newton < hi else 0.5 * (lo + hi)
        if hi - lo <= tol * max(1.0, abs(z)):
            break
    return float(z)


def proximal_glm_step(theta: np.ndarray, V_inv_x: np.ndarray, x: np.ndarray, y: float,
                      family: GLMFamily, weight: float = 1.0) -> np.ndarray:
    """``argmin_θ ½‖θ - theta‖²_V + weight·ℓ(x'θ, y)`` given ``V_inv_x = V⁻¹x``.

    The stationarity condition ``V(θ - θ₀) + w(μ(x'θ) - y)x = 0`` gives
    ``θ = θ₀ - w(μ(z) - y)V⁻¹x`` with z the root of
    :func:`solve_proximal_scalar`. Returns a new array.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits.families import get_family
    >>> theta = proximal_glm_step(np.zeros(2), np.array([1.0, 0.0]), np.array([1.0, 0.0]),
    ...                           1.0, get_family("logistic"))
    >>> bool(theta[0] > 0), float(theta[1])
    (True, 0.0)
    """
    s = float(x @ V_inv_x)
    z = solve_proximal_scalar(family, float(x @ theta), y, s, weight)
    residual = float(family.mean(z)) - y
    return theta - weight * residual * V_inv_x


def omd_glm_step(theta: np.ndarray, H_inv: np.ndarray, x: np.ndarray, y: float,
                 family: GLMFamily, eta: float) -> tuple[np.ndarray, float]:
    """One OMD step ``θ₀ - η H̃⁻¹ ∇ℓ(θ₀)`` of the loss ``ℓ(θ) = m(x'θ) - y x'θ``.

    ``argmin_θ ⟨∇ℓ(θ₀), θ⟩ + ‖θ - θ₀‖²_{H̃}/(2η)`` over all of R^d, with
    ``H̃ = H + η μ'(x'θ₀) x x'`` (the loss's Hessian at θ₀ added to the metric). With
    ``∇ℓ(θ₀) = (μ(z) - y) x``, ``z = x'θ₀`` and ``u = H⁻¹x``, Sherman–Morrison gives
    ``H̃⁻¹x = u/(1 + η μ'(z) x'u)``, so the step is O(d²) given ``H⁻¹``. A constrained
    step (θ in a ball) is this point projected in ‖·‖_{H̃} (:func:`project_ball`).

    Returns the new θ (a new array) and the curvature ``μ'(z)`` used in ``H̃``.

    References
    ----------
    Zhang, Xu, Zhao & Sugiyama (2025), "Generalized Linear Bandits: Almost Optimal
    Regret with One-Pass Update" (arXiv:2507.11847), the OMD estimator; Lee & Oh
    (2026), "Nonstationary Generalized Linear Bandits with Discounted Online Mirror
    Descent" (arXiv:2605.25590), the same step with a discounted H.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits.families import get_family
    >>> theta, curvature = omd_glm_step(np.zeros(2), np.eye(2), np.array([1.0, 0.0]), 1.0,
    ...                                 get_family("logistic"), eta=1.0)
    >>> theta.tolist(), curvature  # 0 + (1 - 0.5)/(1 + 0.25)
    ([0.4, 0.0], 0.25)
    """
    z = float(x @ theta)
    residual = float(family.mean(z)) - y
    curvature = float(family.dmean(z))
    u = H_inv @ x
    scale = eta * residual / (1.0 + eta * curvature * float(x @ u))
    return theta - scale * u, curvature


def project_ball(theta: np.ndarray, radius: float, metric: np.ndarray | None = None) -> np.ndarray:
    """Projection of θ onto ``{‖θ‖₂ <= radius}``, in ‖·‖₂ or in ‖·‖_metric.

    With a metric A (symmetric positive definite) the projection
    ``argmin_{‖u‖ <= S} (u - θ)'A(u - θ)`` is ``u = (A + νI)⁻¹Aθ`` where ν >= 0
    makes ``‖u‖ = S``; ν is found by bisection on the eigenbasis of A.
    A point already inside is returned unchanged (as a copy).

    Examples
    --------
    >>> import numpy as np
    >>> project_ball(np.array([3.0, 4.0]), 1.0)
    array([0.6, 0.8])
    """
    norm = float(np.linalg.norm(theta))
    if norm <= radius:
        return theta.copy()
    if metric is None:
        return theta * (radius / norm)
    eigenvalues, eigenvectors = np.linalg.eigh(metric)
    eigenvalues = np.maximum(eigenvalues, 1e-300)
    coords = eigenvectors.T @ theta * eigenvalues  # A θ in the eigenbasis

    def norm_at(nu: float) -> float:
        return float(np.linalg.norm(coords / (eigenvalues + nu)))

    lo, hi = 0.0, max(1.0, float(eigenvalues.max()))
    while norm_at(hi) > radius:
        hi *= 2.0
        if not math.isfinite(hi):
            break
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if norm_at(mid) > radius:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-14 * max(1.0, hi):
            break
    solution: np.ndarray = eigenvectors @ (coords / (eigenvalues + hi))
    return solution
