"""Lockstep kernels: R replicates of one policy class, advanced together.

A kernel takes R policy objects (one per replicate, each with its own state and
random generator), stacks their state along a leading replicate axis and runs
``select``/``update`` for all of them with a few array operations per round,
instead of R Python-level calls. Decisions are the ones the R policies would make
on their own: the same formulas on the same numbers (up to floating-point
rounding of the batched products, ~1e-16 relative), ties broken by each
replicate's own generator exactly as :func:`~glmbandits.policies.base.argmax_random_tie`
does, refits done by each replicate's own :class:`~glmbandits.policies._estimators.GLMEstimate`
solver on the same samples. :meth:`BatchKernel.finalize` writes the state back
into the policy objects, which then look as if they had played sequentially.

Kernels exist for :class:`~glmbandits.LinUCB` and :class:`~glmbandits.UCBGLM`
(both refit modes, ``l2 > 0``); any other policy runs in
:class:`SequentialKernel`, which just calls each policy in turn. New policies
register a kernel with :func:`register_batch_kernel`.

Rewards and contexts come from environments, so the kernels do not repeat the
per-call input checks of :class:`~glmbandits.policies.base.Policy`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Sequence

import numpy as np

from .._array_backend import ArrayBackend
from .._batch_refit import batched_newton_refit
from .._history import SampleHistory
from .base import ActionScores, Policy
from .linucb import LinUCB
from .ucb_glm import UCBGLM

__all__ = ["BatchKernel", "SequentialKernel", "LinUCBKernel", "UCBGLMKernel",
           "register_batch_kernel", "make_batch_kernel", "BATCH_KERNELS"]


# -- shared batched pieces --------------------------------------------------------------
def batched_ucb(backend: ArrayBackend, X: Any, theta: Any, V_inv: Any, alpha: Any
                ) -> tuple[Any, Any, Any]:
    """(ucb, mean, width) of shape (R, K): ``x'θ̂_r + α_r‖x‖_{V_r⁻¹}`` for every replicate.

    The batched form of :func:`~glmbandits.policies.base.ucb_scores` (Li, Lu &
    Zhou 2017, Algorithm 1 step 2): one (R, K, d)@(R, d, d) product.
    """
    R, K, d = X.shape
    mean = backend.matmul(X, theta[:, :, None])[:, :, 0]
    XV = backend.matmul(X, V_inv)  # rows flattened: a faster einsum than "rkd,rkd->rk"
    quadratic = backend.einsum("ij,ij->i", XV.reshape(R * K, d), X.reshape(R * K, d))
    quadratic = quadratic.reshape(R, K)
    width = alpha[:, None] * backend.sqrt_positive(quadratic)
    return mean + width, mean, width


def batched_sherman_morrison(backend: ArrayBackend, V_inv: Any, x: Any) -> Any:
    """In place ``V_r⁻¹ ← (V_r + x_r x_r')⁻¹`` for every r; returns ``x_r'V_r⁻¹x_r`` (R,).

    The batched form of :func:`~glmbandits.estimation.sherman_morrison_update`
    (unit weight), exactly symmetric like it.
    """
    u = backend.matmul(V_inv, x[:, :, None])[:, :, 0]
    quadratic = backend.einsum("rd,rd->r", x, u)
    V_inv -= (1.0 / (1.0 + quadratic))[:, None, None] * (u[:, :, None] * u[:, None, :])
    return quadratic


def argmax_rows(values: np.ndarray, valid: np.ndarray | None, tied_rows: np.ndarray | None,
                rngs: Sequence[np.random.Generator]) -> tuple[np.ndarray, np.ndarray]:
    """Per-row argmax with uniform tie-breaking from each row's own generator.

    Row r behaves as ``argmax_random_tie(values[r, valid[r]], rngs[r])``: the
    generator is drawn from only when several actions tie. Rows flagged in
    ``tied_rows`` treat every valid action as tied (a uniformly random round).
    Returns (actions, number tied).
    """
    if valid is not None:
        values = np.where(valid, values, -np.inf)
    tied = values == values.max(axis=1, keepdims=True)
    if tied_rows is not None and tied_rows.any():
        tied[tied_rows] = True if valid is None else valid[tied_rows]
    counts = tied.sum(axis=1)
    actions = tied.argmax(axis=1)
    for r in np.flatnonzero(counts > 1):
        best = tied[r].nonzero()[0]
        actions[r] = best[rngs[r].integers(best.shape[0])]
    return actions, counts


# -- kernels ----------------------------------------------------------------------------------
class BatchKernel(ABC):
    """R policies advanced in lockstep.

    Parameters
    ----------
    policies : sequence of Policy
        One per replicate, all of the kernel's policy class.
    backend : ArrayBackend
        The array module of the stacked state.
    """

    def __init__(self, policies: Sequence[Policy], backend: ArrayBackend) -> None:
        self.policies = list(policies)
        self.backend = backend
        self.rngs = [policy.rng_ for policy in self.policies]
        self.rounds_ = 0
        self._last: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    @abstractmethod
    def select(self, X: np.ndarray, valid: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Actions (R,) and propensities (R,) for contexts X (R, K, d).

        ``valid`` (R, K) marks real actions when the replicates have different K
        (rows padded with zeros); None when all are real.
        """

    @abstractmethod
    def update(self, x: np.ndarray, rewards: np.ndarray) -> None:
        """Absorb the chosen rows x (R, d) and their rewards (R,)."""

    def finalize(self) -> None:
        """Write the stacked state back into the policy objects."""
        if self._last is not None:
            ucb, mean, width, propensities = self._last
            for r, policy in enumerate(self.policies):
                policy.last_scores_ = ActionScores(ucb=ucb[r], mean=mean[r], width=width[r])
                policy.last_propensity_ = float(propensities[r])
        for policy in self.policies:
            policy.n_updates_ += self.rounds_
        self.rounds_ = 0

    def _record(self, ucb: Any, mean: Any, width: Any, valid: np.ndarray | None,
                tied_rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        to_numpy = self.backend.to_numpy
        ucb, mean, width = to_numpy(ucb), to_numpy(mean), to_numpy(width)
        actions, counts = argmax_rows(ucb, valid, tied_rows, self.rngs)
        propensities = 1.0 / counts
        self._last = (ucb, mean, width, propensities)
        return actions, propensities


class SequentialKernel(BatchKernel):
    """Fallback for any policy: call each replicate's ``select``/``update`` in turn."""

    def select(self, X: np.ndarray, valid: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        actions = np.empty(len(self.policies), dtype=np.int64)
        propensities = np.empty(len(self.policies))
        for r, policy in enumerate(self.policies):
            contexts = X[r] if valid is None else X[r, valid[r]]
            actions[r] = policy.select(contexts)
            propensity = policy.last_propensity_
            propensities[r] = np.nan if propensity is None else propensity
        return actions, propensities

    def update(self, x: np.ndarray, rewards: np.ndarray) -> None:
        for r, policy in enumerate(self.policies):
            policy.update(x[r], float(rewards[r]))

    def finalize(self) -> None:
        """Nothing to write back: the policies were called directly."""


class LinUCBKernel(BatchKernel):
    """:class:`~glmbandits.LinUCB` for R replicates: θ̂_r = A_r⁻¹b_r, A_r⁻¹ by rank-one steps."""

    def __init__(self, policies: Sequence[LinUCB], backend: ArrayBackend) -> None:
        super().__init__(policies, backend)
        estimates = [policy.estimate_ for policy in self.policies]
        self.alpha = backend.asarray([policy.alpha for policy in self.policies])
        self.V_inv = backend.asarray(np.stack([e.V_inv_ for e in estimates]))
        self.b = backend.asarray(np.stack([e.b_ for e in estimates]))
        self.theta = backend.asarray(np.stack([e.theta_ for e in estimates]))

    def select(self, X: np.ndarray, valid: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        ucb, mean, width = batched_ucb(self.backend, self.backend.asarray(X), self.theta,
                                       self.V_inv, self.alpha)
        return self._record(ucb, mean, width, valid, None)

    def update(self, x: np.ndarray, rewards: np.ndarray) -> None:
        backend = self.backend
        x = backend.asarray(x)
        batched_sherman_morrison(backend, self.V_inv, x)
        self.b += backend.asarray(rewards)[:, None] * x
        self.theta = backend.matmul(self.V_inv, self.b[:, :, None])[:, :, 0]
        self.rounds_ += 1

    def finalize(self) -> None:
        to_numpy = self.backend.to_numpy
        V_inv, b, theta = to_numpy(self.V_inv), to_numpy(self.b), to_numpy(self.theta)
        for r, policy in enumerate(self.policies):
            policy.estimate_.V_inv_ = V_inv[r].copy()
            policy.estimate_.b_ = b[r].copy()
            policy.estimate_.theta_ = theta[r].copy()
        super().finalize()


class UCBGLMKernel(BatchKernel):
    """:class:`~glmbandits.UCBGLM` (``refit="every_round"`` or ``"lazy"``) for R replicates.

    V_r⁻¹ and log det V_r are updated for all replicates at once; the history is
    one (R, capacity, d) buffer grown geometrically. In exact mode a replicate's
    MLE is refitted every round by its own estimate's incremental solver
    (:meth:`GLMEstimate.refit_on`). In lazy mode the replicates whose det V has
    grown by the factor in a round (all hold the same n samples, by lockstep) are
    refitted together by :func:`~glmbandits._batch_refit.batched_newton_refit`
    on their stacked (r, n, d) histories, warm-started at their previous θ̂ and
    stopped on the sequential solvers' test ``max|g| <= tol·max(1, n)``; a
    replicate whose batched Newton step fails is refitted by its own sequential
    solver instead. θ̂ then solves eq. (3) to the same tolerance as in a
    sequential run (it may differ from it in the last digits, within that
    tolerance); between refits a lazy replicate costs O(K d²) per round.

    Attributes
    ----------
    n_batched_refits_, n_batched_fallbacks_ : int
        Replicate refits done by the batched solver, and those it handed to the
        sequential solver.
    """

    def __init__(self, policies: Sequence[UCBGLM], backend: ArrayBackend) -> None:
        super().__init__(policies, backend)
        estimates = [policy.estimate_ for policy in self.policies]
        self.estimates = estimates
        R, d = len(estimates), self.policies[0].n_features
        self.n = estimates[0].n
        capacity = max(64, 2 * self.n)
        self.X_hist = np.empty((R, capacity, d))
        self.y_hist = np.empty((R, capacity))
        for r, estimate in enumerate(estimates):
            self.X_hist[r, : self.n] = estimate.history.X
            self.y_hist[r, : self.n] = estimate.history.y
        self.stale = np.array([e.stale_ for e in estimates])
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
        self.V_inv_s = backend.copy(self.V_inv)
        for r, s in enumerate(snapshots):
            if s is not None and s.theta_ is not None:
                self.V_inv_s[r] = backend.asarray(s.V_inv_)
        self.log_det_s = np.array([s.log_det_ if s is not None else 0.0 for s in snapshots])
        self.n_refits = np.array([s.n_refits_ if s is not None else 0 for s in snapshots])
        self.n_samples_s = np.array([s.n_samples_ if s is not None else 0 for s in snapshots])
        first = estimates[0]
        self.batch_refits = all(e.family == first.family and e.l2 == first.l2 > 0.0
                                and e.tol == first.tol for e in estimates)
        self.n_batched_refits_ = 0
        self.n_batched_fallbacks_ = 0
        self.steady = False
        # what each replicate's last batched refit left for the next one (n_cache 0: nothing)
        self.g_cache = np.zeros((R, d))
        self.H_cache = np.zeros((R, d, d))
        self.n_cache = np.zeros(R, dtype=np.int64)
        self._reset_cache(np.arange(R))

    def _reset_cache(self, rows: np.ndarray) -> None:
        """No cached samples: gradient λθ̂ and Hessian λI at the current θ̂ on 0 samples."""
        l2 = self.estimates[0].l2
        for r in rows:
            self.g_cache[r] = l2 * self.estimates[r].theta_
            self.H_cache[r] = l2 * np.eye(self.g_cache.shape[1])
            self.n_cache[r] = 0

    @staticmethod
    def supports(policies: Sequence[UCBGLM]) -> bool:
        """Batchable when l2 > 0 (V⁻¹ exists from the start) and all hold n samples."""
        n = policies[0].estimate_.n
        return all(p.l2 > 0.0 and p.estimate_.n == n for p in policies)

    def _refit(self, rows: np.ndarray, batched: np.ndarray) -> None:
        """Refit the replicates in ``rows`` as ``GLMEstimate.theta`` would.

        Stale rows flagged in ``batched`` (lazy refits) go through the batched
        Newton solver first; the others, and batched failures, through each
        replicate's own solver.
        """
        n = self.n
        sequential = rows[self.stale[rows] & ~batched[rows]] if n > 0 else rows[:0]
        together = rows[self.stale[rows] & batched[rows]] if n > 0 else rows[:0]
        if together.shape[0]:
            first = self.estimates[together[0]]
            theta0 = np.stack([self.estimates[r].theta_ for r in together])
            if together.shape[0] == 1:  # a view, no copy
                r = together[0]
                X, y = self.X_hist[r: r + 1, :n], self.y_hist[r: r + 1, :n]
            else:
                X, y = self.X_hist[together, :n], self.y_hist[together, :n]
            cache = (self.g_cache[together], self.H_cache[together], self.n_cache[together])
            fit = batched_newton_refit(self.backend, X, y, theta0, first.family, first.l2,
                                       first.tol, cache=cache)
            ok = fit.converged
            self.n_batched_refits_ += int(ok.sum())
            for i in np.flatnonzero(ok):
                estimate = self.estimates[together[i]]
                estimate.theta_ = fit.theta[i].copy()
                estimate.n_fits_ += 1
            self.g_cache[together[ok]] = fit.gradient[ok]
            self.H_cache[together[ok]] = fit.hessian[ok]
            self.n_cache[together[ok]] = n
            failed = together[~ok]
            self.n_batched_fallbacks_ += failed.shape[0]
            sequential = np.concatenate([sequential, failed])
        for r in sequential:
            self.estimates[r].refit_on(self.X_hist[r, :n], self.y_hist[r, :n])
        if sequential.shape[0]:
            self._reset_cache(sequential)
        for r in rows:
            self.stale[r] = False
            self.theta_s[r] = self.estimates[r].theta_

    def select(self, X: np.ndarray, valid: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        backend = self.backend
        if self.steady:  # all lazy, past the initial rounds, with snapshots: one test
            initial = None
            due = self.log_det > self.log_det_s + self.log_growth
            if due.any():
                self._renew(due.nonzero()[0], due)
        else:
            initial = self.n < self.tau
            active = ~initial
            due = active & self.lazy & (~self.has_snapshot
                                        | (self.log_det > self.log_det_s + self.log_growth))
            exact = active & ~self.lazy
            rows = np.flatnonzero(due | exact)
            if rows.shape[0]:
                self._renew(rows, due)
            self.steady = bool(self.lazy.all() and not initial.any() and self.has_snapshot.all())
            if not initial.any():
                initial = None
        ucb, mean, width = batched_ucb(backend, backend.asarray(X), backend.asarray(self.theta_s),
                                       self.V_inv_s, self.alpha)
        if initial is not None:  # uniformly random rounds: every score 0, every action tied
            ucb, mean, width = (backend.to_numpy(a).copy() for a in (ucb, mean, width))
            for array in (ucb, mean, width):
                array[initial] = 0.0
        return self._record(ucb, mean, width, valid, initial)

    def _renew(self, rows: np.ndarray, due: np.ndarray) -> None:
        """Refit ``rows`` (exact or due lazy replicates); due ones take a new snapshot."""
        self._refit(rows, due & self.batch_refits)
        self.V_inv_s[rows] = self.V_inv[rows]
        self.log_det_s[due] = self.log_det[due]
        self.has_snapshot[due] = True
        self.n_refits[due] += 1
        self.n_samples_s[due] = self.n

    def update(self, x: np.ndarray, rewards: np.ndarray) -> None:
        if self.n == self.X_hist.shape[1]:  # grow geometrically
            self.X_hist = np.concatenate([self.X_hist, np.empty_like(self.X_hist)], axis=1)
            self.y_hist = np.concatenate([self.y_hist, np.empty_like(self.y_hist)], axis=1)
        self.X_hist[:, self.n] = x
        self.y_hist[:, self.n] = rewards
        self.n += 1
        quadratic = batched_sherman_morrison(self.backend, self.V_inv, self.backend.asarray(x))
        self.log_det += np.log1p(self.backend.to_numpy(quadratic))
        self.stale[:] = True
        self.rounds_ += 1

    def finalize(self) -> None:
        to_numpy = self.backend.to_numpy
        V_inv, V_inv_s = to_numpy(self.V_inv), to_numpy(self.V_inv_s)
        d = self.X_hist.shape[2]
        for r, (policy, estimate) in enumerate(zip(self.policies, self.estimates)):
            history = SampleHistory(d, max(64, self.n))
            history.__setstate__({"X": self.X_hist[r, : self.n].copy(),
                                  "y": self.y_hist[r, : self.n].copy()})
            estimate.history = history
            estimate.V_inv_ = V_inv[r].copy()
            estimate.log_det_V_ = float(self.log_det[r])
            estimate.stale_ = bool(self.stale[r])
            snapshot = policy.snapshot_
            if snapshot is not None and self.has_snapshot[r]:
                snapshot.theta_ = self.theta_s[r].copy()
                snapshot.V_inv_ = V_inv_s[r].copy()
                snapshot.log_det_ = float(self.log_det_s[r])
                snapshot.n_refits_ = int(self.n_refits[r])
                snapshot.n_samples_ = int(self.n_samples_s[r])
        super().finalize()


#: policy class -> (builder(policies, backend) -> kernel, supports(policies) -> bool)
BATCH_KERNELS: dict[type, tuple[Callable[..., BatchKernel], Callable[[Sequence[Any]], bool]]] = {}


def register_batch_kernel(policy_class: type, builder: Callable[..., BatchKernel],
                          supports: Callable[[Sequence[Any]], bool] | None = None) -> None:
    """Use ``builder(policies, backend)`` for lists of exactly ``policy_class`` instances."""
    BATCH_KERNELS[policy_class] = (builder, supports or (lambda policies: True))


def make_batch_kernel(policies: Sequence[Policy], backend: ArrayBackend) -> BatchKernel:
    """The registered kernel when every policy has the same registered class, else sequential."""
    classes = {type(policy) for policy in policies}
    if len(classes) == 1:
        entry = BATCH_KERNELS.get(classes.pop())
        if entry is not None and entry[1](policies):
            return entry[0](policies, backend)
    return SequentialKernel(policies, backend)


register_batch_kernel(LinUCB, LinUCBKernel)
register_batch_kernel(UCBGLM, UCBGLMKernel, UCBGLMKernel.supports)
