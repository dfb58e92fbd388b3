"""Context stores: every round's per-action feature vectors x_{t,a}, without a (T, K, d) copy.

* :class:`PaddedContexts` — a (T, K_max, d) array plus the number K_t of valid
  rows of each round (a list of (K_t, d) arrays is padded into one);
* :class:`FactoredContexts` — x_{t,a} = [item_a, user_t, pair_{t,a}], built on
  demand from a fixed action catalogue, per-round features and per-(round,
  action) features (the Open Bandit Dataset has this structure).

Both are read by logged data (:mod:`.logged`), real-data loaders
(:mod:`glmbandits.environments`) and the offline evaluators
(:mod:`glmbandits.evaluation`), which is why they live in this low layer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import as_float_array
from .._validation import check_finite as _check_finite_magnitude

__all__ = ["PaddedContexts", "FactoredContexts", "ContextStore", "check_finite"]


def check_finite(array: np.ndarray, owner: str, name: str) -> None:
    """Raise ``ValueError`` naming ``owner`` and ``name`` when ``array`` holds NaN or inf,
    or an entry beyond ``glmbandits._validation.MAX_MAGNITUDE`` (the shared rule)."""
    _check_finite_magnitude(array, owner, name)


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
        check_finite(padded[valid], owner, "contexts")
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
        rows: np.ndarray = self.array[np.arange(self.n_rounds), actions]
        return rows

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
        check_finite(items, owner, "action_features")
        K = items.shape[0]
        users = pairs = None
        T = None
        if round_features is not None:
            users = as_float_array(round_features, "round_features", owner)
            if users.ndim != 2 or users.shape[0] == 0:
                raise ValueError(f"{owner}: round_features must have shape (T, d_u), "
                                 f"got {users.shape}")
            check_finite(users, owner, "round_features")
            T = users.shape[0]
        if pair_features is not None:
            pairs = as_float_array(pair_features, "pair_features", owner)
            if pairs.ndim != 3 or pairs.shape[1] != K or (T is not None and pairs.shape[0] != T):
                raise ValueError(f"{owner}: pair_features must have shape ({T or 'T'}, {K}, d_p), "
                                 f"got {pairs.shape}")
            check_finite(pairs, owner, "pair_features")
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


#: A log's contexts as either store holds them (``LoggedBanditData.contexts``).
ContextStore = PaddedContexts | FactoredContexts
