"""LinUCB with one shared parameter over per-action features (Chu et al. 2011)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import SeedLike, check_positive
from .base import ActionScores, Policy, ucb_scores
from .compiled_round import rank_one_step, ucb_choice
from ..estimation.compiled import check_backend
from ..estimation.checkpoint import Checkpoint
from ..estimation.estimates import RidgeEstimate

__all__ = ["LinUCB"]


class LinUCB(Policy):
    """LinUCB: ridge regression on all actions' features with one shared θ.

    ``θ̂ = A⁻¹b`` with ``A = λI + Σ X_t X_t'`` and ``b = Σ r_t X_t``; the action is
    ``argmax_a x_a'θ̂ + α‖x_a‖_{A⁻¹}`` (ties uniform). This is the linear
    baseline of the paper's setting: Chu, Li, Reyzin & Schapire (2011), the
    LinUCB rule with a single shared parameter (the "hybrid-free" form of Li et
    al. 2010), not one model per arm. O(d²) per update plus O(K d²) per select.

    Parameters
    ----------
    n_features : int
        Feature dimension d.
    alpha : float, default 1.0
        Exploration strength α > 0.
    l2 : float, default 1.0
        Ridge strength λ > 0.
    seed : int, Generator, SeedSequence or None
        Randomness of tie-breaking.
    exploration_floor : float in [0, 1], default 0.0
        Play an action drawn uniformly at random with probability ε (see
        :class:`~glmbandits.policies.base.Policy`), so that the policy's own log
        has every propensity >= ε/K and supports off-policy evaluation.
    family : str or GLMFamily or None, default None
        The rewards' family, used only to check them: a reward outside its domain
        (e.g. 2 under ``"logistic"``, whose domain is [0, 1]) is refused with a
        ``ValueError``, as every policy refuses it. The ridge model itself is the
        same for every family. ``None`` accepts any finite reward.
    backend : {"numpy", "numba"}, default "numpy"
        ``"numba"`` scores the K actions and takes their argmax in one compiled
        call, and the update's Sherman–Morrison step in another
        (:mod:`glmbandits.policies.compiled_round`; needs the ``compiled``
        extra, else ``ImportError``). Same rule, scores equal to numpy's to
        rounding (``docs/performance.md``, "Backends and their guarantees").

    References
    ----------
    Chu, Li, Reyzin & Schapire (2011), "Contextual Bandits with Linear Payoff
    Functions", AISTATS (LinUCB); Li, Chu, Langford & Schapire (2010), WWW.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import LinUCB
    >>> policy = LinUCB(n_features=2, seed=0)
    >>> policy.update([1.0, 0.0], 1.0)
    >>> policy.select(np.array([[1.0, 0.0], [0.0, 1.0]]))
    0
    >>> LinUCB(n_features=2, family="logistic").update([1.0, 0.0], 2.0)
    Traceback (most recent call last):
    ...
    ValueError: LinUCB.update: reward must lie in the logistic reward domain [0, 1], got 2.0
    """

    def __init__(self, n_features: int, alpha: float = 1.0, l2: float = 1.0,
                 seed: SeedLike = None,
                 exploration_floor: float = 0.0, family: Any = None,
                 backend: str = "numpy") -> None:
        super().__init__(n_features, family, seed, exploration_floor)
        owner = type(self).__name__
        self.alpha = check_positive(alpha, owner, "alpha")
        self.l2 = check_positive(l2, owner, "l2")
        self.estimate_ = RidgeEstimate(self.n_features, self.l2)
        self.backend = check_backend(backend, owner)  # last, where __setstate__ adds it

    @property
    def theta_(self) -> np.ndarray:
        return self.estimate_.theta_

    @property
    def V_inv_(self) -> np.ndarray:
        return self.estimate_.V_inv_

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.setdefault("backend", "numpy")  # model files and pickles from before the option
        super().__setstate__(state)

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        if self.backend == "numba":
            return ucb_choice(X, self.estimate_.theta_, self.estimate_.V_inv_, self.alpha,
                              self.rng_)
        return self._choose_max(ucb_scores(X, self.estimate_.theta_, self.estimate_.V_inv_,
                                           self.alpha))

    def _learn(self, x: np.ndarray, reward: float) -> None:
        if self.backend == "numba":
            self.estimate_.add(x, reward, rank_one_step())
        else:
            self.estimate_.add(x, reward)

    def _learn_checkpoint(self) -> Checkpoint:
        return self.estimate_._add_checkpoint()  # _learn is the estimate's add
