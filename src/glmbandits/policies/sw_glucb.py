"""SW-GLUCB: the sliding-window GLM UCB of Russac, Cappé & Garivier (2020)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import (SeedLike, check_int, check_nonnegative, check_positive,
                           check_probability)
from ..estimation.windowed import WindowedGLMEstimate
from ..families import GLMFamily, get_family
from ..theory import kappa_and_sigma
from .base import ActionScores, Policy, gram_norms

__all__ = ["SWGLUCB"]


class SWGLUCB(Policy):
    """SW-GLUCB: optimism on the GLM MLE of the last τ rounds only.

    Every round t (Russac, Cappé & Garivier 2020, SW-GLUCB):

    1. θ̂_t solves the estimating equation over the sliding window,
       ``Σ_{s=max(1,t-τ)}^{t-1} (Y_s - μ(X_s'θ)) X_s - λθ = 0``, and
       ``V_t = λI + Σ_{s=max(1,t-τ)}^{t-1} X_s X_s'``
       (:class:`~glmbandits.estimation.windowed.WindowedGLMEstimate`: a ring buffer of
       the τ samples, the project's Newton solver warm-started at θ̂_{t-1}, V⁻¹ by one
       rank-one update and one downdate);
    2. ``a_t = argmax_a μ(x_a'θ̂_t) + ρ‖x_a‖_{V_t⁻¹}`` (the GLM-UCB index of Filippi et
       al. 2010 on the windowed estimate; ties uniform).

    The paper's projection of θ̂_t onto ``{‖θ‖ <= S}`` (the windowed form of Filippi et
    al.'s non-convex projection) is not applied: with λ > 0 the windowed MLE always
    exists, and ``scores`` use it directly (as UCB-GLM uses the MLE of Li et al.).
    With ``window >= T`` nothing is forgotten and θ̂_t, V_t are UCB-GLM's (``l2`` the same).

    Per-round cost: O(τ d² + d³) per Newton iteration of the refit (one to three
    iterations from the warm start), O(d²) for V⁻¹, O(K d²) to score; memory O(τ d + d²).
    Flat in t: ``benchmarks/bench_window_policies.py`` measures it at t = 10³ and 10⁴.
    No exact online form of the windowed MLE exists (samples leave the sum).

    Parameters
    ----------
    n_features : int
        Feature dimension d.
    family : str or GLMFamily, default "logistic"
        Reward family (link μ).
    alpha : float, default 1.0
        ρ > 0, the width multiplier. :meth:`from_theory` computes the paper-style ρ.
    window : int, default 500
        τ >= 1, the number of most recent samples the estimate uses.
    l2 : float, default 1.0
        Ridge λ > 0.
    seed : int, Generator, SeedSequence or None
        Tie-breaking and the exploration floor.
    exploration_floor : float in [0, 1], default 0.0
        Play an action drawn uniformly at random with probability ε (see
        :class:`~glmbandits.policies.base.Policy`).

    Attributes
    ----------
    estimate_ : WindowedGLMEstimate
        The window, θ̂ and V⁻¹ (saved with the policy: the window is part of the model).
    theta_, V_inv_ : ndarray
        The current θ̂ (of the last refit) and V⁻¹.

    References
    ----------
    Russac, Cappé & Garivier (2020), "Algorithms for Non-Stationary Generalized Linear
    Bandits", arXiv:2003.10113: SW-GLUCB, the sliding-window MLE with a GLM-UCB width,
    dynamic regret Õ(d^{2/3} G^{1/3} T^{2/3}) for G breakpoints. Filippi, Cappé, Garivier
    & Szepesvári (2010), NeurIPS (the index μ(x'θ̂) + ρ‖x‖_{V⁻¹}).

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import SWGLUCB
    >>> policy = SWGLUCB(n_features=2, window=3, seed=0)
    >>> for t in range(5):
    ...     policy.update(np.array([1.0, 0.0]), float(t % 2))
    >>> policy.estimate_.n, policy.n_updates_
    (3, 5)
    """

    #: Always a family here (the family-free policies of ``Policy`` keep ``None``).
    family: GLMFamily

    def __init__(self, n_features: int, family: Any = "logistic", alpha: float = 1.0,
                 window: int = 500, l2: float = 1.0, seed: SeedLike = None, *,
                 exploration_floor: float = 0.0) -> None:
        super().__init__(n_features, family, seed, exploration_floor)
        owner = type(self).__name__
        self.alpha = check_positive(alpha, owner, "alpha")
        self.window = check_int(window, owner, "window", minimum=1)
        self.l2 = check_positive(l2, owner, "l2")
        self.estimate_ = WindowedGLMEstimate(self.n_features, self.family, self.window,
                                             self.l2)

    @staticmethod
    def theory_window(n_features: int, horizon: int, breakpoints: int) -> int:
        """τ = ⌈(dT/G)^{2/3}⌉, within [d, T]: the window of the Õ(d^{2/3}G^{1/3}T^{2/3}) rate.

        After each of the G breakpoints the window holds stale samples for τ rounds
        (a bias of order Gτ); the estimation term over T rounds of τ-sample windows is
        of order dT/√τ (up to logarithms). ``Gτ = dT/√τ`` gives ``τ = (dT/G)^{2/3}`` and
        the dynamic regret ``d^{2/3}G^{1/3}T^{2/3}`` of Russac et al. (2020).

        Examples
        --------
        >>> SWGLUCB.theory_window(5, 10_000, 4)
        539
        """
        owner = "SWGLUCB.theory_window"
        d = check_int(n_features, owner, "n_features", minimum=1)
        T = check_int(horizon, owner, "horizon", minimum=1)
        G = check_int(breakpoints, owner, "breakpoints", minimum=1)
        return int(min(max(math.ceil((d * T / G) ** (2.0 / 3.0)), d), T))

    @classmethod
    def from_theory(cls, n_features: int, horizon: int, breakpoints: int,
                    family: Any = "logistic", *, theta_norm: float, delta: float = 0.05,
                    sigma: float | None = None, l2: float = 1.0,
                    seed: SeedLike = None) -> "SWGLUCB":
        """SW-GLUCB with τ from :meth:`theory_window` and a width that holds w.p. 1 - δ.

        ``ρ = (L_μ/κ)·β_τ(δ)`` with
        ``β_τ(δ) = √λ·S + σ√(2 log(T/δ) + d log(1 + τ/(dλ)))``: the self-normalised
        bound of Abbasi-Yadkori, Pál & Szepesvári (2011, Theorem 2) for the τ samples of
        one window, at level δ/T so that it holds for all T windows at once (a union
        bound), turned into a bound on the estimate by κ (Li et al. 2017, proof of
        Theorem 1) and onto the reward scale by L_μ (the index is μ(x'θ̂) + ρ‖x‖_{V⁻¹}).
        κ and L_μ are taken at radius ``theta_norm + 1`` (‖x‖ <= 1), σ is the family's
        sub-Gaussian constant unless given. This is the paper's form of width
        (Russac et al. 2020, SW-GLUCB); its exact constants could not be checked
        against the paper's text.

        Examples
        --------
        >>> policy = SWGLUCB.from_theory(5, 10_000, 4, theta_norm=1.0, seed=0)
        >>> policy.window, round(policy.alpha, 2)
        (539, 10.62)
        """
        owner = f"{cls.__name__}.from_theory"
        d = check_int(n_features, owner, "n_features", minimum=1)
        T = check_int(horizon, owner, "horizon", minimum=1)
        G = check_int(breakpoints, owner, "breakpoints", minimum=1)
        kappa, sigma = kappa_and_sigma(family, theta_norm, sigma, owner)
        delta = check_probability(delta, owner, "delta")
        lam = check_positive(l2, owner, "l2")
        S = check_nonnegative(theta_norm, owner, "theta_norm")
        tau = cls.theory_window(d, T, G)
        beta = math.sqrt(lam) * S + sigma * math.sqrt(
            2.0 * math.log(T / delta) + d * math.log1p(tau / (d * lam)))
        lipschitz = get_family(family, owner).lipschitz(S + 1.0)
        return cls(d, family, lipschitz * beta / kappa, tau, lam, seed)

    @property
    def theta_(self) -> np.ndarray:
        return self.estimate_.theta_

    @property
    def V_inv_(self) -> np.ndarray:
        return self.estimate_.V_inv_

    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        theta = self.estimate_.theta
        eta = X @ theta
        width = self.alpha * gram_norms(X, self.estimate_.V_inv_)
        return self._choose_max(ActionScores(ucb=self.family.mean(eta) + width, mean=eta,
                                             width=width, scale="reward"))

    def _learn(self, x: np.ndarray, reward: float) -> None:
        self.estimate_.add(x, reward)
