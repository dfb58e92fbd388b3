"""The one convergence rule every solver of eq. (3) applies.

Li, Lu & Zhou (2017), eq. (3), asks for a root of

.. math:: g(\\theta) = \\sum_{i \\le n} (\\mu(X_i'\\theta) - Y_i) X_i + \\lambda\\theta = 0.

:func:`~glmbandits.estimation.solve_estimating_equation` (behind ``fit_glm``),
:class:`~glmbandits.estimation.incremental.IncrementalMLE` and
:func:`~glmbandits.estimation.lazy.lazy_newton_refit` all accept an iterate θ
only through :func:`is_root`:

1. **gradient**: ``max_j |g_j(θ)| <= tol · max(1, n)`` (:func:`stopping_threshold`);
2. with ``λ = 0`` only (with ``λ > 0`` the equation is strongly convex and a
   small gradient is a solution):

   * **step**: the Newton step ``p = H⁻¹g`` at θ is tiny *in the linear
     predictors*, ``max_i |X_i'p| <= STEP_TOL · (1 + max_i |X_i'θ|)``. On
     separable data the gradient vanishes along a ray to infinity while the
     Newton step stays of order one in ``X_i'p`` (for the logistic tail,
     ``μ(η) ≈ e^η`` and each step moves η by about 1), so this catches what the
     gradient alone cannot. Measuring the step in ``X_i'p`` rather than in θ
     makes the test independent of the scale of the features
     (``fit_glm([[1e4]], [0])`` moves θ by only 1e-4 per step);
   * **finite MLE**: ``max_i |X_i'θ| <= family.saturation``, the range where μ'
     is numerically non-zero; beyond it the MLE is escaping to infinity.

A result that fails the rule has ``converged=False`` (and ``fit_glm`` warns with
:class:`~glmbandits.exceptions.ConvergenceWarning`).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

__all__ = ["STEP_TOL", "stopping_threshold", "is_root", "are_roots"]

#: Newton step in the linear predictors (relative to 1 + max|X_i'θ|) below which a
#: small gradient is a true root (used when λ = 0).
STEP_TOL = 1e-4


def stopping_threshold(tol: float, n: int) -> float:
    """The strict bound on ``max_j |g_j|``: ``tol · max(1, n)``."""
    return tol * max(1.0, float(n))


def is_root(gradient_norm: float, threshold: float, l2: float, eta_max: float = 0.0,
            eta_step: float | Callable[[], float] = 0.0,
            saturation: float = math.inf) -> bool:
    """Whether an iterate solves eq. (3): the rule of the module docstring.

    Parameters
    ----------
    gradient_norm : float
        ``max_j |g_j(θ)|``, computed exactly on all samples (NaN or inf: not a root).
    threshold : float
        :func:`stopping_threshold` of the solver's ``tol`` and n.
    l2 : float
        Ridge λ >= 0; with λ > 0 the gradient test alone decides.
    eta_max : float
        ``max_i |X_i'θ|`` (needed when λ = 0).
    eta_step : float or callable
        ``max_i |X_i'p|`` for the Newton step p at θ, or a function returning it
        (called only when λ = 0 and the gradient and saturation tests pass, so
        callers pay for the step only when it decides).
    saturation : float
        The family's saturation bound on ``|X_i'θ|``.

    Returns
    -------
    bool

    References
    ----------
    Li, Lu & Zhou (2017), eq. (3) (the equation solved); Nocedal & Wright
    (2006), Section 3.3 (Newton steps near a root).
    """
    if not gradient_norm <= threshold:
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
              saturation: float = math.inf) -> np.ndarray:
    """:func:`is_root` for r rows at once (the lazy and batch refits).

    Row i's answer is ``is_root(gradient_norms[i], thresholds[i], l2, eta_max[i],
    eta_step[i], saturation)``. ``eta_step``, when λ = 0, is a function of the
    boolean mask of the rows that passed the other tests, returning their
    ``max_i |X_i'p|`` (so the steps are computed only for those rows).
    """
    small = gradient_norms <= thresholds  # NaN: False
    if l2 > 0.0 or not small.any():
        return small
    small &= eta_max <= saturation
    if not small.any():
        return small
    steps = np.full(small.shape[0], math.inf)
    steps[small] = eta_step(small)
    return small & (steps <= STEP_TOL * (1.0 + eta_max))
