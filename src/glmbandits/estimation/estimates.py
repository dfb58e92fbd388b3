"""The estimates policies keep: a refitted GLM MLE and an online ridge regression.

Both keep ``V⁻¹`` for ``V = l2·I + Σ x_i x_i'`` by Sherman–Morrison updates
(:func:`glmbandits.estimation.sherman_morrison_update`), never by inversion per
round. Their state is plain arrays and numbers, so policies pickle exactly.

Each has a stacked form, R estimates on a leading replicate axis, which the
lockstep batch kernels (:mod:`glmbandits.batch`) play on: ``stack`` makes it
and ``unstack`` writes it back, so no kernel reads or writes an estimate's
fields itself.

Why this module is long: the estimates and their stacked forms live together,
so that the learned state of an estimate is read and written in this module only.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from ..families import GLMFamily
from .checkpoint import Checkpoint, checkpoint
from .gram import inverse_gram, sherman_morrison_update
from .history import SampleHistory
from .incremental import IncrementalMLE
from .lazy import LazyRefit, NewtonCache, lazy_newton_refit


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

    def add(self, x: np.ndarray, reward: float,
            rank_one: Callable[[np.ndarray, np.ndarray], float] | None = None) -> None:
        """Store one sample, update V⁻¹ by one rank-one step and log det V.

        ``rank_one(V⁻¹, x)`` is the Sherman–Morrison step (in place, returning
        ``x'V⁻¹x``): :func:`~glmbandits.estimation.sherman_morrison_update` when None,
        or its compiled form for a policy on the numba backend (:mod:`.compiled`).

        ``log det V`` grows by ``log(1 + x'V⁻¹x)`` (matrix determinant lemma). With
        ``l2 == 0`` and an early, rank-deficient design, V⁻¹ starts as a floored
        pseudo-inverse (:func:`~glmbandits.estimation.inverse_gram`) whose rank-one
        updates can lose positive definiteness in rounding (``x'V⁻¹x < 0``, even
        ``< -1``): V⁻¹ and log det V are then formed again directly from the samples.

        Nothing is changed in place: the new V⁻¹ (a copy of the old one, same memory
        layout, updated by the same rank-one step) and log det V are computed first,
        the history appends past its filled rows, and the attributes are rebound in
        one statement. So a failure leaves the estimate as it was, and
        :meth:`_add_checkpoint` needs to copy no array.
        """
        V_inv, log_det = self.V_inv_, self.log_det_V_
        if V_inv is not None:
            V_inv = V_inv.copy(order="K")
            quadratic = (rank_one or sherman_morrison_update)(V_inv, x)
            if quadratic >= 0.0:
                assert log_det is not None  # kept with V_inv_
                log_det += math.log1p(quadratic)
            else:
                V_inv = inverse_gram(np.vstack([self.history.X, x]), self.l2)
                log_det = -float(np.linalg.slogdet(V_inv)[1])
        self.history.append(x, reward)
        self.V_inv_, self.log_det_V_, self.stale_ = V_inv, log_det, True

    @property
    def log_det_V(self) -> float:
        """log det V (forming V⁻¹ first if l2 == 0 and it has not been formed)."""
        self.V_inv  # noqa: B018 (forms V_inv_ and log_det_V_ when needed)
        assert self.log_det_V_ is not None
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
        assert cache is not None  # a lazy estimate has its solver cache
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

    def _add_checkpoint(self) -> Checkpoint:
        """A checkpoint of what :meth:`add` changes, and no more (``Policy._learn_checkpoint``).

        O(1), two dict copies: ``add`` rebinds its attributes and appends past the
        history's filled rows. :meth:`_checkpoint` also copies the arrays and journals
        the solver caches for refits, which ``add`` never runs.
        """
        record = Checkpoint(self, self.__dict__.copy())
        record.children = [self.history._checkpoint()]
        return record

    def _end_journal(self) -> None:
        self.__dict__.pop("_journal_", None)

    def _solver_copy(self) -> IncrementalMLE:
        clone = self.solver_.copy()
        if self.solver_.theta_ is self.theta_:
            clone.theta_ = self.theta_
        return clone

    @staticmethod
    def stack(estimates: Sequence["GLMEstimate"], capacity: int = 0) -> "StackedGLMEstimates":
        """R estimates as arrays with a leading replicate axis (the lockstep batch form).

        The estimates (all with ``l2 > 0``) stay the owners of their solvers;
        :meth:`StackedGLMEstimates.unstack` writes the stacked state back into them.

        Parameters
        ----------
        estimates : sequence of GLMEstimate
            One per replicate, of the same dimension.
        capacity : int, default 0
            History rows per replicate (at least ``max(64, 2·max n)``).

        Examples
        --------
        >>> from glmbandits.families import get_family
        >>> estimates = [GLMEstimate(2, get_family("logistic"), 1.0, lazy=True) for _ in range(3)]
        >>> estimates[1].add(np.array([1.0, 0.5]), 1.0)
        >>> stacked = GLMEstimate.stack(estimates)
        >>> stacked.X.shape, stacked.n.tolist(), stacked.shared_solver
        ((3, 64, 2), [0, 1, 0], True)
        """
        return StackedGLMEstimates(estimates, capacity)

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


def _formed(V_inv: np.ndarray | None) -> np.ndarray:
    """An estimate's V⁻¹, which stacking needs formed (``l2 > 0``, or read once)."""
    assert V_inv is not None
    return V_inv


class StackedGLMEstimates:
    """R :class:`GLMEstimate` objects on a leading replicate axis (:meth:`GLMEstimate.stack`).

    The lockstep batch kernel of :class:`~glmbandits.UCBGLM` plays on these
    arrays (appending samples, rank-one updates of ``V_inv`` and ``log_det``) and
    asks for refits through :meth:`refit` and :meth:`refit_shared`, which keep
    the estimates' own fit records; :meth:`unstack` writes the rest back.

    Attributes
    ----------
    estimates : list of GLMEstimate
        The estimates stacked (each keeps its solver, θ̂ and fit counts current).
    X : ndarray of shape (R, capacity, d)
        Row r's samples in its first ``n[r]`` rows, zeros beyond
        (:meth:`SampleHistory.stack`).
    y : ndarray of shape (R, capacity)
        Their rewards.
    n : ndarray of int, shape (R,)
        Samples per row.
    n_bound : int
        An upper bound of ``n`` (so that :meth:`append` seldom takes a maximum).
    fit_n : ndarray of int, shape (R,)
        Samples θ̂ was last fitted on (only whether ``n`` is larger, i.e. the
        estimate is stale, is ever asked).
    theta : ndarray of shape (R, d)
        Each row's last θ̂.
    V_inv : ndarray of shape (R, d, d)
        ``V⁻¹`` per row (:meth:`unstack` writes back what this attribute holds).
    log_det : ndarray of shape (R,)
        ``log det V`` per row.
    newton : NewtonCache
        The lazy solver's caches, one row per estimate (unused for estimates
        without one).
    shared_solver : bool
        Every row can be refitted by one :func:`lazy_newton_refit` call (all
        lazy, with one family, ``l2 > 0``, ``tol`` and ``max_iter``).
    """

    def __init__(self, estimates: Sequence[GLMEstimate], capacity: int = 0) -> None:
        self.estimates = list(estimates)
        first = self.estimates[0]
        self.n = np.array([e.n for e in self.estimates], dtype=np.int64)
        self.n_bound = int(self.n.max())
        self.X, self.y = SampleHistory.stack([e.history for e in self.estimates],
                                             max(capacity, 64, 2 * self.n_bound))
        self.fit_n = np.array([e.n - 1 if e.stale_ else e.n for e in self.estimates],
                              dtype=np.int64)
        self.theta = np.stack([e.theta_ for e in self.estimates])
        self.V_inv = np.stack([_formed(e.V_inv_) for e in self.estimates])
        self.log_det = np.array([e.log_det_V_ for e in self.estimates], dtype=np.float64)
        self.newton = NewtonCache.stack([
            e.newton_ if e.newton_ is not None and np.array_equal(e.newton_.theta[0], e.theta_)
            else NewtonCache.fresh(e.theta_[None], first.l2) for e in self.estimates])
        self.family, self.l2, self.tol, self.max_iter = (first.family, first.l2, first.tol,
                                                         first.max_iter)
        self.shared_solver = all(e.family == first.family and e.l2 == first.l2 > 0.0
                                 and e.tol == first.tol and e.max_iter == first.max_iter
                                 and e.newton_ is not None for e in self.estimates)

    def reserve(self, rounds: int) -> None:
        """Make room for ``rounds`` more samples per row (one allocation)."""
        needed = int(self.n.max()) + rounds
        if needed > self.X.shape[1]:
            self._grow(needed)

    def _grow(self, capacity: int) -> None:
        R, m, d = self.X.shape
        X, y = np.zeros((R, capacity, d)), np.zeros((R, capacity))
        X[:, :m], y[:, :m] = self.X, self.y
        self.X, self.y = X, y

    def append(self, rows: np.ndarray, select: np.ndarray | slice, x: np.ndarray,
               rewards: np.ndarray) -> None:
        """Store one sample ``(x[i], rewards[i])`` for each row ``rows[i]``.

        ``select`` indexes the same rows (a plain slice when it is all of them).
        The buffers double when a row is full.
        """
        if self.n_bound >= self.X.shape[1]:  # n_bound: no row has more samples
            self.n_bound = int(self.n.max())
            if int(self.n[rows].max()) >= self.X.shape[1]:
                self._grow(2 * self.X.shape[1])
        self.n_bound += 1
        n = self.n[select]
        self.X[rows, n] = x
        self.y[rows, n] = rewards
        self.n[select] += 1

    def refit(self, rows: np.ndarray, V_inv: np.ndarray | None = None) -> None:
        """Refit each of ``rows`` by its own estimate's solver (:meth:`GLMEstimate.refit_on`).

        ``V_inv`` (len(rows), d, d): the rows' ``V⁻¹`` for certified refits.
        """
        for i, r in enumerate(rows):
            n = self.n[r]
            estimate = self.estimates[r]
            self.theta[r] = estimate.refit_on(self.X[r, :n], self.y[r, :n],
                                              None if V_inv is None else V_inv[i])
            if estimate.newton_ is not None:  # the lazy solver's cache moved on
                self.newton.put(np.array([r]), estimate.newton_)
        self.fit_n[rows] = self.n[rows]

    def refit_shared(self, rows: np.ndarray, V_inv: np.ndarray | None, v_norm_tol: np.ndarray,
                     kappa_cache: dict) -> LazyRefit:
        """Refit ``rows`` by one :func:`lazy_newton_refit` call (requires :attr:`shared_solver`).

        The call a sequential lazy estimate makes with one row, on the stacked
        samples (zero-padded beyond each row's n) and caches: each row's result
        depends on that row only, so every row gets its sequential root.
        """
        n = self.n[rows]
        length = int(n.max())
        everyone = rows.shape[0] == self.n.shape[0]
        if everyone:  # views, no copies
            X, y = self.X[:, :length], self.y[:, :length]
        else:
            X, y = self.X[rows, :length], self.y[rows, :length]
        cache = self.newton if everyone else self.newton.take(rows)
        fit = lazy_newton_refit(X, y, cache, self.family, self.l2, self.tol, V_inv=V_inv,
                                v_norm_tol=v_norm_tol, kappa_cache=kappa_cache,
                                fallback_max_iter=self.max_iter, n_samples=n)
        if cache is not self.newton:
            self.newton.put(rows, cache)
        self.theta[rows] = fit.theta
        self.fit_n[rows] = n
        for i, r in enumerate(rows):
            estimate = self.estimates[r]
            estimate.theta_ = fit.theta[i]
            estimate.n_fits_ += 1
            if not fit.converged[i]:
                estimate.n_failed_fits_ += 1
        return fit

    def unstack(self) -> None:
        """Write the samples, ``V⁻¹``, ``log det V``, staleness and caches back (copies)."""
        histories = SampleHistory.unstack(self.X, self.y, self.n)
        for r, (estimate, history) in enumerate(zip(self.estimates, histories)):
            estimate.history = history
            estimate.V_inv_ = self.V_inv[r].copy()
            estimate.log_det_V_ = float(self.log_det[r])
            estimate.stale_ = bool(self.n[r] > self.fit_n[r])
            if estimate.newton_ is not None:
                estimate.newton_ = self.newton.take(slice(r, r + 1)).copy()


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

    def _add_checkpoint(self) -> Checkpoint:
        """A checkpoint of what :meth:`add` changes: O(1), :meth:`add` only rebinds."""
        return Checkpoint(self, self.__dict__.copy())

    def add(self, x: np.ndarray, reward: float,
            rank_one: Callable[[np.ndarray, np.ndarray], float] | None = None) -> None:
        """One sample: ``A⁻¹`` by Sherman–Morrison (``rank_one``, as in
        :meth:`GLMEstimate.add`), ``b += r·x``, ``θ̂ = A⁻¹b``.

        Nothing is changed in place (as :meth:`GLMEstimate.add`): the new arrays are
        computed first and rebound in one statement.
        """
        V_inv = self.V_inv_.copy(order="K")
        (rank_one or sherman_morrison_update)(V_inv, x)
        b = self.b_ + reward * x
        self.V_inv_, self.b_, self.theta_ = V_inv, b, V_inv @ b

    @staticmethod
    def stack(estimates: Sequence["RidgeEstimate"]) -> "StackedRidgeEstimates":
        """R estimates as arrays with a leading replicate axis (the lockstep batch form)."""
        return StackedRidgeEstimates(estimates)


class StackedRidgeEstimates:
    """R :class:`RidgeEstimate` objects on a leading replicate axis.

    Attributes
    ----------
    estimates : list of RidgeEstimate
        The estimates stacked.
    V_inv : ndarray of shape (R, d, d)
    b : ndarray of shape (R, d)
    theta : ndarray of shape (R, d)
        Their ``A⁻¹``, ``b`` and θ̂ (:meth:`unstack` writes back what these hold).
    """

    def __init__(self, estimates: Sequence[RidgeEstimate]) -> None:
        self.estimates = list(estimates)
        self.V_inv = np.stack([e.V_inv_ for e in self.estimates])
        self.b = np.stack([e.b_ for e in self.estimates])
        self.theta = np.stack([e.theta_ for e in self.estimates])

    def unstack(self) -> None:
        """Write each row back into its estimate (copies)."""
        for r, estimate in enumerate(self.estimates):
            estimate.V_inv_ = self.V_inv[r].copy()
            estimate.b_ = self.b[r].copy()
            estimate.theta_ = self.theta[r].copy()
