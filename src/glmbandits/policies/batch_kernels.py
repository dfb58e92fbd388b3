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
from .._lazy_refit import NewtonCache, lazy_newton_refit
from .._history import SampleHistory
from .base import ActionScores, Policy
from .linucb import LinUCB
from .ucb_glm import UCBGLM

__all__ = ["BatchKernel", "SequentialKernel", "LinUCBKernel", "UCBGLMKernel", "augmented_ucb",
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


def augmented_ucb(backend: ArrayBackend, X: Any, M: Any, alpha: Any) -> tuple[Any, Any, Any]:
    """:func:`batched_ucb` with ``M = [V⁻¹ | θ̂]`` of shape (R, d, d + 1): one product gives both.

    ``X @ M`` holds ``X V⁻¹`` in its first d columns and the means ``Xθ̂`` in its last.
    """
    d = X.shape[2]
    XM = backend.matmul(X, M)
    mean = XM[:, :, d]
    width = alpha[:, None] * backend.sqrt_positive(backend.einsum("rkd,rkd->rk", XM[:, :, :d], X))
    return mean + width, mean, width


def batched_sherman_morrison(backend: ArrayBackend, V_inv: Any, x: Any) -> Any:
    """In place ``V_r⁻¹ ← (V_r + x_r x_r')⁻¹`` for every r; returns ``x_r'V_r⁻¹x_r`` (R,).

    The batched form of :func:`~glmbandits.estimation.sherman_morrison_update`
    (unit weight), exactly symmetric like it.
    """
    u = backend.matmul(V_inv, x[:, :, None])[:, :, 0]
    quadratic = backend.einsum("rd,rd->r", x, u)
    outer = u[:, :, None] * u[:, None, :]
    outer *= (1.0 / (1.0 + quadratic))[:, None, None]
    V_inv -= outer
    return quadratic


def argmax_rows(values: np.ndarray, valid: np.ndarray | None, tied_rows: np.ndarray | None,
                rngs: Sequence[np.random.Generator]) -> tuple[np.ndarray, np.ndarray]:
    """Per-row argmax with uniform tie-breaking from each row's own generator.

    Row i behaves as ``argmax_random_tie(values[i, valid[i]], rngs[i])``: the
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
    for i in np.flatnonzero(counts > 1):
        best = tied[i].nonzero()[0]
        actions[i] = best[rngs[i].integers(best.shape[0])]
    return actions, counts


class _LastScores:
    """Each replicate's scores and propensity of the last round it played."""

    def __init__(self, n_replicates: int) -> None:
        self.n_replicates = n_replicates
        self.arrays: list[np.ndarray] | None = None  # ucb, mean, width: (R, K_max)
        self.valid: np.ndarray | None = None  # (R, K_max) when K varies
        self.propensities = np.full(n_replicates, np.nan)
        self.played = np.zeros(n_replicates, dtype=bool)
        self.pending: np.ndarray | None = None  # propensities of a round everyone played

    def record(self, rows: np.ndarray, everyone: bool, scores: tuple[np.ndarray, ...],
               valid: np.ndarray | None, propensities: np.ndarray) -> None:
        K = scores[0].shape[1]
        if everyone:  # scores are (R, K): keep them (fresh arrays every round)
            self.arrays, self.valid, self.pending = list(scores), valid, propensities
            return
        self._flush()
        if self.arrays is None or self.arrays[0].shape[1] != K:
            self._resize(K)
        for array, values in zip(self.arrays, scores):
            array[rows] = values
        if valid is not None or self.valid is not None:
            if self.valid is None:
                self.valid = np.ones((self.n_replicates, K), dtype=bool)
            self.valid[rows] = True if valid is None else valid
        self.propensities[rows] = propensities
        self.played[rows] = True

    def _flush(self) -> None:
        """Write down the propensities of a round everyone played, kept by reference."""
        if self.pending is not None:
            self.propensities[:] = self.pending
            self.played[:] = True
            self.pending = None

    def _resize(self, K: int) -> None:
        old, old_valid = self.arrays, self.valid
        self.arrays = [np.zeros((self.n_replicates, K)) for _ in range(3)]
        self.valid = np.zeros((self.n_replicates, K), dtype=bool)
        if old is None:
            return
        k = min(K, old[0].shape[1])
        for array, previous in zip(self.arrays, old):
            array[:, :k] = previous[:, :k]
        self.valid[:, :k] = True if old_valid is None else old_valid[:, :k]

    def write_back(self, policies: Sequence[Policy]) -> None:
        self._flush()
        if self.arrays is None:
            return
        ucb, mean, width = self.arrays
        for r in np.flatnonzero(self.played):
            keep = slice(None) if self.valid is None else self.valid[r]
            policies[r].last_scores_ = ActionScores(ucb=ucb[r][keep].copy(),
                                                    mean=mean[r][keep].copy(),
                                                    width=width[r][keep].copy())
            policies[r].last_propensity_ = float(self.propensities[r])


# -- kernels ----------------------------------------------------------------------------------
class BatchKernel(ABC):
    """R policies advanced together, round by round.

    :func:`~glmbandits.simulate_batch` asks the kernel each step which replicates
    play (:meth:`ready`), then calls :meth:`select` and :meth:`update` for those
    rows. Most kernels let every replicate play every step (lockstep). A kernel
    may hold a replicate back for a few steps (UCB-GLM lazy refits wait until
    they can be done together): each replicate still plays its own rounds in
    order, on its own state, contexts and random streams, so its trajectory is
    that of its sequential run.

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
        self.n_replicates = len(self.policies)
        self.rngs = [policy.rng_ for policy in self.policies]
        self.rounds_ = np.zeros(self.n_replicates, dtype=np.int64)
        self._last = _LastScores(self.n_replicates)
        self._all_rows = np.arange(self.n_replicates)
        self._ones = np.ones(self.n_replicates)
        self._ones.flags.writeable = False

    def ready(self, active: np.ndarray) -> np.ndarray:
        """Indices of the replicates that play now, among the ``active`` ones (R,) bool.

        Never empty while some replicate is active. Default: all active ones.
        """
        return self._rows_of(active)

    def _rows_of(self, mask: np.ndarray) -> np.ndarray:
        """``flatnonzero(mask)``, as the shared ``arange(R)`` when every replicate is in it."""
        return self._all_rows if mask.all() else np.flatnonzero(mask)

    @abstractmethod
    def select(self, X: np.ndarray, valid: np.ndarray | None, rows: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """Actions and propensities (one per index in ``rows``) for contexts X (R, K, d).

        ``X`` holds every replicate's current contexts; only the replicates
        ``rows`` play. ``valid`` (R, K) marks real actions when the replicates
        have different K (rows padded with zeros); None when all are real.
        """

    @abstractmethod
    def update(self, rows: np.ndarray, x: np.ndarray, rewards: np.ndarray) -> None:
        """Absorb the chosen rows x (len(rows), d) and rewards of the replicates ``rows``."""

    def reserve(self, rounds: int) -> None:
        """Prepare for ``rounds`` more rounds (kernels with growing buffers allocate once)."""

    def finalize(self) -> None:
        """Write the stacked state back into the policy objects."""
        self._last.write_back(self.policies)
        for policy, rounds in zip(self.policies, self.rounds_):
            policy.n_updates_ += int(rounds)
        self.rounds_[:] = 0

    def _everyone(self, rows: np.ndarray) -> bool:
        """Whether ``rows`` is every replicate, in order (then arrays need no indexing)."""
        return rows.shape[0] == self.n_replicates

    def _selector(self, rows: np.ndarray) -> np.ndarray | slice:
        """An index for the replicates ``rows``: a plain slice when it is all of them."""
        return slice(None) if rows.shape[0] == self.n_replicates else rows

    def _full(self, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
        """``values`` of the replicates ``rows`` in an (R, ...) array, zeros elsewhere."""
        if self._everyone(rows):
            return values
        full = np.zeros((self.n_replicates, *values.shape[1:]))
        full[rows] = values
        return full

    def _record(self, ucb: Any, mean: Any, width: Any, valid: np.ndarray | None,
                tied_rows: np.ndarray | None, rows: np.ndarray, of_rows: bool = False
                ) -> tuple[np.ndarray, np.ndarray]:
        """Actions of the replicates ``rows`` from their (R, K) scores; keeps the scores.

        ``of_rows``: the scores are already those of ``rows`` only (len(rows), K).
        """
        to_numpy = self.backend.to_numpy
        scores = (to_numpy(ucb), to_numpy(mean), to_numpy(width))
        everyone = self._everyone(rows)
        if everyone and valid is None and tied_rows is None:  # the common round
            values = scores[0]
            actions = values.argmax(axis=1)
            if np.count_nonzero(values == values[self._all_rows, actions][:, None]) > len(actions):
                actions, counts = argmax_rows(values, None, None, self.rngs)  # some tie
                propensities = 1.0 / counts
            else:
                propensities = self._ones
            self._last.record(rows, True, scores, None, propensities)
            return actions, propensities
        if not everyone:
            if not of_rows:
                scores = tuple(array[rows] for array in scores)
            valid = None if valid is None else valid[rows]
            tied_rows = None if tied_rows is None else tied_rows[rows]
        rngs = self.rngs if everyone else [self.rngs[r] for r in rows]
        actions, counts = argmax_rows(scores[0], valid, tied_rows, rngs)
        propensities = 1.0 / counts
        self._last.record(rows, everyone, scores, valid, propensities)
        return actions, propensities


class SequentialKernel(BatchKernel):
    """Fallback for any policy: call each replicate's ``select``/``update`` in turn."""

    def select(self, X: np.ndarray, valid: np.ndarray | None, rows: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        actions = np.empty(rows.shape[0], dtype=np.int64)
        propensities = np.empty(rows.shape[0])
        for i, r in enumerate(rows):
            policy = self.policies[r]
            contexts = X[r] if valid is None else X[r, valid[r]]
            actions[i] = policy.select(contexts)
            propensity = policy.last_propensity_
            propensities[i] = np.nan if propensity is None else propensity
        return actions, propensities

    def update(self, rows: np.ndarray, x: np.ndarray, rewards: np.ndarray) -> None:
        for i, r in enumerate(rows):
            self.policies[r].update(x[i], float(rewards[i]))

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

    def select(self, X: np.ndarray, valid: np.ndarray | None, rows: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        ucb, mean, width = batched_ucb(self.backend, self.backend.asarray(X), self.theta,
                                       self.V_inv, self.alpha)
        return self._record(ucb, mean, width, valid, None, rows)

    def update(self, rows: np.ndarray, x: np.ndarray, rewards: np.ndarray) -> None:
        # replicates that did not play get x = 0: their V⁻¹, b and θ stay bit for bit
        backend = self.backend
        x = backend.asarray(self._full(rows, x))
        batched_sherman_morrison(backend, self.V_inv, x)
        self.b += backend.asarray(self._full(rows, rewards))[:, None] * x
        self.theta = backend.matmul(self.V_inv, self.b[:, :, None])[:, :, 0]
        self.rounds_[self._selector(rows)] += 1

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
    one zero-initialised (R, capacity, d) buffer, reserved up front
    (:meth:`reserve`) or grown geometrically; replicate r's samples are its
    first ``n[r]`` rows. In exact mode a replicate's MLE is refitted every round
    by its own estimate's incremental solver (:meth:`GLMEstimate.refit_on`).

    Lazy mode, refit waves. A replicate whose det V trigger fires (or that needs
    its first snapshot) is *parked*: it keeps its contexts and waits, while the
    others go on playing. Once every active replicate is parked, all of them are
    refitted by one call of :func:`~glmbandits._lazy_refit.lazy_newton_refit` on
    the stacked history (each row zero-padded beyond its own n, which adds
    nothing to eq. (3)) and their stacked solver caches, and they all play on.
    That call is the very function a sequential lazy :class:`~glmbandits.UCBGLM`
    makes with one row, and each row's result depends on that row only, so
    every replicate refits at the same sample counts, to the same roots, as in
    its sequential run. Lazy replicates refit at about the same sample counts
    (det V grows alike), so a wave holds nearly all R replicates, and the
    waiting costs few extra steps (T = 3000, R = 64, d = 10: 64 waves and about
    1.2 T steps, instead of ~1,550 refit calls of 2–3 rows in strict lockstep).
    Between refits a lazy replicate costs O(K d²) per round.

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
        # samples each replicate's θ̂ was fitted on (the estimate is stale when n is larger)
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
