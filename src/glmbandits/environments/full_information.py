"""Bandits built from supervised data: every action's reward is known in every round.

A *full-information* environment walks through a finite set of samples. Each
sample i has per-action features (K, d) and a reward row (K,) that says what
every action would have earned. Played online it is an ordinary bandit (only
the chosen action's reward is revealed to the policy); logged with
:func:`glmbandits.evaluation.collect_log` it gives a log whose ``reward_table``
holds the truth, so offline estimates can be checked against exact values.

References
----------
Dudík, Langford & Li (2011), "Doubly robust policy evaluation and learning",
ICML, Section 5 (multiclass classification turned into a contextual bandit);
Li, Lu & Zhou (2017), Section 2 (one θ* shared by per-action features).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import SeedLike, as_float_array, as_generator, check_int

__all__ = ["FullInformationEnv", "PerActionFeaturesEnv", "ClassificationBanditEnv",
           "block_encode"]


def block_encode(z: np.ndarray, n_actions: int) -> np.ndarray:
    """The disjoint ("block") encoding: row a of the result is e_a ⊗ z, shape (K, K·p).

    With it one shared θ = (θ_1, ..., θ_K) scores action a by z'θ_a, so a
    shared-parameter GLM bandit learns one linear model per class. ``z`` may have
    leading axes (..., p) (the batched environments encode R samples at once):
    the result is then (..., K, K·p), the same products as for each z alone.

    Examples
    --------
    >>> block_encode(np.array([1.0, 2.0]), 2)
    array([[1., 2., 0., 0.],
           [0., 0., 1., 2.]])
    """
    eye = np.eye(n_actions)
    blocks = eye[:, :, None] * z[..., None, None, :]  # (..., K, K, p): e_a[b] * z
    encoded: np.ndarray = blocks.reshape(*z.shape[:-1], n_actions, n_actions * z.shape[-1])
    return encoded


class FullInformationEnv:
    """Base class: samples visited in a seeded random order, every action's reward known.

    Each epoch visits every sample once in a fresh random permutation. The
    expected reward of action a in the round of sample i is ``reward_table[i, a]``
    (rewards are deterministic given the sample), so the pseudo-regret is
    ``max_a reward_table[i, a] - reward_table[i, a_t]``.

    Subclasses implement :meth:`_contexts_of` (sample index -> (K, d) features).

    Attributes
    ----------
    contexts : ndarray of shape (K, d)
        This round's per-action features.
    expected_rewards : ndarray of shape (K,)
        This round's reward of every action.
    n_samples, n_actions, n_features : int
    """

    family = "logistic"

    def __init__(self, reward_table: Any, n_features: int, *, seed: SeedLike = None,
                 name: str = "full-information") -> None:
        owner = type(self).__name__
        table = as_float_array(reward_table, "reward_table", owner)
        if table.ndim != 2 or 0 in table.shape or not np.all(np.isfinite(table)):
            raise ValueError(f"{owner}: reward_table must be a finite (n, K) array with "
                             f"n, K >= 1, got shape {table.shape}")
        self.reward_table = table
        self.n_samples, self.n_actions = table.shape
        self.n_features = check_int(n_features, owner, "n_features", minimum=1)
        self.name = name
        self.rng_ = as_generator(seed, owner)
        self.reset()

    def _contexts_of(self, i: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def order(self) -> np.ndarray:
        """The current epoch's visiting order (a permutation of the sample indices)."""
        return self._order

    def reset(self, seed: SeedLike = None) -> np.ndarray:
        """Start a new pass (reseeding when a seed is given); returns the first contexts."""
        if seed is not None:
            self.rng_ = as_generator(seed, f"{type(self).__name__}.reset")
        self.t = 0
        self._order = self.rng_.permutation(self.n_samples)
        self._new_round()
        return self.contexts

    def step(self, action: int) -> tuple[np.ndarray, float, dict[str, Any]]:
        """Play ``action``; return (next contexts, reward, info) as :class:`SyntheticGLMEnv` does."""
        owner = f"{type(self).__name__}.step"
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise TypeError(f"{owner}: action must be an int, got {type(action).__name__}")
        if not 0 <= action < self.n_actions:
            raise ValueError(f"{owner}: action must lie in [0, {self.n_actions - 1}], got {action}")
        row = self.expected_rewards
        best = int(np.argmax(row))
        reward = float(row[action])
        info = {"expected_reward": reward, "optimal_expected_reward": float(row[best]),
                "optimal_action": best, "regret": float(row[best] - reward),
                "sample": int(self.sample_)}
        self.t += 1
        if self.t % self.n_samples == 0:
            self._order = self.rng_.permutation(self.n_samples)
        self._new_round()
        return self.contexts, reward, info

    def _new_round(self) -> None:
        self.sample_ = int(self._order[self.t % self.n_samples])
        self.contexts = self._contexts_of(self.sample_)
        self.expected_rewards = self.reward_table[self.sample_]

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, n_samples={self.n_samples}, "
                f"n_actions={self.n_actions}, n_features={self.n_features})")


class PerActionFeaturesEnv(FullInformationEnv):
    """Full-information bandit whose samples come with their own (K, d) feature matrices.

    Parameters
    ----------
    contexts : array-like of shape (n, K, d)
        Per-sample, per-action features with ‖x‖ <= 1.
    reward_table : array-like of shape (n, K)

    Examples
    --------
    >>> env = PerActionFeaturesEnv(np.eye(2)[None].repeat(3, 0) * 0.5, np.eye(2)[[0, 1, 0]], seed=0)
    >>> env.contexts.shape, env.step(0)[1] in (0.0, 1.0)
    ((2, 2), True)
    """

    def __init__(self, contexts: Any, reward_table: Any, *, seed: SeedLike = None,
                 name: str = "per-action") -> None:
        owner = type(self).__name__
        array = as_float_array(contexts, "contexts", owner)
        table = as_float_array(reward_table, "reward_table", owner)
        if array.ndim != 3 or array.shape[:2] != table.shape or not np.all(np.isfinite(array)):
            raise ValueError(f"{owner}: contexts must be a finite (n, K, d) array matching "
                             f"reward_table {table.shape}, got {array.shape}")
        self.features = array
        super().__init__(table, array.shape[2], seed=seed, name=name)

    def _contexts_of(self, i: int) -> np.ndarray:
        contexts: np.ndarray = self.features[i]
        return contexts


class ClassificationBanditEnv(FullInformationEnv):
    """Multiclass classification as a bandit: each class is an action, reward 1 if right.

    The round of sample i offers K actions with x_{i,a} = e_a ⊗ z_i (the block
    or "disjoint" encoding, :func:`block_encode`), so one θ shared by all
    actions holds one weight vector per class, and the reward of action a is
    1{a = y_i}.

    Parameters
    ----------
    features : array-like of shape (n, p)
        z_i, with ‖z_i‖ <= 1 (the loaders scale them).
    labels : array-like of int, shape (n,)
        Classes 0..K-1.
    n_classes : int, optional
        K; defaults to ``max(labels) + 1``.

    Examples
    --------
    >>> env = ClassificationBanditEnv(np.array([[0.5], [1.0]]), np.array([0, 1]), seed=0)
    >>> env.contexts.shape, sorted(env.reward_table.sum(axis=1).tolist())
    ((2, 2), [1.0, 1.0])
    """

    def __init__(self, features: Any, labels: Any, n_classes: int | None = None, *,
                 seed: SeedLike = None, name: str = "classification") -> None:
        owner = type(self).__name__
        z = as_float_array(features, "features", owner)
        y = np.asarray(labels)
        if z.ndim != 2 or 0 in z.shape or not np.all(np.isfinite(z)):
            raise ValueError(f"{owner}: features must be a finite (n, p) array, got {z.shape}")
        if y.shape != (z.shape[0],) or not np.issubdtype(y.dtype, np.integer) or y.min() < 0:
            raise ValueError(f"{owner}: labels must be {z.shape[0]} non-negative ints, "
                             f"got shape {y.shape} of {y.dtype}")
        K = int(y.max()) + 1 if n_classes is None else check_int(n_classes, owner, "n_classes",
                                                                  minimum=int(y.max()) + 1)
        self.features, self.labels = z, y.astype(np.int64)
        super().__init__(np.eye(K)[self.labels], K * z.shape[1], seed=seed, name=name)

    def _contexts_of(self, i: int) -> np.ndarray:
        return block_encode(self.features[i], self.n_actions)
