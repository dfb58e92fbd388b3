"""Lockstep simulation of many independent replicates, with a leading replicate axis.

:func:`simulate_batch` plays R replicates of a policy on R environments round by
round together. Replicate r is exactly the sequential run
``simulate(policy_factory(seeds[r]), env_factory(seeds[r]), horizon, seed=seeds[r])``:
same environment stream, same decisions, same tie-breaking draws. The policies'
work of a round is done for all replicates at once by a batch kernel
(:mod:`glmbandits.batch.kernels`) on a swappable array module (numpy by
default; CuPy or torch when installed, e.g. on a GPU). The environments are
stepped together too, by their batched form (:mod:`glmbandits.batch.environments`:
(R, K, d) arrays drawn ahead in blocks from each replicate's own streams, which is
what keeps the trajectories identical); environments without one are stepped one
by one through their public ``step``.

Each step, the kernel says which replicates play (:meth:`BatchKernel.ready`).
Usually that is all of them. A lazy UCB-GLM replicate whose refit falls due
waits, keeping its contexts, until every lazy replicate is waiting; then one
solver call refits them all (a *refit wave*) and they go on. Replicates are
independent, so waiting changes no trajectory, only the number of steps
(:attr:`BatchSimulationResult.n_steps`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .._validation import SeedLike, check_int
from ..simulation import SimulationResult
from .backend import get_backend
from .environments import make_batch_environment
from .registry import make_batch_kernel

__all__ = ["BatchSimulationResult", "simulate_batch"]


@dataclass(frozen=True)
class BatchSimulationResult:
    """Per-round record of R replicates; every array has a leading replicate axis.

    Attributes
    ----------
    regret, rewards, expected_rewards, propensities : ndarray of shape (R, T)
    actions : ndarray of int, shape (R, T)
    seconds : float
        Wall time spent in the policies' work (the kernel's select and update),
        for all replicates together.
    env_seconds : float
        Wall time spent stepping the environments (drawing and computing their
        rounds, the (R, K, d) contexts the kernel reads, rewards and regrets).
    kernel : str
        The batch kernel that ran (``"SequentialKernel"`` when none applies).
    backend : str
        The array module.
    n_steps : int
        Batch steps taken: T in lockstep; a little more when a kernel holds
        replicates back to refit them together (lazy UCB-GLM).
    environments : str
        The batched environment that ran (``"SequentialEnvironments"``: each
        replicate's ``step`` in turn).
    """

    regret: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    expected_rewards: np.ndarray
    propensities: np.ndarray
    seconds: float
    env_seconds: float
    kernel: str
    backend: str
    n_steps: int = 0
    environments: str = "SequentialEnvironments"

    @property
    def n_replicates(self) -> int:
        return int(self.regret.shape[0])

    @property
    def horizon(self) -> int:
        return int(self.regret.shape[1])

    @property
    def cumulative_regret(self) -> np.ndarray:
        """R_t for t = 1..T, shape (R, T)."""
        return np.cumsum(self.regret, axis=1)

    @property
    def policy_rounds_per_second(self) -> float:
        """Replicate-rounds of policy work per second: R·T / seconds."""
        rounds = self.n_replicates * self.horizon
        return rounds / self.seconds if self.seconds > 0 else float("inf")

    def replicate(self, r: int) -> SimulationResult:
        """Replicate r as a :class:`SimulationResult` (seconds: an equal share)."""
        return SimulationResult(self.regret[r], self.actions[r], self.rewards[r],
                                self.expected_rewards[r], self.propensities[r],
                                self.seconds / self.n_replicates)


def simulate_batch(policy_factory: Callable[[Any], Any], env_factory: Callable[[Any], Any],
                   horizon: int, seeds: Sequence[SeedLike], *, backend: Any = "numpy",
                   reset_seed: bool = True) -> BatchSimulationResult:
    """Run R = len(seeds) independent replicates in lockstep.

    Replicate r builds ``policy = policy_factory(seeds[r])`` and ``env =
    env_factory(seeds[r])``, starts with ``env.reset(seed=seeds[r])`` and plays
    ``horizon`` rounds, exactly as :func:`~glmbandits.simulate` would with
    ``seed=seeds[r]``; the policy objects end in the state the sequential runs
    leave them in. LinUCB and UCB-GLM (``l2 > 0``, both refit modes) have batch
    kernels; other policies are run one after the other within each round (same
    results, no speed-up). Lazy UCB-GLM replicates refit in waves (see the
    module docstring), so they may take a few more steps than ``horizon``.
    Synthetic and full-information environments are stepped as arrays
    (:mod:`glmbandits.batch.environments`); the environment objects are not
    reused afterwards (their streams have been drawn ahead).

    Parameters
    ----------
    policy_factory : callable
        ``seed -> Policy``; all replicates should build the same policy class.
    env_factory : callable
        ``seed -> environment`` with ``reset(seed)`` and ``step(action)``.
    horizon : int
        Rounds T.
    seeds : sequence of int, Generator or SeedSequence
        One per replicate, e.g. ``numpy.random.SeedSequence(0).spawn(64)``
        (a Generator would be shared by the policy and environment, so prefer
        ints or SeedSequences).
    backend : {"numpy", "cupy", "torch"} or ArrayBackend, default "numpy"
        Array module of the stacked policy state.
    reset_seed : bool, default True
        Reset replicate r's environment with ``seeds[r]``; ``False`` resets it
        without a seed (it keeps the streams its factory seeded), as
        ``simulate(policy, env, horizon)`` does.

    Returns
    -------
    BatchSimulationResult

    Examples
    --------
    >>> from glmbandits import LinUCB, SyntheticGLMEnv, simulate_batch
    >>> result = simulate_batch(lambda s: LinUCB(3, seed=s),
    ...                         lambda s: SyntheticGLMEnv(3, 5, seed=s), 50, seeds=[0, 1, 2])
    >>> result.regret.shape, result.kernel, result.environments
    ((3, 50), 'LinUCBKernel', 'BatchSyntheticGLMEnv')
    """
    owner = "simulate_batch"
    for name, factory in (("policy_factory", policy_factory), ("env_factory", env_factory)):
        if not callable(factory):
            raise TypeError(f"{owner}: {name} must be callable, got {type(factory).__name__}")
    horizon = check_int(horizon, owner, "horizon", minimum=1)
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or len(seeds) == 0:
        raise ValueError(f"{owner}: seeds must be a non-empty sequence of seeds, got {seeds!r}")
    if not isinstance(reset_seed, (bool, np.bool_)):
        raise TypeError(f"{owner}: reset_seed must be a bool, got {type(reset_seed).__name__}")
    array_backend = get_backend(backend)

    policies = [policy_factory(seed) for seed in seeds]
    envs = [env_factory(seed) for seed in seeds]
    contexts = [env.reset(seed=seed if reset_seed else None) for env, seed in zip(envs, seeds)]
    kernel = make_batch_kernel(policies, array_backend)
    kernel.reserve(horizon)
    R = len(seeds)
    shape = (R, horizon)
    regret, rewards = np.empty(shape), np.empty(shape)
    expected, propensities = np.empty(shape), np.empty(shape)
    actions = np.empty(shape, dtype=np.int64)
    played = np.zeros(R, dtype=np.int64)  # rounds each replicate has played
    clock = time.perf_counter
    seconds = env_seconds = 0.0
    start = clock()
    env = make_batch_environment(envs, contexts, horizon)
    env_seconds += clock() - start
    n_steps = 0
    while True:
        active = played < horizon
        if not active.any():
            break
        start = clock()
        rows = kernel.ready(active)
        X = env.contexts
        chosen_actions, chosen_propensities = kernel.select(X, env.valid, rows)
        chosen = X[rows, chosen_actions]
        seconds += clock() - start
        start = clock()
        rounds = played[rows]
        chosen_rewards, expected[rows, rounds], regret[rows, rounds] = env.step(rows,
                                                                              chosen_actions)
        env_seconds += clock() - start
        start = clock()
        kernel.update(rows, chosen, chosen_rewards)
        seconds += clock() - start
        rewards[rows, rounds] = chosen_rewards
        actions[rows, rounds] = chosen_actions
        propensities[rows, rounds] = chosen_propensities
        played[rows] += 1
        n_steps += 1
    kernel.finalize()
    return BatchSimulationResult(regret, actions, rewards, expected, propensities, seconds,
                                 env_seconds, type(kernel).__name__, array_backend.name, n_steps,
                                 type(env).__name__)
