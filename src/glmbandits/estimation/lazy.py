"""Warm-started Newton refits of eq. (3) after many new samples, for one or many replicates.

Lazy (rarely-switching) policies refit the MLE of Li, Lu & Zhou (2017), eq. (3),

.. math:: g(\\theta) = \\sum_{i \\le n} (\\mu(X_i'\\theta) - Y_i) X_i + \\lambda\\theta = 0,

only every so often, after many new samples. :func:`lazy_newton_refit` is the
solver of those refits. It is written on arrays with a leading replicate axis,
so that **the same function** refits one policy (``r = 1``, called by
:class:`~glmbandits.estimation.estimates.GLMEstimate`) and a whole refit wave of
the lockstep batch simulator (``r`` up to R, each row with its own number of
samples, zero-padded; called by
:class:`~glmbandits.batch.ucb_glm.UCBGLMKernel`). Every decision it
takes for a row depends on that row's numbers only (the stacked products act
row by row; the certificate uses the same scalar arithmetic per row), so a
replicate gets the same iterates, the same accepted root and the same fallbacks
whether it is refitted alone or stacked with others: that is what keeps batch
trajectories identical to sequential ones. (Zero padding can change the
summation order inside BLAS, i.e. the last bits; the tests and the benchmark
check that trajectories stay identical.)

What one refit does (row by row), with the cache :class:`NewtonCache` the
previous refit left:

1. **Fold in the new samples** at the previous root θ̂: the cached gradient on
   the first ``n_seen`` samples gains their O(k d) terms, and the cached matrix
   ``A`` (an approximation of the Hessian ``H(θ) = Σ μ'(X_i'θ) X_i X_i' + λI``)
   their O(k d²) terms. ``A`` is re-formed exactly at θ̂ on all samples when
   there is none, and at every :data:`REFORM_EVERY`-th refit since it was formed
   (lazy refits come at geometrically spaced sample counts, so that is O(log n)
   exact Hessians in all; counting refits rather than samples makes the
   replicates of a refit wave re-form together, on the whole stacked history).
2. **Step** ``θ ← θ - A⁻¹g`` and compute the gradient at the candidate exactly on
   all n samples (one pass).
3. **Accept** by the convergence rule every solver shares
   (:func:`~glmbandits.estimation.convergence.are_roots`: ``max_j |g_j| <=
   tol·max(1, n)``, or the same bound on the Newton decrement of the mean loss,
   screened with ``A`` and confirmed on the exact Hessian at the candidate; with
   ``l2 == 0`` also a tiny Newton step in the linear predictors and a finite
   MLE, so every row steps at least once), or, with
   ``v_norm_tol > 0``, when the exact gradient certifies
   ``‖θ - θ̂_exact‖_V <= v_norm_tol`` (:func:`~glmbandits.estimation.certificate.certified_v_norm_error`).
4. Otherwise continue with Newton steps on the exact Hessian at the current
   point (quadratic convergence, e.g. Nocedal & Wright 2006, Thm. 3.5); a step
   on the cached ``A`` that fails to halve the gradient is retried on the exact
   Hessian; a row whose exact Newton step fails, or that has not converged
   after ``max_iter`` steps, is refitted by the robust line-search solver
   :func:`~glmbandits.estimation.solve_estimating_equation` from its previous
   root, and its cache is reset.

Everything runs on the host with numpy: refits in the same round are few
(a handful of rows), so they are latency-bound, not throughput-bound.

Why this module is long: it is one solver (its cache, its stacked link and the
row-wise pieces of one refit); every decision must stay row-local so that batch
and sequential trajectories agree, and splitting it would scatter that contract.

References
----------
Li, Lu & Zhou (2017), ICML, eq. (3) and Algorithm 1 step 1; Abbasi-Yadkori, Pál
& Szepesvári (2011), Section 5 (rarely-switching refits).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..families import GLMFamily, LogisticFamily
from .certificate import MAX_CERTIFY_RADIUS, certified_v_norm_errors
from .convergence import are_roots, decrement_norms, stopping_threshold
from .mle import solve_estimating_equation

__all__ = ["NewtonCache", "LazyRefit", "lazy_newton_refit", "stopping_threshold"]


#: ``A`` is re-formed exactly at every REFORM_EVERY-th refit (see the module docstring).
REFORM_EVERY = 4


@dataclass
class NewtonCache:
    """What each row's last refit left for the next one (leading axis: rows).

    Attributes
    ----------
    theta : ndarray of shape (r, d)
        The last root θ̂ (the warm start of the next refit).
    gradient : ndarray of shape (r, d)
        ``g(θ̂)`` on the first ``n_seen`` samples, ridge term included.
    hessian : ndarray of shape (r, d, d)
        ``A`` on the first ``n_seen`` samples (ridge included): exact at some
        earlier point for the samples it was formed on, then extended.
    n_seen : ndarray of int, shape (r,)
        Samples folded into ``gradient`` and ``hessian`` (0: none, start afresh).
    hessian_n : ndarray of int, shape (r,)
        Samples when ``A`` was last formed exactly (0: never, or to be re-formed).
    age : ndarray of int, shape (r,)
        Refits since ``A`` was last formed exactly.
    """

    theta: np.ndarray
    gradient: np.ndarray
    hessian: np.ndarray
    n_seen: np.ndarray
    hessian_n: np.ndarray
    age: np.ndarray

    @classmethod
    def fresh(cls, theta: np.ndarray, l2: float) -> "NewtonCache":
        """A cache holding nothing but the warm starts ``theta`` (r, d)."""
        theta = np.array(theta, dtype=np.float64, ndmin=2)
        r, d = theta.shape
        cache = cls(theta, np.empty((r, d)), np.empty((r, d, d)),
                    np.zeros(r, dtype=np.int64), np.zeros(r, dtype=np.int64),
                    np.zeros(r, dtype=np.int64))
        cache.reset(np.arange(r), l2)
        return cache

    def reset(self, rows: np.ndarray, l2: float) -> None:
        """Forget the samples of ``rows`` (keeping their θ̂): ``g = λθ̂``, ``A = λI``."""
        d = self.theta.shape[1]
        self.gradient[rows] = l2 * self.theta[rows]
        self.hessian[rows] = l2 * np.eye(d)
        self.n_seen[rows] = 0
        self.hessian_n[rows] = 0
        self.age[rows] = 0

    def take(self, rows: np.ndarray | slice) -> "NewtonCache":
        """The rows ``rows`` (a copy for an index array; views for a slice)."""
        return NewtonCache(*(getattr(self, name)[rows] for name in _FIELDS))

    def put(self, rows: np.ndarray, other: "NewtonCache") -> None:
        """Overwrite the rows ``rows`` with ``other``'s."""
        for name in _FIELDS:
            getattr(self, name)[rows] = getattr(other, name)

    def copy(self) -> "NewtonCache":
        """An independent deep copy."""
        return NewtonCache(*(getattr(self, name).copy() for name in _FIELDS))

    @classmethod
    def stack(cls, caches: list["NewtonCache"]) -> "NewtonCache":
        """One cache whose rows are those of ``caches``, in order."""
        return cls(*(np.concatenate([getattr(c, name) for c in caches]) for name in _FIELDS))


_FIELDS = ("theta", "gradient", "hessian", "n_seen", "hessian_n", "age")


@dataclass(frozen=True)
class LazyRefit:
    """Outcome of :func:`lazy_newton_refit` for r rows.

    Attributes
    ----------
    theta : ndarray of shape (r, d)
        The new estimates (also in the cache).
    converged : ndarray of bool, shape (r,)
        False only where even the fallback solver did not converge (the MLE
        does not exist, e.g. separable data without ridge); θ is then its last
        finite iterate.
    n_steps : ndarray of int, shape (r,)
        Newton steps taken by the fast solver (0 when the first gradient passed).
    fell_back : ndarray of bool, shape (r,)
        Rows refitted by the robust line-search solver.
    """

    theta: np.ndarray
    converged: np.ndarray
    n_steps: np.ndarray
    fell_back: np.ndarray


class _Link:
    """Residuals ``μ(η) - y`` and weights ``μ'(η)`` of a family on stacked rewards y (r, n).

    For the logistic link ``μ(η) - y = tanh(η/2)/2 + (1/2 - y)``: numpy's ``tanh``
    is several times faster than scipy's ``expit`` (the two agree to ~1e-16),
    and ``1/2 - y`` is formed once per refit.
    """

    def __init__(self, family: GLMFamily, y: np.ndarray) -> None:
        self.family = family
        self.logistic = type(family) is LogisticFamily
        self.offset = (0.5 - y)[:, :, None] if self.logistic else -y[:, :, None]

    def rows(self, index: np.ndarray) -> "_Link":
        """The same link for the rows ``index`` of y."""
        link = _Link.__new__(_Link)
        link.family, link.logistic, link.offset = self.family, self.logistic, self.offset[index]
        return link

    def residual(self, eta: np.ndarray, start: int, weights: bool,
                 rows: np.ndarray | slice = slice(None)) -> tuple[np.ndarray, np.ndarray | None]:
        """``μ(η) - y`` (and ``μ'(η)``) for η of the rows ``rows``, samples ``start:``."""
        offset = self.offset[rows, start:]
        if self.logistic:
            half = np.multiply(eta, 0.5)
            np.tanh(half, out=half)
            residual = np.multiply(half, 0.5)
            residual += offset
            if not weights:
                return residual, None
            np.multiply(half, half, out=half)
            np.subtract(0.25, np.multiply(half, 0.25, out=half), out=half)
            return residual, half
        residual = self.family.mean(eta) + offset
        return residual, (self.family.dmean(eta) if weights else None)


def _solve_rows(hessian: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """``A_i⁻¹ g_i`` for every row (A symmetric positive definite; NaN where singular).

    A numerically singular ``A_i`` (e.g. Poisson weights ``e^η`` so large that the
    ridge is lost in rounding) gives a row of NaN, which the caller treats as a
    failed step (that row goes to the robust solver); the other rows are solved
    one by one, with the same LAPACK call as the stacked solve.
    """
    try:
        return np.linalg.solve(hessian, gradient[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        solved = np.full(gradient.shape, np.nan)
        for row in range(hessian.shape[0]):
            try:
                solved[row] = np.linalg.solve(hessian[row:row + 1],
                                              gradient[row:row + 1, :, None])[0, :, 0]
            except np.linalg.LinAlgError:
                pass
        return solved


def _step_reach(X: np.ndarray, hessian: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """``max_i |X_i'A⁻¹g|`` per row: the Newton step in the linear predictors (l2 == 0)."""
    step = _solve_rows(hessian, gradient)
    with np.errstate(invalid="ignore"):
        reach = np.abs(np.matmul(X, step[:, :, None])).max(axis=(1, 2))
    return np.where(np.isnan(reach), np.inf, reach)


def _decrements(X: np.ndarray, link: "_Link", theta: np.ndarray, hessian: np.ndarray,
                gradient: np.ndarray, n: np.ndarray, threshold: np.ndarray,
                l2: float) -> np.ndarray:
    """:func:`~glmbandits.estimation.convergence.decrement_norms` of the rows at θ.

    Screened with the matrix ``A`` of the step (``g'A⁻¹g``, no pass over the
    data); the rows that pass are confirmed on the exact Hessian at θ, formed for
    the test only (the working ``A`` is left alone, so the iterates do not change).
    """
    values = decrement_norms(np.einsum("ij,ij->i", gradient, _solve_rows(hessian, gradient)), n)
    screened = np.flatnonzero(values <= threshold)
    values[values > threshold] = np.inf
    if screened.shape[0]:
        rows = screened
        _, weights = link.residual(np.matmul(X[rows], theta[rows][:, :, None]), 0, True, rows)
        exact = _weighted_gram(X[rows], weights) + l2 * np.eye(X.shape[2])
        solved = _solve_rows(exact, gradient[rows])
        values[rows] = decrement_norms(np.einsum("ij,ij->i", gradient[rows], solved), n[rows])
    return values


def _weighted_gram(X: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``Σ_i w_i X_i X_i'`` for every row: X (r, m, d), weights (r, m, 1)."""
    return np.matmul(np.swapaxes(X * weights, 1, 2), X)


# Far iterates (Poisson weights e^η of an overshooting step) can overflow the stacked
# products: such rows fail the acceptance tests and go to the robust solver.
@np.errstate(over="ignore", invalid="ignore")
def lazy_newton_refit(X: np.ndarray, y: np.ndarray, cache: NewtonCache, family: GLMFamily,
                      l2: float, tol: float = 1e-8, *, V_inv: np.ndarray | None = None,
                      v_norm_tol: float | np.ndarray = 0.0, kappa_cache: dict | None = None,
                      max_iter: int = 20, fallback_max_iter: int = 50,
                      n_samples: np.ndarray | None = None) -> LazyRefit:
    """Refit eq. (3) for r rows whose samples extend those of their last refit.

    Parameters
    ----------
    X : ndarray of shape (r, n, d)
        Each row's samples (all of them; the first ``cache.n_seen[i]`` are the
        ones its cache already holds). With ``n_samples``, row i's samples are
        its first ``n_samples[i]`` rows and the rest must be zeros (a zero row
        adds nothing to eq. (3) nor to its Jacobian).
    y : ndarray of shape (r, n)
        Rewards (zeros in the padding).
    cache : NewtonCache
        Updated in place (the new roots, their gradients, the Hessians used).
    family : GLMFamily
        The link μ.
    l2 : float
        Ridge λ >= 0 (policies use the lazy solver with λ > 0; with λ = 0 the
        rule also checks the step and the saturation bound).
    tol : float
        Strict stopping rule ``max_j |g_j| <= tol·max(1, n)``.
    V_inv : ndarray of shape (r, d, d), optional
        ``(λI + X_i'X_i)⁻¹`` per row, for the certificate.
    v_norm_tol : float or ndarray of shape (r,), default 0
        With ``V_inv``, also accept a row once its exact gradient certifies
        ``‖θ - θ̂_exact‖_V <= v_norm_tol`` (0: the strict test only).
    kappa_cache : dict, optional
        Memo of κ for the certificate (see :func:`certified_v_norm_error`).
    max_iter : int
        Newton steps before a row is handed to the robust solver.
    fallback_max_iter : int
        Iteration cap of that solver.
    n_samples : ndarray of int, shape (r,), optional
        Each row's number of samples (default: n for every row).

    Returns
    -------
    LazyRefit

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits.families import get_family
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(3, 100, 2)) / 2
    >>> y = (rng.random((3, 100)) < 0.5).astype(float)
    >>> cache = NewtonCache.fresh(np.zeros((3, 2)), l2=1.0)
    >>> fit = lazy_newton_refit(X, y, cache, get_family("logistic"), l2=1.0)
    >>> bool(fit.converged.all()), bool(fit.fell_back.any()), cache.n_seen.tolist()
    (True, False, [100, 100, 100])
    """
    r, length, d = X.shape
    n = np.full(r, length, dtype=np.int64) if n_samples is None else np.asarray(n_samples)
    link = _Link(family, y)
    threshold = tol * np.maximum(n, 1)  # stopping_threshold, row by row
    if isinstance(v_norm_tol, (int, float)):
        v_tol = np.full(r, float(v_norm_tol))
        certify = V_inv is not None and l2 > 0.0 and v_norm_tol > 0.0
    else:
        v_tol = np.asarray(v_norm_tol, dtype=np.float64)
        certify = V_inv is not None and l2 > 0.0 and bool((v_tol > 0.0).any())
    radius = np.minimum(v_tol, MAX_CERTIFY_RADIUS) if certify else None

    # 1. fold the new samples into the cached gradient (and A) at the previous root
    theta = cache.theta
    reform = (cache.hessian_n == 0) | (cache.age >= REFORM_EVERY)
    cache.age = np.where(reform, 0, cache.age + 1)
    first, last_seen = int(cache.n_seen.min()), int(cache.n_seen.max())
    X_new = X[:, first:]
    keep_all = not reform.any()
    eta_new = np.matmul(X_new, theta[:, :, None])
    residual, weights = link.residual(eta_new, first, not reform.all())
    if first < last_seen:  # rows whose cache is more recent skip its samples
        older = (np.arange(first, length)[None, :] < cache.n_seen[:, None])[:, :, None]
        residual = np.where(older, 0.0, residual)
        if weights is not None:
            weights = np.where(older, 0.0, weights)
    gradient = cache.gradient + np.matmul(np.swapaxes(residual, 1, 2), X_new)[:, 0]
    if keep_all:
        hessian = cache.hessian + _weighted_gram(X_new, weights)
    else:
        hessian = np.empty_like(cache.hessian)
        kept = np.flatnonzero(~reform)
        if kept.shape[0]:
            hessian[kept] = cache.hessian[kept] + _weighted_gram(X_new[kept], weights[kept])
        formed = slice(None) if kept.shape[0] == 0 else np.flatnonzero(reform)
        eta = np.matmul(X[formed], theta[formed][:, :, None])
        _, formed_weights = link.residual(eta, 0, True, formed)
        hessian[formed] = _weighted_gram(X[formed], formed_weights) + l2 * np.eye(d)
        cache.hessian_n[formed] = n[formed]
    cache.n_seen = n.copy()
    cache.gradient, cache.hessian = gradient, hessian

    # 2-4. steps on the working set: the rows still running (``live``) and, until they
    # are compacted away, finished ones; ``index``: their positions in the r inputs.
    # Work arrays may be the cache's own: they are replaced, never written into (the
    # cache's rows are written only once accepted, when they have left the working set).
    norm = np.abs(gradient).max(axis=1)
    # The convergence rule (:func:`~glmbandits.estimation.convergence.are_roots`); with
    # l2 == 0 it also needs the Newton step, measured at the candidates: every row steps.
    converged = are_roots(norm, threshold, l2) if l2 > 0.0 else np.zeros(r, dtype=bool)
    n_steps = np.zeros(r, dtype=np.int64)
    failed = np.zeros(r, dtype=bool)
    if converged.any():
        index = np.flatnonzero(~converged)
        work_X, work_link = X[index], link.rows(index)
        work_V_inv = V_inv[index] if certify else None
        theta_w, gradient_w, hessian_w = theta[index], gradient[index], hessian[index]
        norm_w, threshold_w, fresh_w = norm[index], threshold[index], reform[index]
        v_tol_w, radius_w = v_tol[index], (radius[index] if certify else None)
    else:  # every row steps: the inputs themselves
        index = np.arange(r)
        work_X, work_link, work_V_inv = X, link, V_inv
        theta_w, gradient_w, hessian_w = theta, gradient, hessian
        norm_w, threshold_w, fresh_w, v_tol_w, radius_w = norm, threshold, reform, v_tol, radius
    live = np.ones(index.shape[0], dtype=bool)
    all_live = True  # live.all(), kept as a flag
    for _ in range(max_iter if index.shape[0] else 0):
        candidate = theta_w - _solve_rows(hessian_w, gradient_w)
        eta = np.matmul(work_X, candidate[:, :, None])
        new_gradient = np.matmul(np.swapaxes(work_link.residual(eta, 0, False)[0], 1, 2),
                                 work_X)[:, 0]
        new_gradient += l2 * candidate
        new_norm = np.abs(new_gradient).max(axis=1)
        n_steps[index if all_live else index[live]] += 1
        eta_max = np.abs(eta).max(axis=(1, 2)) if certify or l2 == 0.0 else None
        accept = are_roots(new_norm, threshold_w, l2, eta_max,
                           lambda rows: _step_reach(work_X[rows], hessian_w[rows],
                                                    new_gradient[rows]),
                           family.saturation,
                           lambda rows: _decrements(work_X[rows], work_link.rows(rows),
                                                    candidate[rows], hessian_w[rows],
                                                    new_gradient[rows], n[index[rows]],
                                                    threshold_w[rows], l2))
        if certify:
            errors = certified_v_norm_errors(new_gradient, eta_max, work_V_inv, family, l2,
                                             radius_w, kappa_cache)
            accept |= errors <= v_tol_w
        if not all_live:
            accept &= live
        if accept.any():
            if all_live and accept.all():  # the usual way out
                cache.theta[index] = candidate
                cache.gradient[index] = new_gradient
                cache.hessian[index] = hessian_w
                converged[index] = True
                break
            won = index[accept]
            cache.theta[won] = candidate[accept]
            cache.gradient[won] = new_gradient[accept]
            cache.hessian[won] = hessian_w[accept]
            converged[won] = True
            live = live & ~accept
            all_live = False
        # not accepted: progress (halving on a cached A, any decrease on the exact one)?
        progress = np.where(fresh_w, new_norm < norm_w, new_norm <= 0.5 * norm_w)
        if all_live and progress.all():  # the usual chord step of every row: keep A
            theta_w, gradient_w, norm_w = candidate, new_gradient, new_norm
            fresh_w = np.zeros(index.shape[0], dtype=bool)
            continue
        move = live & progress
        retry = live & ~progress & ~fresh_w  # the same point, on the exact Hessian at it
        failed[index[live & ~progress & fresh_w]] = True
        live = move | retry
        all_live = False
        if not live.any():
            break
        theta_w = np.where(move[:, None], candidate, theta_w)
        gradient_w = np.where(move[:, None], new_gradient, gradient_w)
        norm_w = np.where(move, new_norm, norm_w)
        fresh_w = fresh_w & ~move | retry
        if retry.any():
            back = np.flatnonzero(retry)
            eta_back = np.matmul(work_X[back], theta_w[back][:, :, None])
            _, weights = work_link.residual(eta_back, 0, True, back)
            hessian_w = hessian_w.copy()
            hessian_w[back] = _weighted_gram(work_X[back], weights) + l2 * np.eye(d)
            cache.hessian_n[index[back]] = n[index[back]]
        if live.sum() <= live.shape[0] // 2:  # compact: drop the finished rows
            keep = np.flatnonzero(live)
            index, live = index[keep], live[keep]
            work_X, work_link = work_X[keep], work_link.rows(keep)
            theta_w, gradient_w, hessian_w = theta_w[keep], gradient_w[keep], hessian_w[keep]
            norm_w, threshold_w, fresh_w = norm_w[keep], threshold_w[keep], fresh_w[keep]
            v_tol_w = v_tol_w[keep]
            if certify:
                work_V_inv, radius_w = work_V_inv[keep], radius_w[keep]
    else:
        failed[index[live]] = True
    failed &= ~converged

    # rows the fast steps could not solve: the robust line-search solver, caches reset
    if failed.any():
        for row in np.flatnonzero(failed):
            m = int(n[row])
            fit = solve_estimating_equation(X[row, :m], y[row, :m], family, l2, cache.theta[row],
                                            tol, fallback_max_iter)
            cache.theta[row] = fit.theta
            converged[row] = fit.converged
        cache.reset(np.flatnonzero(failed), l2)
    return LazyRefit(cache.theta.copy(), converged, n_steps, failed)
