"""UCB-GLM: Algorithm 1 of Li, Lu & Zhou (2017)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._params import keep_given
from .._validation import (SeedLike, check_int, check_nonnegative, check_positive,
                           check_probability)
from ..families import GLMFamily, get_family
from ..theory import (kappa_and_sigma, ucb_glm_alpha, ucb_glm_theorem4_alpha,
                      ucb_glm_theorem4_tau, widen_for_refit_tol)
from .base import ActionScores, Policy, tied_scores, ucb_scores
from .compiled_round import rank_one_step, ucb_choice
from ..estimation.compiled import check_backend
from ..estimation.checkpoint import Checkpoint
from ..estimation.estimates import GLMEstimate
from ..estimation.schedule import RarelySwitchingSnapshot, check_refit

__all__ = ["UCBGLM"]


class UCBGLM(Policy):
    """UCB-GLM (Li, Lu & Zhou 2017, Algorithm 1).

    For the first ``tau`` rounds the action is uniform at random. Afterwards,
    every round:

    1. θ̂_t solves ``Σ_{i<t} (Y_i - μ(X_i'θ)) X_i - l2·θ = 0`` (eq. (3), ridge
       optional) by Newton's method warm-started at θ̂_{t-1};
    2. ``a_t = argmax_a x_{t,a}'θ̂_t + α‖x_{t,a}‖_{V_t⁻¹}`` with
       ``V_t = l2·I + Σ_{i<t} X_i X_i'`` kept by rank-one updates (ties uniform);
    3. after the reward, ``V_{t+1} = V_t + X_t X_t'``.

    Per-round cost: O(n_t d) for the refit over the n_t samples so far (a cached
    gradient plus one or two quasi-Newton passes, see
    :mod:`glmbandits.estimation.incremental`), plus O(K d²) to score K actions.

    With ``refit="lazy"`` the policy scores with a snapshot ``(θ̂_τ, V_τ⁻¹)``
    and refits only when ``det V`` has grown by ``refit_growth`` since the
    snapshot (rarely-switching OFUL, Abbasi-Yadkori et al. 2011, Section 5; see
    :mod:`glmbandits.estimation.schedule`): O(d log T) refits in all, so a
    round costs O(K d² + d²) amortised, independent of t, and the regret bound
    grows by at most √refit_growth.

    Parameters
    ----------
    n_features : int
        Feature dimension d.
    family : str or GLMFamily, default "logistic"
        Reward family (link μ).
    alpha : float, default 1.0
        Exploration strength α > 0. Theorem 2's value comes from
        :func:`glmbandits.theory.ucb_glm_alpha`; see :meth:`from_theory`.
    tau : int, optional
        Number of initial uniformly random rounds; default ``2 * n_features``.
    l2 : float, default 1.0
        Ridge strength λ >= 0, used both in the estimating equation and in
        ``V = λI + Σ X X'``. ``l2=0`` is the paper's exact Algorithm 1 (the MLE
        may then not exist in early rounds: the finite last Newton iterate is
        used and counted in ``n_failed_fits_``).
    seed : int, Generator, SeedSequence or None
        Randomness of the initial rounds and of tie-breaking.
    exploration_floor : float in [0, 1], default 0.0
        Play an action drawn uniformly at random with probability ε (see
        :class:`~glmbandits.policies.base.Policy`), so that the policy's own log
        has every propensity >= ε/K and supports off-policy evaluation.
    refit : {"every_round", "lazy"}, default "every_round"
        Refit the MLE before every decision (the paper's Algorithm 1) or only
        when det V has grown by ``refit_growth`` (rarely switching).
    refit_growth : float, default 2.0
        The det V growth factor (> 1) that triggers a lazy refit.
    refit_tol : float, default 0.03
        How exactly a refit solves eq. (3), relative to the confidence width
        (>= 0). A refit stops as soon as the gradient of eq. (3), computed
        exactly on all samples, certifies ``‖θ̂ - θ̂_exact‖_V <= ε α`` with
        ``ε = refit_tol``, for the exact root θ̂_exact (needs ``l2 > 0``; proof
        in :func:`glmbandits.estimation.certificate.certified_v_norm_error`: with
        ``m = max_i |X_i'θ̂|`` and ``κ̃ = min(1, κ(m + εα))`` the family's
        curvature around the data's linear predictors,
        ``‖θ̂ - θ̂_exact‖_V <= ‖g(θ̂)‖_{V⁻¹}/κ̃``). By Cauchy–Schwarz,
        ``|x'θ̂ - x'θ̂_exact| <= ε·α‖x‖_{V⁻¹}`` for every x: each UCB index of
        step 2 is the exact-MLE index up to ε times its own width, and the
        action can differ from the exact-MLE action only when the two best
        indices are within ε(w_a + w_b) of each other.

        Regret. If Theorem 1's confidence bound
        ``|x'(θ̂_exact - θ*)| <= α_c‖x‖_{V⁻¹}`` holds and ``α(1 - ε) >= α_c``,
        the perturbed index ``U(x) = x'θ̂ + α‖x‖_{V⁻¹}`` is still optimistic,
        ``U(x*) >= x*'θ*``, and ``U(x_t) <= x_t'θ* + (α_c + (1 + ε)α)‖x_t‖_{V⁻¹}``,
        so ``x*'θ* - x_t'θ* <= (α_c + (1 + ε)α)‖x_t‖_{V⁻¹}``. With
        ``α = α_c/(1 - ε)`` this is ``2α_c‖x_t‖_{V⁻¹}/(1 - ε)``, against
        ``2α_c‖x_t‖_{V⁻¹}`` for the exact MLE: the rest of the proof of
        Theorem 2 (the elliptical-potential sum) is unchanged, and the bound
        grows by the factor ``1/(1 - ε)`` (≈ 1.03 at the default). In practice
        the error is far below the certificate (about 0.1% of the width,
        median; ``docs/performance.md``).

        ``refit_tol=0`` uses only the strict gradient test
        ``max|g| <= 1e-8·max(1, n)`` of :func:`glmbandits.fit_glm` (the
        previous behaviour). Cost: about one exact gradient pass over the n
        samples per round, instead of about 2.2 for the strict test. Lazy
        refits use the same certificate at the snapshot (the snapshot's
        indices are then within ε of its own widths ``α‖x‖_{V_τ⁻¹}``, and the
        two factors combine: √refit_growth/(1 - ε)); they are solved by
        :func:`glmbandits.estimation.lazy.lazy_newton_refit`, usually in one
        Newton step and one exact pass.

    backend : {"numpy", "numba"}, default "numpy"
        ``"numba"`` scores the K actions and takes their argmax in one compiled
        call, and the update's Sherman–Morrison step in another
        (:mod:`glmbandits.policies.compiled_round`; needs the ``compiled``
        extra, else ``ImportError``). Same rule, scores equal to numpy's to
        rounding (``docs/performance.md``, "Backends and their guarantees");
        refits are numpy's either way.

    Attributes
    ----------
    theta_ : ndarray of shape (d,)
        Current estimate θ̂ (in lazy mode, of the last refit).
    snapshot_ : RarelySwitchingSnapshot or None
        In lazy mode, the ``(θ̂_τ, V_τ⁻¹)`` the scores use, and ``n_refits_``.
    V_inv_ : ndarray of shape (d, d)
        Current ``V⁻¹`` (None while l2 == 0 and V has not been formed yet).
    last_scores_ : ActionScores
        ``ucb``, ``mean`` (x'θ̂) and ``width`` (α‖x‖_{V⁻¹}) of the last ``select``.
    last_probabilities_ : ndarray of shape (K,)
        The last round's action distribution: 1/m on each of the m actions
        tied at the top UCB (uniform during the τ random rounds), mixed with
        ``exploration_floor``; ``last_propensity_`` is its entry at the chosen action.

    References
    ----------
    Li, Lu & Zhou (2017), "Provably Optimal Algorithms for Generalized Linear
    Contextual Bandits", ICML, Algorithm 1 and Theorem 2.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import UCBGLM
    >>> policy = UCBGLM(n_features=3, seed=0)
    >>> contexts = np.eye(3)
    >>> a = policy.select(contexts)
    >>> policy.update(contexts[a], 1.0)
    >>> policy.n_updates_
    1
    """

    #: Always a family here (the family-free policies of ``Policy`` keep ``None``).
    family: GLMFamily

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.setdefault("backend", "numpy")  # model files and pickles from before the option
        super().__setstate__(state)

    def __init__(
        self,
        n_features: int,
        family: Any = "logistic",
        alpha: float = 1.0,
        tau: int | None = None,
        l2: float = 1.0,
        seed: SeedLike = None,
        *,
        refit: str = "every_round",
        refit_growth: float = 2.0,
        refit_tol: float = 0.03,
        exploration_floor: float = 0.0,
        backend: str = "numpy",
    ) -> None:
        super().__init__(n_features, family, seed, exploration_floor)
        owner = type(self).__name__
        self.alpha = check_positive(alpha, owner, "alpha")
        self.tau = 2 * self.n_features if tau is None else check_int(tau, owner, "tau", minimum=0)
        keep_given(self, tau=tau)  # get_params reports tau as given (None: 2d)
        self.l2 = check_nonnegative(l2, owner, "l2")
        self.refit, self.refit_growth = check_refit(refit, refit_growth, owner)
        self.refit_tol = check_nonnegative(refit_tol, owner, "refit_tol")
        self.estimate_ = GLMEstimate(self.n_features, self.family, self.l2,
                                     column_copy=self.refit == "every_round",
                                     lazy=self.refit == "lazy")
        self.snapshot_ = RarelySwitchingSnapshot(self.refit_growth) if refit == "lazy" else None
        self.estimate_.v_norm_tol = self._v_norm_tol()
        self.backend = check_backend(backend, owner)  # last, where __setstate__ adds it

    @classmethod
    def from_theory(cls, n_features: int, horizon: int, family: Any = "logistic", *,
                    theta_norm: float, delta: float = 0.05, sigma: float | None = None,
                    tau: int | None = None, seed: SeedLike = None, theorem: int = 2,
                    refit_tol: float = 0.0) -> "UCBGLM":
        """UCB-GLM as Theorem 2 (or Theorem 4) analyses it.

        The algorithm analysed is Algorithm 1 exactly: the unregularised MLE of
        eq. (3) (``l2=0``), solved to the strict gradient test before every decision
        (``refit="every_round"``, ``refit_tol=0``), ``V_t = Σ_{i<t} X_i X_i'`` with no
        ridge, and the theorem's α and τ. The practical defaults of the constructor
        (``l2=1``, ``refit_tol=0.03``) are *not* used; ``docs/guarantees.md`` says
        what they keep and give up.

        * ``theorem=2``: ``α = (σ/κ)√(d/2·log(1 + 2T/d) + log(1/δ))``. Theorem 2's
          ``τ = Cσ₀⁻²(d + log(1/δ))`` has an unspecified universal constant C and
          σ₀² = λ_min(E[XX']) of the unknown context distribution, so it cannot be
          computed: pass ``tau`` (default ``2 * n_features``). What the proof uses is
          Lemma 3's premise ``λ_min(V_{τ+1}) >= 1``; ``tau >= n_features`` is
          required because it fails for sure with fewer samples.
        * ``theorem=4``: ``τ = ⌈(8σ²/κ²) d log T⌉`` and ``α = L_μσ/κ`` (the largest
          Theorem 4 allows, :func:`glmbandits.theory.ucb_glm_theorem4_alpha`), with
          ``L_μ`` at the same radius as κ. Theorem 4 also needs its assumption (14),
          ``Σ_{t>τ} λ_min(V_t)^{-1/2} <= c√T``, which cannot be checked in advance,
          and ``δ >= 1/T``.

        κ is the family's :meth:`~glmbandits.families.GLMFamily.kappa` at radius
        ``theta_norm + 1`` (Assumption 1 with ‖x‖ <= 1) and σ defaults to the
        family's sub-Gaussian constant (eq. (2)).

        Parameters
        ----------
        refit_tol : float, default 0
            A tolerance ε in [0, 1) is paid for by widening α to ``α/(1 - ε)``
            (:func:`glmbandits.theory.widen_for_refit_tol`: an ε-accurate refit moves
            every index by at most ε times its width, so the widened index is still
            optimistic, and Theorem 2's bound grows by the factor 1/(1 - ε)). With
            ``l2=0`` the refit certificate is inactive and refits are exact anyway,
            so ε > 0 only widens α. Theorem 2 only: Theorem 4 caps α at L_μσ/κ.

        References
        ----------
        Li, Lu & Zhou (2017), Algorithm 1, eq. (3), Lemma 3, Theorems 2 and 4.

        Examples
        --------
        >>> policy = UCBGLM.from_theory(5, 1000, theta_norm=1.0, seed=0)
        >>> policy.l2, policy.refit, policy.refit_tol, policy.tau, round(policy.alpha, 2)
        (0.0, 'every_round', 0.0, 10, 20.19)
        >>> UCBGLM.from_theory(5, 100_000, theta_norm=1.0, theorem=4).tau
        10444
        """
        owner = f"{cls.__name__}.from_theory"
        if check_int(theorem, owner, "theorem") not in (2, 4):
            raise ValueError(f"{owner}: theorem must be 2 or 4, got {theorem}")
        d = check_int(n_features, owner, "n_features", minimum=1)
        T = check_int(horizon, owner, "horizon", minimum=1)
        kappa, sigma = kappa_and_sigma(family, theta_norm, sigma, owner)
        if theorem == 2:
            alpha = widen_for_refit_tol(ucb_glm_alpha(d, T, delta, sigma, kappa), refit_tol,
                                        owner)
            tau = 2 * d if tau is None else check_int(tau, owner, "tau", minimum=d)
        else:
            if check_nonnegative(refit_tol, owner, "refit_tol") != 0.0:
                raise ValueError(f"{owner}: refit_tol must be 0 for Theorem 4 (its α is capped "
                                 f"at L_μσ/κ, so a tolerance cannot be paid for by widening "
                                 f"α), got {refit_tol:g}")
            if check_probability(delta, owner, "delta") < 1.0 / T:
                raise ValueError(f"{owner}: delta must be >= 1/horizon = {1.0 / T:g} for "
                                 f"Theorem 4, got {delta:g}")
            lipschitz = get_family(family, owner).lipschitz(float(theta_norm) + 1.0)
            alpha = ucb_glm_theorem4_alpha(sigma, kappa, lipschitz)
            theorem_tau = ucb_glm_theorem4_tau(d, T, sigma, kappa)
            tau = theorem_tau if tau is None else check_int(tau, owner, "tau", minimum=d)
        return cls(n_features, family, alpha, tau, 0.0, seed, refit="every_round",
                   refit_tol=refit_tol)

    def _v_norm_tol(self) -> float:
        """The estimate's certified V-norm error: ``refit_tol·α`` (both refit modes)."""
        return self.refit_tol * self.alpha

    @property
    def theta_(self) -> np.ndarray:
        return self.estimate_.theta_

    @property
    def V_inv_(self) -> np.ndarray | None:
        return self.estimate_.V_inv_

    @property
    def n_failed_fits_(self) -> int:
        return self.estimate_.n_failed_fits_

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        estimate = self.estimate_
        if estimate.n < self.tau:
            return self._choose_max(tied_scores(X.shape[0]))
        estimate.v_norm_tol = self._v_norm_tol()  # alpha may be set after __init__
        if self.snapshot_ is not None:
            theta, V_inv = self.snapshot_.current(estimate)
        else:
            theta, V_inv = estimate.theta, estimate.V_inv
        if self.backend == "numba":
            return ucb_choice(X, theta, V_inv, self.alpha, self.rng_)
        return self._choose_max(ucb_scores(X, theta, V_inv, self.alpha))

    def _learn(self, x: np.ndarray, reward: float) -> None:
        if self.backend == "numba":
            self.estimate_.add(x, reward, rank_one_step())
        else:
            self.estimate_.add(x, reward)

    def _learn_checkpoint(self) -> Checkpoint:
        return self.estimate_._add_checkpoint()  # _learn is the estimate's add
