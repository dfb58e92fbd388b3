"""A synthetic GLM contextual bandit with a known θ*.

Random streams. The seed makes one generator (``rng_``), which draws θ* (when
it is not given) and then the seeds of four independent child streams
(:class:`EnvironmentStreams`): the contexts' normal draws, the uniform draws of
their radii (``contexts="ball"``), the number of actions of each round (a
changing action set) and the rewards. Each stream draws the same kind and
number of values every round, so a stream's draws of B rounds come out of one
call of size B·n exactly as they do from B calls of size n: the batched form of
this environment (:mod:`glmbandits.batch.environments`) draws blocks of rounds
per replicate and plays them as (R, K, d) arrays, bit for bit the rounds of
this class. The contexts and expected rewards are computed from the draws by
:func:`contexts_from_draws` and :func:`mean_rewards`, which both forms call
(elementwise steps and ``einsum`` sums over the last axis, no BLAS product: the
same bits whatever the leading shape).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._validation import (
    SeedLike,
    as_generator,
    check_int,
    check_nonnegative,
    check_vector,
)
from ..families import GLMFamily, get_family

__all__ = ["SyntheticGLMEnv", "CONTEXT_DISTRIBUTIONS", "EnvironmentStreams", "sample_unit_ball",
           "contexts_from_draws", "mean_rewards"]

#: Context distributions accepted by :class:`SyntheticGLMEnv`.
CONTEXT_DISTRIBUTIONS = ("ball", "sphere", "gaussian")


def sample_unit_ball(rng: np.random.Generator, shape: tuple[int, ...], dim: int) -> np.ndarray:
    """Points uniform in the unit ball of R^dim: direction uniform, radius U^{1/dim}."""
    directions = rng.standard_normal((*shape, dim))
    directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
    radii = rng.random(shape) ** (1.0 / dim)
    return directions * radii[..., None]


class EnvironmentStreams(NamedTuple):
    """The independent child streams of a :class:`SyntheticGLMEnv` (see the module docstring)."""

    contexts: np.random.Generator  #: standard normals, K·d per round
    radii: np.random.Generator  #: uniforms, K per round (``contexts="ball"`` only)
    n_actions: np.random.Generator  #: one integer per round (a changing action set only)
    rewards: np.random.Generator  #: one reward draw per round (the family's sampler)

    @classmethod
    def spawn(cls, rng: np.random.Generator) -> "EnvironmentStreams":
        """Four streams seeded from two draws of ``rng`` (never from a shared SeedSequence
        object, which spawning would change)."""
        entropy = rng.integers(0, 2**63, size=2)
        return cls(*(np.random.default_rng(child)
                     for child in np.random.SeedSequence(entropy).spawn(4)))


def contexts_from_draws(distribution: str, normals: np.ndarray,
                        uniforms: np.ndarray | None) -> np.ndarray:
    """Contexts (..., K, d) from standard normals (..., K, d) and, for the ball, uniforms (..., K).

    ``"ball"``: direction uniform, radius U^{1/d}; ``"sphere"``: the direction;
    ``"gaussian"``: N(0, I/d) pulled back into the unit ball when outside. Overwrites
    ``normals`` (it is the result). Elementwise steps and last-axis sums only, so
    every (K, d) slice is computed alike whatever the leading shape.
    """
    d = normals.shape[-1]
    if distribution == "gaussian":
        normals /= np.sqrt(d)
        normals /= np.maximum(1.0, _norms(normals))
        return normals
    if distribution == "sphere":
        normals /= _norms(normals)
        return normals
    assert uniforms is not None  # the caller draws them for the ball
    normals *= (uniforms ** (1.0 / d) / _norms(normals)[..., 0])[..., None]  # U^{1/d}·n/‖n‖
    return normals


def mean_rewards(family: GLMFamily, contexts: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """μ(x'θ) of contexts (..., K, d) with θ of shape (..., d) (broadcast over the leading axes).

    The products are summed by ``einsum`` along the last axis (not a BLAS product), so a
    round's values do not depend on how many rounds or replicates are computed together.
    """
    means: np.ndarray = family.mean(np.einsum("...kd,...d->...k", contexts, theta))
    return means


def _norms(x: np.ndarray) -> np.ndarray:
    """‖x‖ over the last axis, kept as a length-1 axis (einsum: several times faster than
    ``np.linalg.norm`` over a short axis, and the same bits for any leading shape)."""
    norms: np.ndarray = np.sqrt(np.einsum("...i,...i->...", x, x))[..., None]
    return norms


class SyntheticGLMEnv:
    """IID per-action contexts and GLM rewards around a hidden θ*.

    Every round draws K fresh feature vectors x_{t,a} with ‖x‖ <= 1 (the paper's
    Section 2 setting) and the reward of action a has mean μ(x_{t,a}'θ*), drawn
    by the family's sampler. The expected rewards of all actions in the current
    round are exposed, so the regret is the paper's pseudo-regret
    ``R_T = Σ_t μ(x_{t,a*}'θ*) - μ(x_{t,a_t}'θ*)``.

    Parameters
    ----------
    n_features : int
        Dimension d.
    n_actions : int or (int, int)
        K, or an inclusive range (K_min, K_max) from which each round's K is
        drawn uniformly (a changing action set).
    family : str or GLMFamily, default "logistic"
        Reward family.
    theta_norm : float, default 3.0
        ‖θ*‖; θ* has a uniformly random direction. Ignored when ``theta`` is given.
    theta : array-like of shape (d,), optional
        A fixed θ*.
    contexts : {"ball", "sphere", "gaussian"}, default "ball"
        Uniform in the unit ball, uniform on the unit sphere, or N(0, I/d)
        rescaled into the unit ball when its norm exceeds 1.
    redraw_contexts : bool, default True
        Draw fresh contexts every round; ``False`` keeps the arm set drawn at
        ``reset`` for the whole run (a fixed arm set, as in Faury et al. 2022).
    seed : int, Generator, SeedSequence or None
        Seeds θ* (if drawn), then the contexts', action counts' and rewards'
        streams (module docstring).

    Attributes
    ----------
    theta_star : ndarray of shape (d,)
    streams_ : EnvironmentStreams
        The child streams the rounds are drawn from.
    contexts : ndarray of shape (K, d)
        This round's feature vectors.
    expected_rewards : ndarray of shape (K,)
        μ(x_{t,a}'θ*) for this round.

    Examples
    --------
    >>> from glmbandits import SyntheticGLMEnv
    >>> env = SyntheticGLMEnv(n_features=3, n_actions=4, seed=0)
    >>> env.contexts.shape, round(float(np.linalg.norm(env.theta_star)), 6)
    ((4, 3), 3.0)
    >>> contexts, reward, info = env.step(0)
    >>> sorted(info)
    ['expected_reward', 'optimal_action', 'optimal_expected_reward', 'regret']
    """

    def __init__(
        self,
        n_features: int,
        n_actions: int | tuple[int, int] = 20,
        family: Any = "logistic",
        theta_norm: float = 3.0,
        *,
        theta: Any = None,
        contexts: str = "ball",
        redraw_contexts: bool = True,
        seed: SeedLike = None,
    ) -> None:
        owner = type(self).__name__
        self.n_features = check_int(n_features, owner, "n_features", minimum=1)
        if isinstance(n_actions, tuple):
            if len(n_actions) != 2:
                raise ValueError(f"{owner}: n_actions must be an int or a (low, high) pair, "
                                 f"got {n_actions!r}")
            low = check_int(n_actions[0], owner, "n_actions[0]", minimum=1)
            high = check_int(n_actions[1], owner, "n_actions[1]", minimum=low)
            self.n_actions: int | tuple[int, int] = (low, high)
        else:
            self.n_actions = check_int(n_actions, owner, "n_actions", minimum=1)
        self.family: GLMFamily = get_family(family, owner)
        self.theta_norm = check_nonnegative(theta_norm, owner, "theta_norm")
        self._fixed_theta = None if theta is None else check_vector(theta, self.n_features,
                                                                    owner, "theta")
        if contexts not in CONTEXT_DISTRIBUTIONS:
            raise ValueError(f"{owner}: contexts must be one of {list(CONTEXT_DISTRIBUTIONS)}, "
                             f"got {contexts!r}")
        self.context_distribution = contexts
        if not isinstance(redraw_contexts, (bool, np.bool_)):
            raise TypeError(f"{owner}: redraw_contexts must be a bool, "
                            f"got {type(redraw_contexts).__name__}")
        self.redraw_contexts = bool(redraw_contexts)
        self._seed(as_generator(seed, owner))
        self.t = 0
        self._new_round()

    # -- Gym-like API ---------------------------------------------------------
    def reset(self, seed: SeedLike = None) -> np.ndarray:
        """Start again; with a seed, reseed and redraw θ* (unless fixed). Returns contexts."""
        if seed is not None:
            self._seed(as_generator(seed, f"{type(self).__name__}.reset"))
        self.t = 0
        self._new_round()
        return self.contexts

    def step(self, action: int) -> tuple[np.ndarray, float, dict[str, Any]]:
        """Play ``action`` this round; return (next contexts, reward, info).

        ``info`` holds the played action's ``expected_reward``, the round's
        ``optimal_expected_reward`` and ``optimal_action``, and the pseudo-regret.
        """
        K = self.contexts.shape[0]
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise TypeError(f"{type(self).__name__}.step: action must be an int, "
                            f"got {type(action).__name__}")
        if not 0 <= action < K:
            raise ValueError(f"{type(self).__name__}.step: action must lie in [0, {K - 1}], "
                             f"got {action}")
        expected = float(self.expected_rewards[action])
        reward = float(self.family.sample(np.array(expected), self.streams_.rewards))
        best = int(np.argmax(self.expected_rewards))
        optimal = float(self.expected_rewards[best])
        info = {
            "expected_reward": expected,
            "optimal_expected_reward": optimal,
            "optimal_action": best,
            "regret": optimal - expected,
        }
        self.t += 1
        if self.redraw_contexts:
            self._new_round()
        return self.contexts, reward, info

    # -- internals ------------------------------------------------------------------
    def _seed(self, rng: np.random.Generator) -> None:
        self.rng_ = rng
        self.theta_star = self._draw_theta()
        self.streams_ = EnvironmentStreams.spawn(rng)

    def _draw_theta(self) -> np.ndarray:
        if self._fixed_theta is not None:
            return self._fixed_theta.copy()
        direction = self.rng_.standard_normal(self.n_features)
        return self.theta_norm * direction / np.linalg.norm(direction)

    def _draw_n_actions(self) -> int:
        if isinstance(self.n_actions, tuple):
            return int(self.streams_.n_actions.integers(self.n_actions[0],
                                                        self.n_actions[1] + 1))
        return self.n_actions

    def _new_round(self) -> None:
        K, d = self._draw_n_actions(), self.n_features
        streams = self.streams_
        ball = self.context_distribution == "ball"
        X = contexts_from_draws(self.context_distribution, streams.contexts.standard_normal((K, d)),
                                streams.radii.random(K) if ball else None)
        self.contexts = X
        self.expected_rewards = mean_rewards(self.family, X, self.theta_star)

    def __repr__(self) -> str:
        return (f"SyntheticGLMEnv(n_features={self.n_features}, n_actions={self.n_actions!r}, "
                f"family={self.family.name!r}, theta_norm={self.theta_norm:g})")
