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
from typing import Any

import numpy as np

from .._validation import check_positive
from .checkpoint import Checkpoint, checkpoint
from .estimates import GLMEstimate

__all__ = ["REFIT_MODES", "check_refit", "RarelySwitchingSnapshot"]

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
        return self.theta_, self.V_inv_

    def _checkpoint(self) -> Checkpoint:
        """A checkpoint for a transactional ``Policy.update`` (:mod:`.checkpoint`)."""
        return checkpoint(self)

    def copy(self) -> "RarelySwitchingSnapshot":
        """An independent copy."""
        clone = RarelySwitchingSnapshot.__new__(RarelySwitchingSnapshot)
        clone.__dict__.update(self.__dict__)
        clone.theta_ = None if self.theta_ is None else self.theta_.copy()
        clone.V_inv_ = None if self.V_inv_ is None else self.V_inv_.copy()
        return clone
