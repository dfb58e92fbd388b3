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
previous refit left (each step is a function, named in brackets, which
:func:`lazy_newton_refit` calls in turn):

1. **Fold in the new samples** (:func:`_fold_new_samples`) at the previous root
   θ̂: the cached gradient on the first ``n_seen`` samples gains their O(k d)
   terms, and the cached matrix ``A`` (an approximation of the Hessian
   ``H(θ) = Σ μ'(X_i'θ) X_i X_i' + λI``) their O(k d²) terms. ``A`` is re-formed
   exactly at θ̂ on all samples when there is none, and at every
   :data:`REFORM_EVERY`-th refit since it was formed (lazy refits come at geometrically spaced sample counts, so that is O(log n)
   exact Hessians in all; counting refits rather than samples makes the
   replicates of a refit wave re-form together, on the whole stacked history).
2. **Step** (:func:`_step`) ``θ ← θ - A⁻¹g`` and compute the gradient at the
   candidate exactly on all n samples (one pass).
3. **Accept** (:func:`_accepted`) by the convergence rule every solver shares
   (:func:`~glmbandits.estimation.convergence.are_roots`: ``max_j |g_j| <=
   tol·max(1, n)``, or the same bound on the Newton decrement of the mean loss,
   screened with ``A`` and confirmed on the exact Hessian at the candidate; with
   ``l2 == 0`` also a tiny Newton step in the linear predictors and a finite
   MLE, so every row steps at least once), or, with
   ``v_norm_tol > 0``, when the exact gradient certifies
   ``‖θ - θ̂_exact‖_V <= v_norm_tol`` (:func:`~glmbandits.estimation.certificate.certified_v_norm_error`).
4. Otherwise (:func:`_newton_steps`, which loops over steps 2–4) continue with
   Newton steps on the exact Hessian at the current point (quadratic
   convergence, e.g. Nocedal & Wright 2006, Thm. 3.5); a step on the cached
   ``A`` that fails to halve the gradient is retried on the exact Hessian; a row
   whose exact Newton step fails, or that has not converged after ``max_iter``
   steps, is refitted (:func:`_fall_back`) by the robust line-search solver
   :func:`~glmbandits.estimation.solve_estimating_equation` from its previous
   root, and its cache is reset.

Everything runs on the host with numpy: refits in the same round are few
(a handful of rows), so they are latency-bound, not throughput-bound.

Why this module is long: it is one solver (its cache, its stacked link and the
phases of one refit, one function each); every decision must stay row-local so
that batch and sequential trajectories agree, and splitting the solver across
modules would scatter that contract.

References
----------
Li, Lu & Zhou (2017), ICML, eq. (3) and Algorithm 1 step 1; Abbasi-Yadkori, Pál
& Szepesvári (2011), Section 5 (rarely-switching refits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, overload

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

    @overload
    def residual(self, eta: np.ndarray, start: int, weights: Literal[True],
                 rows: np.ndarray | slice = ...) -> tuple[np.ndarray, np.ndarray]: ...

    @overload
    def residual(self, eta: np.ndarray, start: int, weights: bool,
                 rows: np.ndarray | slice = ...) -> tuple[np.ndarray, np.ndarray | None]: ...

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
    gram: np.ndarray = np.matmul(np.swapaxes(X * weights, 1, 2), X)
    return gram


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
    r, length, _ = X.shape
    n = np.full(r, length, dtype=np.int64) if n_samples is None else np.asarray(n_samples)
    link = _Link(family, y)
    threshold = tol * np.maximum(n, 1)  # stopping_threshold, row by row
    v_tol, radius = _certificate_radii(v_norm_tol, r, V_inv, l2)
    reform = _fold_new_samples(X, link, cache, n, l2)
    converged, n_steps, failed = _newton_steps(X, link, cache, reform, n, threshold, l2, family,
                                               max_iter, V_inv, v_tol, radius, kappa_cache)
    _fall_back(X, y, cache, n, failed, converged, family, l2, tol, fallback_max_iter)
    return LazyRefit(cache.theta.copy(), converged, n_steps, failed)


def _certificate_radii(v_norm_tol: float | np.ndarray, r: int, V_inv: np.ndarray | None,
                       l2: float) -> tuple[np.ndarray, np.ndarray | None]:
    """Each row's V-norm tolerance (r,), and the radii the certificate of step 3 works within.

    The radii (``v_norm_tol`` capped at
    :data:`~glmbandits.estimation.certificate.MAX_CERTIFY_RADIUS`) are None when
    no row is certified: without ``V_inv``, without ridge, or with every
    tolerance 0 (the strict test only).
    """
    if isinstance(v_norm_tol, (int, float)):
        v_tol = np.full(r, float(v_norm_tol))
        certify = V_inv is not None and l2 > 0.0 and v_norm_tol > 0.0
    else:
        v_tol = np.asarray(v_norm_tol, dtype=np.float64)
        certify = V_inv is not None and l2 > 0.0 and bool((v_tol > 0.0).any())
    return v_tol, (np.minimum(v_tol, MAX_CERTIFY_RADIUS) if certify else None)


def _fold_new_samples(X: np.ndarray, link: _Link, cache: NewtonCache, n: np.ndarray,
                      l2: float) -> np.ndarray:
    """Step 1: fold each row's new samples into its cached gradient and ``A`` at θ̂.

    The samples beyond ``cache.n_seen`` add their O(k d) terms to the gradient
    at the previous root θ̂ and their O(k d²) terms to ``A``; a row whose ``A``
    is due to be re-formed (none yet, or :data:`REFORM_EVERY` refits old) gets
    the exact Hessian at θ̂ on all its samples instead. The cache is updated
    (``n_seen``, ``gradient``, ``hessian``, ``hessian_n``, ``age``; θ̂ stays).

    Returns
    -------
    reform : ndarray of bool, shape (r,)
        Rows whose ``A`` is now exact at θ̂.
    """
    length, d = X.shape[1], X.shape[2]
    theta = cache.theta
    reform: np.ndarray = (cache.hessian_n == 0) | (cache.age >= REFORM_EVERY)
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
        assert weights is not None  # asked for: some rows keep their A
        hessian = cache.hessian + _weighted_gram(X_new, weights)
    else:
        hessian = np.empty_like(cache.hessian)
        kept = np.flatnonzero(~reform)
        if kept.shape[0]:
            assert weights is not None  # asked for: some rows keep their A
            hessian[kept] = cache.hessian[kept] + _weighted_gram(X_new[kept], weights[kept])
        formed = slice(None) if kept.shape[0] == 0 else np.flatnonzero(reform)
        eta = np.matmul(X[formed], theta[formed][:, :, None])
        _, formed_weights = link.residual(eta, 0, True, formed)
        hessian[formed] = _weighted_gram(X[formed], formed_weights) + l2 * np.eye(d)
        cache.hessian_n[formed] = n[formed]
    cache.n_seen = n.copy()
    cache.gradient, cache.hessian = gradient, hessian
    return reform


class _WorkingSet:
    """The rows of steps 2–4 and their iterates; ``index``: their positions in the r inputs.

    It holds the rows still running and, until they are compacted away
    (:meth:`rows`), finished ones. Its arrays may be the cache's own: they are
    replaced, never written into (a cache row is written only once accepted,
    when it has left the working set).
    """

    def __init__(self, index: np.ndarray, X: np.ndarray, link: _Link, V_inv: np.ndarray | None,
                 theta: np.ndarray, gradient: np.ndarray, hessian: np.ndarray, norm: np.ndarray,
                 threshold: np.ndarray, fresh: np.ndarray, v_tol: np.ndarray,
                 radius: np.ndarray | None) -> None:
        self.index, self.X, self.link, self.V_inv = index, X, link, V_inv
        self.theta, self.gradient, self.hessian, self.norm = theta, gradient, hessian, norm
        self.threshold, self.fresh, self.v_tol, self.radius = threshold, fresh, v_tol, radius

    def rows(self, keep: np.ndarray) -> "_WorkingSet":
        """The working set of the rows ``keep`` only (the certificate's inputs if it is used)."""
        certify = self.radius is not None
        return _WorkingSet(self.index[keep], self.X[keep], self.link.rows(keep),
                           self.V_inv[keep] if certify and self.V_inv is not None else None,
                           self.theta[keep], self.gradient[keep], self.hessian[keep],
                           self.norm[keep], self.threshold[keep], self.fresh[keep],
                           self.v_tol[keep],
                           self.radius[keep] if self.radius is not None else None)


def _step(work: _WorkingSet, l2: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Step 2: the Newton candidate ``θ - A⁻¹g`` and its exact gradient on all samples.

    Returns the candidates, their linear predictors η, gradients and max-norms.
    """
    candidate = work.theta - _solve_rows(work.hessian, work.gradient)
    eta = np.matmul(work.X, candidate[:, :, None])
    new_gradient = np.matmul(np.swapaxes(work.link.residual(eta, 0, False)[0], 1, 2),
                             work.X)[:, 0]
    new_gradient += l2 * candidate
    return candidate, eta, new_gradient, np.abs(new_gradient).max(axis=1)


def _accepted(work: _WorkingSet, candidate: np.ndarray, eta: np.ndarray,
              new_gradient: np.ndarray, new_norm: np.ndarray, n: np.ndarray, l2: float,
              family: GLMFamily, kappa_cache: dict | None) -> np.ndarray:
    """Step 3: the candidates that are roots (the shared rule, or the V-norm certificate).

    :func:`~glmbandits.estimation.convergence.are_roots` (with ``l2 == 0`` also
    the Newton step in the linear predictors and the saturation bound), or,
    where the certificate is used, ``‖θ - θ̂_exact‖_V <= v_norm_tol``
    (:func:`~glmbandits.estimation.certificate.certified_v_norm_errors`).
    """
    certify = work.radius is not None
    eta_max = np.abs(eta).max(axis=(1, 2)) if certify or l2 == 0.0 else None
    accept = are_roots(new_norm, work.threshold, l2, eta_max,
                       lambda rows: _step_reach(work.X[rows], work.hessian[rows],
                                                new_gradient[rows]),
                       family.saturation,
                       lambda rows: _decrements(work.X[rows], work.link.rows(rows),
                                                candidate[rows], work.hessian[rows],
                                                new_gradient[rows], n[work.index[rows]],
                                                work.threshold[rows], l2))
    if certify:
        assert eta_max is not None and work.V_inv is not None and work.radius is not None
        errors = certified_v_norm_errors(new_gradient, eta_max, work.V_inv, family, l2,
                                         work.radius, kappa_cache)
        accept |= errors <= work.v_tol
    return accept


def _newton_steps(X: np.ndarray, link: _Link, cache: NewtonCache, reform: np.ndarray,
                  n: np.ndarray, threshold: np.ndarray, l2: float, family: GLMFamily,
                  max_iter: int, V_inv: np.ndarray | None, v_tol: np.ndarray,
                  radius: np.ndarray | None, kappa_cache: dict | None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 2–4: Newton steps from the folded cache until every row is accepted or fails.

    A row whose folded gradient already passes the rule (``l2 > 0``) takes no
    step. The others step (:func:`_step`) until accepted (:func:`_accepted`);
    a step that does not make progress (halve the gradient on a cached ``A``,
    decrease it on an exact one) is retried on the exact Hessian at the same
    point, and fails when that one does not either, or after ``max_iter``
    steps. Accepted rows are written into the cache.

    Returns
    -------
    converged, n_steps, failed : ndarray of shape (r,)
        Rows accepted, Newton steps taken, and rows left to the robust solver.
    """
    r, d = X.shape[0], X.shape[2]
    gradient, hessian = cache.gradient, cache.hessian
    norm = np.abs(gradient).max(axis=1)
    # The convergence rule (:func:`~glmbandits.estimation.convergence.are_roots`); with
    # l2 == 0 it also needs the Newton step, measured at the candidates: every row steps.
    converged = are_roots(norm, threshold, l2) if l2 > 0.0 else np.zeros(r, dtype=bool)
    n_steps = np.zeros(r, dtype=np.int64)
    failed = np.zeros(r, dtype=bool)
    work = _WorkingSet(np.arange(r), X, link, V_inv, cache.theta, gradient, hessian, norm,
                       threshold, reform, v_tol, radius)  # every row steps: the inputs themselves
    if converged.any():
        work = work.rows(np.flatnonzero(~converged))
    live = np.ones(work.index.shape[0], dtype=bool)
    all_live = True  # live.all(), kept as a flag
    for _ in range(max_iter if work.index.shape[0] else 0):
        candidate, eta, new_gradient, new_norm = _step(work, l2)
        index = work.index
        n_steps[index if all_live else index[live]] += 1
        accept = _accepted(work, candidate, eta, new_gradient, new_norm, n, l2, family,
                           kappa_cache)
        if not all_live:
            accept &= live
        if accept.any():
            if all_live and accept.all():  # the usual way out
                cache.theta[index] = candidate
                cache.gradient[index] = new_gradient
                cache.hessian[index] = work.hessian
                converged[index] = True
                break
            won = index[accept]
            cache.theta[won] = candidate[accept]
            cache.gradient[won] = new_gradient[accept]
            cache.hessian[won] = work.hessian[accept]
            converged[won] = True
            live = live & ~accept
            all_live = False
        # step 4. not accepted: progress (halving on a cached A, any decrease on the exact one)?
        progress = np.where(work.fresh, new_norm < work.norm, new_norm <= 0.5 * work.norm)
        if all_live and progress.all():  # the usual chord step of every row: keep A
            work.theta, work.gradient, work.norm = candidate, new_gradient, new_norm
            work.fresh = np.zeros(index.shape[0], dtype=bool)
            continue
        move = live & progress
        retry = live & ~progress & ~work.fresh  # the same point, on the exact Hessian at it
        failed[index[live & ~progress & work.fresh]] = True
        live = move | retry
        all_live = False
        if not live.any():
            break
        work.theta = np.where(move[:, None], candidate, work.theta)
        work.gradient = np.where(move[:, None], new_gradient, work.gradient)
        work.norm = np.where(move, new_norm, work.norm)
        work.fresh = work.fresh & ~move | retry
        if retry.any():
            back = np.flatnonzero(retry)
            eta_back = np.matmul(work.X[back], work.theta[back][:, :, None])
            _, weights = work.link.residual(eta_back, 0, True, back)
            work.hessian = work.hessian.copy()
            work.hessian[back] = _weighted_gram(work.X[back], weights) + l2 * np.eye(d)
            cache.hessian_n[index[back]] = n[index[back]]
        if live.sum() <= live.shape[0] // 2:  # compact: drop the finished rows
            keep = np.flatnonzero(live)
            work, live = work.rows(keep), live[keep]
    else:
        failed[work.index[live]] = True
    failed &= ~converged
    return converged, n_steps, failed


def _fall_back(X: np.ndarray, y: np.ndarray, cache: NewtonCache, n: np.ndarray,
               failed: np.ndarray, converged: np.ndarray, family: GLMFamily, l2: float,
               tol: float, max_iter: int) -> None:
    """Step 4's last resort: the robust line-search solver for the rows the steps failed.

    Each such row is refitted by :func:`~glmbandits.estimation.solve_estimating_equation`
    from its previous root; its cache is reset (``converged`` is updated in place).
    """
    if failed.any():
        for row in np.flatnonzero(failed):
            m = int(n[row])
            fit = solve_estimating_equation(X[row, :m], y[row, :m], family, l2, cache.theta[row],
                                            tol, max_iter)
            cache.theta[row] = fit.theta
            converged[row] = fit.converged
        cache.reset(np.flatnonzero(failed), l2)
