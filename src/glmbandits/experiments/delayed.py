"""Regret when rewards arrive late, in batches (after Chapelle & Li 2011, Table 1).

Every round the policy decides with :meth:`~glmbandits.Policy.decide`; the
rewards are held back and delivered every ``b`` rounds, all ``b`` of them at
once through :meth:`~glmbandits.Policy.reward_batch` (``b = 1``: no delay). The
pseudo-regret of a run is that of :class:`~glmbandits.SyntheticGLMEnv`. Each
replicate plays the same environment seed for every policy and batch size
(common random numbers), so the ratio to the no-delay regret is paired.

References
----------
Chapelle & Li (2011), "An Empirical Evaluation of Thompson Sampling", NeurIPS,
Section 4 and Table 1 (regret when the model is updated only every δ rounds).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .._validation import check_int
from ..environments import SyntheticGLMEnv

__all__ = ["DelayedRow", "DelayedRewardTable", "delayed_reward_regret", "run_delayed"]

#: The policies of the default study: two UCB rules and two Thompson-style ones.
DEFAULT_POLICIES = ("UCBGLM", "LinUCB", "LaplaceTS", "GLMTSL")
DEFAULT_BATCH_SIZES = (1, 10, 100, 500, 1000)


def _policy_class(name: str) -> type:
    import glmbandits

    cls = getattr(glmbandits, name, None)
    if not (inspect.isclass(cls) and issubclass(cls, glmbandits.Policy)):
        raise ValueError(f"delayed_reward_regret: policies must name policy classes of "
                         f"glmbandits (e.g. {list(DEFAULT_POLICIES)}), got {name!r}")
    return cls


def run_delayed(policy_name: str, batch_size: int, horizon: int, n_features: int,
                n_actions: int, family: str, theta_norm: float,
                seed: np.random.SeedSequence, redraw_contexts: bool = True) -> float:
    """Cumulative pseudo-regret of one run with rewards delivered every ``batch_size`` rounds."""
    cls = _policy_class(policy_name)
    # seed.spawn(2)'s children, without changing ``seed`` (it is reused per setting)
    env_seed, policy_seed = (np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (k,))
                             for k in range(2))
    kwargs: dict[str, Any] = {"n_features": n_features, "seed": np.random.default_rng(policy_seed)}
    if "family" in inspect.signature(cls).parameters:
        kwargs["family"] = family
    policy = cls(**kwargs)
    env = SyntheticGLMEnv(n_features, n_actions, family, theta_norm,
                          redraw_contexts=redraw_contexts, seed=np.random.default_rng(env_seed))
    contexts = env.contexts
    ids: list[str] = []
    rewards: list[float] = []
    regret = 0.0
    for t in range(horizon):
        decision = policy.decide(contexts, decision_id=str(t), now=float(t))
        contexts, reward, info = env.step(decision.action)
        regret += info["regret"]
        ids.append(decision.decision_id)
        rewards.append(reward)
        if len(ids) == batch_size:
            policy.reward_batch(ids, rewards, now=float(t))
            ids, rewards = [], []
    return regret


@dataclass(frozen=True)
class DelayedRow:
    """Regret of one policy at one batch size, over the replicates."""

    policy: str
    batch_size: int
    regrets: np.ndarray = field(repr=False)   # one cumulative regret per replicate
    ratio: float                               # mean regret / mean regret at batch size 1

    @property
    def mean(self) -> float:
        return float(self.regrets.mean())

    @property
    def sd(self) -> float:
        return float(self.regrets.std(ddof=1)) if self.regrets.size > 1 else 0.0


@dataclass(frozen=True)
class DelayedRewardTable:
    """The result of :func:`delayed_reward_regret`: one row per (policy, batch size)."""

    rows: list[DelayedRow]
    horizon: int
    n_features: int
    n_actions: int
    family: str
    n_seeds: int
    redraw_contexts: bool = True

    def row(self, policy: str, batch_size: int) -> DelayedRow:
        """The row of ``policy`` at ``batch_size``."""
        for row in self.rows:
            if row.policy == policy and row.batch_size == batch_size:
                return row
        raise KeyError(f"DelayedRewardTable.row: no row for ({policy!r}, {batch_size})")

    def to_markdown(self) -> str:
        """Regret mean ± sd and the ratio to no delay; policies as rows, batch sizes as columns."""
        policies = list(dict.fromkeys(row.policy for row in self.rows))
        sizes = list(dict.fromkeys(row.batch_size for row in self.rows))
        head = "| policy | " + " | ".join(f"b = {b}" for b in sizes) + " |"
        arms = "contexts redrawn every round" if self.redraw_contexts else "one fixed arm set"
        lines = [f"{self.family}, d = {self.n_features}, K = {self.n_actions} ({arms}), "
                 f"T = {self.horizon}, {self.n_seeds} seeds: cumulative regret mean ± sd "
                 "(ratio to b = 1)", "", head, "|---|" + "---:|" * len(sizes)]
        for name in policies:
            cells = []
            for b in sizes:
                row = self.row(name, b)
                cells.append(f"{row.mean:.1f} ± {row.sd:.1f} ({row.ratio:.2f})")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        return "\n".join(lines)


def delayed_reward_regret(policies: Sequence[str] = DEFAULT_POLICIES,
                          batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
                          horizon: int = 5000, n_features: int = 10, n_actions: int = 20,
                          n_seeds: int = 5, family: str = "logistic", theta_norm: float = 3.0,
                          seed: int = 0, redraw_contexts: bool = True) -> DelayedRewardTable:
    """Regret of each policy when rewards arrive every ``b`` rounds, for each ``b``.

    Parameters
    ----------
    policies : sequence of str
        Names of policy classes of :mod:`glmbandits`, built with their defaults
        (and ``family``, where they take one).
    batch_sizes : sequence of int
        Delivery intervals b >= 1; the ratios are to ``b = 1``, which is added
        when missing.
    horizon, n_features, n_actions : int
        T, d and K of :class:`~glmbandits.SyntheticGLMEnv` (contexts redrawn each round).
    n_seeds : int
        Replicates; replicate i uses ``SeedSequence(seed).spawn(n_seeds)[i]`` for
        both the environment and the policy, for every policy and batch size.
    family : str
        The reward family.
    theta_norm : float
        ‖θ*‖.
    seed : int
        The master seed.
    redraw_contexts : bool, default True
        False: one fixed set of K arms per replicate (Chapelle & Li's setting,
        where a deterministic rule repeats its choice until the next batch).

    Returns
    -------
    DelayedRewardTable

    References
    ----------
    Chapelle & Li (2011), NeurIPS, Table 1.

    Examples
    --------
    >>> table = delayed_reward_regret(["LinUCB"], [1, 10], horizon=50, n_features=3,
    ...                               n_actions=4, n_seeds=2)
    >>> [(row.policy, row.batch_size) for row in table.rows]
    [('LinUCB', 1), ('LinUCB', 10)]
    >>> table.row("LinUCB", 1).ratio
    1.0
    """
    owner = "delayed_reward_regret"
    horizon = check_int(horizon, owner, "horizon", minimum=1)
    n_seeds = check_int(n_seeds, owner, "n_seeds", minimum=1)
    sizes = [check_int(b, owner, "batch_sizes", minimum=1) for b in batch_sizes]
    if 1 not in sizes:
        sizes.insert(0, 1)
    names = [_policy_class(name).__name__ for name in policies]
    replicates = np.random.SeedSequence(seed).spawn(n_seeds)
    rows = []
    for name in names:
        baseline = math.nan
        for b in sorted(sizes):
            regrets = np.array([run_delayed(name, b, horizon, n_features, n_actions, family,
                                            theta_norm, replicate, redraw_contexts)
                                for replicate in replicates])
            if b == 1:
                baseline = float(regrets.mean())
            rows.append(DelayedRow(name, b, regrets, float(regrets.mean()) / baseline
                                   if baseline > 0 else math.nan))
    return DelayedRewardTable(rows, horizon, n_features, n_actions, family, n_seeds,
                              redraw_contexts)
