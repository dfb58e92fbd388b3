"""Fast exact refits of the GLM estimating equation when samples arrive one by one.

UCB-GLM (Li, Lu & Zhou 2017, Algorithm 1 step 1) re-solves eq. (3),

.. math:: g(\\theta) = \\sum_{i \\le n} (\\mu(X_i'\\theta) - Y_i) X_i + \\lambda\\theta = 0,

after every new sample. :class:`IncrementalMLE` solves it to the *same* stopping
rule as :func:`glmbandits.estimation.solve_estimating_equation`
(``max_j |g_j(θ)| <= tol · max(1, n)``, with ``g`` evaluated exactly on all n
samples, or the same bound on the Newton decrement of the mean loss, screened
with the cached Hessian and confirmed on the exact one), or, when asked (the
policies' ``refit_tol``), until the exact gradient certifies
``‖θ - θ̂‖_V <= v_norm_tol`` (:func:`certified_v_norm_error`), with far less
work per refit:

* **Cached gradient.** The gradient at the previous root θ̂ is kept; a new
  sample adds ``(μ(x'θ̂) - y) x`` to it (O(d) instead of a pass over the data).
* **Quasi-Newton steps with a cached Hessian inverse.** ``A⁻¹`` is the inverse of
  ``A = Σ μ'(X_i'θ_ref) X_i X_i' + λI``, formed exactly at some reference point and
  extended by one Sherman–Morrison step per new sample (weight μ'(x'θ̂)), or,
  when several samples arrived since the last refit (lazy schedules), by adding
  their O(k d²) contribution to ``A`` and inverting the d×d matrix. The
  step ``θ ← θ - A⁻¹g`` is then a Newton step with a slightly stale Hessian. One
  or two steps usually reach the tolerance after one new sample, and each costs
  one pass over the data (``Xθ`` and ``X'r``), not the O(n d²) of a new Hessian,
  nor the objective evaluations of a line search.
* **Fast passes.** With ``column_copy`` the passes run on a column-major copy
  of the samples (twice the BLAS gemv speed for small d), and for the logistic
  link on ``tanh`` rather than scipy's slower ``expit``.
* **The gradient test is exact**: every candidate is accepted only after its
  gradient has been computed on all n samples, by the convergence rule every
  solver shares (:func:`~glmbandits.estimation.convergence.is_root`; with
  ``l2 == 0`` it also checks the Newton step and the saturation bound), so a
  converged result solves eq. (3) to tolerance exactly as the plain solver's
  does. When a step fails to halve the gradient, ``A`` is re-formed exactly at
  the current point; when even that fails (separable data, the MLE escaping to
  infinity), the refit falls back
  to the robust line-search Newton solver, whose behaviour (and warnings
  upstream) are then unchanged.

The convergence argument is the classical one for Newton's method with an
approximate Hessian (e.g. Nocedal & Wright 2006, Thm. 3.7 / Dennis–Moré): if
``‖I - A⁻¹H(θ)‖ <= ρ < 1`` near the root the iteration contracts at rate ρ, and
here ρ = O(‖θ - θ_ref‖·M_μ/κ) is small because θ̂ moves by O(1/n) per sample.

Why this module is long: it is one solver class, and its one-sample logistic
path is inlined on purpose (it is the per-round hot path of exact UCB-GLM);
splitting it would only scatter one algorithm over several files.

References
----------
Li, Lu & Zhou (2017), ICML, eq. (3) and Algorithm 1 step 1; Section 5 (the cost
of refitting the MLE every round is the paper's stated open problem).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg

from ..families import GLMFamily, LogisticFamily
from .certificate import KAPPA_GRID, MAX_CERTIFY_RADIUS, certified_v_norm_error
from .convergence import decrement_norm, is_root
from .mle import GLMFit, solve_estimating_equation

__all__ = ["IncrementalMLE"]

#: Quasi-Newton steps tried before falling back to the line-search solver.
_MAX_FAST_STEPS = 6
#: A refit that needed more quasi-Newton steps than this re-forms A exactly.
_REFRESH_AFTER = 2
#: A is also re-formed exactly once the number of samples has grown by this factor
#: since it was formed: the weights μ'(X_i'θ) of the older samples were taken at
#: older estimates. A geometric schedule: O(log n) exact Hessians in all.
_REFORM_GROWTH = 1.25


#: Use the inlined one-sample path of :meth:`IncrementalMLE._solve` (tests turn it off
#: to check that it computes exactly what the general path does).
_FAST_PATH = True

_outer = np.multiply.outer  # the ufunc method: less call overhead than np.outer

class IncrementalMLE:
    """Warm-started exact solver of eq. (3) that caches the gradient and ``A⁻¹``.

    Parameters
    ----------
    n_features : int
        Dimension d.
    family : GLMFamily
        The link μ.
    l2 : float
        Ridge λ >= 0 of the estimating equation.
    tol, max_iter : float, int
        Stopping rule and iteration cap of the fallback solver (as in
        :func:`~glmbandits.estimation.solve_estimating_equation`).
    column_copy : bool, default False
        Keep a column-major copy ``X'`` of the samples (a (d, capacity) buffer
        grown geometrically) and run the passes on it: ``θ'X'`` and ``X'r``
        on contiguous rows are about twice as fast as ``Xθ`` and ``X'r`` on the
        row-major history for d = 10 (BLAS gemv), at the price of a second copy
        of the samples. Worth it when refits run every round.

    Attributes
    ----------
    theta_ : ndarray of shape (d,)
        The last root (zeros before the first refit).
    grad_ : ndarray of shape (d,) or None
        ``g(theta_)`` on the first ``n_seen_`` samples (None: to be recomputed).
    hess_, hess_inv_ : ndarray of shape (d, d) or None
        ``A`` and ``A⁻¹`` (None: to be formed exactly at the next step).
    n_seen_ : int
        Samples already folded into ``grad_`` and ``hess_inv_``.
    columns_ : ndarray of shape (d, capacity) or None
        With ``column_copy``, ``s·X'`` of the first ``columns_n_`` samples, with
        s = 1/2 for the logistic link (so ``θ'(s·X') = η/2`` and ``(s·X')t = X't/2``
        exactly, a power-of-two scaling) and 1 otherwise.
    n_passes_, n_hessians_, n_fallbacks_ : int
        Full passes over the data, exact Hessians formed, fallbacks to the
        line-search solver (for benchmarks and tests).

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits.families import get_family
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2)) / 2
    >>> y = (rng.random(200) < 0.5).astype(float)
    >>> solver = IncrementalMLE(2, get_family("logistic"), l2=1.0)
    >>> fits = [solver.refit(X[: n + 1], y[: n + 1]) for n in range(200)]
    >>> all(fit.converged for fit in fits)
    True
    """

    def __init__(self, n_features: int, family: GLMFamily, l2: float, tol: float = 1e-8,
                 max_iter: int = 50, column_copy: bool = False) -> None:
        self.family = family
        self.l2 = float(l2)
        self.tol = tol
        self.max_iter = max_iter
        self.theta_ = np.zeros(n_features)
        self.grad_: np.ndarray | None = None
        self.hess_: np.ndarray | None = None
        self.hess_inv_: np.ndarray | None = None
        self.n_seen_ = 0
        self.n_passes_ = 0
        self.n_hessians_ = 0
        self.n_fallbacks_ = 0
        self.hessian_n_ = math.inf  # samples when A was last formed exactly
        self.kappa_cache_: dict[int, float] = {}
        # Logistic link: μ(η) = (1 + tanh(η/2))/2, so g(θ) = ½X'tanh(Xθ/2) + b + λθ with
        # b = Σ (½ - y_i) X_i kept incrementally (numpy's tanh is several times
        # faster than scipy's expit; the two agree to ~1e-16 absolute).
        self.logistic_ = type(family) is LogisticFamily
        self.offset_: np.ndarray | None = None
        self.column_copy = column_copy
        self.columns_: np.ndarray | None = None
        self.flips_: np.ndarray | None = None  # logistic: 1 - 2y beside the columns
        self.columns_n_ = 0
        self.certifying_ = False  # whether the refit in progress checks certificates

    # -- pieces ------------------------------------------------------------------
    def _gradient(self, X: np.ndarray, y: np.ndarray, theta: np.ndarray
                  ) -> tuple[np.ndarray, float]:
        """One pass: g(θ) on all samples and ``max_i |X_i'θ|`` (nan unless needed)."""
        self.n_passes_ += 1
        need_max = self.certifying_ or self.l2 == 0.0
        if self.logistic_:
            if self.column_copy:  # columns_ holds X'/2, flips_ holds 1 - 2y
                n = X.shape[0]
                assert self.columns_ is not None and self.flips_ is not None  # _sync_columns
                XT_half = self.columns_[:, :n]
                half = theta @ XT_half  # η/2
                eta_max = 2.0 * float(np.abs(half).max()) if need_max else math.nan
                np.tanh(half, out=half)
                half += self.flips_[:n]
                gradient = XT_half @ half  # X'(tanh(η/2)/2 + 1/2 - y) = X'(μ(η) - y)
            else:
                half = X @ (0.5 * theta)  # η/2 (exactly: a power-of-two scaling)
                eta_max = 2.0 * float(np.abs(half).max()) if need_max else math.nan
                np.tanh(half, out=half)
                gradient = X.T @ half
                gradient *= 0.5
                gradient += self.offset_
        else:
            if self.column_copy:
                assert self.columns_ is not None  # _sync_columns filled it
                XT = self.columns_[:, : X.shape[0]]
            else:
                XT = X.T
            eta = theta @ XT
            eta_max = float(np.abs(eta).max()) if need_max else math.nan
            gradient = XT @ (self.family.mean(eta) - y)
        if self.l2 > 0.0:
            gradient += self.l2 * theta
        return gradient, eta_max

    def _exact_hessian(self, X: np.ndarray, eta: np.ndarray) -> None:
        """Set A = Σ μ'(η_i) X_i X_i' + λI and A⁻¹ (both None if A is numerically singular)."""
        self.n_hessians_ += 1
        self.hessian_n_ = X.shape[0]
        d = X.shape[1]
        hessian = (X.T * self.family.dmean(eta)) @ X
        if self.l2 > 0.0:
            hessian.flat[:: d + 1] += self.l2
        self.hess_ = hessian
        self._invert_hessian()

    def _invert_hessian(self) -> None:
        """A⁻¹ from A by Cholesky; both set to None when A is numerically singular."""
        assert self.hess_ is not None  # formed or updated just before
        d = self.hess_.shape[0]
        try:
            factor = linalg.cho_factor(self.hess_, lower=True, check_finite=False)
            inverse = linalg.cho_solve(factor, np.eye(d), check_finite=False)
        except linalg.LinAlgError:
            inverse = None
        if inverse is None or not np.isfinite(inverse).all():
            self.hess_ = self.hess_inv_ = None
        else:
            self.hess_inv_ = 0.5 * (inverse + inverse.T)

    def _sync_columns(self, X: np.ndarray, y: np.ndarray) -> None:
        """Make ``columns_[:, :n]`` hold ``s·X'`` (append the new rows; rebuild on a reset)."""
        n = X.shape[0]
        if self.grad_ is None or self.n_seen_ > n or self.columns_n_ > n:
            self.columns_n_ = 0  # the samples may have changed: copy them all again
        start = self.columns_n_
        if start == n:
            return
        columns = self.columns_
        if columns is None or columns.shape[1] < n:
            capacity = max(64, 2 * n)
            grown = np.empty((X.shape[1], capacity))
            flips = np.empty(capacity)
            if start:
                assert columns is not None and self.flips_ is not None  # start > 0: copied before
                grown[:, :start] = columns[:, :start]
                flips[:start] = self.flips_[:start]
            self.columns_ = columns = grown
            self.flips_ = flips
        if self.logistic_:
            assert self.flips_ is not None  # allocated with the columns
            if n - start == 1:
                np.multiply(X[start], 0.5, out=columns[:, start])
                self.flips_[start] = 1.0 - 2.0 * float(y[start])
            else:
                np.multiply(X[start:n].T, 0.5, out=columns[:, start:n])
                np.subtract(1.0, 2.0 * y[start:n], out=self.flips_[start:n])
        elif n - start == 1:
            columns[:, start] = X[start]
        else:
            columns[:, start:n] = X[start:n].T
        self.columns_n_ = n

    def _absorb(self, X: np.ndarray, y: np.ndarray) -> None:
        """Fold samples n_seen_..n-1 into the cached gradient and A⁻¹ at theta_."""
        n = X.shape[0]
        theta = self.theta_
        if self.column_copy:
            self._sync_columns(X, y)
        if self.grad_ is None or self.n_seen_ > n:
            if self.logistic_ and not self.column_copy:
                self.offset_ = X.T @ (0.5 - y)
            self.grad_, _ = self._gradient(X, y, theta)
            self.hess_ = self.hess_inv_ = None
        elif n == self.n_seen_ + 1:  # the every-round case: O(d²), no (1, d) temporaries
            x, reward = X[n - 1], float(y[n - 1])
            eta = float(x @ theta)
            if self.logistic_:
                if not self.column_copy:
                    self.offset_ = self.offset_ + (0.5 - reward) * x
                half = math.tanh(0.5 * eta)
                mean, weight = 0.5 + 0.5 * half, 0.25 * (1.0 - half * half)
            else:
                mean, weight = float(self.family.mean(eta)), None
            self.grad_ = self.grad_ + (mean - reward) * x
            if self.hess_inv_ is not None:
                if weight is None:
                    weight = float(self.family.dmean(eta))
                # Sherman–Morrison on A⁻¹ (A⁻¹ is only a preconditioner: no exact symmetry needed)
                u = self.hess_inv_ @ x
                self.hess_inv_ -= _outer(u * (weight / (1.0 + weight * float(x @ u))), u)
                self.hess_ = None  # only A⁻¹ is kept up to date here (A: re-formed if needed)
        elif n > self.n_seen_:
            new = X[self.n_seen_:n]
            etas = new @ theta
            if self.logistic_ and not self.column_copy:
                assert self.offset_ is not None  # set with grad_
                self.offset_ = self.offset_ + new.T @ (0.5 - y[self.n_seen_:n])
            self.grad_ = self.grad_ + new.T @ (self.family.mean(etas) - y[self.n_seen_:n])
            if self.hess_ is None:
                self.hess_inv_ = None
            elif self.hess_inv_ is not None:
                self.hess_ = self.hess_ + (new.T * self.family.dmean(etas)) @ new
                self._invert_hessian()
        self.n_seen_ = n

    # -- the refit -----------------------------------------------------------------
    def refit(self, X: np.ndarray, y: np.ndarray, V_inv: np.ndarray | None = None,
              v_norm_tol: float = 0.0) -> GLMFit:
        """Solve eq. (3) on all of ``(X, y)``, warm-started at the previous root.

        ``X[:n_seen_]`` must be the samples seen by the previous calls (the
        history only grows); the rows after them are the new samples.

        Parameters
        ----------
        X, y : ndarray
            All samples so far.
        V_inv : ndarray of shape (d, d), optional
            ``V⁻¹`` for ``V = l2·I + X'X`` (needed by ``v_norm_tol``).
        v_norm_tol : float, default 0.0
            If > 0 (and ``l2 > 0`` and ``V_inv`` is given), a candidate is also
            accepted when it certifies ``‖θ - θ̂‖_V <= v_norm_tol`` for the exact
            root θ̂ (see :func:`certified_v_norm_error`); 0: only the strict
            gradient test ``max|g| <= tol·max(1, n)``.

        Returns
        -------
        GLMFit
            As :func:`~glmbandits.estimation.solve_estimating_equation`; ``n_iter``
            counts quasi-Newton steps (or the fallback's Newton iterations).
        """
        theta, converged, n_iter, norm, message = self._solve(X, y, V_inv, v_norm_tol)
        if norm != norm:  # accepted on the certificate: report the gradient's max-norm too
            assert self.grad_ is not None  # the accepted root's
            norm = float(np.abs(self.grad_).max())
        return GLMFit(theta, converged, n_iter, norm, message)

    def _solve(self, X: np.ndarray, y: np.ndarray, V_inv: np.ndarray | None,
               v_norm_tol: float) -> tuple[np.ndarray, bool, int, float, str]:
        """:meth:`refit` without building the result object (the hot path)."""
        n = X.shape[0]
        certify = self.certifying_ = v_norm_tol > 0.0 and V_inv is not None and self.l2 > 0.0
        if self.hess_inv_ is not None and n >= _REFORM_GROWTH * self.hessian_n_:
            self.hess_ = self.hess_inv_ = None  # A has aged: re-form it exactly at this refit
        first = None
        if (certify and V_inv is not None and _FAST_PATH and self.logistic_ and self.column_copy
                and self.hess_inv_ is not None and self.grad_ is not None
                and self.columns_ is not None
                and n == self.n_seen_ + 1 == self.columns_n_ + 1 and self.columns_.shape[1] >= n):
            first = self._first_step_one_sample(X, y, V_inv, v_norm_tol)
            if first is None:  # accepted
                return self.theta_, True, 1, math.nan, "converged"
        else:
            self._absorb(X, y)
        threshold = self.tol * (n if n > 1 else 1.0)
        theta, gradient = self.theta_, self.grad_
        assert gradient is not None  # _absorb set it
        # With a certificate, the max-norm of the first gradient is only needed if
        # progress has to be checked (it is never below the threshold after a new sample).
        norm = math.nan if certify else float(np.abs(gradient).max())
        if norm <= threshold and self._is_root(X, theta, gradient, norm, threshold):
            return theta, True, 0, norm, "converged"
        for step_index in range(1, _MAX_FAST_STEPS + 1):
            if first is not None:  # step 1 was taken by the one-sample path (not accepted)
                candidate, new_gradient, eta_max = first
                first, fresh = None, False
            else:
                if self.hess_inv_ is None:
                    self._exact_hessian(X, X @ theta)
                    if self.hess_inv_ is None:
                        break
                    fresh = True
                else:
                    fresh = False
                candidate = theta - self.hess_inv_ @ gradient
                new_gradient, eta_max = self._gradient(X, y, candidate)
            if self.l2 == 0.0 and eta_max > self.family.saturation:
                break
            if certify and V_inv is not None and certified_v_norm_error(
                    new_gradient, eta_max, V_inv, self.family, self.l2, self.kappa_cache_,
                    min(v_norm_tol, MAX_CERTIFY_RADIUS)) <= v_norm_tol:
                new_norm = math.nan  # not needed: :meth:`refit` computes it when asked
            else:
                new_norm = float(np.abs(new_gradient).max())
                if not math.isfinite(new_norm):
                    break
            # the certificate (nan) or the convergence rule (the gradient; with l2 == 0
            # also the step and a finite MLE)
            if new_norm != new_norm or self._is_root(X, candidate, new_gradient, new_norm,
                                                     threshold, eta_max):
                self.theta_, self.grad_ = candidate, new_gradient
                if step_index > _REFRESH_AFTER:  # A has gone stale: re-form it next time
                    self.hess_ = self.hess_inv_ = None
                return candidate, True, step_index, new_norm, "converged"
            if norm != norm:  # nan: not computed yet
                norm = float(np.abs(gradient).max())
            if new_norm > 0.5 * norm:  # too little progress: the Hessian is stale or the step bad
                self.hess_ = self.hess_inv_ = None
                if fresh:
                    break
                continue  # retry from the same point with an exact Hessian
            theta, gradient, norm = candidate, new_gradient, new_norm
        fit = self._fallback(X, y)
        return fit.theta, fit.converged, fit.n_iter, fit.gradient_norm, fit.message

    def _is_root(self, X: np.ndarray, theta: np.ndarray, gradient: np.ndarray, norm: float,
                 threshold: float, eta_max: float | None = None) -> bool:
        """:func:`~glmbandits.estimation.convergence.is_root` at θ (whose gradient is given).

        The Newton decrement (tried when the max-norm test fails) is screened with
        the cached ``A⁻¹`` (``g'A⁻¹g``, O(d²), no pass over the data) and, when the
        screen passes, confirmed on the exact Hessian at θ (formed for the test
        only: the cached ``A`` is left as it was, so the iterates do not change).
        With ``l2 == 0`` the Newton step is measured as ``max_i |X_i'A⁻¹g|`` with
        the cached ``A⁻¹`` (formed exactly at θ if there is none): one more pass,
        paid only by accepted ``l2 == 0`` refits. A stale ``A`` (weights taken
        nearer the origin) can only shrink the step by the ratio of the weights,
        which keeps a separating ray's O(1) steps far above the tolerance.
        """
        n = X.shape[0]

        def decrement() -> float:
            if self.hess_inv_ is None:
                return math.inf
            if decrement_norm(float(gradient @ (self.hess_inv_ @ gradient)), n) > threshold:
                return math.inf
            hessian = (X.T * self.family.dmean(X @ theta)) @ X
            if self.l2 > 0.0:
                hessian.flat[:: X.shape[1] + 1] += self.l2
            try:
                factor = linalg.cho_factor(hessian, lower=True, check_finite=False)
                solved = linalg.cho_solve(factor, gradient, check_finite=False)
            except (linalg.LinAlgError, ValueError):
                return math.inf
            return decrement_norm(float(gradient @ solved), n)

        if self.l2 > 0.0:
            return is_root(norm, threshold, self.l2, decrement=decrement)
        if eta_max is None or eta_max != eta_max:
            eta_max = float(np.abs(X @ theta).max())

        def step() -> float:
            if self.hess_inv_ is None:
                self._exact_hessian(X, X @ theta)
                if self.hess_inv_ is None:  # numerically singular: no root certified
                    return math.inf
            return float(np.abs(X @ (self.hess_inv_ @ gradient)).max())

        return is_root(norm, threshold, 0.0, eta_max, step, self.family.saturation, decrement)

    def _first_step_one_sample(self, X: np.ndarray, y: np.ndarray, V_inv: np.ndarray,
                               v_norm_tol: float) -> tuple[np.ndarray, np.ndarray, float] | None:
        """The every-round hot path, inlined: absorb one sample, one step, one pass.

        Exactly the arithmetic of :meth:`_absorb`, :meth:`_gradient` and
        :func:`certified_v_norm_error` for a logistic link with the column copy
        (tests check that the results are bitwise those of the general path),
        without their call overhead. Returns None when the step is accepted on
        its certificate, else ``(candidate, its gradient, max|η|)`` for the loop.
        """
        n = X.shape[0]
        last = n - 1
        x, reward = X[last], float(y[last])
        columns, flips = self.columns_, self.flips_
        assert columns is not None and flips is not None  # the caller checked the capacity
        np.multiply(x, 0.5, out=columns[:, last])  # _sync_columns
        flips[last] = 1.0 - 2.0 * reward
        self.columns_n_ = n
        theta = self.theta_  # _absorb
        half = math.tanh(0.5 * float(x @ theta))
        gradient = self.grad_ + (0.5 + 0.5 * half - reward) * x
        weight = 0.25 * (1.0 - half * half)
        hess_inv = self.hess_inv_
        u = hess_inv @ x
        hess_inv -= _outer(u * (weight / (1.0 + weight * float(x @ u))), u)
        self.hess_ = None
        self.grad_, self.n_seen_ = gradient, n
        candidate = theta - hess_inv @ gradient  # the step
        self.n_passes_ += 1  # _gradient
        XT_half = columns[:, :n]
        half_eta = candidate @ XT_half
        eta_max = 2.0 * float(np.abs(half_eta).max())
        np.tanh(half_eta, out=half_eta)
        half_eta += flips[:n]
        new_gradient = XT_half @ half_eta
        new_gradient += self.l2 * candidate
        radius = min(v_norm_tol, MAX_CERTIFY_RADIUS)  # certified_v_norm_error
        reach = eta_max + radius
        if reach < math.inf:
            bucket = math.ceil(reach / KAPPA_GRID)
            kappa = self.kappa_cache_.get(bucket)
            if kappa is None:
                kappa = self.kappa_cache_[bucket] = self.family._kappa(bucket * KAPPA_GRID)
            kappa = min(kappa, 1.0)
            quadratic = float(new_gradient @ (V_inv @ new_gradient))
            if kappa > 0.0 and -math.inf < quadratic < math.inf:  # overflow certifies nothing
                error = math.sqrt(max(quadratic, 0.0)) / kappa
                if error <= radius and error <= v_norm_tol:
                    self.theta_, self.grad_ = candidate, new_gradient
                    return None
        return candidate, new_gradient, eta_max

    def _fallback(self, X: np.ndarray, y: np.ndarray) -> GLMFit:
        """The robust line-search Newton solver from the previous root; caches reset."""
        self.n_fallbacks_ += 1
        fit = solve_estimating_equation(X, y, self.family, self.l2, self.theta_, self.tol,
                                        self.max_iter)
        self.theta_ = fit.theta
        self.grad_ = self.offset_ = None
        self.hess_ = self.hess_inv_ = None
        self.n_seen_ = 0
        return fit

    def copy(self) -> "IncrementalMLE":
        """An independent deep copy."""
        clone = IncrementalMLE.__new__(IncrementalMLE)
        clone.__dict__.update(self.__dict__)
        clone.theta_ = self.theta_.copy()
        clone.grad_ = None if self.grad_ is None else self.grad_.copy()
        clone.hess_ = None if self.hess_ is None else self.hess_.copy()
        clone.hess_inv_ = None if self.hess_inv_ is None else self.hess_inv_.copy()
        clone.kappa_cache_ = dict(self.kappa_cache_)
        clone.offset_ = None if self.offset_ is None else self.offset_.copy()
        clone.columns_ = None if self.columns_ is None else self.columns_.copy()
        clone.flips_ = None if self.flips_ is None else self.flips_.copy()
        return clone

    def __getstate__(self) -> dict:
        # The column copy duplicates the samples: leave it out (rebuilt at the next refit).
        state = self.__dict__.copy()
        state["columns_"], state["flips_"], state["columns_n_"] = None, None, 0
        return state
