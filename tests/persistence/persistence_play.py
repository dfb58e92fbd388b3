"""Playing a policy on a fixed stream and comparing two runs bit for bit (persistence tests).

Importable from the test modules of this folder (pytest puts it on ``sys.path``)
and from ``make_fixtures.py``.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

import numpy as np

import policy_catalogue


def play(policy: Any, rounds: int, seed: int, k: int | tuple[int, int] = 5) -> list[tuple]:
    """Play ``rounds`` rounds of unit-ball contexts and 0/1 rewards drawn from ``seed``.

    Returns one record per round: the action, the three score arrays, the
    action distribution and, where the policy has one, θ̂ (and V⁻¹) of its estimate.
    ``k`` is the number of actions, or a (low, high) range drawn every round.
    """
    rng = np.random.default_rng(seed)
    d = policy.n_features
    records = []
    for _ in range(rounds):
        n = k if isinstance(k, int) else int(rng.integers(k[0], k[1] + 1))
        X = policy_catalogue.unit_ball_contexts(rng, n, d)
        action = policy.select(X)
        scores = policy.last_scores_
        policy.update(X[action], float(rng.random() < 0.5))
        records.append((action, scores.ucb.copy(), scores.mean.copy(), scores.width.copy(),
                        policy.last_probabilities_.copy(), *estimates(policy)))
    return records


def estimates(policy: Any) -> tuple[np.ndarray, ...]:
    """θ̂ and V⁻¹ of the policy's estimate (read without refitting), where it has them."""
    found = []
    for owner in (policy, getattr(policy, "estimate_", None)):
        for name in ("theta_", "V_inv_"):
            value = getattr(owner, name, None) if owner is not None else None
            if isinstance(value, np.ndarray):
                found.append(value.copy())
    return tuple(found)


def assert_same_runs(first: list[tuple], second: list[tuple]) -> None:
    """Two runs equal bit for bit: actions, scores, distributions, estimates."""
    assert len(first) == len(second)
    for t, (a, b) in enumerate(zip(first, second)):
        assert a[0] == b[0], f"round {t}: actions {a[0]} != {b[0]}"
        assert len(a) == len(b)
        for i, (x, y) in enumerate(zip(a[1:], b[1:])):
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), (
                f"round {t}: field {i + 1} differs")


def state_bytes(policy: Any) -> bytes:
    """The policy's pickle without the memo (``Pickler.fast``).

    Every value, dtype, memory order and dict order is in it, but not which equal
    strings are one object: a pickle round trip does not keep that (keys it
    restores are not interned, the attribute names a policy sets later are), so
    plain ``pickle.dumps`` can differ after a correct pickle round trip.
    """
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=4)
    pickler.fast = True
    pickler.dump(policy)
    return buffer.getvalue()


def assert_same_policies(first: Any, second: Any, exact_pickle: bool = False) -> None:
    """The same class and the same state, byte for byte (``exact_pickle``: plain pickles too)."""
    assert type(first) is type(second)
    assert state_bytes(first) == state_bytes(second)
    if exact_pickle:
        assert pickle.dumps(first) == pickle.dumps(second)


def recipe(cls: type, rounds: int = 20) -> Any:
    """The fixture recipe: ``cls(n_features=3, seed=0)`` after ``rounds`` rounds of stream 100,
    then three decisions (ids ``pending-0..2``, one with row 0 excluded) of which the middle
    one is rewarded, so that the file holds pending decisions and closed ids too."""
    policy = cls(n_features=3, seed=0)
    play(policy, rounds, seed=100)
    rng = np.random.default_rng(200)
    for i in range(3):
        contexts = policy_catalogue.unit_ball_contexts(rng, 4, 3)
        policy.decide(contexts, f"pending-{i}", excluded=[0] if i == 2 else None, now=100.0 + i)
    policy.reward("pending-1", 1.0, now=104.0)
    return policy
