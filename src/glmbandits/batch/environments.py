"""Batched environments: R replicates' environments stepped together as (R, K, d) arrays.

:func:`~glmbandits.simulate_batch` builds one environment per replicate with the
user's factory, resets it, and hands the list to :func:`make_batch_environment`,
which returns a :class:`BatchEnvironment`: the registered batched form of the
environments' class when there is one (and it supports these instances), else
:class:`SequentialEnvironments`, which steps each replicate through its public
``step`` (any environment with ``reset``/``step`` works that way, at the
sequential speed).

The protocol (what a batched form implements, and what a new environment class
registers with :func:`register_batch_environment`):

* it is built from the R environment objects *after* their ``reset``
  (``builder(envs, rounds)``, ``rounds`` the horizon, a hint for how far to draw
  ahead), takes their current round and their random streams over, and plays the
  rounds each of them would play on its own, bit for bit: the same contexts,
  expected rewards, rewards and regrets (the equality tests of ``tests/batch``
  run every batched form against the sequential class). It must not draw from a
  stream what the sequential class would not draw from it;
* ``contexts`` (R, K_max, d) and ``valid`` ((R, K_max) bool, or None when every
  replicate's K is K_max) are every replicate's current round; the arrays handed
  out are never written later (a step makes new ones);
* ``step(rows, actions)`` plays ``actions[i]`` in replicate ``rows[i]`` (the
  others wait: a lockstep kernel may hold replicates back), moves those
  replicates to their next round and returns their (rewards, expected rewards,
  pseudo-regrets);
* the environment objects are left as the batched form found them: their
  streams have advanced by the rounds drawn ahead, so they are not reused.

Random numbers come in blocks: a sequential environment that draws each kind of
value from its own stream, the same number per round, gets B rounds of a stream
from one generator call of size B·n (numpy's Generator gives the same values
as B calls of size n). That is why :class:`~glmbandits.SyntheticGLMEnv` keeps
separate child streams (:class:`~glmbandits.environments.synthetic.EnvironmentStreams`).
A reward sampler whose draws depend on the mean (Poisson) cannot be drawn ahead:
those rewards are drawn per replicate, still from each replicate's stream.

Batched forms here: :class:`BatchSyntheticGLMEnv` (every family, context
distribution, fixed or changing K, fixed arm sets) and :class:`BatchFullInformationEnv`
(:class:`~glmbandits.environments.full_information.PerActionFeaturesEnv` and
:class:`~glmbandits.environments.full_information.ClassificationBanditEnv`: the
classification and real-data environments; their only randomness is one
permutation per epoch, drawn per replicate as before). Logged data
(:class:`~glmbandits.data.LoggedBanditData`, the Open Bandit sample) are replayed
by :mod:`glmbandits.evaluation`, not stepped by ``simulate``, so they have no form here;
other environments (drifting ones, Gymnasium wrappers, user classes) run through
:class:`SequentialEnvironments` until they register one.

References
----------
Li, Lu & Zhou (2017), Section 2: the pseudo-regret μ(x_{t,a*}'θ*) − μ(x_{t,a_t}'θ*)
recorded each round.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Sequence

import numpy as np

from ..environments.full_information import (ClassificationBanditEnv, PerActionFeaturesEnv,
                                             block_encode)
from ..environments.synthetic import SyntheticGLMEnv, contexts_from_draws, mean_rewards
from ..families import LinearFamily, LogisticFamily, ProbitFamily

__all__ = ["BatchEnvironment", "SequentialEnvironments", "BatchSyntheticGLMEnv",
           "BatchFullInformationEnv", "BATCH_ENVIRONMENTS", "register_batch_environment",
           "make_batch_environment", "stack_contexts"]

#: Bytes of drawn-ahead contexts a batched synthetic environment keeps at most.
BLOCK_BYTES = 32 * 2**20
#: Rounds drawn ahead per block at most.
MAX_BLOCK_ROUNDS = 256


def stack_contexts(contexts: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray | None]:
    """(R, K_max, d) contexts, zero-padded, and a validity mask (None when every K is the same).

    Examples
    --------
    >>> X, valid = stack_contexts([np.ones((2, 3)), np.ones((1, 3))])
    >>> X.shape, valid.tolist()
    ((2, 2, 3), [[True, True], [True, False]])
    """
    sizes = [c.shape[0] for c in contexts]
    if min(sizes) == max(sizes):
        return np.stack(contexts), None
    R, K, d = len(contexts), max(sizes), contexts[0].shape[1]
    X = np.zeros((R, K, d))
    valid = np.zeros((R, K), dtype=bool)
    for r, c in enumerate(contexts):
        X[r, : c.shape[0]] = c
        valid[r, : c.shape[0]] = True
    return X, valid


class BatchEnvironment(ABC):
    """R environments advanced together (the protocol in the module docstring)."""

    #: Every replicate's current contexts (R, K_max, d), zero-padded past its own K.
    contexts: np.ndarray
    #: (R, K_max) real actions, or None when every replicate has K_max.
    valid: np.ndarray | None

    @abstractmethod
    def step(self, rows: np.ndarray, actions: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Play ``actions`` in the replicates ``rows``; (rewards, expected rewards, regrets)."""


class SequentialEnvironments(BatchEnvironment):
    """Fallback for any environment: each replicate's ``step`` in turn, contexts restacked."""

    def __init__(self, envs: Sequence[Any], contexts: Sequence[np.ndarray]) -> None:
        self.envs = list(envs)
        self._current = [np.asarray(c) for c in contexts]
        self.contexts, self.valid = stack_contexts(self._current)

    def step(self, rows: np.ndarray, actions: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = rows.shape[0]
        rewards, expected, regret = np.empty(n), np.empty(n), np.empty(n)
        for i, r in enumerate(rows):
            self._current[r], rewards[i], info = self.envs[r].step(int(actions[i]))
            expected[i], regret[i] = info["expected_reward"], info["regret"]
        self.contexts, self.valid = stack_contexts(self._current)
        return rewards, expected, regret


class _Cursor:
    """Per-replicate position in blocks of drawn-ahead rounds; refills whole blocks."""

    def __init__(self, n_replicates: int, block: int) -> None:
        self.block = block
        self.position = np.full(n_replicates, block)  # empty: the first step refills

    def advance(self, rows: np.ndarray, refill: Callable[[np.ndarray], None]) -> np.ndarray:
        """Positions of the next round of ``rows`` (refilling the exhausted blocks first)."""
        position = self.position[rows]
        exhausted = position == self.block
        if exhausted.any():
            refill(rows[exhausted])
            position[exhausted] = 0
        self.position[rows] = position + 1
        advanced: np.ndarray = position
        return advanced


class _PrefetchedDraws:
    """Stands in for the Generators of some replicates inside ``family.sample``: it serves
    their drawn-ahead values of this round through the one method the family draws with."""

    def __init__(self, method: str, values: np.ndarray) -> None:
        self._method, self._values = method, values

    def __getattr__(self, name: str) -> Callable[[tuple[int, ...]], np.ndarray]:
        if name != self.__dict__.get("_method"):
            raise AttributeError(name)

        def draw(shape: tuple[int, ...]) -> np.ndarray:
            if tuple(shape) != self._values.shape:  # pragma: no cover - the families' contract
                raise ValueError(f"_PrefetchedDraws: {shape} draws asked, "
                                 f"{self._values.shape} drawn")
            return self._values
        return draw


#: Families whose sampler draws one value per reward, whatever the mean, by this method.
_DRAW_METHODS: dict[type, str] = {LogisticFamily: "random", ProbitFamily: "random",
                                  LinearFamily: "standard_normal"}


class BatchSyntheticGLMEnv(BatchEnvironment):
    """R :class:`~glmbandits.SyntheticGLMEnv` replicates (same settings, own θ* and streams).

    Contexts, their expected rewards and best arms are computed for blocks of
    rounds at once ((R, B, K, d) arrays, B from :data:`BLOCK_BYTES`), each
    replicate's block drawn by one call per stream; rewards are drawn ahead too
    (one call per replicate per block) except for families whose draws depend on
    the mean (Poisson), which draw one reward per replicate per round.

    Examples
    --------
    >>> from glmbandits import SyntheticGLMEnv
    >>> envs = [SyntheticGLMEnv(3, 4, seed=s) for s in range(2)]
    >>> batch = BatchSyntheticGLMEnv(envs, rounds=10)
    >>> rewards, expected, regret = batch.step(np.arange(2), np.array([0, 1]))
    >>> batch.contexts.shape, bool((regret >= 0).all())
    ((2, 4, 3), True)
    """

    def __init__(self, envs: Sequence[SyntheticGLMEnv], rounds: int = MAX_BLOCK_ROUNDS) -> None:
        first = envs[0]
        self.n_replicates = R = len(envs)
        self.family = first.family
        self.distribution = first.context_distribution
        self.redraw = first.redraw_contexts
        self.n_actions = first.n_actions
        self.streams = [env.streams_ for env in envs]
        d = first.n_features
        self.K = K = first.n_actions[1] if isinstance(first.n_actions, tuple) else first.n_actions
        self.theta = np.stack([env.theta_star for env in envs])[:, None, :]  # (R, 1, d)
        self.contexts, self.valid = stack_contexts([env.contexts for env in envs])
        self._mean = np.stack([np.pad(env.expected_rewards, (0, K - env.expected_rewards.shape[0]))
                               for env in envs])
        self._best = np.array([float(np.max(env.expected_rewards)) for env in envs])
        if self.contexts.shape[1] < K:  # every current round has fewer than K_max actions
            X = np.zeros((R, K, d))
            X[:, : self.contexts.shape[1]] = self.contexts
            valid = np.zeros((R, K), dtype=bool)
            valid[:, : self.contexts.shape[1]] = True if self.valid is None else self.valid
            self.contexts, self.valid = X, valid
        elif self.valid is None and isinstance(self.n_actions, tuple):
            self.valid = np.ones((R, K), dtype=bool)
        block = int(np.clip(BLOCK_BYTES // (8 * R * K * d), 1, MAX_BLOCK_ROUNDS))
        needed = max(1, int(rounds) - 1)  # rounds after the current one
        self._block = -(-needed // -(-needed // block))  # equal blocks: little drawn in vain
        self._rounds = _Cursor(R, self._block)
        self._draw_method = _DRAW_METHODS.get(type(self.family))
        self._rewards = _Cursor(R, self._block)
        self._reward_draws = np.empty((R, self._block))
        self._X = self._means = self._bests = np.empty(0)
        self._valids: np.ndarray | None = None
        self._shared = False  # whether views of the current block arrays were handed out

    # -- rounds ----------------------------------------------------------------------------
    def _draw_rounds(self, rows: np.ndarray) -> None:
        """Draw the next block of rounds of the replicates ``rows`` and compute them."""
        R, B, K, d = self.n_replicates, self._block, self.K, self.theta.shape[2]
        everyone = rows.shape[0] == R
        n = rows.shape[0]
        normals = np.empty((n, B, K, d))
        ball = self.distribution == "ball"
        uniforms = np.empty((n, B, K)) if ball else None
        mask = None
        if isinstance(self.n_actions, tuple):
            low, high = self.n_actions
            mask = np.empty((n, B, K), dtype=bool)
            normals.fill(1.0)  # padding: any non-zero vector (no 0/0), zeroed below
            if uniforms is not None:
                uniforms.fill(0.5)
            for i, r in enumerate(rows):
                streams = self.streams[r]
                counts = streams.n_actions.integers(low, high + 1, size=B)
                mask[i] = np.arange(K) < counts[:, None]
                total = int(counts.sum())
                normals[i][mask[i]] = streams.contexts.standard_normal((total, d))
                if uniforms is not None:
                    uniforms[i][mask[i]] = streams.radii.random(total)
        else:
            for i, r in enumerate(rows):
                streams = self.streams[r]
                streams.contexts.standard_normal(out=normals[i])
                if uniforms is not None:
                    streams.radii.random(out=uniforms[i])
        X = contexts_from_draws(self.distribution, normals, uniforms)
        means = mean_rewards(self.family, X, self.theta if everyone else self.theta[rows])
        if mask is None:
            bests = means.max(axis=2)
        else:
            X[~mask] = 0.0
            means[~mask] = 0.0
            bests = np.where(mask, means, -np.inf).max(axis=2)
        if everyone:  # fresh arrays: what earlier steps handed out stays as it was
            self._X, self._means, self._bests, self._valids = X, means, bests, mask
            self._shared = False
            return
        if self._X.shape[0] != R or self._shared:  # never write what was handed out
            self._X, self._means, self._bests = (np.empty((R, B, K, d)) if self._X.shape[0] != R
                                                 else self._X.copy(),
                                                 np.empty((R, B, K)) if self._X.shape[0] != R
                                                 else self._means.copy(),
                                                 np.empty((R, B)) if self._X.shape[0] != R
                                                 else self._bests.copy())
            if mask is not None:
                self._valids = (np.empty((R, B, K), dtype=bool) if self._valids is None
                                or self._valids.shape[0] != R else self._valids.copy())
            self._shared = False
        self._X[rows], self._means[rows], self._bests[rows] = X, means, bests
        if mask is not None:
            assert self._valids is not None  # made above
            self._valids[rows] = mask

    def _next_round(self, rows: np.ndarray) -> None:
        position = self._rounds.advance(rows, self._draw_rounds)
        if rows.shape[0] == self.n_replicates:
            if (position == position[0]).all():  # in step: views of the block
                t = int(position[0])
                self._shared = True
                self.contexts, self._mean = self._X[:, t], self._means[:, t]
                self._best = self._bests[:, t]
                self.valid = None if self._valids is None else self._valids[:, t]
                return
            self.contexts, self._mean = self._X[rows, position], self._means[rows, position]
            self._best = self._bests[rows, position]
            if self._valids is not None:
                self.valid = self._valids[rows, position]
            return
        contexts, mean, best = self.contexts.copy(), self._mean.copy(), self._best.copy()
        contexts[rows], mean[rows] = self._X[rows, position], self._means[rows, position]
        best[rows] = self._bests[rows, position]
        if self.valid is not None and self._valids is not None:
            valid = self.valid.copy()
            valid[rows] = self._valids[rows, position]
            self.valid = valid
        self.contexts, self._mean, self._best = contexts, mean, best

    # -- rewards ---------------------------------------------------------------------------
    def _draw_rewards(self, rows: np.ndarray) -> None:
        method = self._draw_method
        assert method is not None  # only families that draw ahead come here
        for r in rows:
            getattr(self.streams[r].rewards, method)(out=self._reward_draws[r])

    def _sample(self, rows: np.ndarray, expected: np.ndarray) -> np.ndarray:
        if self._draw_method is None:  # draws that depend on the mean: one call per replicate
            return np.array([float(self.family.sample(np.array(mean), self.streams[r].rewards))
                             for r, mean in zip(rows, expected)])
        position = self._rewards.advance(rows, self._draw_rewards)
        draws = _PrefetchedDraws(self._draw_method, self._reward_draws[rows, position])
        rewards: np.ndarray = self.family.sample(expected, draws)  # type: ignore[arg-type]
        return rewards

    def step(self, rows: np.ndarray, actions: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        expected = self._mean[rows, actions]
        regret = self._best[rows] - expected
        rewards = self._sample(rows, expected)
        if self.redraw:
            self._next_round(rows)
        return rewards, expected, regret


class BatchFullInformationEnv(BatchEnvironment):
    """R full-information environments over the same samples, each in its own order.

    The samples' features and reward table are shared; each replicate's visiting
    order is its own permutation, drawn from its own generator once per epoch as
    :class:`~glmbandits.environments.full_information.FullInformationEnv` does.

    Examples
    --------
    >>> from glmbandits.environments.full_information import ClassificationBanditEnv
    >>> z, y = np.array([[0.5], [1.0], [-0.5]]), np.array([0, 1, 1])
    >>> batch = BatchFullInformationEnv([ClassificationBanditEnv(z, y, seed=s) for s in (0, 1)])
    >>> batch.contexts.shape, batch.step(np.arange(2), np.array([1, 1]))[0].shape
    ((2, 2, 2), (2,))
    """

    def __init__(self, envs: Sequence[PerActionFeaturesEnv | ClassificationBanditEnv],
                 rounds: int = 0) -> None:
        first = envs[0]
        self.envs = list(envs)
        self.table = first.reward_table
        self.features = first.features
        self.classification = isinstance(first, ClassificationBanditEnv)
        self.n_samples, self.n_actions = first.n_samples, first.n_actions
        self.t = np.array([env.t for env in envs], dtype=np.int64)
        self.orders = np.stack([env.order for env in envs])
        self.valid = None
        self._rows = np.arange(len(self.envs))
        self._set(self._rows)

    def _set(self, rows: np.ndarray) -> None:
        samples = self.orders[rows, self.t[rows] % self.n_samples]
        if rows.shape[0] == self.orders.shape[0]:
            self.samples = samples
        else:
            self.samples = self.samples.copy()
            self.samples[rows] = samples
        z = self.features[self.samples]
        self.contexts = block_encode(z, self.n_actions) if self.classification else z

    def step(self, rows: np.ndarray, actions: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        table = self.table[self.samples[rows]]
        expected = table[np.arange(rows.shape[0]), actions]
        regret = table[np.arange(rows.shape[0]), table.argmax(axis=1)] - expected
        self.t[rows] += 1
        for r in rows[self.t[rows] % self.n_samples == 0]:  # a new epoch: a new permutation
            self.orders[r] = self.envs[r].rng_.permutation(self.n_samples)
        self._set(rows)
        return expected.copy(), expected, regret


#: environment class -> (builder(envs, rounds) -> BatchEnvironment, supports(envs) -> bool)
BATCH_ENVIRONMENTS: dict[type, tuple[Callable[..., BatchEnvironment],
                                     Callable[[Sequence[Any]], bool]]] = {}


def register_batch_environment(env_class: type, builder: Callable[..., BatchEnvironment],
                               supports: Callable[[Sequence[Any]], bool] | None = None) -> None:
    """Use ``builder(envs, rounds)`` for lists of exactly ``env_class`` instances.

    ``supports(envs)`` may decline a particular list (settings the batched form
    does not cover); those lists are stepped by :class:`SequentialEnvironments`.
    """
    BATCH_ENVIRONMENTS[env_class] = (builder, supports or (lambda envs: True))


def make_batch_environment(envs: Sequence[Any], contexts: Sequence[np.ndarray],
                           rounds: int) -> BatchEnvironment:
    """The registered batched form of ``envs`` (all of one class, reset), else the fallback.

    ``contexts`` are the arrays their ``reset`` returned (the fallback starts from
    them); ``rounds`` is the horizon.
    """
    classes = {type(env) for env in envs}
    if len(classes) == 1:
        entry = BATCH_ENVIRONMENTS.get(classes.pop())
        if entry is not None and entry[1](envs):
            return entry[0](envs, rounds)
    return SequentialEnvironments(envs, contexts)


def _same_synthetic_settings(envs: Sequence[SyntheticGLMEnv]) -> bool:
    first = envs[0]
    key = (first.n_features, first.n_actions, type(first.family), vars(first.family),
           first.context_distribution, first.redraw_contexts)
    return all((env.n_features, env.n_actions, type(env.family), vars(env.family),
                env.context_distribution, env.redraw_contexts) == key for env in envs)


def _same_samples(envs: Sequence[PerActionFeaturesEnv | ClassificationBanditEnv]) -> bool:
    first = envs[0]
    return all(env.features is first.features and env.reward_table is first.reward_table
               or (np.array_equal(env.features, first.features)
                   and np.array_equal(env.reward_table, first.reward_table)) for env in envs)


register_batch_environment(SyntheticGLMEnv, BatchSyntheticGLMEnv, _same_synthetic_settings)
register_batch_environment(PerActionFeaturesEnv, BatchFullInformationEnv, _same_samples)
register_batch_environment(ClassificationBanditEnv, BatchFullInformationEnv, _same_samples)
