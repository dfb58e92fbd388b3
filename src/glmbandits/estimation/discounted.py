"""Discounted estimates: exponential forgetting with weights ``γ^{t-s}``.

Russac, Vernade & Cappé (2019) (D-LinUCB) and Russac, Cappé & Garivier (2020)
(D-GLUCB) forget the past by weighting the sample of round s, at round t, by
``γ^{t-s}`` (0 < γ <= 1). The pieces here are the estimates those policies hold:

* :class:`DiscountedGram`: the two Gram matrices of D-LinUCB's Algorithm 1,

  .. math:: V_t = \\gamma V_{t-1} + x_t x_t' + (1-\\gamma)\\lambda I
            = \\sum_{s \\le t} \\gamma^{t-s} x_s x_s' + \\lambda I,

  .. math:: \\tilde V_t = \\gamma^2 \\tilde V_{t-1} + x_t x_t' + (1-\\gamma^2)\\lambda I
            = \\sum_{s \\le t} \\gamma^{2(t-s)} x_s x_s' + \\lambda I,

  (``V_0 = Ṽ_0 = λI``; the right-hand sides follow by induction), and
  ``V_t⁻¹ Ṽ_t V_t⁻¹``, the matrix of D-LinUCB's width (Algorithm 1; Theorem 1).
  The paper writes the same estimator with growing weights ``w_s = γ^{-s}`` and
  regularisation ``λ_t = γ^{-t}λ``; multiplying through by ``γ^t`` gives the
  normalised form kept here, in which no ``γ^{-t}`` appears (that form overflows
  float64 after ``t ≈ 709/(1-γ)`` rounds, 70 000 rounds at γ = 0.99).
* :class:`DiscountedRidgeEstimate`: D-LinUCB's discounted least squares
  ``θ̂_t = V_t⁻¹ b_t`` with ``b_t = γ b_{t-1} + r_t x_t``, exact and recursive.
* :class:`DiscountedGLMEstimate`: D-GLUCB's discounted (weighted, penalised) MLE,
  the root of

  .. math:: \\sum_{s \\le t} \\gamma^{t-s} (\\mu(x_s'\\theta) - r_s) x_s
            + \\lambda c_\\mu \\theta = 0,

  solved by the project's Newton solver with sample weights
  (:func:`glmbandits.estimation.mle.solve_estimating_equation`).

Cost per round, and what is exact.

* **Gram matrices.** ``V_t`` is *not* a rank-one update of ``V_{t-1}``: the term
  ``(1-γ)λI`` changes every eigenvalue, so no Sherman–Morrison form of ``V_t⁻¹`` is
  exact. (Rescaling ``V⁻¹`` by ``1/γ`` and then a Sherman–Morrison update is exact
  only for ``V_t = γV_{t-1} + x x'``, whose ridge decays as ``γ^tλ``: a different
  estimator, without the paper's guarantee.) Here the unregularised sums
  ``M_t = γM_{t-1} + x x'`` and ``M̃_t = γ²M̃_{t-1} + x x'`` are kept in O(d²),
  exactly the paper's recursion, and ``V_t⁻¹ = (M_t + λI)⁻¹`` is re-factored by
  Cholesky, O(d³) per round, with ``V⁻¹ṼV⁻¹`` another O(d³). Nothing depends on t
  (the cost of the authors' own implementation, which takes a pseudo-inverse
  every round).
* **Discounted MLE.** A GLM's estimating equation is not a running sum of the
  samples, so the root has no exact recursive form. What exists is a truncation:
  a sample ``k`` rounds old has weight ``γ^k``, and the samples older than
  ``W = ⌈log ε / log γ⌉`` rounds (:func:`discount_memory`) together weigh
  ``γ^W/(1-γ) <= ε/(1-γ)``, a fraction ε of the total weight ``1/(1-γ)``. Keeping
  only the last W samples (a ring buffer,
  :class:`~glmbandits.estimation.windowed.SlidingWindow`) changes the equation by
  at most ``ε·R/(1-γ)`` in norm, ``R = max_s |μ(x_s'θ) - r_s|·‖x_s‖``, so (the
  equation being ``λc_μ``-strongly monotone) the root moves by at most
  ``ε·R/((1-γ)λc_μ)``. At the default ε = 1e-12 that is below the solver's own
  tolerance. A refit, warm-started at the previous root, is one to three Newton
  passes over ``min(t, W)`` samples: O(W d² + d³), bounded in t; W is
  ``log(1/ε)/(1-γ)`` to first order (2 750 at γ = 0.99, 27 600 at γ = 0.999).
  ``benchmarks/bench_drift_policies.py`` measures the cost at t = 10³ and 10⁴.

References
----------
Russac, Vernade & Cappé (2019), "Weighted Linear Bandits for Non-Stationary
Environments", NeurIPS, Algorithm 1 (D-LinUCB) and Theorem 1. Russac, Cappé &
Garivier (2020), "Algorithms for Non-Stationary Generalized Linear Bandits",
arXiv:2003.10113 (D-GLUCB, the discounted MLE).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg

from ..families import GLMFamily
from .checkpoint import Checkpoint, checkpoint
from .windowed import SlidingWindow, WindowRefits

__all__ = ["discount_memory", "DiscountedGram", "DiscountedRidgeEstimate",
           "DiscountedGLMEstimate"]

#: Default ε of :func:`discount_memory`: the total weight a discounted MLE may drop.
TRUNCATION = 1e-12


def discount_memory(gamma: float, truncation: float = TRUNCATION) -> int:
    """W, the rounds a discounted MLE keeps: ``⌈log ε / log γ⌉`` (at least 1).

    The samples older than W rounds weigh ``Σ_{k>=W} γ^k = γ^W/(1-γ) <= ε/(1-γ)``
    together, at most a fraction ε of the total weight ``1/(1-γ)`` (see the module
    docstring for what dropping them does to the root).

    Parameters
    ----------
    gamma : float
        The discount γ in (0, 1).
    truncation : float
        ε in (0, 1).

    Examples
    --------
    >>> discount_memory(0.99), discount_memory(0.9, 1e-3), discount_memory(0.5, 0.9)
    (2750, 66, 1)
    """
    return max(1, math.ceil(math.log(truncation) / math.log(gamma)))


def _symmetric(matrix: np.ndarray) -> np.ndarray:
    symmetric: np.ndarray = 0.5 * (matrix + matrix.T)
    return symmetric


class DiscountedGram:
    """``V_t``, ``Ṽ_t`` and ``V_t⁻¹ Ṽ_t V_t⁻¹`` of D-LinUCB (Russac et al. 2019, Algorithm 1).

    Parameters
    ----------
    n_features : int
        Dimension d.
    gamma : float
        Discount γ in (0, 1] (1: ``V = Ṽ = λI + Σ x x'``, the stationary Gram matrix).
    l2 : float
        λ > 0.

    Attributes
    ----------
    M_, M2_ : ndarray of shape (d, d)
        ``Σ_s γ^{t-s} x_s x_s'`` and ``Σ_s γ^{2(t-s)} x_s x_s'`` (``V_t - λI``, ``Ṽ_t - λI``).
    V_inv_ : ndarray of shape (d, d)
        ``V_t⁻¹``.
    width_matrix_ : ndarray of shape (d, d)
        ``V_t⁻¹ Ṽ_t V_t⁻¹``: D-LinUCB's width of x is ``β·sqrt(x' V⁻¹ṼV⁻¹ x)``.
    n_ : int
        Samples added.

    Examples
    --------
    >>> import numpy as np
    >>> gram = DiscountedGram(2, gamma=0.5, l2=1.0)
    >>> gram.add(np.array([1.0, 0.0]))
    >>> gram.add(np.array([1.0, 0.0]))
    >>> float(gram.V[0, 0]), float(gram.V_tilde[0, 0])  # 1 + 0.5 + 1, 1 + 0.25 + 1
    (2.5, 2.25)
    """

    def __init__(self, n_features: int, gamma: float, l2: float) -> None:
        self.gamma = gamma
        self.l2 = l2
        self.M_ = np.zeros((n_features, n_features))
        self.M2_ = np.zeros((n_features, n_features))
        self.V_inv_ = np.eye(n_features) / l2
        self.width_matrix_ = np.eye(n_features) / l2
        self.n_ = 0

    @property
    def V(self) -> np.ndarray:
        """``V_t = Σ γ^{t-s} x x' + λI`` (a new array)."""
        V: np.ndarray = self.M_ + self.l2 * np.eye(self.M_.shape[0])
        return V

    @property
    def V_tilde(self) -> np.ndarray:
        """``Ṽ_t = Σ γ^{2(t-s)} x x' + λI`` (a new array)."""
        V_tilde: np.ndarray = self.M2_ + self.l2 * np.eye(self.M2_.shape[0])
        return V_tilde

    def add(self, x: np.ndarray) -> None:
        """One round: ``V ← γV + xx' + (1-γ)λI``, ``Ṽ ← γ²Ṽ + xx' + (1-γ²)λI``; O(d³)."""
        outer = x[:, None] * x
        self.M_ *= self.gamma
        self.M_ += outer
        self.M2_ *= self.gamma * self.gamma
        self.M2_ += outer
        V = self.V
        try:
            V_inv = linalg.cho_solve(linalg.cho_factor(V, lower=True, check_finite=False),
                                     np.eye(V.shape[0]), check_finite=False)
        except linalg.LinAlgError:  # not numerically SPD (rows near 1e50): pseudo-inverse
            V_inv = np.linalg.pinv(V)
        self.V_inv_ = _symmetric(V_inv)
        self.width_matrix_ = _symmetric(self.V_inv_ @ self.V_tilde @ self.V_inv_)
        self.n_ += 1

    def _checkpoint(self) -> Checkpoint:
        """A checkpoint for a transactional ``Policy.update`` (the d×d matrices)."""
        return checkpoint(self)


class DiscountedRidgeEstimate:
    """D-LinUCB's discounted least squares (Russac et al. 2019, Algorithm 1, updating phase).

    ``θ̂_t = V_t⁻¹ b_t`` minimises ``Σ_s γ^{t-s}(r_s - x_s'θ)² + λ‖θ‖²`` (the paper's
    weighted least squares with ``w_s = γ^{-s}``, ``λ_t = γ^{-t}λ``, multiplied by
    ``γ^t``), with ``b_t = γ b_{t-1} + r_t x_t``. O(d³) per sample, no history.

    Parameters
    ----------
    n_features : int
    gamma : float
        Discount γ in (0, 1] (1: the ridge regression of LinUCB).
    l2 : float
        λ > 0.

    Attributes
    ----------
    gram_ : DiscountedGram
        ``V_t``, ``Ṽ_t`` and the width matrix.
    b_ : ndarray of shape (d,)
        ``Σ_s γ^{t-s} r_s x_s``.
    theta_ : ndarray of shape (d,)
        θ̂_t.

    Examples
    --------
    >>> import numpy as np
    >>> estimate = DiscountedRidgeEstimate(1, gamma=0.5, l2=1.0)
    >>> estimate.add(np.array([1.0]), 4.0)
    >>> estimate.add(np.array([1.0]), 0.0)
    >>> estimate.theta_  # (0.5·4 + 0)/(0.5 + 1 + 1)
    array([0.8])
    """

    def __init__(self, n_features: int, gamma: float, l2: float) -> None:
        self.gamma = gamma
        self.gram_ = DiscountedGram(n_features, gamma, l2)
        self.b_ = np.zeros(n_features)
        self.theta_ = np.zeros(n_features)

    def add(self, x: np.ndarray, reward: float) -> None:
        """Discount the past by γ and add one sample."""
        self.gram_.add(x)
        self.b_ *= self.gamma
        self.b_ += reward * x
        self.theta_ = self.gram_.V_inv_ @ self.b_

    def _checkpoint(self) -> Checkpoint:
        """A checkpoint for a transactional ``Policy.update``."""
        return checkpoint(self)


class DiscountedGLMEstimate(WindowRefits):
    """D-GLUCB's discounted MLE over the last W samples, with the two discounted Gram matrices.

    θ̂_t is the root of ``Σ_{s<=t} γ^{t-s}(μ(x_s'θ) - r_s)x_s + penalty·θ = 0``
    (Russac, Cappé & Garivier 2020, the discounted maximum-likelihood equation of
    D-GLUCB, where ``penalty = λc_μ``), restricted to the last ``memory`` samples
    (see the module docstring: :func:`discount_memory` W drops a fraction ε of the
    weight). It is re-solved lazily, warm-started at the previous root, by
    :func:`~glmbandits.estimation.mle.solve_estimating_equation` with the weights
    ``γ^{age}`` (:func:`~glmbandits.estimation.windowed.refit_window`).

    Parameters
    ----------
    n_features : int
    family : GLMFamily
        The link μ.
    gamma : float
        Discount γ in (0, 1] (1 with ``memory`` >= t: the stationary ridge MLE).
    l2 : float
        λ > 0 of the Gram matrices ``V_t = Σγ^{t-s}xx' + λI`` and ``Ṽ_t``.
    penalty : float
        The ridge of the equation, > 0 (D-GLUCB: ``λ c_μ``).
    memory : int
        W >= 1, the samples kept (:func:`discount_memory`).
    tol, max_iter : float, int
        The solver's stopping rule (``tol`` times the total weight) and iteration cap.

    Attributes
    ----------
    gram_ : DiscountedGram
        ``V_t``, ``Ṽ_t`` over *all* samples (exact recursions).
    window_ : SlidingWindow
        The last W samples.
    theta_ : ndarray of shape (d,)
        The last root (zeros before the first fit).
    n_fits_, n_failed_fits_ : int
        Refits, and refits that stopped short of the tolerance.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits.families import get_family
    >>> estimate = DiscountedGLMEstimate(2, get_family("logistic"), gamma=0.9, l2=1.0,
    ...                                  penalty=0.2, memory=discount_memory(0.9))
    >>> for t in range(5):
    ...     estimate.add(np.array([1.0, 0.1 * t]), 1.0)
    >>> estimate.weights().round(4).tolist()  # oldest first
    [0.6561, 0.729, 0.81, 0.9, 1.0]
    >>> bool(estimate.theta[0] > 0)
    True
    """

    def __init__(self, n_features: int, family: GLMFamily, gamma: float, l2: float,
                 penalty: float, memory: int, tol: float = 1e-8, max_iter: int = 50) -> None:
        self.family = family
        self.gamma = gamma
        self.penalty = penalty
        self.tol = tol
        self.max_iter = max_iter
        self.gram_ = DiscountedGram(n_features, gamma, l2)
        self.window_ = SlidingWindow(n_features, memory)
        self.theta_ = np.zeros(n_features)
        self.stale_ = False
        self.n_fits_ = 0
        self.n_failed_fits_ = 0

    @property
    def n(self) -> int:
        """Samples in the equation, ``min(t, W)``."""
        return self.window_.n_

    def add(self, x: np.ndarray, reward: float) -> None:
        """One round: the Gram matrices discounted and updated, the sample stored."""
        self.gram_.add(x)
        self.window_.append(x, reward)
        self.stale_ = True

    def weights(self) -> np.ndarray:
        """``γ^{age}`` of the samples held, in the buffer's slot order (the newest: 1)."""
        window = self.window_
        ages = (window.next_ - 1 - np.arange(window.n_)) % window.size
        weights: np.ndarray = self.gamma ** ages.astype(np.float64)
        return weights

    def _refit_penalty(self) -> float:
        return self.penalty

    def _refit_weights(self) -> np.ndarray:
        return self.weights()
