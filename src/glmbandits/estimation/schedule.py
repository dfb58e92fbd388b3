"""When a GLM policy refits its MLE: every round (the paper) or rarely (lazy).

``refit="every_round"`` is Li, Lu & Zhou (2017), Algorithm 1 step 1: θ̂_t solves
eq. (3) on all samples before every decision, and the width uses the current
``V_t``.

``refit="lazy"`` is the *rarely-switching* rule of Abbasi-Yadkori, Pál &
Szepesvári (2011, Section 5, "rarely switching OFUL"), as used for GLM bandits
by Sawarni et al. (2024, RS-GLinCB): the policy keeps a snapshot
``(θ̂_τ, V_τ⁻¹)`` taken at the last refit τ and refits the MLE (and takes a new
snapshot) only once ``det V_t > growth · det V_τ``. ``log det V`` is tracked for
free through the matrix determinant lemma
(:func:`~glmbandits.estimation.sherman_morrison_update` returns ``x'V⁻¹x``).
Between refits the policy scores with the snapshot, so a round costs one
rank-one update and one (K, d)@(d, d) product, independent of t.

Regret argument. The confidence set of Theorem 1 (Li, Lu & Zhou 2017),
``|x'(θ̂_τ - θ*)| <= α‖x‖_{V_τ⁻¹}``, holds at the snapshot; the rule plays
optimistically with respect to it. Since ``V_t ⪰ V_τ`` and ``det V_t <=
growth · det V_τ`` between refits, ``‖x‖_{V_τ⁻¹} <= √growth · ‖x‖_{V_t⁻¹}``
(Abbasi-Yadkori et al. 2011, Lemma 12), so the elliptical-potential sum of the
widths that bounds the regret grows by at most the factor √growth: the regret
bound of Theorem 2 is multiplied by √growth, while the number of refits is at
most ``log det V_T / log(growth) = O(d log T)``.

References
----------
Li, Lu & Zhou (2017), ICML, Algorithm 1 and Section 5 (the open question on
per-round cost); Abbasi-Yadkori, Pál & Szepesvári (2011), NeurIPS, Section 5
and Lemma 12; Sawarni, Das, Barman & Sinha (2024), "Generalized Linear Bandits
with Limited Adaptivity" (RS-GLinCB).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .._validation import check_positive
from .checkpoint import Checkpoint, checkpoint
from .estimates import GLMEstimate, StackedGLMEstimates

__all__ = ["REFIT_MODES", "check_refit", "RarelySwitchingSnapshot", "StackedSnapshots"]

#: Accepted values of the ``refit`` hyperparameter.
REFIT_MODES = ("every_round", "lazy")


def check_refit(refit: Any, growth: Any, owner: str) -> tuple[str, float]:
    """Validate ``refit`` and ``refit_growth`` (> 1) and return them."""
    if not isinstance(refit, str) or refit not in REFIT_MODES:
        raise ValueError(f"{owner}: refit must be one of {list(REFIT_MODES)}, got {refit!r}")
    growth = check_positive(growth, owner, "refit_growth")
    if growth <= 1.0:
        raise ValueError(f"{owner}: refit_growth must be > 1, got {growth!r}")
    return refit, growth


class RarelySwitchingSnapshot:
    """The ``(θ̂_τ, V_τ⁻¹)`` a lazy policy scores with, renewed when det V grows.

    Parameters
    ----------
    growth : float
        Refit once ``det V_t > growth · det V_τ`` (``growth > 1``).

    Attributes
    ----------
    theta_, V_inv_ : ndarray or None
        The snapshot (None before the first decision).
    log_det_ : float
        ``log det V_τ`` at the snapshot.
    n_refits_ : int
        Snapshots taken (= MLE refits).
    n_samples_ : int
        Number of samples θ̂_τ and V_τ were computed from.
    """

    def __init__(self, growth: float) -> None:
        self.log_growth = math.log(growth)
        self.theta_: np.ndarray | None = None
        self.V_inv_: np.ndarray | None = None
        self.log_det_ = -math.inf
        self.n_refits_ = 0
        self.n_samples_ = 0

    def due(self, estimate: GLMEstimate) -> bool:
        """Whether det V has grown by the factor since the snapshot (or none exists)."""
        return self.theta_ is None or estimate.log_det_V > self.log_det_ + self.log_growth

    def current(self, estimate: GLMEstimate) -> tuple[np.ndarray, np.ndarray]:
        """The snapshot, refitting the MLE and renewing it first when :meth:`due`."""
        if self.due(estimate):
            self.theta_ = estimate.theta.copy()
            self.V_inv_ = estimate.V_inv.copy()
            self.log_det_ = estimate.log_det_V
            self.n_refits_ += 1
            self.n_samples_ = estimate.n
        assert self.theta_ is not None and self.V_inv_ is not None  # taken just above if not before
        return self.theta_, self.V_inv_

    def _checkpoint(self) -> Checkpoint:
        """A checkpoint for a transactional ``Policy.update`` (:mod:`.checkpoint`)."""
        return checkpoint(self)

    @staticmethod
    def stack(snapshots: Sequence["RarelySwitchingSnapshot | None"],
              estimates: StackedGLMEstimates) -> "StackedSnapshots":
        """R policies' snapshots (None: a policy refitting every round) on a leading axis.

        A row without a snapshot scores with its estimate's θ̂ and ``V⁻¹`` (taken
        from the stacked ``estimates``).
        """
        return StackedSnapshots(snapshots, estimates)

    def copy(self) -> "RarelySwitchingSnapshot":
        """An independent copy."""
        clone = RarelySwitchingSnapshot.__new__(RarelySwitchingSnapshot)
        clone.__dict__.update(self.__dict__)
        clone.theta_ = None if self.theta_ is None else self.theta_.copy()
        clone.V_inv_ = None if self.V_inv_ is None else self.V_inv_.copy()
        return clone


class StackedSnapshots:
    """R :class:`RarelySwitchingSnapshot` (or None) on a leading replicate axis.

    Made by :meth:`RarelySwitchingSnapshot.stack` for the lockstep batch kernel;
    :meth:`renew` is :meth:`RarelySwitchingSnapshot.current`'s renewal for the
    rows just refitted, :meth:`unstack` writes the snapshots back.

    Attributes
    ----------
    snapshots : list of RarelySwitchingSnapshot or None
        The snapshots stacked.
    lazy : ndarray of bool, shape (R,)
        Rows with a snapshot (``refit="lazy"``).
    log_growth : ndarray of shape (R,)
        ``log(growth)`` (0 for the other rows).
    taken : ndarray of bool, shape (R,)
        Lazy rows whose snapshot exists.
    theta : ndarray of shape (R, d)
        θ̂ the rows score with (the snapshot's; the estimate's without one).
    V_inv : ndarray of shape (R, d, d)
        ``V⁻¹`` the rows score with (:meth:`unstack` writes back what this holds).
    log_det : ndarray of shape (R,)
        ``log det V_τ`` at the snapshots (0 for rows without a snapshot).
    n_refits, n_samples : ndarray of int, shape (R,)
        Snapshots taken, and the samples of the last one.
    """

    def __init__(self, snapshots: Sequence[RarelySwitchingSnapshot | None],
                 estimates: StackedGLMEstimates) -> None:
        self.snapshots = list(snapshots)
        self.lazy = np.array([s is not None for s in self.snapshots])
        self.log_growth = np.array([s.log_growth if s is not None else 0.0
                                    for s in self.snapshots])
        self.taken = np.array([s is not None and s.theta_ is not None for s in self.snapshots])
        thetas, V_invs = [], []
        for r, s in enumerate(self.snapshots):
            if s is not None and s.theta_ is not None and s.V_inv_ is not None:  # taken
                thetas.append(s.theta_)
                V_invs.append(s.V_inv_)
            else:
                thetas.append(estimates.theta[r])
                V_invs.append(estimates.V_inv[r])
        self.theta = np.stack(thetas)
        self.V_inv = np.stack(V_invs)
        self.log_det = np.array([s.log_det_ if s is not None else 0.0 for s in self.snapshots])
        self.n_refits = np.array([s.n_refits_ if s is not None else 0 for s in self.snapshots])
        self.n_samples = np.array([s.n_samples_ if s is not None else 0 for s in self.snapshots])

    def renew(self, rows: np.ndarray, estimates: StackedGLMEstimates) -> np.ndarray:
        """Rows just refitted score with their new θ̂; the lazy ones take a new snapshot.

        Returns the lazy rows among ``rows`` (their ``V⁻¹`` is the caller's to copy:
        it may live on another array backend).
        """
        self.theta[rows] = estimates.theta[rows]
        lazy = rows[self.lazy[rows]]
        self.log_det[lazy] = estimates.log_det[lazy]
        self.taken[lazy] = True
        self.n_refits[lazy] += 1
        self.n_samples[lazy] = estimates.n[lazy]
        lazy_rows: np.ndarray = lazy
        return lazy_rows

    def unstack(self) -> None:
        """Write every taken snapshot back into its object (copies)."""
        for r, snapshot in enumerate(self.snapshots):
            if snapshot is not None and self.taken[r]:
                snapshot.theta_ = self.theta[r].copy()
                snapshot.V_inv_ = self.V_inv[r].copy()
                snapshot.log_det_ = float(self.log_det[r])
                snapshot.n_refits_ = int(self.n_refits[r])
                snapshot.n_samples_ = int(self.n_samples[r])
