"""Gymnasium environments over the library's bandits, and the adapter back to :func:`simulate`.

Importing this module (it needs the ``gym`` extra: ``pip install 'glmbandits[gym]'``)
registers four ids with Gymnasium, each built on the library environment of the same
name, so ``reset(seed=s)`` and the steps after it give the numbers of that environment
seeded with ``s``, bit for bit:

* ``glmbandits/SyntheticGLM-v0``: :class:`~glmbandits.SyntheticGLMEnv`;
* ``glmbandits/PiecewiseStationaryGLM-v0``:
  :class:`~glmbandits.environments.PiecewiseStationaryGLMEnv`;
* ``glmbandits/SmoothlyDriftingGLM-v0``: :class:`~glmbandits.environments.SmoothlyDriftingGLMEnv`;
* ``glmbandits/ClassificationBandit-v0``:
  :class:`~glmbandits.environments.ClassificationBanditEnv` (``dataset=`` a scikit-learn
  dataset's name, or ``features=`` and ``labels=``).

Gymnasium 1.x loads no plugins, so a program imports this module before
``gymnasium.make`` (or names it in the id: ``"glmbandits.environments.gymnasium_envs:
glmbandits/SyntheticGLM-v0"``). The synthetic ids default to the README's problem
(d = 10, K = 20, logistic, ‖θ*‖ = 3; the drifting ones over ``horizon=3000``); every
keyword of the class can be passed to ``gymnasium.make``.

The spaces: the action is ``Discrete(K)``; the observation is the round's (K, d) feature
matrix, a ``Box`` of float64 (bounds [-1, 1] for the synthetic bandits, whose contexts
lie in the unit ball; the data's range, with 0, for the classification bandits). K must
be fixed (an ``n_actions=(low, high)`` range is refused). An episode never ends
(``terminated`` and ``truncated`` stay False: a bandit has no terminal state); pass
``max_episode_steps=`` to ``gymnasium.make`` for a horizon. ``step``'s ``info`` holds the
library's keys for the round just played (``expected_reward``, ``optimal_expected_reward``,
``optimal_action``, ``regret``; ``theta_star`` and ``segment`` when θ* drifts, ``sample``
for the classification bandit) and ``expected_rewards``, that round's μ(x'θ*) of every
action.

:class:`FromGymnasium` turns such an environment (or any Gymnasium environment with a
(K, d) observation and those ``info`` keys) back into the library's interface, so that
:func:`glmbandits.simulate` plays a policy against it.

References
----------
Li, Lu & Zhou (2017), "Provably Optimal Algorithms for Generalized Linear Contextual
Bandits", ICML, Section 2 (K feature vectors a round, one θ*, the pseudo-regret that
``info["regret"]`` reports). Towers et al. (2024), "Gymnasium: A Standard Interface for
Reinforcement Learning Environments", arXiv:2407.17032 (``reset``/``step``, spaces).
"""

from __future__ import annotations

from typing import Any, SupportsFloat, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .drifting import PiecewiseStationaryGLMEnv, SmoothlyDriftingGLMEnv
from .full_information import ClassificationBanditEnv, FullInformationEnv
from .synthetic import SyntheticGLMEnv

__all__ = ["GymnasiumBanditEnv", "FromGymnasium", "ENV_IDS", "make_synthetic",
           "make_piecewise_stationary", "make_smoothly_drifting", "make_classification"]

#: The README's problem: the defaults of the synthetic ids.
_PROBLEM: dict[str, Any] = {"n_features": 10, "n_actions": 20, "family": "logistic",
                            "theta_norm": 3.0}


class GymnasiumBanditEnv(gym.Env[np.ndarray, np.int64]):
    """A library bandit environment as a Gymnasium environment.

    Parameters
    ----------
    bandit : SyntheticGLMEnv or FullInformationEnv
        The environment whose rounds are played (its subclasses too: the drifting
        synthetic ones, the classification and per-action-features bandits). It must
        have a fixed number of actions K.

    Attributes
    ----------
    bandit : the wrapped environment
    observation_space : Box of shape (K, d), float64
    action_space : Discrete(K)
    drifts : bool
        True when θ* drifts (``info["regret"]`` is then the dynamic regret).

    Examples
    --------
    >>> from glmbandits import SyntheticGLMEnv
    >>> env = GymnasiumBanditEnv(SyntheticGLMEnv(n_features=3, n_actions=4))
    >>> observation, info = env.reset(seed=0)
    >>> observation.shape, env.action_space
    ((4, 3), Discrete(4))
    >>> bool(np.array_equal(observation, SyntheticGLMEnv(3, 4, seed=0).contexts))
    True
    >>> observation, reward, terminated, truncated, info = env.step(1)
    >>> info["expected_rewards"].shape, bool(info["regret"] >= 0), terminated, truncated
    ((4,), True, False, False)

    References
    ----------
    Li, Lu & Zhou (2017), ICML, Section 2: the rounds, rewards and pseudo-regret played.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, bandit: SyntheticGLMEnv | FullInformationEnv) -> None:
        owner = type(self).__name__
        if not isinstance(bandit, (SyntheticGLMEnv, FullInformationEnv)):
            raise TypeError(f"{owner}: bandit must be a SyntheticGLMEnv or a "
                            f"FullInformationEnv (or a subclass), got {type(bandit).__name__}")
        if not isinstance(bandit.n_actions, int):
            raise ValueError(f"{owner}: bandit.n_actions must be a fixed int K (a Discrete(K) "
                             f"action space), got the range {bandit.n_actions!r}")
        K, d = bandit.n_actions, bandit.n_features
        if isinstance(bandit, FullInformationEnv):
            values = np.asarray(getattr(bandit, "features"), dtype=np.float64)
            low, high = min(0.0, float(values.min())), max(0.0, float(values.max()))
        else:  # every context of a synthetic bandit lies in the unit ball
            low, high = -1.0, 1.0
        self.bandit = bandit
        self.drifts = bool(getattr(bandit, "drifts", False))
        self.observation_space = spaces.Box(low, high, shape=(K, d), dtype=np.float64)
        self.action_space = spaces.Discrete(K)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start again: with a seed, the library environment is reseeded (its θ* and streams
        are those of the class built with that seed); without, it goes on with its streams.

        Returns the first round's (K, d) contexts and an empty ``info``.
        """
        super().reset(seed=seed)
        contexts = self.bandit.reset(seed=seed)
        return np.array(contexts, dtype=np.float64), {}

    def step(self, action: int | np.integer[Any]
             ) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        """Play ``action``: the next round's contexts, the reward, never terminated nor
        truncated, and the played round's ``info`` (module docstring)."""
        played = np.array(self.bandit.expected_rewards, dtype=np.float64)
        # the library's step takes numpy ints too (Discrete samples them) and checks the value
        contexts, reward, library_info = self.bandit.step(cast(int, action))
        info = {key: np.array(value) if isinstance(value, np.ndarray) else value
                for key, value in library_info.items()}
        info["expected_rewards"] = played
        return np.array(contexts, dtype=np.float64), float(reward), False, False, info

    def __repr__(self) -> str:
        return f"GymnasiumBanditEnv({self.bandit!r})"


class FromGymnasium:
    """A Gymnasium bandit environment seen through the library's environment interface.

    ``reset(seed)`` returns the contexts and ``step(action)`` returns (next contexts,
    reward, info), as :func:`glmbandits.simulate` expects, so a policy of the library plays
    ``simulate(policy, FromGymnasium(env), horizon, seed=s)`` with ``simulate``'s own loop.
    The environment's observation must be a (K, d) array and its ``info`` must carry
    ``regret`` and ``expected_reward`` (the ids of this module do). When an episode ends
    (``max_episode_steps``), the next round starts a new one with ``env.reset()`` (no
    seed: the environment goes on with its streams).

    Parameters
    ----------
    env : gymnasium.Env

    Examples
    --------
    >>> import gymnasium
    >>> from glmbandits import UCBGLM, simulate
    >>> env = gymnasium.make("glmbandits/SyntheticGLM-v0", n_features=3, n_actions=4)
    >>> result = simulate(UCBGLM(n_features=3, seed=0), FromGymnasium(env), horizon=20, seed=0)
    >>> result.regret.shape, bool(result.cumulative_regret[-1] >= 0)
    ((20,), True)
    """

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        if not isinstance(env, gym.Env):
            raise TypeError(f"FromGymnasium: env must be a gymnasium.Env, got "
                            f"{type(env).__name__}")
        self.env = env
        self.drifts = bool(getattr(env.unwrapped, "drifts", False))
        self.episodes_ = 0

    def reset(self, seed: int | None = None) -> np.ndarray:
        """``env.reset(seed=seed)``; the first round's contexts."""
        if seed is not None and (isinstance(seed, (bool, np.bool_))
                                 or not isinstance(seed, (int, np.integer))):
            raise TypeError(f"FromGymnasium.reset: seed must be an int or None (Gymnasium "
                            f"seeds with ints), got {type(seed).__name__}")
        observation, _ = self.env.reset(seed=None if seed is None else int(seed))
        self.episodes_ = 1
        return self._contexts(observation)

    def step(self, action: int) -> tuple[np.ndarray, float, dict[str, Any]]:
        """``env.step(action)`` as (next contexts, reward, info)."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        missing = [key for key in ("regret", "expected_reward") if key not in info]
        if missing:
            raise ValueError(f"FromGymnasium.step: the environment's info must hold "
                             f"'regret' and 'expected_reward' (the ground truth simulate "
                             f"records), got the keys {sorted(info)}")
        if terminated or truncated:
            observation, _ = self.env.reset()
            self.episodes_ += 1
        return self._contexts(observation), float(reward), info

    @staticmethod
    def _contexts(observation: Any) -> np.ndarray:
        contexts = np.asarray(observation)
        if contexts.ndim != 2:
            raise ValueError(f"FromGymnasium: the environment's observation must be the "
                             f"(K, d) contexts, got shape {contexts.shape}")
        return contexts


# -- the registered ids' entry points ----------------------------------------------------------
def make_synthetic(**keywords: Any) -> GymnasiumBanditEnv:
    """``glmbandits/SyntheticGLM-v0``: a :class:`SyntheticGLMEnv` with these keywords."""
    return GymnasiumBanditEnv(SyntheticGLMEnv(**keywords))


def make_piecewise_stationary(**keywords: Any) -> GymnasiumBanditEnv:
    """``glmbandits/PiecewiseStationaryGLM-v0``: a :class:`PiecewiseStationaryGLMEnv`."""
    return GymnasiumBanditEnv(PiecewiseStationaryGLMEnv(**keywords))


def make_smoothly_drifting(**keywords: Any) -> GymnasiumBanditEnv:
    """``glmbandits/SmoothlyDriftingGLM-v0``: a :class:`SmoothlyDriftingGLMEnv`."""
    return GymnasiumBanditEnv(SmoothlyDriftingGLMEnv(**keywords))


def make_classification(dataset: str | None = None, *, features: Any = None,
                        labels: Any = None, n_components: int | None = None,
                        n_classes: int | None = None) -> GymnasiumBanditEnv:
    """``glmbandits/ClassificationBandit-v0``: a scikit-learn dataset by name
    (:func:`~glmbandits.environments.datasets.load_classification_bandit`, the ``data``
    extra) or a :class:`ClassificationBanditEnv` of the given ``features`` and ``labels``."""
    owner = "make_classification"
    if (dataset is None) == (features is None):
        given = "given" if features is not None else "None"
        raise ValueError(f"{owner}: give either dataset (a name) or features and labels, got "
                         f"dataset={dataset!r} and features {given}")
    if dataset is not None:
        if n_classes is not None:
            raise ValueError(f"{owner}: n_classes is for features and labels (a dataset has "
                             f"its own classes), got n_classes={n_classes!r}")
        from .datasets import load_classification_bandit

        return GymnasiumBanditEnv(load_classification_bandit(dataset,
                                                             n_components=n_components))
    if labels is None or n_components is not None:
        raise ValueError(f"{owner}: features need labels (and take no n_components), got "
                         f"labels={'given' if labels is not None else 'None'}, "
                         f"n_components={n_components!r}")
    return GymnasiumBanditEnv(ClassificationBanditEnv(features, labels, n_classes))


#: The registered ids, their entry points and default keywords.
ENV_IDS: dict[str, tuple[str, dict[str, Any]]] = {
    "glmbandits/SyntheticGLM-v0": ("make_synthetic", dict(_PROBLEM)),
    "glmbandits/PiecewiseStationaryGLM-v0": ("make_piecewise_stationary",
                                             {**_PROBLEM, "horizon": 3000}),
    "glmbandits/SmoothlyDriftingGLM-v0": ("make_smoothly_drifting",
                                          {**_PROBLEM, "horizon": 3000}),
    "glmbandits/ClassificationBandit-v0": ("make_classification", {}),
}

for _id, (_factory, _defaults) in ENV_IDS.items():
    if _id not in gym.registry:  # importing twice (a reload) registers once
        gym.register(id=_id, entry_point=f"{__name__}:{_factory}", kwargs=_defaults)
