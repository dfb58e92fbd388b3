"""Synthetic GLM bandits whose θ* changes over time: abrupt jumps or a smooth drift.

Both environments are :class:`~glmbandits.environments.synthetic.SyntheticGLMEnv`
with a θ* that depends on the round: the contexts are drawn, the rewards sampled
and the info dict filled by the stationary environment's own code; only θ*_t
differs. The expected rewards of a round are μ(x_{t,a}'θ*_t), so ``info["regret"]``
(what :func:`~glmbandits.simulate` and :func:`~glmbandits.simulate_batch` add up) is
the *dynamic* regret ``Σ_t max_a μ(x_{t,a}'θ*_t) - μ(x_{t,a_t}'θ*_t)`` against the
best action under the current θ*. ``info`` also carries that θ*_t (``theta_star``)
and, for the piecewise-stationary one, the index of its segment (``segment``).

- :class:`PiecewiseStationaryGLMEnv`: G breakpoints (given rounds, or G evenly
  spaced over a horizon); at each one θ* jumps to a new random direction of the
  same norm, flips to -θ*, or takes the next of a given sequence of θ*s.
- :class:`SmoothlyDriftingGLMEnv`: θ* moves along a path of total length B_T over
  the horizon: a great-circle arc at constant speed (‖θ*‖ constant), or a Gaussian
  random walk rescaled to length B_T.

:func:`make_synthetic_env` builds the stationary or a drifting environment from a
``drift`` keyword (what the ``[environment]`` table of an experiment config gives).

References: Russac, Cappé & Garivier (2020), "Algorithms for Non-Stationary
Generalized Linear Bandits", arXiv:2003.10113, Section 2 (dynamic regret, G
breakpoints); Besbes, Gur & Zeevi (2014) and Russac, Vernade & Cappé (2019),
Section 2 (the variation budget B_T = Σ_{t<T} ‖θ*_{t+1} - θ*_t‖).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import numpy as np

from .._validation import (
    SeedLike,
    as_float_array,
    check_finite,
    check_int,
    check_nonnegative,
    check_vector,
    format_value,
)
from .synthetic import SyntheticGLMEnv, mean_rewards

__all__ = ["PiecewiseStationaryGLMEnv", "SmoothlyDriftingGLMEnv", "DRIFT_KINDS",
           "JUMPS", "PATHS", "make_synthetic_env", "drift_keywords"]

#: How θ* jumps at a breakpoint of :class:`PiecewiseStationaryGLMEnv`.
JUMPS = ("random", "flip")
#: The paths of :class:`SmoothlyDriftingGLMEnv`.
PATHS = ("arc", "walk")


class _DriftingGLMEnv(SyntheticGLMEnv):
    """A SyntheticGLMEnv whose θ* is θ*_t at round t (0-based); subclasses give the path."""

    #: The regret this environment reports is dynamic (against the current θ*).
    drifts = True

    def theta_at(self, t: int) -> np.ndarray:
        """θ*_t, the parameter of round ``t`` (0-based) of the current instance."""
        t = check_int(t, f"{type(self).__name__}.theta_at", "t", minimum=0)
        return np.array(self._thetas(np.array([t]))[0])

    def variation(self, horizon: int) -> float:
        """B_T = Σ_{t=0}^{T-2} ‖θ*_{t+1} - θ*_t‖ over the first ``horizon`` rounds."""
        horizon = check_int(horizon, f"{type(self).__name__}.variation", "horizon", minimum=1)
        path = self._thetas(np.arange(horizon))
        return float(np.linalg.norm(np.diff(path, axis=0), axis=1).sum())

    def step(self, action: int) -> tuple[np.ndarray, float, dict[str, Any]]:
        """Play ``action``; ``info`` adds this round's ``theta_star`` to the stationary keys,
        and its ``regret`` is the dynamic regret (against this round's θ*)."""
        theta = self.theta_star
        extra = self._round_info()
        contexts, reward, info = super().step(action)
        info["theta_star"] = theta
        info.update(extra)
        if not self.redraw_contexts:  # the same arms, under the next round's θ*
            self._set_theta()
            self.expected_rewards = mean_rewards(self.family, self.contexts, self.theta_star)
        return contexts, reward, info

    # -- internals ------------------------------------------------------------------
    def _round_info(self) -> dict[str, Any]:
        return {}

    def _thetas(self, rounds: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _set_theta(self) -> None:
        self.theta_star = self._thetas(np.array([self.t]))[0]

    def _new_round(self) -> None:
        self._set_theta()
        super()._new_round()

    def _draw_theta(self) -> np.ndarray:
        start = super()._draw_theta()
        self._draw_path(start)
        return start

    def _draw_path(self, start: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


def _owner_checks(owner: str, n_features: Any, theta: Any, theta_norm: Any
                  ) -> tuple[int, float]:
    """d, and the norm of θ*_0 (``theta``'s, else ``theta_norm``), checked before anything."""
    d = check_int(n_features, owner, "n_features", minimum=1)
    if theta is not None:
        return d, float(np.linalg.norm(check_vector(theta, d, owner, "theta")))
    return d, check_nonnegative(theta_norm, owner, "theta_norm")


def _horizon(value: Any, owner: str) -> int | None:
    return None if value is None else check_int(value, owner, "horizon", minimum=1)


class PiecewiseStationaryGLMEnv(_DriftingGLMEnv):
    """A GLM bandit whose θ* is constant between G breakpoints and jumps at each one.

    Rounds are counted from 0; at breakpoint b the rounds t >= b use the next θ*.
    θ*_0 is drawn (or given) as in :class:`SyntheticGLMEnv`; the later θ*s are drawn
    at ``reset`` from the environment's own generator, so a seed fixes them.

    Parameters
    ----------
    n_features, n_actions, family, theta_norm, theta, contexts, redraw_contexts, seed
        As in :class:`~glmbandits.environments.synthetic.SyntheticGLMEnv`
        (``theta`` fixes θ*_0; ``theta_norm`` is ‖θ*‖ of every segment).
    breakpoints : int or sequence of int, default 1
        G, the number of breakpoints, evenly spaced over ``horizon`` (at rounds
        ``round(k T / (G + 1))``, k = 1..G), or the rounds themselves (strictly
        increasing, >= 1, and below ``horizon`` when it is given).
    horizon : int, optional
        T; required when ``breakpoints`` is a count.
    jump : {"random", "flip"}, default "random"
        At a breakpoint θ* takes a new uniformly random direction of the same norm,
        or becomes -θ*. Ignored when ``thetas`` is given.
    thetas : array-like of shape (G + 1, d), optional
        θ* of every segment, in order (then ``theta`` and ``jump`` are not used).

    Attributes
    ----------
    breakpoints_ : ndarray of int, shape (G,)
    thetas_ : ndarray of shape (G + 1, d)
        θ* of each segment of the current instance (read-only).
    theta_star : ndarray of shape (d,)
        θ* of the current round.
    segment_ : int
        Index of the current round's segment.

    Examples
    --------
    >>> from glmbandits.environments import PiecewiseStationaryGLMEnv
    >>> env = PiecewiseStationaryGLMEnv(2, 4, breakpoints=1, horizon=10, jump="flip", seed=0)
    >>> env.breakpoints_.tolist(), bool(np.allclose(env.theta_at(5), -env.theta_at(0)))
    ([5], True)
    >>> for _ in range(5):
    ...     _, _, info = env.step(0)
    >>> info["segment"], env.segment_, round(env.variation(10), 6)
    (0, 1, 6.0)

    References
    ----------
    Russac, Cappé & Garivier (2020), arXiv:2003.10113, Section 2: an abruptly
    changing environment with G breakpoints, and the dynamic regret.
    """

    def __init__(
        self,
        n_features: int,
        n_actions: int | tuple[int, int] = 20,
        family: Any = "logistic",
        theta_norm: float = 3.0,
        *,
        breakpoints: int | Sequence[int] = 1,
        horizon: int | None = None,
        jump: str = "random",
        thetas: Any = None,
        theta: Any = None,
        contexts: str = "ball",
        redraw_contexts: bool = True,
        seed: SeedLike = None,
    ) -> None:
        owner = type(self).__name__
        d, _ = _owner_checks(owner, n_features, theta, theta_norm)
        self.horizon = _horizon(horizon, owner)
        self.breakpoints_ = self._check_breakpoints(breakpoints, owner)
        if not isinstance(jump, str) or jump not in JUMPS:
            raise ValueError(f"{owner}: jump must be one of {list(JUMPS)}, got {jump!r}")
        self.jump = jump
        self._given_thetas: np.ndarray | None = None
        if thetas is not None:
            if theta is not None:
                raise ValueError(f"{owner}: theta and thetas are exclusive (thetas gives θ* of "
                                 "every segment, the first included), got both")
            array = as_float_array(thetas, "thetas", owner)
            G = self.breakpoints_.shape[0]
            if array.shape != (G + 1, d):
                raise ValueError(f"{owner}: thetas must have shape ({G + 1}, {d}) (one θ* per "
                                 f"segment of {G} breakpoint(s)), got {array.shape}")
            check_finite(array, owner, "thetas")
            self._given_thetas = array.copy()
            theta = array[0]
        self.breakpoints = breakpoints if isinstance(breakpoints, int) else list(breakpoints)
        super().__init__(n_features, n_actions, family, theta_norm, theta=theta,
                         contexts=contexts, redraw_contexts=redraw_contexts, seed=seed)

    def _check_breakpoints(self, breakpoints: Any, owner: str) -> np.ndarray:
        if isinstance(breakpoints, (int, np.integer)) and not isinstance(breakpoints, bool):
            G = check_int(breakpoints, owner, "breakpoints", minimum=0)
            if G == 0:
                return np.zeros(0, dtype=np.int64)
            if self.horizon is None:
                raise ValueError(f"{owner}: horizon must be given when breakpoints is a count "
                                 f"(they are spread evenly over it), got breakpoints={G} and "
                                 "no horizon")
            if G >= self.horizon:
                raise ValueError(f"{owner}: breakpoints must be < horizon = {self.horizon} (at "
                                 f"most one per round after the first), got {G}")
            k = np.arange(1, G + 1)
            return np.rint(k * self.horizon / (G + 1)).astype(np.int64)
        if isinstance(breakpoints, (str, bytes)) or not isinstance(breakpoints, Sequence):
            raise TypeError(f"{owner}: breakpoints must be an int or a sequence of rounds, got "
                            f"{type(breakpoints).__name__}")
        rounds = [check_int(b, owner, f"breakpoints[{i}]", minimum=1)
                  for i, b in enumerate(breakpoints)]
        if any(b >= a for b, a in zip(rounds, rounds[1:])):
            raise ValueError(f"{owner}: breakpoints must be strictly increasing rounds, got "
                             f"{rounds}")
        if self.horizon is not None and rounds and rounds[-1] >= self.horizon:
            raise ValueError(f"{owner}: breakpoints must be rounds < horizon = {self.horizon}, "
                             f"got {rounds[-1]}")
        return np.asarray(rounds, dtype=np.int64)

    @property
    def segment_(self) -> int:
        return int(np.searchsorted(self.breakpoints_, self.t, side="right"))

    def _round_info(self) -> dict[str, Any]:
        return {"segment": self.segment_}

    def _thetas(self, rounds: np.ndarray) -> np.ndarray:
        return self.thetas_[np.searchsorted(self.breakpoints_, rounds, side="right")]

    def _draw_path(self, start: np.ndarray) -> None:
        if self._given_thetas is not None:
            thetas = self._given_thetas.copy()
        else:
            thetas = np.empty((self.breakpoints_.shape[0] + 1, self.n_features))
            thetas[0] = start
            norm = float(np.linalg.norm(start))
            for k in range(1, thetas.shape[0]):
                if self.jump == "flip":
                    thetas[k] = -thetas[k - 1]
                else:
                    direction = self.rng_.standard_normal(self.n_features)
                    thetas[k] = norm * direction / np.linalg.norm(direction)
        thetas.flags.writeable = False
        self.thetas_ = thetas

    def __repr__(self) -> str:
        return (f"PiecewiseStationaryGLMEnv(n_features={self.n_features}, "
                f"n_actions={self.n_actions!r}, family={self.family.name!r}, "
                f"breakpoints={self.breakpoints_.tolist()}, jump={self.jump!r})")


class SmoothlyDriftingGLMEnv(_DriftingGLMEnv):
    """A GLM bandit whose θ* moves a little every round, along a path of length B_T.

    Over the first ``horizon`` rounds the variation budget
    ``Σ_{t=0}^{T-2} ‖θ*_{t+1} - θ*_t‖`` equals ``path_length`` exactly.

    - ``path="arc"``: θ* turns at constant angular speed ω in the plane of θ*_0 and a
      uniformly random orthogonal direction (a great circle), so ‖θ*‖ stays
      ``theta_norm``; each round's chord is ``B_T / (T - 1)``. After the horizon it
      keeps turning.
    - ``path="walk"``: θ*_t = θ*_0 + s Σ_{u<=t} ξ_u with ξ_u ~ N(0, I_d) and s chosen
      so that the steps add up to B_T; ‖θ*‖ wanders. After the horizon θ* stays put.

    Parameters
    ----------
    n_features, n_actions, family, theta_norm, theta, contexts, redraw_contexts, seed
        As in :class:`~glmbandits.environments.synthetic.SyntheticGLMEnv`
        (``theta`` fixes θ*_0).
    path_length : float, default 1.0
        B_T >= 0. An arc needs ``B_T <= 2 ‖θ*‖ (T - 1)`` (at most a half turn a round),
        d >= 2 and ‖θ*‖ > 0 when B_T > 0.
    horizon : int
        T, the rounds over which the path has length B_T.
    path : {"arc", "walk"}, default "arc"

    Attributes
    ----------
    theta_star : ndarray of shape (d,)
        θ* of the current round.

    Examples
    --------
    >>> from glmbandits.environments import SmoothlyDriftingGLMEnv
    >>> env = SmoothlyDriftingGLMEnv(3, 5, path_length=2.0, horizon=100, seed=0)
    >>> round(env.variation(100), 9), round(float(np.linalg.norm(env.theta_at(99))), 9)
    (2.0, 3.0)
    >>> _, _, info = env.step(0)
    >>> bool(info["regret"] >= 0), info["theta_star"].shape
    (True, (3,))

    References
    ----------
    Russac, Vernade & Cappé (2019), Section 2, and Faury et al. (2021): a slowly
    varying θ* with variation budget B_T.
    """

    def __init__(
        self,
        n_features: int,
        n_actions: int | tuple[int, int] = 20,
        family: Any = "logistic",
        theta_norm: float = 3.0,
        *,
        path_length: float = 1.0,
        horizon: int | None = None,
        path: str = "arc",
        theta: Any = None,
        contexts: str = "ball",
        redraw_contexts: bool = True,
        seed: SeedLike = None,
    ) -> None:
        owner = type(self).__name__
        d, norm = _owner_checks(owner, n_features, theta, theta_norm)
        if horizon is None:
            raise ValueError(f"{owner}: horizon must be given (the path has length "
                             "path_length over it), got None")
        self.horizon = check_int(horizon, owner, "horizon", minimum=1)
        self.path_length = check_nonnegative(path_length, owner, "path_length")
        if not isinstance(path, str) or path not in PATHS:
            raise ValueError(f"{owner}: path must be one of {list(PATHS)}, got {path!r}")
        self.path = path
        if self.path_length > 0:
            if self.horizon < 2:
                raise ValueError(f"{owner}: horizon must be >= 2 for a path_length > 0 (θ* "
                                 f"moves between rounds), got {self.horizon}")
            if path == "arc":
                if d < 2:
                    raise ValueError(f"{owner}: n_features must be >= 2 for an arc, got {d}")
                if norm == 0:
                    raise ValueError(f"{owner}: ‖θ*‖ must be > 0 for an arc of length > 0, "
                                     f"got theta_norm = 0")
                most = 2.0 * norm * (self.horizon - 1)
                if self.path_length > most:
                    raise ValueError(f"{owner}: path_length must be <= 2‖θ*‖(horizon - 1) = "
                                     f"{format_value(most)} for an arc (at most a half turn a "
                                     f"round), got {format_value(self.path_length)}")
        super().__init__(n_features, n_actions, family, theta_norm, theta=theta,
                         contexts=contexts, redraw_contexts=redraw_contexts, seed=seed)

    def _draw_path(self, start: np.ndarray) -> None:
        self._start = start.copy()
        self._radius = float(np.linalg.norm(start))
        self._omega = 0.0
        self._walk: np.ndarray | None = None
        if self.path_length == 0:
            return  # no draw: θ* stays θ*_0, and the stream is SyntheticGLMEnv's
        T, d = self.horizon, self.n_features
        if self.path == "arc":
            u = start / self._radius
            while True:
                w = self.rng_.standard_normal(d)
                w -= (w @ u) * u
                if np.linalg.norm(w) > 1e-8:
                    break
            self._v = w / np.linalg.norm(w)
            chord = self.path_length / (T - 1)
            self._omega = 2.0 * float(np.arcsin(min(1.0, chord / (2.0 * self._radius))))
            return
        steps = self.rng_.standard_normal((T - 1, d))
        steps *= self.path_length / np.linalg.norm(steps, axis=1).sum()
        walk = np.empty((T, d))
        walk[0] = start
        np.cumsum(steps, axis=0, out=walk[1:])
        walk[1:] += start
        walk.flags.writeable = False
        self._walk = walk

    def _thetas(self, rounds: np.ndarray) -> np.ndarray:
        if self.path_length == 0:
            return np.broadcast_to(self._start, (rounds.shape[0], self.n_features))
        if self._walk is not None:
            walk: np.ndarray = self._walk[np.minimum(rounds, self.horizon - 1)]
            return walk
        angle = self._omega * rounds.astype(float)[:, None]
        arc: np.ndarray = self._radius * (np.cos(angle) * (self._start / self._radius)
                                          + np.sin(angle) * self._v)
        return arc

    def __repr__(self) -> str:
        return (f"SmoothlyDriftingGLMEnv(n_features={self.n_features}, "
                f"n_actions={self.n_actions!r}, family={self.family.name!r}, "
                f"path={self.path!r}, path_length={self.path_length:g}, horizon={self.horizon})")


#: ``drift`` value -> environment class (None: the stationary SyntheticGLMEnv).
DRIFT_KINDS: dict[str, type[_DriftingGLMEnv]] = {
    "piecewise": PiecewiseStationaryGLMEnv, "smooth": SmoothlyDriftingGLMEnv}


def drift_keywords(drift: str | None = None) -> tuple[str, ...]:
    """The keyword arguments of the environment of a ``drift`` kind, without ``seed`` and
    ``horizon`` (a config's horizon fills that), with ``drift`` for a drifting one.

    Examples
    --------
    >>> [k for k in drift_keywords("smooth") if k not in drift_keywords()]
    ['path_length', 'path', 'drift']
    """
    cls = SyntheticGLMEnv if drift is None else DRIFT_KINDS[drift]
    names = [name for name in list(inspect.signature(cls.__init__).parameters)[1:]
             if name not in ("seed", "horizon")]
    return tuple(names) if drift is None else (*names, "drift")


def make_synthetic_env(drift: str | None = None, *, horizon: int | None = None,
                       seed: SeedLike = None, **keywords: Any) -> SyntheticGLMEnv:
    """The stationary (``drift=None``) or a drifting synthetic environment.

    ``horizon`` is passed to a drifting environment (its breakpoints or path are laid
    over it) and ignored by the stationary one; ``keywords`` are the class's own.

    Examples
    --------
    >>> type(make_synthetic_env(n_features=2, seed=0)).__name__
    'SyntheticGLMEnv'
    >>> env = make_synthetic_env("piecewise", n_features=2, breakpoints=3, horizon=400, seed=0)
    >>> env.breakpoints_.tolist()
    [100, 200, 300]
    """
    if drift is None:
        return SyntheticGLMEnv(**keywords, seed=seed)
    if not isinstance(drift, str) or drift not in DRIFT_KINDS:
        raise ValueError(f"make_synthetic_env: drift must be None or one of "
                         f"{list(DRIFT_KINDS)}, got {drift!r}")
    factory: Callable[..., SyntheticGLMEnv] = DRIFT_KINDS[drift]  # both take a horizon
    return factory(**keywords, horizon=horizon, seed=seed)
