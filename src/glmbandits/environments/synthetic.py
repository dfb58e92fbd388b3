"""A synthetic GLM contextual bandit with a known θ*."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import (
    SeedLike,
    as_generator,
    check_int,
    check_nonnegative,
    check_vector,
)
from ..families import GLMFamily, get_family

__all__ = ["SyntheticGLMEnv", "CONTEXT_DISTRIBUTIONS", "sample_unit_ball"]

#: Context distributions accepted by :class:`SyntheticGLMEnv`.
CONTEXT_DISTRIBUTIONS = ("ball", "sphere", "gaussian")


def sample_unit_ball(rng: np.random.Generator, shape: tuple[int, ...], dim: int) -> np.ndarray:
    """Points uniform in the unit ball of R^dim: direction uniform, radius U^{1/dim}."""
    directions = rng.standard_normal((*shape, dim))
    directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
    radii = rng.random(shape) ** (1.0 / dim)
    return directions * radii[..., None]


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
        Seeds θ* (if drawn), contexts and rewards.

    Attributes
    ----------
    theta_star : ndarray of shape (d,)
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
        self.rng_ = as_generator(seed, owner)
        self.theta_star = self._draw_theta()
        self.t = 0
        self._new_round()

    # -- Gym-like API ---------------------------------------------------------
    def reset(self, seed: SeedLike = None) -> np.ndarray:
        """Start again; with a seed, reseed and redraw θ* (unless fixed). Returns contexts."""
        if seed is not None:
            self.rng_ = as_generator(seed, f"{type(self).__name__}.reset")
            self.theta_star = self._draw_theta()
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
        reward = float(self.family.sample(np.array(expected), self.rng_))
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
    def _draw_theta(self) -> np.ndarray:
        if self._fixed_theta is not None:
            return self._fixed_theta.copy()
        direction = self.rng_.standard_normal(self.n_features)
        return self.theta_norm * direction / np.linalg.norm(direction)

    def _draw_n_actions(self) -> int:
        if isinstance(self.n_actions, tuple):
            return int(self.rng_.integers(self.n_actions[0], self.n_actions[1] + 1))
        return self.n_actions

    def _new_round(self) -> None:
        K, d = self._draw_n_actions(), self.n_features
        if self.context_distribution == "ball":
            X = sample_unit_ball(self.rng_, (K,), d)
        elif self.context_distribution == "sphere":
            X = self.rng_.standard_normal((K, d))
            X /= np.linalg.norm(X, axis=1, keepdims=True)
        else:
            X = self.rng_.standard_normal((K, d)) / np.sqrt(d)
            X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
        self.contexts = X
        self.expected_rewards = self.family.mean(X @ self.theta_star)

    def __repr__(self) -> str:
        return (f"SyntheticGLMEnv(n_features={self.n_features}, n_actions={self.n_actions!r}, "
                f"family={self.family.name!r}, theta_norm={self.theta_norm:g})")
