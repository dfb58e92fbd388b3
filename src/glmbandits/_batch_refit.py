"""Batched Newton solves of the GLM estimating equation for many replicates at once.

In the lockstep batch simulator (:mod:`glmbandits.batch_simulation`) every
replicate holds the same number n of samples at a given round, so the MLE refits
of the replicates that need one in that round can be stacked: histories of
shape (r, n, d), rewards (r, n), warm starts (r, d). :func:`batched_newton_refit`
solves eq. (3) of Li, Lu & Zhou (2017),

.. math:: g_r(\\theta) = \\sum_{i \\le n} (\\mu(X_{r,i}'\\theta) - Y_{r,i}) X_{r,i}
          + \\lambda\\theta = 0, \\qquad r = 1..R,

for all of them with full Newton steps: one stacked matmul for the gradients,
one for the Hessians ``Σ μ'(X_{r,i}'θ_r) X_{r,i} X_{r,i}' + λI`` and one batched
``solve`` on the (r, d, d) systems per iteration, instead of r Python-level solver
calls. Each replicate stops on the stopping rule of the sequential solvers
(:func:`~glmbandits.estimation.solve_estimating_equation` and
:class:`~glmbandits._fast_refit.IncrementalMLE`): ``max_j |g_{r,j}(θ_r)| <= tol ·
max(1, n)`` with the gradient computed exactly on all n samples, so every
accepted θ_r solves eq. (3) to the same tolerance as the sequential refit does
(the two roots then differ by at most ~tol·n / λ_min(Hessian), far below the
score gaps that decide actions).

With λ > 0 the objective is strongly convex and Newton's method from a warm
start near the root converges quadratically (e.g. Nocedal & Wright 2006,
Thm. 3.5). A replicate whose full step fails to decrease its gradient, or gives a
non-finite value, or that has not converged after ``max_iter`` steps, is
reported as not converged and left at its warm start; the caller then refits it
with the robust sequential line-search solver (and its warnings and separable-data
handling), so nothing is lost by trying the batched step first.

All array operations go through an :class:`~glmbandits._array_backend.ArrayBackend`
(numpy by default); the link μ and its derivative are the family's numpy functions,
applied on the host to the (r, n) linear predictors.

References
----------
Li, Lu & Zhou (2017), ICML, eq. (3) and Algorithm 1 step 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._array_backend import ArrayBackend
from .families import GLMFamily

__all__ = ["BatchedFit", "batched_newton_refit", "stopping_threshold"]


def stopping_threshold(tol: float, n: int) -> float:
    """The sequential solvers' bound on ``max_j |g_j|``: ``tol · max(1, n)``."""
    return tol * max(1.0, float(n))


@dataclass(frozen=True)
class BatchedFit:
    """Result of :func:`batched_newton_refit` for r replicates.

    Attributes
    ----------
    theta : ndarray of shape (r, d)
        Roots (for a row that did not converge: its warm start, unchanged).
    converged : ndarray of bool, shape (r,)
        Whether the row passed the stopping test.
    n_iter : ndarray of int, shape (r,)
        Newton steps taken by each row.
    gradient_norm : ndarray of shape (r,)
        ``max_j |g_j|`` at the returned θ.
    gradient : ndarray of shape (r, d)
        ``g(θ)`` at the returned θ on all n samples (ridge term included).
    hessian : ndarray of shape (r, d, d)
        The last Hessian ``Σ μ'(X_i'ϑ) X_i X_i' + λI`` the row used (at its
        previous iterate ϑ, a close neighbour of θ): the next refit's first step
        starts from it (see ``cache``).
    """

    theta: np.ndarray
    converged: np.ndarray
    n_iter: np.ndarray
    gradient_norm: np.ndarray
    gradient: np.ndarray
    hessian: np.ndarray


class _Link:
    """μ and μ' on stacked linear predictors (logistic: through the backend, μ' = μ - μ²)."""

    def __init__(self, backend: ArrayBackend, family: GLMFamily) -> None:
        self.backend = backend
        self.family = family
        self.logistic = family.name == "logistic"

    def mean(self, eta: Any) -> Any:
        if self.logistic:
            return self.backend.sigmoid(eta)
        backend = self.backend
        return backend.asarray(self.family.mean(backend.to_numpy(eta)))

    def weights(self, eta: Any, mean: Any) -> Any:
        if self.logistic:
            return mean - mean * mean
        backend = self.backend
        return backend.asarray(self.family.dmean(backend.to_numpy(eta)))


def _gradient(backend: ArrayBackend, link: _Link, l2: float, X: Any, Xt: Any, y: Any,
              theta: Any) -> tuple[Any, Any, Any, np.ndarray]:
    """(g, η, μ(η), max|g| on the host) at θ, all stacked: one pass over the samples.

    Shapes: X (r, n, d), Xt its transposed view, y (r, n, 1), θ and g (r, d, 1),
    η and μ (r, n, 1).
    """
    eta = backend.matmul(X, theta)
    mean = link.mean(eta)
    gradient = backend.matmul(Xt, mean - y)
    if l2 > 0.0:
        gradient = gradient + l2 * theta
    return gradient, eta, mean, backend.to_numpy(backend.max_abs_rows(gradient))


def _hessian(backend: ArrayBackend, X: Any, weights: Any, ridge: Any) -> Any:
    """``Σ_i w_i X_i X_i' + ridge`` for every row: one stacked (d, m)@(m, d) product."""
    return backend.matmul(backend.transpose_last(X * weights), X) + ridge


def _start(backend: ArrayBackend, link: _Link, X: Any, y: Any, theta: Any,
           cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None, ridge: Any, l2: float
           ) -> tuple[Any, Any]:
    """g(θ₀) and the first step's Hessian, from the cache plus the samples it lacks.

    Row r's cache holds g and the Hessian on its first ``n_seen[r]`` samples at
    (or, for the Hessian, next to) θ₀; the samples after them are folded in at
    θ₀. Without a cache every sample is new: the exact g(θ₀) and H(θ₀).
    """
    r, n, _ = X.shape
    if cache is None:
        gradient, hessian, seen = l2 * theta, ridge, np.zeros(r, dtype=np.int64)
    else:
        gradient, hessian, seen = cache
        gradient, hessian = backend.asarray(gradient)[:, :, None], backend.asarray(hessian)
    first = int(seen.min())
    X_new, y_new = X[:, first:], y[:, first:]
    eta = backend.matmul(X_new, theta)
    mean = link.mean(eta)
    residual, weights = mean - y_new, link.weights(eta, mean)
    if first < int(seen.max()):  # rows whose cache is more recent skip its samples
        mask = backend.asarray((np.arange(first, n)[None, :] >= seen[:, None])[:, :, None])
        residual, weights = residual * mask, weights * mask
    gradient = gradient + backend.matmul(backend.transpose_last(X_new), residual)
    return gradient, _hessian(backend, X_new, weights, hessian)


def batched_newton_refit(backend: ArrayBackend, X: Any, y: np.ndarray, theta0: np.ndarray,
                         family: GLMFamily, l2: float, tol: float = 1e-8,
                         max_iter: int = 20,
                         cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
                         ) -> BatchedFit:
    """Solve eq. (3) for r stacked replicates by Newton steps from warm starts.

    Parameters
    ----------
    backend : ArrayBackend
        Array module of the computation.
    X : array of shape (r, n, d)
        Each replicate's samples (host numpy or the backend's array).
    y : ndarray of shape (r, n)
        Rewards.
    theta0 : ndarray of shape (r, d)
        Warm starts (each replicate's previous estimate).
    family : GLMFamily
        The link μ.
    l2 : float
        Ridge λ > 0 (with λ = 0 the MLE may not exist; use the sequential solver).
    tol : float
        Stopping rule ``max_j |g_j| <= tol · max(1, n)``, as the sequential solvers.
    max_iter : int
        Newton steps before a row is given up (reported as not converged).
    cache : (gradient (r, d), hessian (r, d, d), n_seen (r,)), optional
        What the previous refit of each row left (:attr:`BatchedFit.gradient`
        and :attr:`BatchedFit.hessian`, at θ₀, on the first ``n_seen[r]``
        samples); ``n_seen[r] = 0`` with gradient ``λθ₀`` and hessian ``λI``
        for a row without one. The initial gradient and the first step's
        Hessian then only cost a pass over the new samples; every later
        gradient, and every stopping test after a step, is computed on all n
        samples. The first Hessian is at the previous refit's last iterate
        for the old samples, a tiny perturbation of the exact H(θ₀) that only
        affects the first step's length, never the stopping test.

    Returns
    -------
    BatchedFit

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits._array_backend import get_backend
    >>> from glmbandits.families import get_family
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(3, 100, 2)) / 2
    >>> y = (rng.random((3, 100)) < 0.5).astype(float)
    >>> fit = batched_newton_refit(get_backend(), X, y, np.zeros((3, 2)),
    ...                            get_family("logistic"), l2=1.0)
    >>> bool(fit.converged.all()), bool((fit.gradient_norm <= 1e-8 * 100).all())
    (True, True)
    """
    r, n, d = X.shape
    threshold = stopping_threshold(tol, n)
    link = _Link(backend, family)
    X = backend.asarray(X)
    Xt = backend.transpose_last(X)
    y = backend.asarray(y)[:, :, None]
    theta = backend.asarray(theta0)[:, :, None]
    ridge = backend.asarray(np.eye(d) * l2)
    gradient, hessian = _start(backend, link, X, y, theta, cache, ridge, l2)
    norm = backend.to_numpy(backend.max_abs_rows(gradient))
    result_theta = np.array(theta0, dtype=np.float64)
    result_gradient = backend.to_numpy(gradient)[:, :, 0].copy()
    result_hessian = backend.to_numpy(hessian).copy()
    result_norm = norm.copy()
    converged = norm <= threshold
    n_iter = np.zeros(r, dtype=np.int64)
    rows = np.flatnonzero(~converged)  # rows still iterating, as indices into the r inputs
    eta = mean = None
    if rows.shape[0] < r:
        X, Xt, y, theta, gradient, hessian, norm = _take(
            backend, rows, X, Xt, y, theta, gradient, hessian, norm)
    for _ in range(max_iter):
        if rows.shape[0] == 0:
            break
        if eta is not None:  # the exact Hessian at the current iterate
            hessian = _hessian(backend, X, link.weights(eta, mean), ridge)
        candidate = theta - backend.solve(hessian, gradient)
        gradient, eta, mean, new_norm = _gradient(backend, link, l2, X, Xt, y, candidate)
        n_iter[rows] += 1
        improved = new_norm < norm  # False for NaN
        done = improved & (new_norm <= threshold)
        if done.any():
            accepted = rows[done]
            index = backend.index(np.flatnonzero(done))
            result_theta[accepted] = backend.to_numpy(candidate[index])[:, :, 0]
            result_gradient[accepted] = backend.to_numpy(gradient[index])[:, :, 0]
            result_hessian[accepted] = backend.to_numpy(hessian[index])
            result_norm[accepted] = new_norm[done]
            converged[accepted] = True
        keep = improved & ~done  # rows that failed to improve stop here, not converged
        if not keep.any():
            break
        theta, norm = candidate, new_norm
        if not keep.all():
            kept = np.flatnonzero(keep)
            rows = rows[kept]
            X, Xt, y, theta, gradient, hessian, eta, mean, norm = _take(
                backend, kept, X, Xt, y, theta, gradient, hessian, eta, mean, norm)
    return BatchedFit(result_theta, converged, n_iter, result_norm, result_gradient,
                      result_hessian)


def _take(backend: ArrayBackend, kept: np.ndarray, *arrays: Any) -> tuple:
    """The rows ``kept`` of every per-replicate array (the last one on the host)."""
    index = backend.index(kept)
    return (*(array[index] for array in arrays[:-1]), arrays[-1][kept])
