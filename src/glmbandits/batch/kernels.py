"""Lockstep kernels: R replicates of one policy class, advanced together.

A kernel takes R policy objects (one per replicate, each with its own state and
random generator), stacks their state along a leading replicate axis and runs
``select``/``update`` for all of them with a few array operations per round,
instead of R Python-level calls. Decisions are the ones the R policies would make
on their own: the same formulas on the same numbers (up to floating-point
rounding of the batched products, ~1e-16 relative), ties broken by each
replicate's own generator exactly as :func:`~glmbandits.policies.base.argmax_random_tie`
does, refits done by each replicate's own :class:`~glmbandits.estimation.estimates.GLMEstimate`
solver on the same samples. :meth:`BatchKernel.finalize` writes the state back
into the policy objects, which then look as if they had played sequentially.

This module holds the shared batched pieces, the :class:`BatchKernel` interface
and :class:`SequentialKernel`. Kernels exist for :class:`~glmbandits.LinUCB`
(:mod:`glmbandits.batch.linucb`) and :class:`~glmbandits.UCBGLM` (both refit
modes, ``l2 > 0``; :mod:`glmbandits.batch.ucb_glm`); any other policy runs in
:class:`SequentialKernel`, which just calls each policy in turn. The registry
(:mod:`glmbandits.batch.registry`) maps policy classes to kernels; new policies
register one with :func:`~glmbandits.batch.registry.register_batch_kernel`.

Rewards and contexts come from environments, so the kernels do not repeat the
per-call input checks of :class:`~glmbandits.policies.base.Policy`.

On the ``"numba"`` backend the built-in kernels hand each round to compiled loops
(:meth:`BatchKernel._select_compiled`, :mod:`glmbandits.estimation.compiled`):
same formulas, sums in another order, so scores agree with numpy's to rounding
rather than bit for bit (``docs/performance.md``, "Backends and their guarantees").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, Sequence, TypeVar

import numpy as np

from ..policies.base import ActionScores, Policy
from .backend import ArrayBackend

__all__ = ["BatchKernel", "SequentialKernel", "batched_ucb", "augmented_ucb",
           "batched_sherman_morrison", "argmax_rows"]


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
        actions[i] = best[rngs[int(i)].integers(best.shape[0])]
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
        assert self.arrays is not None  # _resize made them
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
            policy = policies[int(r)]
            keep = slice(None) if self.valid is None else self.valid[r]
            policy.last_scores_ = ActionScores(ucb=ucb[r][keep].copy(),
                                               mean=mean[r][keep].copy(),
                                               width=width[r][keep].copy(),
                                               family=policy.family)
            policy.last_propensity_ = float(self.propensities[r])
            # The kernels' rules are argmax rules (random rounds have all-zero scores),
            # so the round's distribution is uniform over the tied maxima.
            tied = policy.last_scores_.ucb == policy.last_scores_.ucb.max()
            policy.last_probabilities_ = tied / np.count_nonzero(tied)


# -- kernels ----------------------------------------------------------------------------------
_P = TypeVar("_P", bound=Policy)  # the kernel's policy class


class BatchKernel(ABC, Generic[_P]):
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

    def __init__(self, policies: Sequence[_P], backend: ArrayBackend) -> None:
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
        return bool(rows.shape[0] == self.n_replicates)

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


    def _select_compiled(self, X: np.ndarray, M: np.ndarray, alpha: np.ndarray,
                         valid: np.ndarray | None, tied_rows: np.ndarray | None,
                         rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`select` on the ``"numba"`` backend: scores and argmax in one compiled call.

        ``M = [V⁻¹ | θ̂]`` (R, d, d + 1), C-contiguous. Rows in ``tied_rows`` get all-zero scores
        (uniformly random rounds). When no row ties, no action is padding and no
        score is NaN, the compiled argmax is the action; otherwise :meth:`_record`
        decides as on numpy.
        """
        compiled = self.backend.compiled
        X = np.ascontiguousarray(X, dtype=np.float64)  # BLAS needs contiguous rows
        n, K = rows.shape[0], X.shape[1]
        ucb, mean, width = np.empty((n, K)), np.empty((n, K)), np.empty((n, K))
        actions, counts = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        compiled.augmented_ucb_rows(X, M, alpha, rows, ucb, mean, width, actions, counts)
        if tied_rows is not None:
            zero = tied_rows[rows]
            for array in (ucb, mean, width):
                array[zero] = 0.0
        if valid is not None or tied_rows is not None or counts.max(initial=1) > 1 \
                or counts.min(initial=1) < 1:
            return self._record(ucb, mean, width, valid, tied_rows, rows, of_rows=True)
        everyone = self._everyone(rows)
        propensities = self._ones if everyone else np.ones(n)
        self._last.record(rows, everyone, (ucb, mean, width), None, propensities)
        return actions, propensities


class SequentialKernel(BatchKernel[Policy]):
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
