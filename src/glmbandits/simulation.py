"""Run a policy against an environment and record what happened."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._validation import SeedLike, check_int

__all__ = ["SimulationResult", "simulate", "play"]


@dataclass(frozen=True)
class SimulationResult:
    """Per-round record of one run.

    Attributes
    ----------
    regret : ndarray of shape (T,)
        Pseudo-regret μ(x_{t,a*}'θ*) - μ(x_{t,a_t}'θ*) of each round.
    actions : ndarray of int, shape (T,)
    rewards : ndarray of shape (T,)
        Observed rewards.
    expected_rewards : ndarray of shape (T,)
        μ(x_{t,a_t}'θ*) of the chosen actions.
    propensities : ndarray of shape (T,)
        Probability with which the policy chose each action.
    seconds : float
        Wall time spent inside ``policy.select`` and ``policy.update``.
    info : dict
        ``{"dynamic_regret": True}`` when the environment drifts (its ``drifts``
        attribute): ``regret`` is then measured against the best action under
        each round's θ*_t (what its ``info["regret"]`` reports).
    contexts : tuple of ndarray of shape (K_t, d), or None
        Each round's contexts, when ``simulate(..., record_contexts=True)``;
        turn the run into an offline log with
        :meth:`glmbandits.evaluation.LoggedBanditData.from_simulation`.
    """

    regret: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    expected_rewards: np.ndarray
    propensities: np.ndarray
    seconds: float
    info: dict[str, Any] = field(default_factory=dict)
    contexts: tuple[np.ndarray, ...] | None = None

    @property
    def cumulative_regret(self) -> np.ndarray:
        """R_t for t = 1..T."""
        return np.cumsum(self.regret)

    @property
    def horizon(self) -> int:
        return int(self.regret.shape[0])

    @property
    def rounds_per_second(self) -> float:
        return self.horizon / self.seconds if self.seconds > 0 else float("inf")


def simulate(policy: Any, env: Any, horizon: int, seed: SeedLike = None, *,
             record_contexts: bool = False) -> SimulationResult:
    """Play ``policy`` on ``env`` for ``horizon`` rounds.

    ``env.reset(seed)`` starts the run (a seed fixes the problem instance and its
    randomness); then each round ``policy.select(contexts)``, ``env.step(action)``
    and ``policy.update(contexts[action], reward)``. The regret of a round is the
    environment's ``info["regret"]``: the dynamic regret for a drifting environment
    (:mod:`glmbandits.environments.drifting`). With ``record_contexts=True``
    every round's (K_t, d) contexts are kept in ``result.contexts`` (with the
    propensities already recorded, the run is then a log for off-policy evaluation).

    Examples
    --------
    >>> from glmbandits import RandomPolicy, SyntheticGLMEnv, simulate
    >>> env = SyntheticGLMEnv(n_features=2, n_actions=3, seed=0)
    >>> result = simulate(RandomPolicy(n_features=2, seed=0), env, horizon=50, seed=0)
    >>> result.cumulative_regret.shape, bool(result.cumulative_regret[-1] >= 0)
    ((50,), True)
    """
    horizon = check_int(horizon, "simulate", "horizon", minimum=1)
    regret = np.empty(horizon)
    actions = np.empty(horizon, dtype=np.int64)
    rewards = np.empty(horizon)
    expected = np.empty(horizon)
    propensities = np.empty(horizon)
    recorded: list[np.ndarray] | None = [] if record_contexts else None
    contexts = env.reset(seed=seed)
    clock = time.perf_counter
    seconds = 0.0
    for t in range(horizon):
        start = clock()
        action = policy.select(contexts)
        seconds += clock() - start
        chosen = contexts[action]
        if recorded is not None:
            recorded.append(np.array(contexts, dtype=np.float64))
        next_contexts, reward, info = env.step(action)
        start = clock()
        policy.update(chosen, reward)
        seconds += clock() - start
        actions[t] = action
        rewards[t] = reward
        regret[t] = info["regret"]
        expected[t] = info["expected_reward"]
        propensities[t] = policy.last_propensity_ if policy.last_propensity_ is not None else np.nan
        contexts = next_contexts
    return SimulationResult(regret, actions, rewards, expected, propensities, seconds,
                            {"dynamic_regret": True} if getattr(env, "drifts", False) else {},
                            contexts=None if recorded is None else tuple(recorded))


def play(policy: Any, env: Any, horizon: int, seed: SeedLike = None) -> Any:
    """Run the select/step/update loop of :func:`simulate` without recording anything.

    For probes that must not allocate result arrays (peak-memory measurements)
    and for tests that only need a policy in a given state. Returns the contexts
    of the round after the last one played.
    """
    contexts = env.reset(seed=seed)
    for _ in range(horizon):
        action = policy.select(contexts)
        chosen = contexts[action]
        contexts, reward, _ = env.step(action)
        policy.update(chosen, reward)
    return contexts
