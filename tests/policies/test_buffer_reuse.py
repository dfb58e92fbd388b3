"""A caller that reuses one contexts buffer every round cannot corrupt a policy.

``glmbandits.features`` transformers write each round's (K, d) contexts into one
preallocated buffer and return it, and callers pass ``buffer[a]`` (a view) to
``update``. Every policy must therefore copy what it keeps, in ``select`` and in
``update``: here each class plays the same stream once with fresh arrays and once
through a single overwritten buffer, and must end in the same state, bit for bit.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import policy_catalogue

D = 3
K = 5
POLICY_CLASSES, ids = policy_catalogue.POLICY_CLASSES, policy_catalogue.POLICY_IDS


def _stream(rounds: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(31)
    X = rng.normal(size=(rounds, K, D))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=2, keepdims=True))
    return X, (rng.random((rounds, K)) < 0.5).astype(float)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_a_reused_contexts_buffer_leaves_the_same_state(cls):
    X, rewards = _stream(40)
    fresh, reused = cls(n_features=D, seed=0), cls(n_features=D, seed=0)
    buffer = np.empty((K, D))
    for t in range(X.shape[0]):
        a = fresh.select(X[t].copy())
        fresh.update(X[t][a].copy(), float(rewards[t, a]))
        buffer[...] = X[t]
        b = reused.select(buffer)
        assert b == a
        reused.update(buffer[b], float(rewards[t, b]))  # a view into the buffer
        buffer[...] = np.nan  # the next round overwrites it (here: with garbage)
    assert pickle.dumps(reused) == pickle.dumps(fresh)
