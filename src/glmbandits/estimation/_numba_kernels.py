"""The loops that numba compiles: UCB scores with their argmax, and Sherman–Morrison steps.

Reached only through :func:`glmbandits.estimation.compiled.kernels`, which
refuses first (naming the ``compiled`` extra) when numba is not installed. The
module itself still imports without numba (the test suite's doctest collection
imports every module): the functions are then left as the plain Python loops
they are written as.

Every function computes the same formulas as the numpy paths
(:func:`~glmbandits.policies.scores.ucb_scores`,
:func:`~glmbandits.estimation.sherman_morrison_update`, the batch kernels'
stacked forms) with the sums taken in a fixed order of their own, so results
agree with numpy's to rounding (a few ulps per round; ``docs/performance.md``,
"Backends and their guarantees"). The elementwise steps are written exactly as
numpy evaluates them (``mean + α·√max(q, 0)``, ``V⁻¹ -= c·(u_a u_b)``), so V⁻¹
stays exactly symmetric.

The (K, d)@(d, d) product of the scores is left to BLAS (numba calls it for
contiguous arrays), which is faster than any loop written here for d >= 10; the
rest of a round (means, widths, argmax, ties, the rank-one step) is fused into
one compiled call per round.

References
----------
Li, Lu & Zhou (2017), "Provably Optimal Algorithms for Generalized Linear
Contextual Bandits", ICML, Algorithm 1 steps 2–3 (the index
``x'θ̂ + α‖x‖_{V⁻¹}`` and ``V ← V + x x'``).
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from typing import Any, Callable, TypeVar, cast

import numpy as np

# None without numba: compiled.kernels() refuses before any of this is used
_numba: Any = (importlib.import_module("numba") if importlib.util.find_spec("numba")
               else None)

_F = TypeVar("_F", bound=Callable[..., Any])


def _jit(function: _F) -> _F:
    """``numba.njit(cache=True)`` when numba is installed (compiled once per machine, then
    loaded from the on-disk cache), else the function itself."""
    if _numba is None:
        return function
    return cast(_F, _numba.njit(cache=True, nogil=True)(function))


@_jit
def _finish_scores(XV: np.ndarray, X: np.ndarray, alpha: float, ucb: np.ndarray,
                   mean: np.ndarray, width: np.ndarray) -> tuple[int, int]:
    """From ``XV = X V⁻¹`` (K, ≥ d) and the means: width, ucb and (argmax, number tied).

    The argmax is numpy's (the first maximum). The count is 0 when a score is NaN
    (the caller then takes numpy's path).
    """
    K, d = X.shape
    best = 0
    for k in range(K):
        quadratic = 0.0
        for j in range(d):
            quadratic += XV[k, j] * X[k, j]
        if quadratic < 0.0:  # max(q, 0), NaN kept as numpy's maximum keeps it
            quadratic = 0.0
        width[k] = alpha * math.sqrt(quadratic)
        ucb[k] = mean[k] + width[k]
        if ucb[k] > ucb[best]:
            best = k
    top = ucb[best]
    count = 0
    for k in range(K):
        if ucb[k] == top:
            count += 1
        elif ucb[k] != ucb[k]:  # NaN
            return best, 0
    return best, count


@_jit
def ucb_one(X: np.ndarray, theta: np.ndarray, V_inv: np.ndarray, alpha: float
            ) -> tuple[np.ndarray, int, int]:
    """One round's scores (3, K) (rows ucb, mean, width), argmax and number tied, for X (K, d)."""
    scores = np.empty((3, X.shape[0]))
    np.dot(X, theta, scores[1])
    best, count = _finish_scores(X @ V_inv, X, alpha, scores[0], scores[1], scores[2])
    return scores, best, count


@_jit
def augmented_ucb_rows(X: np.ndarray, M: np.ndarray, alpha: np.ndarray, rows: np.ndarray,
                       ucb: np.ndarray, mean: np.ndarray, width: np.ndarray,
                       actions: np.ndarray, counts: np.ndarray) -> None:
    """The stacked form of :func:`ucb_one`: for i, r in enumerate(rows), replicate r's
    scores into row i of the outputs (len(rows), K) and (len(rows),).

    X (R, K, d); ``M = [V⁻¹ | θ̂]`` (R, d, d + 1), so that one product ``X_r M_r`` gives
    ``X_r V_r⁻¹`` and the means; alpha (R,).
    """
    K, d = X.shape[1], X.shape[2]
    XM = np.empty((K, d + 1))
    for i in range(rows.shape[0]):
        r = rows[i]
        np.dot(X[r], M[r], XM)
        mean[i] = XM[:, d]
        actions[i], counts[i] = _finish_scores(XM, X[r], alpha[r], ucb[i], mean[i], width[i])


@_jit
def _rank_one(V_inv: np.ndarray, x: np.ndarray, u: np.ndarray) -> float:
    """In place ``V⁻¹ ← (V + x x')⁻¹``; returns ``x'V⁻¹x`` before the step (``u`` scratch)."""
    d = x.shape[0]
    quadratic = 0.0
    for a in range(d):
        total = 0.0
        for b in range(d):
            total += V_inv[a, b] * x[b]
        u[a] = total
        quadratic += x[a] * total
    scale = 1.0 / (1.0 + quadratic)
    for a in range(d):
        for b in range(d):
            V_inv[a, b] -= scale * (u[a] * u[b])
    return quadratic


@_jit
def sherman_morrison(V_inv: np.ndarray, x: np.ndarray) -> float:
    """:func:`~glmbandits.estimation.sherman_morrison_update` (unit weight), compiled."""
    return _rank_one(V_inv, x, np.empty(x.shape[0]))


@_jit
def sherman_morrison_rows(V_inv: np.ndarray, x: np.ndarray, rows: np.ndarray,
                          quadratic: np.ndarray) -> None:
    """The stacked form: ``V_inv[r]`` steps by ``x[i]`` for i, r in enumerate(rows)."""
    u = np.empty(x.shape[1])
    for i in range(rows.shape[0]):
        quadratic[i] = _rank_one(V_inv[rows[i]], x[i], u)


@_jit
def _ridge_step(V_inv: np.ndarray, b: np.ndarray, theta: np.ndarray, x: np.ndarray,
                reward: float, u: np.ndarray) -> None:
    """One LinUCB sample: V⁻¹ by Sherman–Morrison, ``b += r·x``, ``θ̂ = V⁻¹b`` (in place)."""
    _rank_one(V_inv, x, u)
    d = x.shape[0]
    for a in range(d):
        b[a] += reward * x[a]
    for a in range(d):
        total = 0.0
        for c in range(d):
            total += V_inv[a, c] * b[c]
        theta[a] = total


@_jit
def ridge_rows(V_inv: np.ndarray, b: np.ndarray, theta: np.ndarray, x: np.ndarray,
               rewards: np.ndarray, rows: np.ndarray) -> None:
    """LinUCB's update of the replicates ``rows`` (i, r in enumerate(rows)), in place:
    ``V_inv[r]`` by Sherman–Morrison with ``x[i]``, ``b[r] += rewards[i]·x[i]``,
    ``theta[r] = V_inv[r] b[r]``."""
    u = np.empty(x.shape[1])
    for i in range(rows.shape[0]):
        r = rows[i]
        _ridge_step(V_inv[r], b[r], theta[r], x[i], rewards[i], u)
