"""Write a log by running a logging rule (or a learning policy) on an environment."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .._validation import SeedLike, as_generator, check_int
from ..data import LoggedBanditData
from ..policies.base import Policy

__all__ = ["collect_log", "softmax_logging"]

LoggingRule = Callable[[np.ndarray], np.ndarray]


def softmax_logging(theta: Any, temperature: float = 1.0) -> LoggingRule:
    """A logging rule choosing a with probability ∝ exp(x_a'θ / temperature)."""
    theta = np.asarray(theta, dtype=np.float64)
    if temperature <= 0:
        raise ValueError(f"softmax_logging: temperature must be > 0, got {temperature!r}")

    def probabilities(contexts: np.ndarray) -> np.ndarray:
        scores = contexts @ theta / temperature
        weights = np.exp(scores - scores.max())
        normalised: np.ndarray = weights / weights.sum()
        return normalised

    return probabilities


def _uniform(contexts: np.ndarray) -> np.ndarray:
    return np.full(contexts.shape[0], 1.0 / contexts.shape[0])


def collect_log(env: Any, horizon: int, logging: Any = "uniform", *,
                seed: SeedLike = None, name: str = "collected") -> LoggedBanditData:
    """Play a logging rule on ``env`` for ``horizon`` rounds and return the log.

    Each round the rule maps the (K_t, d) contexts to probabilities over the
    K_t actions; the action is drawn from them, and its probability is logged
    as the propensity. A :class:`~glmbandits.policies.base.Policy` can log too:
    it chooses with its own ``select`` (and generator), its
    ``last_propensity_`` is logged, and it learns from each reward, as it would
    in production (a UCB policy without ``exploration_floor`` logs
    propensity 1 in almost every round: see the overlap diagnostics). The environment's ``expected_rewards`` of every action
    (the mean rewards μ(x_{t,a}'θ*) of a synthetic problem, the full
    reward row of a classification problem) are kept as the log's
    ``reward_table``, so the true value of any policy on the log is known.

    Parameters
    ----------
    env : environment
        With ``reset(seed) -> contexts``, ``step(a) -> (contexts, reward, info)``
        and an ``expected_rewards`` attribute.
    horizon : int
    logging : "uniform", callable or Policy
        ``"uniform"`` (p = 1/K_t, the log replay needs), a function
        ``contexts -> probabilities`` (e.g. :func:`softmax_logging`) or a
        policy that chooses and learns (its dimension must be the env's).
    seed : int, Generator, SeedSequence or None
        Split into the environment's seed and the logging draws' seed.

    Examples
    --------
    >>> from glmbandits import SyntheticGLMEnv
    >>> log = collect_log(SyntheticGLMEnv(2, n_actions=(2, 5), seed=0), 100, seed=0)
    >>> log.is_uniform(), log.n_rounds, log.reward_table.shape
    (True, 100, (100, 5))
    """
    owner = "collect_log"
    horizon = check_int(horizon, owner, "horizon", minimum=1)
    policy = logging if isinstance(logging, Policy) else None
    if policy is not None:
        rule: LoggingRule = _uniform  # unused
    elif isinstance(logging, str) and logging == "uniform":
        rule = _uniform
    elif callable(logging):
        rule = logging
    else:
        raise ValueError(f"{owner}: logging must be 'uniform' or a callable, got {logging!r}")
    env_seed: int | np.random.SeedSequence
    if isinstance(seed, np.random.Generator):
        env_seed, rng = int(seed.integers(2**63)), seed
    else:
        sequence = (seed if isinstance(seed, np.random.SeedSequence)
                    else np.random.SeedSequence(seed))
        env_seed, log_seed = sequence.spawn(2)
        rng = as_generator(log_seed, owner)
    contexts = env.reset(seed=env_seed)
    rounds, actions, rewards, propensities, tables = [], [], [], [], []
    for _ in range(horizon):
        K = contexts.shape[0]
        if policy is not None:
            action = policy.select(contexts)
            assert policy.last_propensity_ is not None  # set by the select just made
            propensity = float(policy.last_propensity_)
        else:
            probabilities = np.asarray(rule(contexts), dtype=np.float64)
            if probabilities.shape != (K,) or np.any(probabilities < 0) \
                    or not np.isclose(probabilities.sum(), 1.0):
                raise ValueError(f"{owner}: logging must return {K} probabilities summing to "
                                 f"1, got {probabilities!r}")
            action = int(rng.choice(K, p=probabilities))
            propensity = float(probabilities[action])
        rounds.append(np.array(contexts, dtype=np.float64))
        tables.append(np.array(env.expected_rewards, dtype=np.float64))
        chosen = rounds[-1][action]
        contexts, reward, _ = env.step(action)
        if policy is not None:
            policy.update(chosen, float(reward))
        actions.append(action)
        rewards.append(float(reward))
        propensities.append(propensity)
    K_max = max(table.shape[0] for table in tables)
    table = np.zeros((horizon, K_max))
    for t, row in enumerate(tables):
        table[t, : row.shape[0]] = row
    return LoggedBanditData(rounds, actions, rewards, propensities, reward_table=table, name=name)
