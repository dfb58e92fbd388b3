"""Lockstep kernel of :class:`~glmbandits.UCBGLM` (Li, Lu & Zhou 2017, Algorithm 1) for R replicates.

Both refit modes; lazy replicates are refitted in waves by
:func:`~glmbandits.estimation.lazy.lazy_newton_refit` (see :class:`UCBGLMKernel`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..estimation.history import SampleHistory
from ..estimation.lazy import NewtonCache, lazy_newton_refit
from ..policies.ucb_glm import UCBGLM
from .backend import ArrayBackend
from .kernels import BatchKernel, augmented_ucb, batched_sherman_morrison

__all__ = ["UCBGLMKernel"]


class UCBGLMKernel(BatchKernel):
    """:class:`~glmbandits.UCBGLM` (``refit="every_round"`` or ``"lazy"``) for R replicates.

    V_r⁻¹ and log det V_r are updated for all replicates at once; the history is
    one zero-initialised (R, capacity, d) buffer, reserved up front
    (:meth:`reserve`) or grown geometrically; replicate r's samples are its
    first ``n[r]`` rows. In exact mode a replicate's MLE is refitted every round
    by its own estimate's incremental solver (:meth:`GLMEstimate.refit_on`).

    Lazy mode, refit waves. A replicate whose det V trigger fires (or that needs
    its first snapshot) is *parked*: it keeps its contexts and waits, while the
    others go on playing. Once every active lazy replicate is parked, all of them are
    refitted by one call of :func:`~glmbandits.estimation.lazy.lazy_newton_refit` on
    the stacked history (each row zero-padded beyond its own n, which adds
    nothing to eq. (3)) and their stacked solver caches, and they all play on.
    That call is the very function a sequential lazy :class:`~glmbandits.UCBGLM`
    makes with one row, and each row's result depends on that row only, so
    every replicate refits at the same sample counts, to the same roots, as in
    its sequential run. Lazy replicates refit at about the same sample counts
    (det V grows alike), so a wave holds nearly all R replicates, and the
    waiting costs few extra steps (T = 3000, R = 64, d = 10: 64 waves and about
    1.2 T steps, instead of ~1,550 refit calls of 2–3 rows in strict lockstep).
    Rounds with at most R/2 players are computed on their rows only. Between
    refits a lazy replicate costs O(K d²) per round.

    Attributes
    ----------
    n_lazy_refit_calls_ : int
        Calls of the lazy solver (refit waves).
    n_batched_refits_, n_batched_fallbacks_ : int
        Replicate refits done by the lazy solver, and those of them it handed to
        the robust line-search solver.
    """

    def __init__(self, policies: Sequence[UCBGLM], backend: ArrayBackend) -> None:
        super().__init__(policies, backend)
        estimates = [policy.estimate_ for policy in self.policies]
        self.estimates = estimates
        R, d = len(estimates), self.policies[0].n_features
        self.n = np.array([e.n for e in estimates], dtype=np.int64)
        self.n_bound = int(self.n.max())
        capacity = max(64, 2 * int(self.n.max()))
        self.X_hist = np.zeros((R, capacity, d))
        self.y_hist = np.zeros((R, capacity))
        for r, estimate in enumerate(estimates):
            self.X_hist[r, : self.n[r]] = estimate.history.X
            self.y_hist[r, : self.n[r]] = estimate.history.y
        # samples each replicate's θ̂ was fitted on; only "is n larger" (stale) is ever asked
        self.fit_n = np.array([e.n - 1 if e.stale_ else e.n for e in estimates], dtype=np.int64)
        self.n_start = self.n.copy()
        self.V_inv = backend.asarray(np.stack([e.V_inv_ for e in estimates]))
        self.log_det = np.array([e.log_det_V_ for e in estimates], dtype=np.float64)
        self.alpha = backend.asarray([policy.alpha for policy in self.policies])
        self.tau = np.array([policy.tau for policy in self.policies])
        snapshots = [policy.snapshot_ for policy in self.policies]
        self.lazy = np.array([s is not None for s in snapshots])
        self.log_growth = np.array([s.log_growth if s is not None else 0.0 for s in snapshots])
        self.has_snapshot = np.array([s is not None and s.theta_ is not None for s in snapshots])
        self.theta_s = np.stack([s.theta_ if s is not None and s.theta_ is not None
                                 else e.theta_ for s, e in zip(snapshots, estimates)])
        V_inv_s = np.stack([s.V_inv_ if s is not None and s.theta_ is not None else e.V_inv_
                            for s, e in zip(snapshots, estimates)])
        # what the scores use: [V_τ⁻¹ | θ̂_τ] per replicate, one (R, d, d + 1) array
        self.M_s = backend.asarray(np.concatenate([V_inv_s, self.theta_s[:, :, None]], axis=2))
        self.log_det_s = np.array([s.log_det_ if s is not None else 0.0 for s in snapshots])
        self.n_refits = np.array([s.n_refits_ if s is not None else 0 for s in snapshots])
        self.n_samples_s = np.array([s.n_samples_ if s is not None else 0 for s in snapshots])
        # the lazy solver's caches, stacked (rows of exact-mode replicates are unused)
        first = estimates[0]
        self.newton = NewtonCache.stack([
            e.newton_ if e.newton_ is not None and np.array_equal(e.newton_.theta[0], e.theta_)
            else NewtonCache.fresh(e.theta_[None], first.l2) for e in estimates])
        self.v_norm_tol = np.array([policy._v_norm_tol() for policy in self.policies])
        self.kappa_cache: dict[int, float] = {}
        self.batch_refits = all(e.family == first.family and e.l2 == first.l2 > 0.0
                                and e.tol == first.tol and e.max_iter == first.max_iter
                                and e.newton_ is not None for e in estimates)
        self.parked = np.zeros(R, dtype=bool)
        self.n_parked = 0
        self.trigger = self.log_det_s + self.log_growth  # log det V that makes a refit due
        self.initial = self.n < self.tau  # rows still in their uniformly random rounds
        self.steady = False
        self.n_lazy_refit_calls_ = 0
        self.n_batched_refits_ = 0
        self.n_batched_fallbacks_ = 0

    @staticmethod
    def supports(policies: Sequence[UCBGLM]) -> bool:
        """Batchable when l2 > 0 (V⁻¹ exists from the start)."""
        return all(p.l2 > 0.0 for p in policies)

    def reserve(self, rounds: int) -> None:
        """Make room in the history for ``rounds`` more samples (one allocation)."""
        needed = int(self.n.max()) + rounds
        if needed > self.X_hist.shape[1]:
            self._grow(needed)

    def _grow(self, capacity: int) -> None:
        X_hist = np.zeros((self.X_hist.shape[0], capacity, self.X_hist.shape[2]))
        y_hist = np.zeros((self.y_hist.shape[0], capacity))
        m = self.X_hist.shape[1]
        X_hist[:, :m] = self.X_hist
        y_hist[:, :m] = self.y_hist
        self.X_hist, self.y_hist = X_hist, y_hist

    # -- refits ------------------------------------------------------------------------
    def ready(self, active: np.ndarray) -> np.ndarray:
        """Refit what is due; park lazy replicates due a refit until all active lazy ones are."""
        if self.steady:  # all lazy, past the initial rounds, with snapshots: one test
            due = self.log_det > self.trigger
            if not self.n_parked and not due.any():  # the common round: nobody waits
                return self._rows_of(active)
        else:
            self.initial = self.n < self.tau
            exact = np.flatnonzero(active & ~self.lazy & ~self.initial & (self.n > self.fit_n))
            for r in exact:  # every-round refits: each replicate's own solver
                n = self.n[r]
                self.estimates[r].refit_on(self.X_hist[r, :n], self.y_hist[r, :n])
            if exact.shape[0]:
                self._snapshot(exact)
            due = self.lazy & ~self.initial & (~self.has_snapshot | (self.log_det > self.trigger))
            self.steady = bool(self.lazy.all() and not self.initial.any()
                               and self.has_snapshot.all())
        parked = self.parked
        parked |= active & due
        self.n_parked = int(parked.sum())
        running = active & ~parked
        if not self.n_parked or (running & self.lazy).any():
            return self._rows_of(running)
        waiting = np.flatnonzero(parked)
        if self.batch_refits:
            self._lazy_refit(waiting)
        else:
            for r in waiting:  # policies that cannot share a solver call (V⁻¹ for certificates)
                n = self.n[r]
                self.estimates[r].refit_on(self.X_hist[r, :n], self.y_hist[r, :n],
                                           self.backend.to_numpy(self.V_inv[r]))
        self._snapshot(waiting)
        parked[:] = False
        self.n_parked = 0
        return self._rows_of(active)

    def _snapshot(self, rows: np.ndarray) -> None:
        """Rows just refitted: the scores use their new θ̂ (and, lazy, a new snapshot)."""
        self.fit_n[rows] = self.n[rows]
        for r in rows:
            self.theta_s[r] = self.estimates[r].theta_
        index, d = self.backend.index(rows), self.theta_s.shape[1]
        self.M_s[index, :, :d] = self.V_inv[index]
        self.M_s[index, :, d] = self.backend.asarray(self.theta_s[rows])
        lazy = rows[self.lazy[rows]]
        self.log_det_s[lazy] = self.log_det[lazy]
        self.trigger[lazy] = self.log_det_s[lazy] + self.log_growth[lazy]
        self.has_snapshot[lazy] = True
        self.n_refits[lazy] += 1
        self.n_samples_s[lazy] = self.n[lazy]

    def _lazy_refit(self, rows: np.ndarray) -> None:
        """One :func:`lazy_newton_refit` call for the replicates ``rows`` (a refit wave)."""
        n = self.n[rows]
        length = int(n.max())
        if self._everyone(rows):  # views, no copies
            X, y = self.X_hist[:, :length], self.y_hist[:, :length]
        else:
            X, y = self.X_hist[rows, :length], self.y_hist[rows, :length]
        cache = self.newton if self._everyone(rows) else self.newton.take(rows)
        v_norm_tol = self.v_norm_tol[rows]
        V_inv = (self.backend.to_numpy(self.V_inv[self.backend.index(rows)])
                 if v_norm_tol.any() else None)
        first = self.estimates[rows[0]]
        fit = lazy_newton_refit(X, y, cache, first.family, first.l2, first.tol, V_inv=V_inv,
                                v_norm_tol=v_norm_tol, kappa_cache=self.kappa_cache,
                                fallback_max_iter=first.max_iter, n_samples=n)
        if cache is not self.newton:
            self.newton.put(rows, cache)
        self.n_lazy_refit_calls_ += 1
        self.n_batched_refits_ += rows.shape[0]
        self.n_batched_fallbacks_ += int(fit.fell_back.sum())
        for i, r in enumerate(rows):
            estimate = self.estimates[r]
            estimate.theta_ = fit.theta[i]
            estimate.n_fits_ += 1
            if not fit.converged[i]:
                estimate.n_failed_fits_ += 1

    # -- rounds ------------------------------------------------------------------------
    def _few(self, rows: np.ndarray) -> bool:
        """Whether so few replicates play (others wait for a refit wave) that the round
        is computed on their rows only rather than on all R."""
        return rows.shape[0] <= self.n_replicates // 2

    def select(self, X: np.ndarray, valid: np.ndarray | None, rows: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        backend = self.backend
        initial = None if self.steady or not self.initial.any() else self.initial
        if self._few(rows):
            index = backend.index(rows)
            ucb, mean, width = augmented_ucb(backend, backend.asarray(X[rows]), self.M_s[index],
                                             self.alpha[index])
            zero = None if initial is None else initial[rows]
        else:
            ucb, mean, width = augmented_ucb(backend, backend.asarray(X), self.M_s, self.alpha)
            zero = initial
        if initial is not None:  # uniformly random rounds: every score 0, every action tied
            ucb, mean, width = (backend.to_numpy(a).copy() for a in (ucb, mean, width))
            for array in (ucb, mean, width):
                array[zero] = 0.0
        return self._record(ucb, mean, width, valid, initial, rows, of_rows=self._few(rows))

    def update(self, rows: np.ndarray, x: np.ndarray, rewards: np.ndarray) -> None:
        if self.n_bound >= self.X_hist.shape[1]:  # n_bound: no replicate has more samples
            self.n_bound = int(self.n.max())
            if int(self.n[rows].max()) >= self.X_hist.shape[1]:  # grow geometrically
                self._grow(2 * self.X_hist.shape[1])
        self.n_bound += 1
        select = self._selector(rows)
        n = self.n[select]
        self.X_hist[rows, n] = x
        self.y_hist[rows, n] = rewards
        self.n[select] += 1
        backend = self.backend
        if self._few(rows):
            index = backend.index(rows)
            V_inv = self.V_inv[index]
            quadratic = batched_sherman_morrison(backend, V_inv, backend.asarray(x))
            self.V_inv[index] = V_inv
            self.log_det[rows] += np.log1p(backend.to_numpy(quadratic))
        else:  # replicates that did not play get x = 0: V⁻¹ and log det V stay bit for bit
            quadratic = batched_sherman_morrison(backend, self.V_inv,
                                                 backend.asarray(self._full(rows, x)))
            self.log_det += np.log1p(backend.to_numpy(quadratic))


    def finalize(self) -> None:
        to_numpy = self.backend.to_numpy
        V_inv, V_inv_s = to_numpy(self.V_inv), to_numpy(self.M_s)[:, :, :-1]
        d = self.X_hist.shape[2]
        for r, (policy, estimate) in enumerate(zip(self.policies, self.estimates)):
            n = int(self.n[r])
            history = SampleHistory(d, max(64, n))
            history.__setstate__({"X": self.X_hist[r, :n].copy(), "y": self.y_hist[r, :n].copy()})
            estimate.history = history
            estimate.V_inv_ = V_inv[r].copy()
            estimate.log_det_V_ = float(self.log_det[r])
            estimate.stale_ = bool(self.n[r] > self.fit_n[r])
            if estimate.newton_ is not None:
                estimate.newton_ = self.newton.take(slice(r, r + 1)).copy()
            snapshot = policy.snapshot_
            if snapshot is not None and self.has_snapshot[r]:
                snapshot.theta_ = self.theta_s[r].copy()
                snapshot.V_inv_ = V_inv_s[r].copy()
                snapshot.log_det_ = float(self.log_det_s[r])
                snapshot.n_refits_ = int(self.n_refits[r])
                snapshot.n_samples_ = int(self.n_samples_s[r])
        self.rounds_ = self.n - self.n_start
        self.n_start = self.n.copy()
        super().finalize()
