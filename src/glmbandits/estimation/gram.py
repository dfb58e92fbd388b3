"""The design matrix ``V = λI + Σ w_i X_i X_i'`` and its inverse, kept by rank-one updates.

:func:`sherman_morrison_update` keeps ``V⁻¹`` by rank-one updates, O(d²) per
sample, instead of inverting V every round (Li, Lu & Zhou 2017, Algorithm 1 step 2
needs ``‖x‖_{V⁻¹}`` for every action each round); :func:`inverse_gram` forms it
once directly.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg

__all__ = ["sherman_morrison_update", "inverse_gram"]


def sherman_morrison_update(V_inv: np.ndarray, x: np.ndarray, weight: float = 1.0) -> float:
    """Rank-one update of an inverse Gram matrix, in place: V⁻¹ ← (V + w x x')⁻¹.

    Sherman–Morrison: ``(V + w x x')⁻¹ = V⁻¹ - w V⁻¹x x'V⁻¹ / (1 + w x'V⁻¹x)``,
    O(d²) instead of the O(d³) of a fresh inverse. The update is symmetric by
    construction. Returns ``x'V⁻¹x`` before the update (the squared width
    ``‖x‖²_{V⁻¹}``), so callers can also track ``log det V`` through the matrix
    determinant lemma: ``log det(V + w x x') = log det V + log(1 + w x'V⁻¹x)``.

    Examples
    --------
    >>> import numpy as np
    >>> V_inv = np.eye(2)
    >>> sherman_morrison_update(V_inv, np.array([1.0, 0.0]))
    1.0
    >>> V_inv
    array([[0.5, 0. ],
           [0. , 1. ]])
    """
    u = V_inv @ x
    quadratic = float(x @ u)
    V_inv -= (weight / (1.0 + weight * quadratic)) * (u[:, None] * u)  # exactly symmetric
    return quadratic


def inverse_gram(X: np.ndarray, l2: float = 0.0) -> np.ndarray:
    """Directly invert ``V = l2·I + X'X`` (used once, to start the rank-one updates).

    A singular V (fewer samples than features, l2 = 0) is inverted on its range:
    eigenvalues below ``1e-10 · max(1, λ_max)`` are raised to that floor, so the
    result is finite and the widths in unexplored directions are very large, as
    they should be.
    """
    d = X.shape[1]
    gram = X.T @ X
    if l2 > 0.0:
        gram.flat[:: d + 1] += l2
        try:
            return linalg.cho_solve(linalg.cho_factor(gram, lower=True), np.eye(d))
        except linalg.LinAlgError:
            pass
    eigenvalues, eigenvectors = np.linalg.eigh(gram)
    floor = 1e-10 * max(1.0, float(eigenvalues[-1]))
    inverse = (eigenvectors / np.maximum(eigenvalues, floor)) @ eigenvectors.T
    symmetric: np.ndarray = 0.5 * (inverse + inverse.T)
    return symmetric


def jittered_cholesky_solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    """``(H + jI)⁻¹ b`` for a symmetric PSD H by Cholesky, with the smallest jitter that works.

    ``j = 0`` first; while H is numerically singular (or the solve is not finite),
    ``j`` starts at ``1e-10 · trace(H)/d`` and grows by 100 each time (as
    scikit-learn's ``NewtonCholeskySolver`` fallback). None if 20 tries fail
    (e.g. H is not finite). Used by the Newton steps of eq. (3) (Li, Lu & Zhou
    2017), where H is the Hessian ``Σ μ'(X_i'θ) X_i X_i' + λI``.
    """
    d = matrix.shape[0]
    scale = max(float(np.trace(matrix)) / d, 1e-300)
    jitter = 0.0
    for _ in range(20):
        try:
            factor = linalg.cho_factor(matrix + jitter * np.eye(d), lower=True,
                                       check_finite=False)
            solution = linalg.cho_solve(factor, rhs, check_finite=False)
            if np.all(np.isfinite(solution)):
                return solution
        except (linalg.LinAlgError, ValueError):
            pass
        jitter = scale * 1e-10 if jitter == 0.0 else jitter * 100.0
    return None


def solve_spd(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``H⁻¹ b`` for a symmetric positive (semi)definite H that may be numerically singular.

    An LU solve (``numpy.linalg.solve``) when it succeeds with a finite result;
    otherwise (e.g. Poisson weights ``e^η`` so large that the ridge is lost in
    rounding) :func:`jittered_cholesky_solve`; as a last resort ``b`` divided by
    the mean diagonal of H (a finite, steepest-descent-like answer). Never raises
    ``LinAlgError``.
    """
    try:
        solution = np.linalg.solve(matrix, rhs)
        if np.all(np.isfinite(solution)):
            return solution
    except np.linalg.LinAlgError:
        pass
    jittered = jittered_cholesky_solve(matrix, rhs)
    if jittered is not None:
        return jittered
    with np.errstate(all="ignore"):
        scale = float(np.trace(matrix)) / matrix.shape[0]
    scale = scale if math.isfinite(scale) and scale > 0.0 else 1.0
    return np.nan_to_num(rhs / scale, nan=0.0, posinf=0.0, neginf=0.0)
