"""Sliding-window estimates: the last τ samples in a ring buffer, and the GLM MLE over them.

Russac, Cappé & Garivier (2020), "Algorithms for Non-Stationary Generalized Linear
Bandits" (arXiv:2003.10113), forget the past with a sliding window: at round t the
estimate uses only the samples of rounds ``max(1, t - τ), …, t - 1``. Here:

* :class:`SlidingWindow` holds those τ samples in a ring buffer of fixed size τ×d: a new
  sample overwrites the oldest, so memory is O(τ d) whatever t (no O(t) growth);
* :class:`WindowedGLMEstimate` keeps ``V_t = λI + Σ_{s in window} X_s X_s'`` (its inverse
  by one Sherman–Morrison update for the new sample and one downdate for the evicted
  one, :func:`~glmbandits.estimation.gram.sherman_morrison_update` with weight -1) and
  the windowed ridge MLE θ̂_t, the root of
  ``Σ_{s in window} (Y_s - μ(X_s'θ)) X_s - λθ = 0`` (eq. (3) of Li, Lu & Zhou 2017
  restricted to the window), re-solved lazily by the project's Newton solver
  (:func:`~glmbandits.estimation.mle.solve_estimating_equation`, the one behind
  :func:`~glmbandits.estimation.mle.fit_glm`) warm-started at the previous θ̂.

Per-round cost. The refit has no exact online form (a GLM's estimating equation is not a
running sum once samples leave it), so each refit costs, per Newton iteration, one pass
over the τ window samples: O(τ d²) for the Hessian plus O(d³) for its solve; warm-started
from the previous root, one to three iterations suffice in practice. The window's
``V⁻¹`` costs O(d²) per round (one update, one downdate), plus a direct re-inversion
every τ evictions (O(τ d² + d³) once every τ rounds, O(d² + d³/τ) amortised) that keeps
the rounding of the downdates from accumulating. Nothing depends on t:
``benchmarks/bench_window_policies.py`` measures it at t = 10³ and 10⁴.
"""

from __future__ import annotations

import math

import numpy as np

from ..families import GLMFamily
from .checkpoint import Checkpoint, checkpoint
from .gram import inverse_gram, sherman_morrison_update
from .mle import GLMFit, solve_estimating_equation

__all__ = ["SlidingWindow", "WindowRefits", "WindowedGLMEstimate", "refit_window"]

#: A downdate whose ``1 - x'V⁻¹x`` falls below this is replaced by a direct inversion
#: (in exact arithmetic it is at least ``λ/(λ + ‖x‖²)`` > 0 for a sample in the window).
_DOWNDATE_FLOOR = 1e-10


class SlidingWindow:
    """The last ``size`` samples (x, reward), in a ring buffer of fixed size.

    Parameters
    ----------
    n_features : int
        Dimension d.
    size : int
        τ >= 1, the number of samples kept.

    Attributes
    ----------
    X_ : ndarray of shape (size, d)
        The buffer (zeros in the slots not written yet).
    y_ : ndarray of shape (size,)
        The rewards.
    next_ : int
        The slot the next sample is written to (the oldest sample's, once full).
    n_ : int
        Samples held, ``min(n_seen_, size)``.
    n_seen_ : int
        Samples ever appended.

    Examples
    --------
    >>> import numpy as np
    >>> window = SlidingWindow(1, 2)
    >>> for value in (1.0, 2.0, 3.0):
    ...     evicted = window.append(np.array([value]), value)
    >>> evicted
    (array([1.]), 1.0)
    >>> window.ordered()[1].tolist()
    [2.0, 3.0]
    """

    def __init__(self, n_features: int, size: int) -> None:
        self.size = size
        self.X_ = np.zeros((size, n_features))
        self.y_ = np.zeros(size)
        self.next_ = 0
        self.n_ = 0
        self.n_seen_ = 0

    def append(self, x: np.ndarray, reward: float) -> tuple[np.ndarray, float] | None:
        """Store one sample; returns the evicted (oldest) sample once the window is full."""
        slot = self.next_
        evicted = None
        if self.n_ == self.size:
            evicted = (self.X_[slot].copy(), float(self.y_[slot]))
        else:
            self.n_ += 1
        self.X_[slot] = x
        self.y_[slot] = reward
        self.next_ = (slot + 1) % self.size
        self.n_seen_ += 1
        return evicted

    @property
    def X(self) -> np.ndarray:
        """The samples held, shape (n_, d), a view in slot order (not time order)."""
        return self.X_[: self.n_]

    @property
    def y(self) -> np.ndarray:
        """Their rewards (a view, the order of :attr:`X`)."""
        return self.y_[: self.n_]

    def ordered(self) -> tuple[np.ndarray, np.ndarray]:
        """The samples held, oldest first (copies)."""
        if self.n_ < self.size:
            return self.X.copy(), self.y.copy()
        order = np.roll(np.arange(self.size), -self.next_)
        return self.X_[order], self.y_[order]

    def _checkpoint(self) -> Checkpoint:
        """A checkpoint for a transactional ``Policy.update``: O(τ d), the buffers' copies."""
        return checkpoint(self)


def refit_window(window: SlidingWindow, family: GLMFamily, l2: float, theta0: np.ndarray,
                 tol: float = 1e-8, max_iter: int = 50,
                 weights: np.ndarray | None = None) -> GLMFit:
    """The (weighted) ridge MLE of the samples a window holds, warm-started at ``theta0``.

    One Newton solve of :func:`~glmbandits.estimation.mle.solve_estimating_equation` on
    the window's buffer as it lies (slot order: the estimating equation is a sum, so
    the order of its terms does not matter; ``weights``, if given, are in that order):
    each iteration is one O(n d²) pass over the n <= τ samples plus an O(d³) solve.
    Overflow inside the solver is handled there (non-finite trial steps are rejected),
    so numpy's warnings are not the caller's.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits.families import get_family
    >>> window = SlidingWindow(1, 4)
    >>> for y in (1.0, 1.0, 0.0):
    ...     _ = window.append(np.array([1.0]), y)
    >>> fit = refit_window(window, get_family("linear"), 1.0, np.zeros(1))
    >>> round(float(fit.theta[0]), 12)  # (1 + 1 + 0) / (3 + λ)
    0.5
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return solve_estimating_equation(window.X, window.y, family, l2, theta0, tol, max_iter,
                                         weights)


class WindowRefits:
    """What every estimate held over a :class:`SlidingWindow` shares: θ̂ refitted on demand.

    A subclass sets ``family``, ``tol``, ``max_iter``, ``window_``, ``theta_``,
    ``stale_`` (True once samples arrived since the last fit), ``n_fits_`` and
    ``n_failed_fits_``, and says its ridge penalty (:meth:`_refit_penalty`) and, for
    a weighted equation, the samples' weights (:meth:`_refit_weights`).
    """

    family: GLMFamily
    tol: float
    max_iter: int
    window_: SlidingWindow
    theta_: np.ndarray
    stale_: bool
    n_fits_: int
    n_failed_fits_: int

    def _refit_penalty(self) -> float:
        raise NotImplementedError

    def _refit_weights(self) -> np.ndarray | None:
        return None

    @property
    def theta(self) -> np.ndarray:
        """θ̂ of the samples held, refitted first (warm-started) if samples arrived."""
        if self.stale_:
            fit = refit_window(self.window_, self.family, self._refit_penalty(), self.theta_,
                               self.tol, self.max_iter, self._refit_weights())
            self.theta_ = fit.theta
            self.n_fits_ += 1
            if not fit.converged:
                self.n_failed_fits_ += 1
            self.stale_ = False
        return self.theta_

    def _checkpoint(self) -> Checkpoint:
        """A checkpoint for a transactional ``Policy.update`` (the window's buffers included)."""
        return checkpoint(self)


class WindowedGLMEstimate(WindowRefits):
    """θ̂ and V⁻¹ of the last ``window`` samples (the SW-GLUCB estimate).

    Parameters
    ----------
    n_features : int
        Dimension d.
    family : GLMFamily
        The link μ.
    window : int
        τ >= 1.
    l2 : float
        Ridge λ > 0 (in the estimating equation and in V): the windowed MLE must exist
        in every round, and the downdates need ``V >= λI``.
    tol, max_iter : float, int
        The solver's stopping rule ``max|g| <= tol·max(1, n)`` and iteration cap.

    Attributes
    ----------
    window_ : SlidingWindow
        The samples.
    theta_ : ndarray of shape (d,)
        The last fit (zeros before the first).
    V_inv_ : ndarray of shape (d, d)
        ``(λI + Σ_{window} X X')⁻¹``.
    n_fits_, n_failed_fits_, n_refreshes_ : int
        Refits, refits that stopped short of the tolerance, direct re-inversions of V.

    References
    ----------
    Russac, Cappé & Garivier (2020), arXiv:2003.10113, the sliding-window MLE of
    SW-GLUCB; Li, Lu & Zhou (2017), eq. (3) (the estimating equation).

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits.families import get_family
    >>> estimate = WindowedGLMEstimate(2, get_family("logistic"), window=3, l2=1.0)
    >>> for t in range(5):
    ...     estimate.add(np.array([1.0, 0.1 * t]), 1.0)
    >>> estimate.n, estimate.window_.n_seen_, bool(estimate.theta[0] > 0)
    (3, 5, True)
    """

    def __init__(self, n_features: int, family: GLMFamily, window: int, l2: float,
                 tol: float = 1e-8, max_iter: int = 50) -> None:
        self.family = family
        self.l2 = l2
        self.tol = tol
        self.max_iter = max_iter
        self.window_ = SlidingWindow(n_features, window)
        self.theta_ = np.zeros(n_features)
        self.V_inv_ = np.eye(n_features) / l2
        self.stale_ = False
        self.n_fits_ = 0
        self.n_failed_fits_ = 0
        self.n_refreshes_ = 0

    @property
    def n(self) -> int:
        """Samples in the window."""
        return self.window_.n_

    def add(self, x: np.ndarray, reward: float) -> None:
        """Slide the window by one sample: V⁻¹ updated for x, downdated for the evicted one."""
        window = self.window_
        evicted = window.append(x, reward)
        sherman_morrison_update(self.V_inv_, x)
        if evicted is not None:
            old = evicted[0]
            u = self.V_inv_ @ old
            remaining = 1.0 - float(old @ u)
            refresh = window.n_seen_ % window.size == 0
            if refresh or not (math.isfinite(remaining) and remaining > _DOWNDATE_FLOOR):
                self.V_inv_ = inverse_gram(window.X, self.l2)
                self.n_refreshes_ += 1
            else:
                self.V_inv_ += (u[:, None] * u) / remaining
        self.stale_ = True

    def _refit_penalty(self) -> float:
        return self.l2
