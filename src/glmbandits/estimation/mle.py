"""The GLM maximum-likelihood estimate of Li, Lu & Zhou (2017).

:func:`fit_glm` solves the paper's estimating equation (Algorithm 1, step 1,
eq. (3); Algorithm 2, step 1), optionally with a ridge term,

.. math:: \\sum_i (Y_i - \\mu(X_i'\\theta)) X_i - \\lambda \\theta = 0,

as the stationarity condition of the convex objective

.. math:: L(\\theta) = \\sum_i [m(X_i'\\theta) - Y_i X_i'\\theta] + \\tfrac{\\lambda}{2}\\|\\theta\\|^2,

where ``m`` is the family's antiderivative of μ (:mod:`glmbandits.families`).
The solver is Newton's method with an Armijo backtracking line search: the
Hessian is ``Σ μ'(X_i'θ) X_i X_i' + λI``, it is Cholesky-factored and, when it is
numerically singular, a growing multiple of the identity is added (as in
scikit-learn's ``NewtonCholeskySolver`` fallback).

The rank-one Gram updates that go with it live in :mod:`.gram`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import (
    as_float_array,
    check_design,
    check_int,
    check_nonnegative,
    check_positive,
    check_vector,
    format_value,
)
from ..exceptions import ConvergenceWarning
from ..families import GLMFamily, get_family
from .convergence import decrement_norm, is_root, stopping_threshold
from .gram import jittered_cholesky_solve

__all__ = [
    "GLMFit",
    "fit_glm",
    "solve_estimating_equation",
    "check_rewards",
    "check_sample_weight",
    "effective_size",
]

_ARMIJO = 1e-4
_MAX_BACKTRACKS = 40


@dataclass(frozen=True)
class GLMFit:
    """Result of :func:`fit_glm`.

    Attributes
    ----------
    theta : ndarray of shape (d,)
        The estimate; always finite.
    converged : bool
        Whether the estimating equation was solved to tolerance. ``False`` means
        the MLE does not exist (separable data) or ``max_iter`` was reached.
    n_iter : int
        Newton iterations performed (0 when ``theta0`` already solved it).
    gradient_norm : float
        Max-norm of the estimating equation's left-hand side at ``theta``; always
        finite (:func:`fit_glm` reports a gradient that overflows float64 as the
        largest float, with ``converged=False``). It may exceed ``tol·max(1, n)``
        with ``converged=True`` when the Newton decrement accepted ``theta`` (raw,
        badly scaled columns, whose max-norm stalls at its rounding floor).
    message : str
        Why the solver stopped.
    """

    theta: np.ndarray
    converged: bool
    n_iter: int
    gradient_norm: float
    message: str


def check_rewards(y: Any, family: GLMFamily, owner: str, size: int | None = None,
                  name: str = "y") -> np.ndarray:
    """Check rewards: a finite vector in the family's reward domain."""
    array = as_float_array(y, name, owner)
    if array.ndim != 1 or (size is not None and array.shape[0] != size):
        expected = f"({size},)" if size is not None else "(n,)"
        raise ValueError(f"{owner}: {name} must have shape {expected}, got {array.shape}")
    array = check_vector(array, array.shape[0], owner, name)
    inside = family.in_domain(array)
    if not np.all(inside):
        first = array[~inside][0]
        raise ValueError(
            f"{owner}: {name} must lie in the {family.name} reward domain {family.reward_domain}, "
            f"got {format_value(first)}"
        )
    return array


def check_sample_weight(sample_weight: Any, size: int, owner: str,
                        name: str = "sample_weight") -> np.ndarray:
    """Check sample weights: a finite, non-negative vector of length ``size``, not all zero.

    Examples
    --------
    >>> check_sample_weight([1, 0.5], 2, "fit_glm")
    array([1. , 0.5])
    >>> check_sample_weight([1, -0.5], 2, "fit_glm")
    Traceback (most recent call last):
    ...
    ValueError: fit_glm: sample_weight must be non-negative, got -0.5
    """
    array = as_float_array(sample_weight, name, owner)
    if array.ndim != 1 or array.shape[0] != size:
        raise ValueError(f"{owner}: {name} must have shape ({size},), got {array.shape}")
    array = check_vector(array, size, owner, name)
    if np.any(array < 0.0):
        raise ValueError(f"{owner}: {name} must be non-negative, got "
                         f"{format_value(array[array < 0.0][0])}")
    if size and not np.any(array > 0.0):
        raise ValueError(f"{owner}: {name} must not be all zero, got {size} zero weights")
    return array


def _objective(X: np.ndarray, y: np.ndarray, family: GLMFamily, l2: float,
               theta: np.ndarray, weights: np.ndarray | None = None) -> float:
    eta = X @ theta
    if weights is None:
        value = float(np.sum(family.antiderivative(eta)) - y @ eta)
    else:
        value = float(weights @ family.antiderivative(eta) - (weights * y) @ eta)
    return value + 0.5 * l2 * float(theta @ theta)


def effective_size(n: int, weights: np.ndarray | None) -> int:
    """The sample count the convergence rule scales by: n, or ``⌈Σ w_i⌉`` with weights.

    With weights, the stopping threshold ``tol·max(1, n)`` and the Newton decrement of
    the *mean* loss (:mod:`.convergence`) refer to the total weight, the number of
    samples the weighted equation is worth (a discounted equation with weights
    ``γ^{t-s}`` is worth about ``1/(1 - γ)`` samples, however long its history).

    Examples
    --------
    >>> effective_size(5, None), effective_size(5, np.full(5, 0.3))
    (5, 2)
    """
    return n if weights is None else max(1, math.ceil(float(np.sum(weights))))


def _within_rounding(X: np.ndarray, y: np.ndarray, family: GLMFamily, l2: float,
                     theta: np.ndarray, candidate: np.ndarray, value: float, new_value: float,
                     gradient_norm: float, weights: np.ndarray | None = None) -> bool:
    """Accept a full Newton step that the Armijo test cannot judge.

    Near a root the decrease a Newton step promises, ``λ²/2``, can fall below the
    rounding error of the objective itself (a sum of terms as large as ``y·η``:
    Poisson counts of 1e6 at ``η`` ≈ 14 give terms of 1e7, so a rounding error of
    ~1e-9 against a promised decrease of ~1e-15). Armijo's test then fails or
    passes at random, the backtracking shrinks the step, and the iteration stalls
    short of the root on some BLAS kernels and not on others. When the objective
    did not change beyond its rounding error (relative ``64·eps`` of its largest
    term), the step is accepted if it reduces the max-norm of the gradient, the
    fallback of scikit-learn's Newton solver (``_newton_solver.line_search``).
    """
    if not np.isfinite(new_value):
        return False
    eta = X @ theta
    if weights is None:
        scale = float(np.sum(np.abs(family.antiderivative(eta))) + np.abs(y) @ np.abs(eta)
                      + 0.5 * l2 * float(theta @ theta))
    else:
        scale = float(weights @ (np.abs(family.antiderivative(eta)) + np.abs(y) * np.abs(eta))
                      + 0.5 * l2 * float(theta @ theta))
    if abs(new_value - value) > 64.0 * np.finfo(np.float64).eps * max(scale, abs(value)):
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        residual = family.mean(X @ candidate) - y
        gradient = X.T @ (residual if weights is None else weights * residual) + l2 * candidate
    return bool(np.max(np.abs(gradient)) < gradient_norm)


def _newton_direction(hessian: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """Solve H p = -g by Cholesky, adding jitter λI while H is numerically singular."""
    step = jittered_cholesky_solve(hessian, gradient)
    if step is not None:
        return -step
    steepest: np.ndarray = -gradient / max(float(np.trace(hessian)) / hessian.shape[0], 1e-300)
    return steepest


def solve_estimating_equation(
    X: np.ndarray,
    y: np.ndarray,
    family: GLMFamily,
    l2: float = 0.0,
    theta0: np.ndarray | None = None,
    tol: float = 1e-8,
    max_iter: int = 100,
    sample_weight: np.ndarray | None = None,
) -> GLMFit:
    """Newton solver behind :func:`fit_glm`, without input checks or warnings.

    Policies call this directly on their own (already validated) history. An
    iterate is accepted by the one convergence rule of
    :func:`glmbandits.estimation.convergence.is_root` (Li, Lu & Zhou 2017,
    eq. (3)): ``max_i |g_i| <= tol * max(1, n)`` on the gradient ``g`` of the
    objective, or the same bound on ``sqrt(max(1, n) · g'H⁻¹g)``, the Newton
    decrement of the mean loss (Boyd & Vandenberghe 2004, §9.5.1; affine
    invariant, so raw, badly scaled columns converge as standardised ones do),
    and with ``l2 == 0`` also a tiny Newton step in the linear predictors and a
    finite MLE (on separable data the gradient vanishes along a ray to infinity
    while the Newton step stays of order one). With
    ``l2 == 0`` the iteration also stops, with ``converged=False``, once a
    linear predictor passes the family's saturation bound (the MLE is escaping
    to infinity, i.e. the data are separable); the last iterate inside the
    bound is returned.

    ``sample_weight`` (non-negative, of shape (n,), already checked; None: the
    unweighted code path, unchanged) solves the weighted equation
    ``Σ_i w_i (μ(X_i'θ) - Y_i) X_i + l2·θ = 0`` (see :func:`fit_glm`); the
    convergence rule then counts ``⌈Σ w_i⌉`` samples (:func:`effective_size`).

    A warm start ``theta0`` that does not lead to a root (for instance the
    runaway iterate of earlier, separable data, where μ' vanishes and every
    Newton step leaves the saturation bound) is abandoned: the solver restarts
    from zero and keeps that result when it converges.
    """
    fit = _newton(X, y, family, l2, theta0, tol, max_iter, sample_weight)
    if fit.converged or theta0 is None or not np.any(theta0):
        return fit
    restart = _newton(X, y, family, l2, None, tol, max_iter, sample_weight)
    if not restart.converged:
        return fit
    return GLMFit(restart.theta, True, fit.n_iter + restart.n_iter, restart.gradient_norm,
                  "converged (restarted from zero: the warm start did not lead to a root)")


def _newton(X: np.ndarray, y: np.ndarray, family: GLMFamily, l2: float,
            theta0: np.ndarray | None, tol: float, max_iter: int,
            weights: np.ndarray | None = None) -> GLMFit:
    """Newton's method with Armijo backtracking from ``theta0`` (zeros if None)."""
    d = X.shape[1]
    n = effective_size(X.shape[0], weights)
    theta = np.zeros(d) if theta0 is None else np.array(theta0, dtype=np.float64)
    threshold = stopping_threshold(tol, n)
    value = _objective(X, y, family, l2, theta, weights)
    n_iter = 0
    gradient_norm = np.inf
    while True:
        eta = X @ theta
        if weights is None:
            gradient = X.T @ (family.mean(eta) - y) + l2 * theta
        else:
            gradient = X.T @ (weights * (family.mean(eta) - y)) + l2 * theta
        gradient_norm = float(np.max(np.abs(gradient)))
        if l2 > 0.0 and is_root(gradient_norm, threshold, l2):
            return GLMFit(theta, True, n_iter, gradient_norm, "converged")
        curvature = family.dmean(eta) if weights is None else weights * family.dmean(eta)
        hessian = (X.T * curvature) @ X
        if l2 > 0.0:
            hessian.flat[:: d + 1] += l2
        step = _newton_direction(hessian, gradient)
        slope = float(gradient @ step)
        # The rule (convergence.is_root): the max-norm of g, or the Newton decrement
        # λ² = g'H⁻¹g = -g'p (affine invariant: raw, badly scaled columns converge as
        # standardised ones do); without a ridge also a tiny Newton step in the linear
        # predictors and a finite MLE (a flat objective whose infimum is at infinity
        # has a small gradient and decrement too).
        eta_max = float(np.max(np.abs(eta))) if l2 == 0.0 else 0.0
        if is_root(gradient_norm, threshold, l2, eta_max,
                   lambda: float(np.max(np.abs(X @ step))), family.saturation,
                   lambda: decrement_norm(-slope, n)):
            return GLMFit(theta, True, n_iter, gradient_norm, "converged")
        if n_iter >= max_iter:
            small = gradient_norm <= threshold or decrement_norm(-slope, n) <= threshold
            return GLMFit(theta, False, n_iter, gradient_norm,
                          "max_iter reached (the MLE may not exist: separable data)" if small
                          else "max_iter reached")
        if slope >= 0.0:  # numerical trouble: fall back to steepest descent
            step, slope = -gradient, -float(gradient @ gradient)
        size = 1.0
        for _ in range(_MAX_BACKTRACKS):
            candidate = theta + size * step
            with np.errstate(over="ignore", invalid="ignore"):
                new_value = _objective(X, y, family, l2, candidate, weights)
            if np.isfinite(new_value) and new_value <= value + _ARMIJO * size * slope:
                break
            if size == 1.0 and _within_rounding(X, y, family, l2, theta, candidate, value,
                                                new_value, gradient_norm, weights):
                break
            size *= 0.5
        else:
            return GLMFit(theta, False, n_iter, gradient_norm,
                          "line search failed: no further decrease at machine precision")
        n_iter += 1
        if l2 == 0.0 and np.max(np.abs(X @ candidate)) > family.saturation:
            return GLMFit(theta, False, n_iter, gradient_norm,
                          "the MLE does not exist (separable data): the estimate diverges")
        theta, value = candidate, new_value


def fit_glm(
    X: Any,
    y: Any,
    family: Any,
    *,
    l2: float = 0.0,
    theta0: Any = None,
    tol: float = 1e-8,
    max_iter: int = 100,
    sample_weight: Any = None,
) -> GLMFit:
    """Solve the GLM estimating equation Σ w_i (y_i - μ(x_i'θ)) x_i - l2·θ = 0.

    This is the maximum-likelihood estimate of Li, Lu & Zhou (2017), Algorithm 1
    step 1, eq. (3) (and Algorithm 2, step 1), optionally ridge-penalised. For the
    canonical links (logistic, Poisson, linear) it is the (penalised) MLE. For
    probit the equation is a *quasi-likelihood* estimating equation, not the score
    of the probit likelihood: it is the one the paper analyses, and its root
    minimises the convex potential ``Σ m(x_i'θ) - y_i x_i'θ`` with
    ``m(z) = zΦ(z) + φ(z)``.

    When the MLE does not exist (for instance separable 0/1 rewards, common in
    the first rounds of a bandit), the result has ``converged=False``, a
    :class:`~glmbandits.exceptions.ConvergenceWarning` is issued, and ``theta`` is
    still a finite vector: the last Newton iterate before the linear predictors
    left the range where μ' is numerically non-zero. Use ``l2 > 0`` to make the
    estimate exist always. The result never contains NaN or inf.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Chosen actions' feature vectors.
    y : array-like of shape (n,)
        Rewards, inside the family's reward domain.
    family : str or GLMFamily
        ``"logistic"``, ``"probit"``, ``"linear"``, ``"poisson"`` or an instance.
    l2 : float, default 0
        Ridge strength λ >= 0 (0 is the paper's equation).
    theta0 : array-like of shape (d,), optional
        Warm start; zeros by default. When the solve from ``theta0`` does not
        converge (a far start, where μ' vanishes and Newton's method stalls), it is
        retried from zero, and the restart is returned when it converges.
    tol : float, default 1e-8
        Stop when the max-norm of the gradient is <= tol * max(1, n), or when the
        Newton decrement ``λ = sqrt(g'H⁻¹g)`` is <= tol * sqrt(max(1, n)) (the
        decrement of the mean loss is <= tol). The decrement is affine invariant:
        rescaling the columns of X changes neither the verdict nor the iterations.
        For the logistic and Poisson links (l2 = 0) ``H⁻¹`` is the estimate's
        asymptotic covariance, so to first order the accepted θ is within ``λ``
        standard errors of the exact root in every coordinate (Cauchy–Schwarz in
        the ``H⁻¹`` inner product).
    max_iter : int, default 100
        Maximum number of Newton iterations.
    sample_weight : array-like of shape (n,), optional
        Non-negative weights ``w_i`` (not all zero) of the samples in the
        equation: the weighted (penalised) maximum-likelihood estimate, whose
        objective is ``Σ w_i [m(x_i'θ) - y_i x_i'θ] + λ‖θ‖²/2``. Integer weights
        give the estimate of the data with each row repeated ``w_i`` times;
        discount weights ``γ^{t-s}`` give the discounted MLE of Russac, Cappé &
        Garivier (2020) (:mod:`glmbandits.estimation.discounted`). ``tol`` then
        scales with ``⌈Σ w_i⌉`` instead of n. None (the default) is the
        unweighted equation, computed exactly as without this argument.

    Returns
    -------
    GLMFit
        With ``.theta``, ``.converged``, ``.n_iter``, ``.gradient_norm``, ``.message``.

    References
    ----------
    Li, Lu & Zhou (2017), "Provably Optimal Algorithms for Generalized Linear
    Contextual Bandits", ICML, eq. (3) and Algorithm 2 step 1. Russac, Cappé &
    Garivier (2020), "Algorithms for Non-Stationary Generalized Linear Bandits",
    arXiv:2003.10113 (the weighted equation, with discount weights). Boyd & Vandenberghe
    (2004), *Convex Optimization*, §9.5.1 (the Newton decrement as a stopping
    criterion; the convergence rule is :mod:`glmbandits.estimation.convergence`).

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import fit_glm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3))
    >>> y = (rng.random(500) < 1 / (1 + np.exp(-X @ [1.0, -1.0, 0.5]))).astype(float)
    >>> result = fit_glm(X, y, "logistic")
    >>> result.converged, result.n_iter, np.round(result.theta, 2)
    (True, 5, array([ 0.96, -0.93,  0.39]))
    >>> weighted = fit_glm(X[:3], y[:3], "linear", sample_weight=[2, 1, 0])
    >>> repeated = fit_glm(X[[0, 0, 1]], y[[0, 0, 1]], "linear")
    >>> bool(np.allclose(weighted.theta, repeated.theta))
    True
    """
    owner = "fit_glm"
    family = get_family(family, owner)
    X = check_design(X, owner)
    n, d = X.shape
    y = check_rewards(y, family, owner, size=n)
    l2 = check_nonnegative(l2, owner, "l2")
    tol = check_positive(tol, owner, "tol")
    max_iter = check_int(max_iter, owner, "max_iter", minimum=1)
    start = None if theta0 is None else check_vector(theta0, d, owner, "theta0")
    weights = None if sample_weight is None else check_sample_weight(sample_weight, n, owner)
    # Overflow inside the solver is handled there (the line search rejects non-finite
    # objectives), so numpy's RuntimeWarnings are not the caller's business.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        # A far warm start (linear predictors deep in μ's flat tails, where μ' = 0)
        # can stall Newton's method: the solver then restarts from zero by itself.
        result = solve_estimating_equation(X, y, family, l2, start, tol, max_iter, weights)
    if not np.isfinite(result.gradient_norm):
        # The gradient at the returned iterate overflows float64 (e.g. Poisson means
        # near e^700 times large features): report the largest float, not inf.
        result = GLMFit(result.theta, False, result.n_iter, float(np.finfo(np.float64).max),
                        result.message + "; the gradient overflows float64")
    if not result.converged:
        warnings.warn(
            f"fit_glm: the {family.name} estimating equation was not solved "
            f"({result.message}; max |gradient| = {result.gradient_norm:.3g}); "
            "returning the last finite iterate. Pass l2 > 0 to regularise.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return result
