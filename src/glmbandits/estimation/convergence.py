"""The one convergence rule every solver of eq. (3) applies.

Li, Lu & Zhou (2017), eq. (3), asks for a root of

.. math:: g(\\theta) = \\sum_{i \\le n} (\\mu(X_i'\\theta) - Y_i) X_i + \\lambda\\theta = 0.

:func:`~glmbandits.estimation.solve_estimating_equation` (behind ``fit_glm``),
:class:`~glmbandits.estimation.incremental.IncrementalMLE` and
:func:`~glmbandits.estimation.lazy.lazy_newton_refit` all accept an iterate θ
only through :func:`is_root` (or its row-wise twin :func:`are_roots`):

1. **small gradient**, in either of two norms, against the same threshold
   ``tol · max(1, n)`` (:func:`stopping_threshold`):

   * the max-norm ``max_j |g_j(θ)|``, or
   * the **Newton decrement** (Boyd & Vandenberghe 2004, §9.5.1) of the mean
     loss, written as a norm of g: ``sqrt(max(1, n) · g'H⁻¹g)``
     (:func:`decrement_norm`), i.e. ``g`` measured in the norm dual to the mean
     Hessian ``H/n``, ``H = Σ μ'(X_i'θ) X_i X_i' + λI``. ``λ² = g'H⁻¹g`` is
     affine invariant: rescaling or mixing the columns of X leaves it unchanged,
     so raw, badly scaled columns (statsmodels' Longley data, cond(X) ≈ 5e9,
     where ``max_j |g_j|`` stalls at its rounding floor of ~1e-3) converge as
     their standardised copy does. The max-norm test keeps its old meaning (and,
     for features of norm <= 1 and a bounded μ', it is the one that fires first,
     so estimates on such data are those of the max-norm rule). A solver that
     steps with an approximate Hessian A (the cached ones of the incremental and
     lazy refits) may screen with ``g'A⁻¹g`` but accepts on the exact H;
2. with ``λ = 0`` only (with ``λ > 0`` the equation is strongly convex and a
   small gradient is a solution):

   * **step**: the Newton step ``p = H⁻¹g`` at θ is tiny *in the linear
     predictors*, ``max_i |X_i'p| <= STEP_TOL · (1 + max_i |X_i'θ|)``. On
     separable data the gradient (and the decrement) vanish along a ray to
     infinity while the Newton step stays of order one in ``X_i'p`` (for the
     logistic tail, ``μ(η) ≈ e^η`` and each step moves η by about 1), so this
     catches what a small gradient alone cannot. Measuring the step in ``X_i'p``
     rather than in θ makes the test independent of the scale of the features
     (``fit_glm([[1e4]], [0])`` moves θ by only 1e-4 per step);
   * **finite MLE**: ``max_i |X_i'θ| <= family.saturation``, the range where μ'
     is numerically non-zero and μ is still distinguishable from the limits of
     its range; beyond it the MLE is escaping to infinity (and a residual
     ``μ - y`` rounded to 0 would make g and p vanish there).

A result that fails the rule has ``converged=False`` (and ``fit_glm`` warns with
:class:`~glmbandits.exceptions.ConvergenceWarning`).

References
----------
Li, Lu & Zhou (2017), eq. (3); Boyd & Vandenberghe (2004), *Convex Optimization*,
§9.5.1 (the Newton decrement, its affine invariance and its use as a stopping
criterion).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

__all__ = ["STEP_TOL", "stopping_threshold", "decrement_norm", "decrement_norms", "is_root",
           "are_roots"]

#: Newton step in the linear predictors (relative to 1 + max|X_i'θ|) below which a
#: small gradient is a true root (used when λ = 0).
STEP_TOL = 1e-4


def stopping_threshold(tol: float, n: int) -> float:
    """The strict bound on ``max_j |g_j|`` (and on :func:`decrement_norm`): ``tol · max(1, n)``."""
    return tol * max(1.0, float(n))


def decrement_norm(decrement_squared: float, n: int) -> float:
    """``sqrt(max(1, n) · λ²)``: the gradient in the norm of the mean Hessian.

    Parameters
    ----------
    decrement_squared : float
        ``λ² = g'H⁻¹g`` (Boyd & Vandenberghe 2004, eq. (9.28)).
    n : int
        Number of samples.

    Returns
    -------
    float
        Compared with :func:`stopping_threshold`: ``decrement_norm <= tol·max(1, n)``
        says that the mean loss ``L/n`` has a Newton decrement ``<= tol``. A
        negative or NaN ``λ²`` (H not numerically positive definite) gives inf:
        it certifies nothing.
    """
    if not decrement_squared >= 0.0:
        return math.inf
    return math.sqrt(max(1.0, float(n)) * decrement_squared)


def decrement_norms(decrements_squared: np.ndarray, n: np.ndarray) -> np.ndarray:
    """:func:`decrement_norm` row by row (NaN or negative ``λ²``: inf)."""
    squared = np.asarray(decrements_squared, dtype=np.float64)
    scaled = np.maximum(np.asarray(n, dtype=np.float64), 1.0) * squared
    with np.errstate(invalid="ignore"):
        return np.where(squared >= 0.0, np.sqrt(np.where(squared >= 0.0, scaled, 0.0)), math.inf)


def is_root(gradient_norm: float, threshold: float, l2: float, eta_max: float = 0.0,
            eta_step: float | Callable[[], float] = 0.0,
            saturation: float = math.inf,
            decrement: float | Callable[[], float] = math.inf) -> bool:
    """Whether an iterate solves eq. (3): the rule of the module docstring.

    Parameters
    ----------
    gradient_norm : float
        ``max_j |g_j(θ)|``, computed exactly on all samples (NaN or inf: not a root).
    threshold : float
        :func:`stopping_threshold` of the solver's ``tol`` and n.
    l2 : float
        Ridge λ >= 0; with λ > 0 the gradient tests alone decide.
    eta_max : float
        ``max_i |X_i'θ|`` (needed when λ = 0).
    eta_step : float or callable
        ``max_i |X_i'p|`` for the Newton step p at θ, or a function returning it
        (called only when λ = 0 and the gradient and saturation tests pass, so
        callers pay for the step only when it decides).
    saturation : float
        The family's saturation bound on ``|X_i'θ|``.
    decrement : float or callable
        :func:`decrement_norm` at θ, or a function returning it (called only when
        the max-norm test fails); inf (the default) leaves the max-norm test alone.

    Returns
    -------
    bool

    References
    ----------
    Li, Lu & Zhou (2017), eq. (3) (the equation solved); Boyd & Vandenberghe
    (2004), §9.5.1 (the Newton decrement); Nocedal & Wright (2006), Section 3.3
    (Newton steps near a root).
    """
    if not gradient_norm <= threshold:
        value = decrement() if callable(decrement) else decrement
        if not value <= threshold:
            return False
    if l2 > 0.0:
        return True
    if not eta_max <= saturation:
        return False
    step = eta_step() if callable(eta_step) else eta_step
    return bool(step <= STEP_TOL * (1.0 + eta_max))


def are_roots(gradient_norms: np.ndarray, thresholds: np.ndarray, l2: float,
              eta_max: np.ndarray | None = None,
              eta_step: Callable[[np.ndarray], np.ndarray] | None = None,
              saturation: float = math.inf,
              decrements: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """:func:`is_root` for r rows at once (the lazy and batch refits).

    Row i's answer is ``is_root(gradient_norms[i], thresholds[i], l2, eta_max[i],
    eta_step[i], saturation, decrement[i])``. ``eta_step``, when λ = 0, is a
    function of the boolean mask of the rows that passed the other tests,
    returning their ``max_i |X_i'p|``; ``decrements`` (optional) is a function
    of the mask of the rows that failed the max-norm test, returning their
    :func:`decrement_norm` (so each is computed only for the rows it decides).
    """
    small = gradient_norms <= thresholds  # NaN: False
    if decrements is not None and not small.all():
        large = ~small
        values = np.full(small.shape[0], math.inf)
        values[large] = decrements(large)
        small = small | (values <= thresholds)
    if l2 > 0.0 or not small.any():
        return small
    assert eta_max is not None and eta_step is not None, "l2 == 0 needs eta_max and eta_step"
    small &= eta_max <= saturation
    if not small.any():
        return small
    steps = np.full(small.shape[0], math.inf)
    steps[small] = eta_step(small)
    return small & (steps <= STEP_TOL * (1.0 + eta_max))
