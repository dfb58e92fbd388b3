"""The estimates policies keep: a refitted GLM MLE and an online ridge regression.

Both keep ``V⁻¹`` for ``V = l2·I + Σ x_i x_i'`` by Sherman–Morrison updates
(:func:`glmbandits.estimation.sherman_morrison_update`), never by inversion per
round. Their state is plain arrays and numbers, so policies pickle exactly.
"""

from __future__ import annotations

import math

import numpy as np

from ..families import GLMFamily
from .checkpoint import Checkpoint, checkpoint
from .gram import inverse_gram, sherman_morrison_update
from .history import SampleHistory
from .incremental import IncrementalMLE
from .lazy import NewtonCache, lazy_newton_refit


class GLMEstimate:
    """θ̂ solving eq. (3) of Li, Lu & Zhou (2017) on all samples, plus V⁻¹.

    The MLE is refitted on demand: :meth:`add` marks it stale and :attr:`theta`
    re-solves the estimating equation warm-started at the previous θ̂ with
    :class:`~glmbandits.estimation.incremental.IncrementalMLE` (cached gradient, quasi-Newton
    steps with a cached Hessian inverse, the same exact gradient test as
    :func:`~glmbandits.estimation.solve_estimating_equation`, to which it falls
    back when a step fails). With ``l2 == 0`` the paper's ``V = Σ x_i x_i'`` is
    inverted directly once, when first needed, and then kept by rank-one
    updates; ``log det V`` is tracked alongside through the matrix determinant
    lemma, for rarely-switching refit schedules.

    Parameters
    ----------
    n_features : int
        Dimension d.
    family : GLMFamily
        The link μ.
    l2 : float
        Ridge λ >= 0 (in eq. (3) and in V).
    tol, max_iter : float, int
        Strict stopping rule ``max|g| <= tol·max(1, n)`` and the fallback
        solver's iteration cap.
    v_norm_tol : float, default 0.0
        0 (default): every refit passes the strict gradient test. If > 0 (and
        l2 > 0), a refit may also stop once the exact gradient *certifies*
        ``‖θ̂ - θ̂_exact‖_V <= v_norm_tol`` for the exact root θ̂_exact of eq. (3)
        (:func:`glmbandits.estimation.certificate.certified_v_norm_error`); then
        ``|x'θ̂ - x'θ̂_exact| <= v_norm_tol·‖x‖_{V⁻¹}`` for every x. Policies set
        it to ``refit_tol · α`` (a fraction of their confidence width).
    column_copy : bool, default False
        Let the solver keep a column-major copy of the samples for faster
        passes (see :class:`~glmbandits.estimation.incremental.IncrementalMLE`); for
        estimates refitted every round.
    lazy : bool, default False
        Refits come after many new samples (rarely-switching schedules): with
        ``l2 > 0`` they use :func:`glmbandits.estimation.lazy.lazy_newton_refit`
        (Newton steps from the previous root with a cached Hessian), the solver
        the lockstep batch simulator runs for many replicates at once, instead
        of the per-sample :class:`~glmbandits.estimation.incremental.IncrementalMLE`.

    Attributes
    ----------
    history : SampleHistory
        Every (x, reward) sample, in order.
    theta_ : ndarray of shape (d,)
        The last estimate (zeros before the first fit).
    n_fits_, n_failed_fits_ : int
        Number of refits, and of refits where the MLE did not exist
        (separable data) and the finite last Newton iterate was kept.
    solver_ : IncrementalMLE
        The warm-started exact solver and its caches.
    newton_ : NewtonCache or None
        With ``lazy`` (and ``l2 > 0``): the lazy solver's cache (one row).
    log_det_V_ : float or None
        ``log det V`` (None while l2 == 0 and V has not been formed yet).
    """

    def __init__(self, n_features: int, family: GLMFamily, l2: float, tol: float = 1e-8,
                 max_iter: int = 50, v_norm_tol: float = 0.0, column_copy: bool = False,
                 lazy: bool = False) -> None:
        self.family = family
        self.l2 = l2
        self.tol = tol
        self.max_iter = max_iter
        self.v_norm_tol = v_norm_tol
        self.history = SampleHistory(n_features)
        self.theta_ = np.zeros(n_features)
        self.V_inv_: np.ndarray | None = np.eye(n_features) / l2 if l2 > 0 else None
        self.log_det_V_: float | None = n_features * math.log(l2) if l2 > 0 else None
        self.solver_ = IncrementalMLE(n_features, family, l2, tol, max_iter, column_copy)
        self.newton_: NewtonCache | None = (NewtonCache.fresh(self.theta_[None], l2)
                                            if lazy and l2 > 0.0 else None)
        self.stale_ = False
        self.n_fits_ = 0
        self.n_failed_fits_ = 0

    def add(self, x: np.ndarray, reward: float) -> None:
        """Store one sample, update V⁻¹ by one rank-one step and log det V.

        ``log det V`` grows by ``log(1 + x'V⁻¹x)`` (matrix determinant lemma). With
        ``l2 == 0`` and an early, rank-deficient design, V⁻¹ starts as a floored
        pseudo-inverse (:func:`~glmbandits.estimation.inverse_gram`) whose rank-one
        updates can lose positive definiteness in rounding (``x'V⁻¹x < 0``, even
        ``< -1``): V⁻¹ and log det V are then formed again directly from the samples.
        """
        self.history.append(x, reward)
        if self.V_inv_ is not None:
            quadratic = sherman_morrison_update(self.V_inv_, x)
            if quadratic >= 0.0:
                self.log_det_V_ += math.log1p(quadratic)
            else:
                self.V_inv_ = inverse_gram(self.history.X, self.l2)
                self.log_det_V_ = -float(np.linalg.slogdet(self.V_inv_)[1])
        self.stale_ = True

    @property
    def log_det_V(self) -> float:
        """log det V (forming V⁻¹ first if l2 == 0 and it has not been formed)."""
        self.V_inv  # noqa: B018 (forms V_inv_ and log_det_V_ when needed)
        return self.log_det_V_

    @property
    def n(self) -> int:
        """Number of samples."""
        return self.history.n

    @property
    def V_inv(self) -> np.ndarray:
        """(l2·I + Σ x x')⁻¹, formed directly once if l2 == 0, then by rank-one updates."""
        if self.V_inv_ is None:
            self.V_inv_ = inverse_gram(self.history.X, 0.0)
            self.log_det_V_ = -float(np.linalg.slogdet(self.V_inv_)[1])
        return self.V_inv_

    @property
    def theta(self) -> np.ndarray:
        """The current estimate, refitted first if samples arrived since the last fit."""
        if self.stale_:
            if self.history.n > 0:
                self.refit_on(self.history.X, self.history.y)
            self.stale_ = False
        return self.theta_

    def refit_on(self, X: np.ndarray, y: np.ndarray, V_inv: np.ndarray | None = None
                 ) -> np.ndarray:
        """Re-solve eq. (3) on ``(X, y)``, which extend the samples of the last refit.

        :attr:`theta` calls it on :attr:`history`; the lockstep batch simulator
        calls it on its own replicate-stacked buffers (same samples, same result),
        optionally with the ``V⁻¹`` of those samples, which ``v_norm_tol`` needs
        (when not given and ``X`` is not :attr:`history`, :meth:`_certificate_V_inv`
        keeps its own copy by rank-one updates).
        """
        journal = self.__dict__.get("_journal_")
        if journal is not None:  # inside a Policy.update: copy the solver caches on write
            journal.save_once("solver_", self._solver_copy)
            if self.newton_ is not None:
                journal.save_once("newton_", self.newton_.copy)
        # Trial steps may overflow (huge rows, Poisson means): the solvers reject
        # non-finite candidates themselves, so numpy's warnings are not the caller's.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return self._refit(X, y, V_inv)

    def _refit(self, X: np.ndarray, y: np.ndarray, V_inv: np.ndarray | None) -> np.ndarray:
        """:meth:`refit_on` without the floating-point error handling."""
        if self.newton_ is not None:
            return self._refit_lazy(X, y, V_inv)
        solver = self.solver_
        if solver.theta_ is not self.theta_:  # theta_ was set from outside
            solver.theta_, solver.grad_, solver.n_seen_ = self.theta_.copy(), None, 0
        if self.v_norm_tol > 0.0 and self.l2 > 0.0:
            if V_inv is None:
                V_inv = (self.V_inv_ if X.shape[0] == self.history.n and self.V_inv_ is not None
                         else self._certificate_V_inv(X))
            theta, converged = solver._solve(X, y, V_inv, self.v_norm_tol)[:2]
        else:
            theta, converged = solver._solve(X, y, None, 0.0)[:2]
        self.theta_ = theta
        self.n_fits_ += 1
        if not converged:
            self.n_failed_fits_ += 1
        return theta

    def _refit_lazy(self, X: np.ndarray, y: np.ndarray, V_inv: np.ndarray | None
                    ) -> np.ndarray:
        """:meth:`refit_on` with the lazy solver (a one-row :func:`lazy_newton_refit`)."""
        cache = self.newton_
        if self.theta_ is not self.__dict__.get("newton_theta_") and not np.array_equal(
                cache.theta[0], self.theta_):  # theta_ was set from outside
            self.newton_ = cache = NewtonCache.fresh(self.theta_[None], self.l2)
        if self.v_norm_tol > 0.0 and V_inv is None:
            V_inv = (self.V_inv_ if X.shape[0] == self.history.n and self.V_inv_ is not None
                     else self._certificate_V_inv(X))
        fit = lazy_newton_refit(X[None], y[None], cache, self.family, self.l2, self.tol,
                                V_inv=None if V_inv is None else V_inv[None],
                                v_norm_tol=self.v_norm_tol, kappa_cache=self.solver_.kappa_cache_,
                                fallback_max_iter=self.max_iter)
        self.theta_ = self.newton_theta_ = fit.theta[0]
        self.n_fits_ += 1
        if not fit.converged[0]:
            self.n_failed_fits_ += 1
        return self.theta_

    def _certificate_V_inv(self, X: np.ndarray) -> np.ndarray:
        """``(l2·I + X'X)⁻¹`` for samples ``X`` that may run ahead of :attr:`history`.

        :attr:`V_inv_` when ``X`` is the history; otherwise (the lockstep batch
        simulator refits on its own buffers) a private copy extended by one
        Sherman–Morrison step per new row, formed directly when rows were skipped.
        """
        n = X.shape[0]
        if n == self.history.n and self.V_inv_ is not None:
            return self.V_inv_
        cached = self.__dict__.get("cert_V_inv_")
        cached_n = self.__dict__.get("cert_n_", -1)
        if cached is not None and cached_n == n - 1:
            sherman_morrison_update(cached, X[n - 1])
        elif cached is None or cached_n != n:
            cached = inverse_gram(X, self.l2)
        self.cert_V_inv_, self.cert_n_ = cached, n
        return cached

    def _checkpoint(self) -> Checkpoint:
        """A checkpoint for a transactional ``Policy.update`` (:mod:`.checkpoint`).

        O(d²): the attribute dict, ``V⁻¹`` and the history's length; the solver
        caches are copied only if a refit runs before the checkpoint is released.
        """
        enclosing = self.__dict__.get("_journal_")  # transactions may nest
        record = checkpoint(self)
        record.parent = enclosing
        self._journal_ = record
        record.on_release = (self._end_journal if enclosing is None
                             else lambda: setattr(self, "_journal_", enclosing))
        return record

    def _end_journal(self) -> None:
        self.__dict__.pop("_journal_", None)

    def _solver_copy(self) -> IncrementalMLE:
        clone = self.solver_.copy()
        if self.solver_.theta_ is self.theta_:
            clone.theta_ = self.theta_
        return clone

    def copy(self) -> "GLMEstimate":
        """An independent deep copy."""
        clone = GLMEstimate.__new__(GLMEstimate)
        clone.__dict__.update(self.__dict__)
        clone.history = self.history.copy()
        clone.theta_ = self.theta_.copy()
        clone.V_inv_ = None if self.V_inv_ is None else self.V_inv_.copy()
        if self.__dict__.get("cert_V_inv_") is not None:
            clone.cert_V_inv_ = self.cert_V_inv_.copy()
        clone.solver_ = self.solver_.copy()
        clone.newton_ = None if self.newton_ is None else self.newton_.copy()
        if self.solver_.theta_ is self.theta_:
            clone.solver_.theta_ = clone.theta_
        return clone


class RidgeEstimate:
    """Online ridge regression θ̂ = A⁻¹b with A = l2·I + Σ x x', b = Σ r x.

    O(d²) per sample and no stored history (Chu et al. 2011, LinUCB).
    """

    def __init__(self, n_features: int, l2: float) -> None:
        self.V_inv_ = np.eye(n_features) / l2
        self.b_ = np.zeros(n_features)
        self.theta_ = np.zeros(n_features)

    def _checkpoint(self) -> Checkpoint:
        """A checkpoint for a transactional ``Policy.update`` (:mod:`.checkpoint`)."""
        return checkpoint(self)

    def add(self, x: np.ndarray, reward: float) -> None:
        sherman_morrison_update(self.V_inv_, x)
        self.b_ += reward * x
        self.theta_ = self.V_inv_ @ self.b_
