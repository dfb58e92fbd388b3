"""Lockstep kernel of :class:`~glmbandits.UCBGLM` (Li, Lu & Zhou 2017, Algorithm 1) for R replicates.

Both refit modes; lazy replicates are refitted in waves by
:func:`~glmbandits.estimation.lazy.lazy_newton_refit` (see :class:`UCBGLMKernel`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..estimation.estimates import GLMEstimate
from ..estimation.schedule import RarelySwitchingSnapshot
from ..policies.ucb_glm import UCBGLM
from .backend import ArrayBackend
from .kernels import BatchKernel, augmented_ucb, batched_sherman_morrison

__all__ = ["UCBGLMKernel"]


class UCBGLMKernel(BatchKernel[UCBGLM]):
    """:class:`~glmbandits.UCBGLM` (``refit="every_round"`` or ``"lazy"``) for R replicates.

    The kernel plays on the replicates' estimates and snapshots stacked by their
    own classes (:meth:`GLMEstimate.stack`, :meth:`RarelySwitchingSnapshot.stack`),
    which it unstacks in :meth:`finalize`; it never touches their fields. V_r⁻¹
    and log det V_r are updated for all replicates at once; the history is one
    zero-initialised (R, capacity, d) buffer, reserved up front (:meth:`reserve`)
    or grown geometrically; replicate r's samples are its first ``n[r]`` rows.
    In exact mode a replicate's MLE is refitted every round by its own
    estimate's incremental solver (:meth:`StackedGLMEstimates.refit`).

    Lazy mode, refit waves. A replicate whose det V trigger fires (or that needs
    its first snapshot) is *parked*: it keeps its contexts and waits, while the
    others go on playing. Once every active lazy replicate is parked, all of them are
    refitted by one call of :func:`~glmbandits.estimation.lazy.lazy_newton_refit`
    (:meth:`StackedGLMEstimates.refit_shared`) on
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
        # the estimates and snapshots, stacked: they own their fields, the kernel plays on them
        self.est = est = GLMEstimate.stack([policy.estimate_ for policy in self.policies])
        self.snap = snap = RarelySwitchingSnapshot.stack(
            [policy.snapshot_ for policy in self.policies], est)
        self.n_start = est.n.copy()
        self.V_inv = backend.asarray(est.V_inv)
        self.alpha = backend.asarray([policy.alpha for policy in self.policies])
        self.tau = np.array([policy.tau for policy in self.policies])
        # what the scores use: [V_τ⁻¹ | θ̂_τ] per replicate, one (R, d, d + 1) array
        self.M_s = backend.asarray(np.concatenate([snap.V_inv, snap.theta[:, :, None]], axis=2))
        self.v_norm_tol = np.array([policy._v_norm_tol() for policy in self.policies])
        self.kappa_cache: dict[int, float] = {}
        R = self.n_replicates
        self.parked = np.zeros(R, dtype=bool)
        self.n_parked = 0
        self.trigger = snap.log_det + snap.log_growth  # log det V that makes a refit due
        self.initial = est.n < self.tau  # rows still in their uniformly random rounds
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
        self.est.reserve(rounds)

    # -- refits ------------------------------------------------------------------------
    def ready(self, active: np.ndarray) -> np.ndarray:
        """Refit what is due; park lazy replicates due a refit until all active lazy ones are."""
        est, snap = self.est, self.snap
        if self.steady:  # all lazy, past the initial rounds, with snapshots: one test
            due = est.log_det > self.trigger
            if not self.n_parked and not due.any():  # the common round: nobody waits
                return self._rows_of(active)
        else:
            self.initial = est.n < self.tau
            exact = np.flatnonzero(active & ~snap.lazy & ~self.initial & (est.n > est.fit_n))
            if exact.shape[0]:  # every-round refits: each replicate's own solver
                est.refit(exact)
                self._snapshot(exact)
            due = snap.lazy & ~self.initial & (~snap.taken | (est.log_det > self.trigger))
            self.steady = bool(snap.lazy.all() and not self.initial.any() and snap.taken.all())
        parked = self.parked
        parked |= active & due
        self.n_parked = int(parked.sum())
        running = active & ~parked
        if not self.n_parked or (running & snap.lazy).any():
            return self._rows_of(running)
        waiting = np.flatnonzero(parked)
        if est.shared_solver:
            self._lazy_refit(waiting)
        else:  # policies that cannot share a solver call (V⁻¹ for certificates)
            est.refit(waiting, self.backend.to_numpy(self.V_inv[self.backend.index(waiting)]))
        self._snapshot(waiting)
        parked[:] = False
        self.n_parked = 0
        return self._rows_of(active)

    def _snapshot(self, rows: np.ndarray) -> None:
        """Rows just refitted: the scores use their new θ̂ (and, lazy, a new snapshot)."""
        snap = self.snap
        lazy = snap.renew(rows, self.est)
        index, d = self.backend.index(rows), snap.theta.shape[1]
        self.M_s[index, :, :d] = self.V_inv[index]
        self.M_s[index, :, d] = self.backend.asarray(snap.theta[rows])
        self.trigger[lazy] = snap.log_det[lazy] + snap.log_growth[lazy]

    def _lazy_refit(self, rows: np.ndarray) -> None:
        """One shared lazy solver call for the replicates ``rows`` (a refit wave)."""
        v_norm_tol = self.v_norm_tol[rows]
        V_inv = (self.backend.to_numpy(self.V_inv[self.backend.index(rows)])
                 if v_norm_tol.any() else None)
        fit = self.est.refit_shared(rows, V_inv, v_norm_tol, self.kappa_cache)
        self.n_lazy_refit_calls_ += 1
        self.n_batched_refits_ += rows.shape[0]
        self.n_batched_fallbacks_ += int(fit.fell_back.sum())

    # -- rounds ------------------------------------------------------------------------
    def _few(self, rows: np.ndarray) -> bool:
        """Whether so few replicates play (others wait for a refit wave) that the round
        is computed on their rows only rather than on all R."""
        return bool(rows.shape[0] <= self.n_replicates // 2)

    def select(self, X: np.ndarray, valid: np.ndarray | None, rows: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        backend = self.backend
        initial = None if self.steady or not self.initial.any() else self.initial
        if backend.compiled is not None:
            return self._select_compiled(X, self.M_s, self.alpha, valid, initial, rows)
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
        est = self.est
        est.append(rows, self._selector(rows), x, rewards)
        backend = self.backend
        if backend.compiled is not None:  # in place, on the rows that played only
            quadratic = np.empty(rows.shape[0])
            backend.compiled.sherman_morrison_rows(self.V_inv, x, rows, quadratic)
            if self._everyone(rows):
                est.log_det += np.log1p(quadratic)
            else:
                est.log_det[rows] += np.log1p(quadratic)
        elif self._few(rows):
            index = backend.index(rows)
            V_inv = self.V_inv[index]
            quadratic = batched_sherman_morrison(backend, V_inv, backend.asarray(x))
            self.V_inv[index] = V_inv
            est.log_det[rows] += np.log1p(backend.to_numpy(quadratic))
        else:  # replicates that did not play get x = 0: V⁻¹ and log det V stay bit for bit
            quadratic = batched_sherman_morrison(backend, self.V_inv,
                                                 backend.asarray(self._full(rows, x)))
            est.log_det += np.log1p(backend.to_numpy(quadratic))

    def finalize(self) -> None:
        to_numpy = self.backend.to_numpy
        est, snap = self.est, self.snap
        est.V_inv = to_numpy(self.V_inv)
        est.unstack()
        snap.V_inv = to_numpy(self.M_s)[:, :, :-1]
        snap.unstack()
        self.rounds_ = est.n - self.n_start
        self.n_start = est.n.copy()
        super().finalize()
