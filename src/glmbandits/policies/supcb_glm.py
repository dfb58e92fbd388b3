"""SupCB-GLM with its subroutine CB-GLM: Algorithms 2 and 3 of Li, Lu & Zhou (2017)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._params import keep_given
from .._validation import SeedLike, check_int, check_nonnegative, check_positive
from ..theory import kappa_and_sigma, supcb_glm_alpha, supcb_glm_tau, widen_for_refit_tol
from ..families import GLMFamily
from .base import ActionScores, Policy, argmax_distribution, tied_scores, ucb_scores
from ..estimation.estimates import GLMEstimate
from ..estimation.schedule import RarelySwitchingSnapshot, check_refit

__all__ = ["SupCBGLM"]

#: Stage code of a round played in the random initial phase (the set 𝓕).
INITIAL = -1


class SupCBGLM(Policy):
    """SupCB-GLM (Li, Lu & Zhou 2017, Algorithm 3) with CB-GLM (Algorithm 2).

    The first ``tau`` rounds are uniformly random; their samples form 𝓕, shared
    by every stage. There are ``S = ⌊log₂ T⌋`` stages with index sets
    Ψ_0, …, Ψ_S (all empty at first). Each later round starts with A_1 = [K],
    s = 1 and screens:

    a. CB-GLM (Algorithm 2) on Ψ_s ∪ 𝓕: θ̂^{(s)} solves eq. (3) on those samples,
       ``V_s = l2·I + Σ_{Ψ_s ∪ 𝓕} X X'``, and for every a ∈ A_s,
       ``m_a = x_a'θ̂^{(s)}`` and ``w_a = α‖x_a‖_{V_s⁻¹}``;
    b. if ``w_a > 2^{-s}`` for some a ∈ A_s, play it and add the round to Ψ_s
       (among several such actions, the widest; ties uniform);
    c. else if ``w_a <= 1/√T`` for all a ∈ A_s, play ``argmax_{A_s} m_a`` and add
       the round to Ψ_0 (whose samples no estimate uses);
    d. else keep ``A_{s+1} = {a ∈ A_s : m_a >= max_j m_j - 2·2^{-s}}``, s ← s + 1.

    Since the widths are at most 2^{-s} when step d is reached, step c fires by
    the stage with 2^{-s} <= 1/√T, so every round ends at some s <= S. Stage
    estimates are refitted only when their own Ψ_s grows (Lemma 4's independence
    structure: a round enters Ψ_s only through stage s).

    The sample passed to :meth:`update` must be the row chosen by the preceding
    :meth:`select` (its stage decides which index set it joins).

    Parameters
    ----------
    n_features : int
        Feature dimension d.
    family : str or GLMFamily, default "logistic"
        Reward family.
    horizon : int
        T, which sets S = ⌊log₂ T⌋ and the step-c threshold 1/√T. Rounds beyond T
        keep the same S.
    alpha : float, default 0.5
        Width multiplier α > 0. The default is a practical value; Theorem 3's
        ``(3σ/κ)√(2 log(TK/δ))`` (:meth:`from_theory`) is far larger and explores
        for a very long time at moderate T.
    tau : int, optional
        Initial random rounds; default ``2 * n_features`` (Theorem 3's τ = √(dT)
        via :meth:`from_theory`).
    l2 : float, default 1.0
        Ridge λ >= 0 in every stage's estimating equation and V_s (0 = the paper).
    seed : int, Generator, SeedSequence or None
        Randomness of the initial rounds and of tie-breaking.
    exploration_floor : float in [0, 1], default 0.0
        Play an action drawn uniformly at random with probability ε (see
        :class:`~glmbandits.policies.base.Policy`), so that the policy's own log
        has every propensity >= ε/K and supports off-policy evaluation.
    refit : {"every_round", "lazy"}, default "every_round"
        Refit a stage's MLE whenever its Ψ_s grew (the paper) or, lazily, only
        when that stage's det V_s has grown by ``refit_growth`` since its last
        refit; between refits the stage scores with its snapshot
        ``(θ̂^{(s)}_τ, V_{s,τ}⁻¹)`` (rarely switching, see
        :mod:`glmbandits.estimation.schedule`).
    refit_growth : float, default 2.0
        The det V_s growth factor (> 1) that triggers a lazy refit.
    refit_tol : float, default 0.03
        How exactly a stage's refit solves eq. (3), relative to its width
        (>= 0): a refit stops once the exact gradient certifies
        ``‖θ̂^{(s)} - θ̂^{(s)}_exact‖_{V_s} <= refit_tol·α`` (needs l2 > 0; see
        :func:`glmbandits.estimation.certificate.certified_v_norm_error`), so every
        ``m_a`` is the exact one up to ``refit_tol·w_a``. 0: only the strict
        gradient test of :func:`glmbandits.fit_glm`. As for
        :class:`~glmbandits.UCBGLM`, in both refit modes (lazy refits are
        solved by :func:`glmbandits.estimation.lazy.lazy_newton_refit`).

    Attributes
    ----------
    n_stages : int
        S = ⌊log₂ T⌋.
    psi_ : list of list of int
        ``psi_[s]`` holds the (0-based) rounds in Ψ_s, for s = 0..S.
    initial_rounds_ : list of int
        The rounds in 𝓕.
    stage_estimates_ : list of GLMEstimate
        CB-GLM's estimate on Ψ_s ∪ 𝓕 for s = 1..S (index 0 unused: None).
    last_stage_ : int
        Stage at which the last ``select`` decided (``INITIAL`` = -1 in 𝓕,
        0 for step c, s >= 1 for step b).
    last_candidates_ : ndarray of bool
        A_s at that stage.

    References
    ----------
    Li, Lu & Zhou (2017), ICML, Algorithms 2–3, Lemma 4 and Theorem 3;
    Auer (2003), SupLinRel.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import SupCBGLM
    >>> policy = SupCBGLM(n_features=2, horizon=100, tau=2, seed=1)
    >>> for _ in range(3):
    ...     contexts = np.array([[1.0, 0.0], [0.0, 1.0]])
    ...     a = policy.select(contexts)
    ...     policy.update(contexts[a], 1.0)
    >>> policy.n_stages, len(policy.initial_rounds_)
    (6, 2)
    """

    #: Always a family here (the family-free policies of ``Policy`` keep ``None``).
    family: GLMFamily

    def __init__(
        self,
        n_features: int,
        family: Any = "logistic",
        horizon: int = 10_000,
        alpha: float = 0.5,
        tau: int | None = None,
        l2: float = 1.0,
        seed: SeedLike = None,
        *,
        refit: str = "every_round",
        refit_growth: float = 2.0,
        refit_tol: float = 0.03,
        exploration_floor: float = 0.0,
    ) -> None:
        super().__init__(n_features, family, seed, exploration_floor)
        owner = type(self).__name__
        self.horizon = check_int(horizon, owner, "horizon", minimum=2)
        self.alpha = check_positive(alpha, owner, "alpha")
        self.tau = 2 * self.n_features if tau is None else check_int(tau, owner, "tau", minimum=0)
        keep_given(self, tau=tau)  # get_params reports tau as given (None: 2d)
        self.l2 = check_nonnegative(l2, owner, "l2")
        self.refit, self.refit_growth = check_refit(refit, refit_growth, owner)
        self.refit_tol = check_nonnegative(refit_tol, owner, "refit_tol")
        self.n_stages = int(math.floor(math.log2(self.horizon)))
        self.snapshots_: list[RarelySwitchingSnapshot | None] = [
            RarelySwitchingSnapshot(self.refit_growth) if self.refit == "lazy" else None
            for _ in range(self.n_stages + 1)]
        self.initial_estimate_ = GLMEstimate(self.n_features, self.family, self.l2,
                                             column_copy=self.refit == "every_round",
                                             lazy=self.refit == "lazy")
        self.stage_estimates_: list[GLMEstimate | None] = [None] * (self.n_stages + 1)
        self.psi_: list[list[int]] = [[] for _ in range(self.n_stages + 1)]
        self.initial_rounds_: list[int] = []
        self.last_stage_: int | None = None
        self.last_candidates_: np.ndarray | None = None
        self._pending: tuple[int, np.ndarray] | None = None

    @classmethod
    def from_theory(cls, n_features: int, horizon: int, n_actions: int, family: Any = "logistic",
                    *, theta_norm: float, delta: float = 0.05, sigma: float | None = None,
                    seed: SeedLike = None, refit_tol: float = 0.0) -> "SupCBGLM":
        """SupCB-GLM as Theorem 3 analyses it.

        Algorithms 2–3 exactly: every stage's estimate is the unregularised MLE of
        eq. (3) on Ψ_s ∪ 𝓕 (``l2=0``), solved to the strict gradient test whenever
        Ψ_s grows (``refit="every_round"``, ``refit_tol=0``), with Theorem 3's
        ``τ = √(dT)`` (:func:`glmbandits.theory.supcb_glm_tau`) and
        ``α = (3σ/κ)√(2 log(TK/δ))`` (:func:`glmbandits.theory.supcb_glm_alpha`).
        κ is the family's κ at radius ``theta_norm + 1``; σ defaults to the family's
        sub-Gaussian constant. Theorem 3 also needs ``T >= T_0`` of its eq. (8),
        which involves unspecified constants and is not checked. The practical
        defaults of the constructor (``l2=1``, ``refit_tol=0.03``) are not used;
        see ``docs/guarantees.md``.

        Parameters
        ----------
        refit_tol : float, default 0
            A tolerance ε in [0, 1) is paid for by widening α to ``α/(1 - ε)``
            (:func:`glmbandits.theory.widen_for_refit_tol`: ``|m_a - x_a'θ*| <= w_a``
            keeps holding with the widened widths, and the bound grows by 1/(1 - ε)).
            With ``l2=0`` refits are exact anyway, so ε > 0 only widens α.

        References
        ----------
        Li, Lu & Zhou (2017), Algorithms 2–3, eq. (3), Lemma 5 and Theorem 3.

        Examples
        --------
        >>> policy = SupCBGLM.from_theory(4, 900, 10, theta_norm=1.0, seed=0)
        >>> policy.l2, policy.refit, policy.refit_tol, policy.tau
        (0.0, 'every_round', 0.0, 60)
        """
        owner = f"{cls.__name__}.from_theory"
        kappa, sigma = kappa_and_sigma(family, theta_norm, sigma, owner)
        alpha = widen_for_refit_tol(supcb_glm_alpha(horizon, n_actions, delta, sigma, kappa),
                                    refit_tol, owner)
        return cls(n_features, family, horizon, alpha, supcb_glm_tau(n_features, horizon),
                   0.0, seed, refit="every_round", refit_tol=refit_tol)

    # -- the screening of Algorithm 3 ---------------------------------------
    def _stage_estimate(self, stage: int) -> GLMEstimate:
        estimate = self.stage_estimates_[stage]
        if estimate is None:  # first use: start from the shared initial samples 𝓕
            estimate = self.initial_estimate_.copy()
            self.stage_estimates_[stage] = estimate
        return estimate

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        if self.initial_estimate_.n < self.tau:
            action, scores, probabilities = self._choose_max(tied_scores(X.shape[0]))
            self._record(INITIAL, np.ones(X.shape[0], dtype=bool), X[action])
            return action, scores, probabilities
        candidates = np.ones(X.shape[0], dtype=bool)
        exploit_width = 1.0 / math.sqrt(self.horizon)
        stage = 1
        v_norm_tol = self.refit_tol * self.alpha  # alpha may be set after __init__
        while True:
            estimate = self._stage_estimate(stage)
            estimate.v_norm_tol = v_norm_tol
            snapshot = self.snapshots_[stage]
            if snapshot is not None:
                theta, V_inv = snapshot.current(estimate)
            else:
                theta, V_inv = estimate.theta, estimate.V_inv
            scores = ucb_scores(X, theta, V_inv, self.alpha)
            threshold = 2.0 ** (-stage)
            widths = np.where(candidates, scores.width, -np.inf)
            if np.any(widths > threshold):  # step 2b: explore at stage s
                action, probabilities = argmax_distribution(widths, self.rng_)
                self._record(stage, candidates, X[action])
                return action, scores, probabilities
            means = np.where(candidates, scores.mean, -np.inf)
            if np.all(widths <= exploit_width) or stage >= self.n_stages:  # step 2c
                action, probabilities = argmax_distribution(means, self.rng_)
                self._record(0, candidates, X[action])
                return action, scores, probabilities
            candidates = candidates & (means >= means.max() - 2.0 * threshold)  # step 2d
            stage += 1

    def _record(self, stage: int, candidates: np.ndarray, x: np.ndarray) -> None:
        self.last_stage_ = stage
        self.last_candidates_ = candidates
        self._pending = (stage, x.copy())

    def _floor_action(self, X: np.ndarray, action: int) -> None:
        """An exploration-floor round: its sample goes to no stage's estimate (as a
        step 2c round), so each stage's samples stay chosen by that stage's widths
        alone; during the τ initial rounds it is an initial (uniform) sample as before."""
        stage = self._pending[0] if self._pending is not None else 0
        assert self.last_candidates_ is not None  # recorded by the select just made
        self._record(INITIAL if stage == INITIAL else 0, self.last_candidates_, X[action])

    def _check_sample(self, x: np.ndarray, owner: str) -> None:
        if self._pending is None:
            raise ValueError(f"{owner}: x must be the row chosen by the preceding select(); "
                             "got an update with no pending select")
        if not np.array_equal(x, self._pending[1]):
            raise ValueError(f"{owner}: x must be the row chosen by the preceding select() "
                             f"({self._pending[1].tolist()}), got {x.tolist()}")

    def _check_batch(self, owner: str) -> None:
        raise ValueError(f"{owner}: SupCBGLM learns a sample into the stage that chose it, "
                         "so samples cannot be given without their decisions; use "
                         "decide() and reward_batch() (or select/update one at a time)")

    def _decision_tag(self) -> int:
        """The stage of the decision just made (and the ``update`` path forgets it)."""
        assert self._pending is not None  # recorded by the select just made
        stage = self._pending[0]
        self._pending = None
        return stage

    def _learn(self, x: np.ndarray, reward: float) -> None:
        assert self._pending is not None  # _check_sample refused an update without one
        stage, _ = self._pending
        self._pending = None
        self._learn_at_stage(x, reward, stage)

    def _learn_decided(self, x: np.ndarray, reward: float, tag: int | None) -> None:
        assert tag is not None  # every SupCB-GLM decision records its stage (_decision_tag)
        self._learn_at_stage(x, reward, tag)

    def _learn_at_stage(self, x: np.ndarray, reward: float, stage: int) -> None:
        """Add a sample to the set its decision chose: 𝓕, Ψ_0 or Ψ_s (Algorithm 3).

        A sample of 𝓕 joins every stage estimate already formed (each estimates on
        Ψ_s ∪ 𝓕); with immediate rewards all of 𝓕 arrives before any stage
        estimate is formed, with delayed rewards (``decide``/``reward``) it may not.
        The round index recorded is the sample's position in learning order.
        """
        round_index = self.n_updates_
        if stage == INITIAL:
            self.initial_estimate_.add(x, reward)
            for estimate in self.stage_estimates_:
                if estimate is not None:
                    estimate.add(x, reward)
            self.initial_rounds_.append(round_index)
        else:
            if stage >= 1:
                self._stage_estimate(stage).add(x, reward)
            self.psi_[stage].append(round_index)
