"""Logged bandit data: what a deployed policy saw, chose, earned, and with what probability.

A log is T rounds. Round t offers K_t actions with feature vectors x_{t,a}
(K_t may change from round to round), the logging policy chose a_t with
probability p_t (its *propensity*) and the reward r_t of a_t was observed. This
is the input of the offline evaluators of :mod:`glmbandits.evaluation`
(Li, Chu, Langford & Wang 2011; Dudík, Langford & Li 2011).

Contexts are held by a *context store* so that large action catalogues need not
be materialised as a (T, K, d) array:

* :class:`PaddedContexts` — a (T, K_max, d) array plus the number K_t of valid
  rows of each round (a list of (K_t, d) arrays is padded into one);
* :class:`FactoredContexts` — x_{t,a} = [item_a, user_t, pair_{t,a}], built on
  demand from a fixed action catalogue, per-round features and per-(round,
  action) features (the Open Bandit Dataset has this structure).

Every check runs in the constructor, before anything is evaluated: missing
columns, NaN or inf, a propensity outside (0, 1], an action outside the round's
action set, or mismatched lengths raise a :class:`ValueError` naming the log,
the column, what was expected and what was given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .._validation import as_float_array

__all__ = ["PaddedContexts", "FactoredContexts", "LoggedBanditData", "LOG_COLUMNS"]

#: Columns of a log table; ``propensity`` and ``reward_table`` are optional.
LOG_COLUMNS = ("contexts", "action", "reward", "propensity", "reward_table")
_REQUIRED = ("contexts", "action", "reward")


def _finite(array: np.ndarray, owner: str, name: str) -> None:
    if not np.all(np.isfinite(array)):
        bad = int(array.size - np.count_nonzero(np.isfinite(array)))
        raise ValueError(f"{owner}: {name} must be finite, got {bad} NaN or inf value(s)")


class PaddedContexts:
    """Per-round contexts as one (T, K_max, d) array and the valid counts K_t.

    Parameters
    ----------
    contexts : array-like of shape (T, K, d), or a sequence of (K_t, d) arrays
        Rows ``k >= K_t`` of round t are padding and are never read (they may
        hold anything, NaN included).
    n_actions : array-like of int, shape (T,), optional
        K_t; defaults to K for a 3-D array, to each array's length for a list.

    Examples
    --------
    >>> import numpy as np
    >>> store = PaddedContexts([np.zeros((2, 3)), np.ones((4, 3))])
    >>> store.n_rounds, store.n_features, store.n_actions.tolist(), store[1].shape
    (2, 3, [2, 4], (4, 3))
    """

    def __init__(self, contexts: Any, n_actions: Any = None, owner: str = "PaddedContexts") -> None:
        if isinstance(contexts, (list, tuple)):
            if len(contexts) == 0:
                raise ValueError(f"{owner}: contexts must hold at least one round, got 0")
            arrays = [as_float_array(c, f"contexts[{t}]", owner) for t, c in enumerate(contexts)]
            d = arrays[0].shape[-1] if arrays[0].ndim == 2 else -1
            for t, array in enumerate(arrays):
                if array.ndim != 2 or array.shape[1] != d or array.shape[0] == 0:
                    raise ValueError(f"{owner}: contexts[{t}] must have shape (K_t, {d}) with "
                                     f"K_t >= 1, got {array.shape}")
            counts = np.array([a.shape[0] for a in arrays], dtype=np.int64)
            padded = np.zeros((len(arrays), int(counts.max()), d))
            for t, array in enumerate(arrays):
                padded[t, : counts[t]] = array
            if n_actions is not None:
                raise ValueError(f"{owner}: n_actions must be None for a list of contexts, "
                                 "whose lengths give K_t")
        else:
            padded = as_float_array(contexts, "contexts", owner)
            if padded.ndim != 3 or 0 in padded.shape:
                raise ValueError(f"{owner}: contexts must have shape (T, K, d) with T, K, d >= 1, "
                                 f"got {padded.shape}")
            if n_actions is None:
                counts = np.full(padded.shape[0], padded.shape[1], dtype=np.int64)
            else:
                counts = as_float_array(n_actions, "n_actions", owner)
                if counts.shape != (padded.shape[0],) or not np.all(counts == np.round(counts)):
                    raise ValueError(f"{owner}: n_actions must be {padded.shape[0]} integers, "
                                     f"got shape {counts.shape}")
                counts = counts.astype(np.int64)
                if counts.min() < 1 or counts.max() > padded.shape[1]:
                    raise ValueError(f"{owner}: n_actions must lie in [1, {padded.shape[1]}], "
                                     f"got values in [{counts.min()}, {counts.max()}]")
        valid = np.arange(padded.shape[1])[None, :] < counts[:, None]
        _finite(padded[valid], owner, "contexts")
        self.array = padded
        self.n_actions = counts

    @property
    def n_rounds(self) -> int:
        return int(self.array.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.array.shape[2])

    def __len__(self) -> int:
        return self.n_rounds

    def __getitem__(self, t: int) -> np.ndarray:
        return self.array[t, : self.n_actions[t]]

    def chosen(self, actions: np.ndarray) -> np.ndarray:
        """(T, d): the feature vector of each round's given action."""
        return self.array[np.arange(self.n_rounds), actions]

    def subset(self, rounds: np.ndarray) -> "PaddedContexts":
        return PaddedContexts(self.array[rounds], self.n_actions[rounds])

    def padded(self) -> tuple[np.ndarray, np.ndarray]:
        """(T, K_max, d) array and K_t, for saving."""
        return self.array, self.n_actions


class FactoredContexts:
    """x_{t,a} = [action_features[a], round_features[t], pair_features[t, a]], built on demand.

    The action catalogue is the same every round (K_t = K). Nothing of size
    T·K·d is stored: round t's (K, d) matrix is assembled when it is read.

    Parameters
    ----------
    action_features : array-like of shape (K, d_a)
        Features of each action (item), the same every round.
    round_features : array-like of shape (T, d_u), optional
        Features of the round (user), repeated for every action.
    pair_features : array-like of shape (T, K, d_p), optional
        Features of each (round, action) pair (e.g. user-item affinity).

    Examples
    --------
    >>> import numpy as np
    >>> store = FactoredContexts(np.eye(2), round_features=np.ones((3, 1)))
    >>> store[0]
    array([[1., 0., 1.],
           [0., 1., 1.]])
    """

    def __init__(self, action_features: Any, round_features: Any = None,
                 pair_features: Any = None, owner: str = "FactoredContexts") -> None:
        items = as_float_array(action_features, "action_features", owner)
        if items.ndim != 2 or 0 in items.shape:
            raise ValueError(f"{owner}: action_features must have shape (K, d_a), got {items.shape}")
        _finite(items, owner, "action_features")
        K = items.shape[0]
        users = pairs = None
        T = None
        if round_features is not None:
            users = as_float_array(round_features, "round_features", owner)
            if users.ndim != 2 or users.shape[0] == 0:
                raise ValueError(f"{owner}: round_features must have shape (T, d_u), "
                                 f"got {users.shape}")
            _finite(users, owner, "round_features")
            T = users.shape[0]
        if pair_features is not None:
            pairs = as_float_array(pair_features, "pair_features", owner)
            if pairs.ndim != 3 or pairs.shape[1] != K or (T is not None and pairs.shape[0] != T):
                raise ValueError(f"{owner}: pair_features must have shape ({T or 'T'}, {K}, d_p), "
                                 f"got {pairs.shape}")
            _finite(pairs, owner, "pair_features")
            T = pairs.shape[0]
        if T is None:
            raise ValueError(f"{owner}: round_features or pair_features must be given "
                             "(they fix the number of rounds T)")
        self.action_features, self.round_features, self.pair_features = items, users, pairs
        self.n_actions = np.full(T, K, dtype=np.int64)

    @property
    def n_rounds(self) -> int:
        return int(self.n_actions.shape[0])

    @property
    def n_features(self) -> int:
        return int(sum(block.shape[-1] for block in self._blocks()))

    def _blocks(self) -> list[np.ndarray]:
        return [b for b in (self.action_features, self.round_features, self.pair_features)
                if b is not None]

    def __len__(self) -> int:
        return self.n_rounds

    def __getitem__(self, t: int) -> np.ndarray:
        K = self.action_features.shape[0]
        parts = [self.action_features]
        if self.round_features is not None:
            parts.append(np.broadcast_to(self.round_features[t], (K, self.round_features.shape[1])))
        if self.pair_features is not None:
            parts.append(self.pair_features[t])
        return np.hstack(parts)

    def chosen(self, actions: np.ndarray) -> np.ndarray:
        rows = np.arange(self.n_rounds)
        parts = [self.action_features[actions]]
        if self.round_features is not None:
            parts.append(self.round_features)
        if self.pair_features is not None:
            parts.append(self.pair_features[rows, actions])
        return np.hstack(parts)

    def subset(self, rounds: np.ndarray) -> "FactoredContexts":
        return FactoredContexts(
            self.action_features,
            None if self.round_features is None else self.round_features[rounds],
            None if self.pair_features is None else self.pair_features[rounds])

    def padded(self) -> tuple[np.ndarray, np.ndarray]:
        return np.stack([self[t] for t in range(self.n_rounds)]), self.n_actions


ContextStore = PaddedContexts | FactoredContexts


class LoggedBanditData:
    """A checked log of T bandit rounds: contexts, actions, rewards and propensities.

    Parameters
    ----------
    contexts : PaddedContexts, FactoredContexts, array (T, K, d) or list of (K_t, d) arrays
        Each round's per-action feature vectors x_{t,a}.
    actions : array-like of int, shape (T,)
        The logged action a_t, a row index into round t's contexts.
    rewards : array-like of shape (T,)
        The observed reward r_t of a_t.
    propensities : array-like of shape (T,), optional
        p_t = P(logging policy picks a_t | history), in (0, 1]. Needed by
        IPS/SNIPS/DR; without them replay warns that uniform logging cannot be
        checked.
    n_actions : array-like of int, shape (T,), optional
        K_t for a padded (T, K_max, d) array.
    reward_table : array-like of shape (T, K_max), optional
        Full-information rewards of *every* action (classification-as-bandit
        data, synthetic logs): not used by the estimators, only to compute a
        policy's true value on the log (:func:`~glmbandits.evaluation.true_value`).
    name : str
        A label for tables.

    Raises
    ------
    ValueError
        On NaN/inf, propensities outside (0, 1], actions outside [0, K_t),
        non-integer actions or mismatched lengths. Nothing is evaluated on a
        log that fails a check.

    Examples
    --------
    >>> import numpy as np
    >>> log = LoggedBanditData(np.zeros((3, 2, 4)), actions=[0, 1, 1], rewards=[1.0, 0.0, 1.0],
    ...                        propensities=[0.5, 0.5, 0.5])
    >>> log.n_rounds, log.n_features, log.chosen_contexts().shape
    (3, 4, (3, 4))
    >>> LoggedBanditData(np.zeros((1, 2, 4)), actions=[2], rewards=[1.0])
    Traceback (most recent call last):
    ...
    ValueError: LoggedBanditData: action must lie in the round's action set [0, K_t - 1]; round 0 has K_t = 2, got action 2
    """

    def __init__(self, contexts: Any, actions: Any, rewards: Any, propensities: Any = None, *,
                 n_actions: Any = None, reward_table: Any = None, name: str = "log") -> None:
        owner = type(self).__name__
        if isinstance(contexts, (PaddedContexts, FactoredContexts)):
            if n_actions is not None:
                raise ValueError(f"{owner}: n_actions must be None when contexts is a context "
                                 "store (it knows K_t)")
            store: ContextStore = contexts
        else:
            store = PaddedContexts(contexts, n_actions, owner)
        T = store.n_rounds
        action_array = self._column(actions, T, owner, "action")
        if not np.all(action_array == np.round(action_array)):
            raise ValueError(f"{owner}: action must hold integers, got "
                             f"{action_array[action_array != np.round(action_array)][0]!r}")
        action_array = action_array.astype(np.int64)
        outside = (action_array < 0) | (action_array >= store.n_actions)
        if np.any(outside):
            t = int(np.flatnonzero(outside)[0])
            raise ValueError(f"{owner}: action must lie in the round's action set "
                             f"[0, K_t - 1]; round {t} has K_t = {store.n_actions[t]}, "
                             f"got action {action_array[t]}")
        reward_array = self._column(rewards, T, owner, "reward")
        propensity_array = None
        if propensities is not None:
            propensity_array = self._column(propensities, T, owner, "propensity")
            bad = (propensity_array <= 0.0) | (propensity_array > 1.0)
            if np.any(bad):
                t = int(np.flatnonzero(bad)[0])
                raise ValueError(f"{owner}: propensity must lie in (0, 1], got "
                                 f"{propensity_array[t]!r} in round {t}")
        table = None
        if reward_table is not None:
            table = as_float_array(reward_table, "reward_table", owner)
            K_max = int(store.n_actions.max())
            if table.shape != (T, K_max):
                raise ValueError(f"{owner}: reward_table must have shape ({T}, {K_max}), "
                                 f"got {table.shape}")
            valid = np.arange(K_max)[None, :] < store.n_actions[:, None]
            _finite(table[valid], owner, "reward_table")
        self.contexts = store
        self.actions = action_array
        self.rewards = reward_array
        self.propensities = propensity_array
        self.reward_table = table
        self.name = str(name)

    @staticmethod
    def _column(values: Any, T: int, owner: str, name: str) -> np.ndarray:
        array = as_float_array(values, name, owner)
        if array.shape != (T,):
            raise ValueError(f"{owner}: {name} must have shape ({T},) (one per round), "
                             f"got {array.shape}")
        _finite(array, owner, name)
        return array

    # -- constructors ------------------------------------------------------------
    @classmethod
    def from_columns(cls, table: Mapping[str, Any], *, name: str = "log") -> "LoggedBanditData":
        """Build a log from a mapping of columns (a dict, an ``npz`` file, a DataFrame).

        Required: ``contexts`` ((T, K, d) array or list of (K_t, d) arrays),
        ``action``, ``reward``. Optional: ``propensity``, ``n_actions``,
        ``reward_table``. A missing required column raises a ValueError.
        """
        owner = f"{cls.__name__}.from_columns"
        if not hasattr(table, "keys") or not hasattr(table, "__getitem__"):
            raise TypeError(f"{owner}: table must be a mapping of columns, "
                            f"got {type(table).__name__}")
        keys = set(table.keys())
        missing = [column for column in _REQUIRED if column not in keys]
        if missing:
            raise ValueError(f"{owner}: the log is missing required column(s) {missing}; "
                             f"expected {list(_REQUIRED)} (optional: propensity, n_actions, "
                             f"reward_table), got {sorted(keys)}")

        def optional(column: str) -> Any:
            return table[column] if column in keys else None

        contexts = table["contexts"]
        if not isinstance(contexts, (list, tuple, PaddedContexts, FactoredContexts)):
            contexts = np.asarray(contexts)
            if contexts.dtype == object:
                contexts = list(contexts)
        return cls(contexts, table["action"], table["reward"], optional("propensity"),
                   n_actions=optional("n_actions"), reward_table=optional("reward_table"),
                   name=name)

    @classmethod
    def from_simulation(cls, result: Any, *, name: str = "simulation") -> "LoggedBanditData":
        """The log of a :func:`~glmbandits.simulate` run made with ``record_contexts=True``.

        Propensities are the policy's ``last_propensity_`` of each round (1/m
        for UCB rules with m tied actions).
        """
        owner = f"{cls.__name__}.from_simulation"
        contexts = getattr(result, "contexts", None)
        if contexts is None:
            raise ValueError(f"{owner}: result must come from simulate(..., record_contexts=True), "
                             "got a result without contexts")
        propensities = result.propensities
        if np.any(np.isnan(propensities)):
            propensities = None
        return cls(list(contexts), result.actions, result.rewards, propensities, name=name)

    @classmethod
    def load(cls, path: str | Path, *, name: str | None = None) -> "LoggedBanditData":
        """Read a log written by :meth:`save` (or any ``.npz`` with the log's columns)."""
        with np.load(path, allow_pickle=False) as data:
            columns = {key: data[key] for key in data.files}
        return cls.from_columns(columns, name=name if name is not None else Path(path).stem)

    def save(self, path: str | Path) -> Path:
        """Write the log as an ``.npz`` (contexts padded to (T, K_max, d))."""
        contexts, counts = self.contexts.padded()
        columns: dict[str, np.ndarray] = {"contexts": contexts, "n_actions": counts,
                                          "action": self.actions, "reward": self.rewards}
        if self.propensities is not None:
            columns["propensity"] = self.propensities
        if self.reward_table is not None:
            columns["reward_table"] = self.reward_table
        path = Path(path)
        np.savez_compressed(path, **columns)
        return path

    # -- views ---------------------------------------------------------------------
    @property
    def n_rounds(self) -> int:
        return self.contexts.n_rounds

    @property
    def n_features(self) -> int:
        return self.contexts.n_features

    @property
    def n_actions(self) -> np.ndarray:
        """K_t of every round, shape (T,)."""
        return self.contexts.n_actions

    def __len__(self) -> int:
        return self.n_rounds

    def chosen_contexts(self) -> np.ndarray:
        """(T, d): x_{t,a_t}, the logged actions' feature vectors."""
        return self.contexts.chosen(self.actions)

    def is_uniform(self, rtol: float = 1e-6) -> bool:
        """Whether every propensity equals 1/K_t (uniform random logging)."""
        if self.propensities is None:
            return False
        return bool(np.allclose(self.propensities, 1.0 / self.n_actions, rtol=rtol, atol=0.0))

    def subset(self, rounds: Sequence[int] | np.ndarray, name: str | None = None
               ) -> "LoggedBanditData":
        """The log restricted to the given rounds (in the given order)."""
        rounds = np.asarray(rounds, dtype=np.int64)
        return LoggedBanditData(
            self.contexts.subset(rounds), self.actions[rounds], self.rewards[rounds],
            None if self.propensities is None else self.propensities[rounds],
            reward_table=None if self.reward_table is None else self.reward_table[rounds],
            name=self.name if name is None else name)

    def split(self, fraction: float) -> tuple["LoggedBanditData", "LoggedBanditData"]:
        """The first ``fraction`` of the rounds and the rest (a time-ordered split)."""
        if not 0.0 < fraction < 1.0:
            raise ValueError(f"{type(self).__name__}.split: fraction must lie in (0, 1), "
                             f"got {fraction!r}")
        cut = min(max(int(round(fraction * self.n_rounds)), 1), self.n_rounds - 1)
        return (self.subset(np.arange(cut), f"{self.name}[:{cut}]"),
                self.subset(np.arange(cut, self.n_rounds), f"{self.name}[{cut}:]"))

    def __repr__(self) -> str:
        K = self.n_actions
        k_text = str(int(K[0])) if K.min() == K.max() else f"{int(K.min())}..{int(K.max())}"
        return (f"LoggedBanditData(name={self.name!r}, T={self.n_rounds}, K={k_text}, "
                f"d={self.n_features}, propensities={'yes' if self.propensities is not None else 'no'})")
