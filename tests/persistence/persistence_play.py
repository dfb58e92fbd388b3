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


#: The tolerance of comparisons with a computation that may have run on another machine:
#: OpenBLAS picks other kernels on other processors (and under another ``OPENBLAS_CORETYPE``),
#: which sum in another order, so a Gram inverse or a Newton step can differ in the last bits;
#: 20 rounds of rank-one updates and refits at d = 3 amplify that by far less than 1e6.
CROSS_MACHINE_RTOL = 1e-9
CROSS_MACHINE_ATOL = 1e-12


def assert_close_policies(first: Any, second: Any, rtol: float = CROSS_MACHINE_RTOL,
                          atol: float = CROSS_MACHINE_ATOL) -> None:
    """The same class and the same state up to a stated float tolerance.

    Both policies are split by the model file's codec (:func:`glmbandits.persistence.codec.encode`)
    into a tree and named arrays; the trees must have the same structure and equal
    non-float leaves (ints, strings, generator states, flags), float leaves and float
    arrays must agree within ``rtol``/``atol`` (NaN where NaN, infinities equal), other
    arrays exactly. For states computed on two machines, where bit-for-bit equality is
    not promised.
    """
    from glmbandits.persistence.codec import encode

    assert type(first) is type(second)
    tree_a, arrays_a = encode(first)
    tree_b, arrays_b = encode(second)
    _assert_close_nodes(tree_a, tree_b, arrays_a, arrays_b, "policy", rtol, atol)


def _assert_close_values(a: np.ndarray, b: np.ndarray, where: str, rtol: float,
                         atol: float) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape, (
        f"{where}: {a.dtype}{a.shape} != {b.dtype}{b.shape}")
    if np.issubdtype(a.dtype, np.inexact):
        assert np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True), (
            f"{where}: differs by up to {np.nanmax(np.abs(a - b)) if a.size else 0:.3g}")
    else:
        assert np.array_equal(a, b), f"{where}: differs"


def _assert_close_nodes(a: Any, b: Any, arrays_a: dict, arrays_b: dict, where: str,
                        rtol: float, atol: float) -> None:
    if isinstance(a, float) and isinstance(b, float):
        _assert_close_values(np.float64(a), np.float64(b), where, rtol, atol)
        return
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, list):
        assert len(a) == len(b), f"{where}: lengths {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_close_nodes(x, y, arrays_a, arrays_b, f"{where}[{i}]", rtol, atol)
        return
    if not isinstance(a, dict):
        assert a == b, f"{where}: {a!r} != {b!r}"
        return
    kind = a.get("$")
    if kind in ("ndarray", "floats", "ints") and "array" in a:
        assert kind == b.get("$"), f"{where}: {kind} != {b.get('$')}"
        _assert_close_values(arrays_a[a["array"]], arrays_b[b["array"]], where, rtol, atol)
        return
    if kind == "scalar" and b.get("$") == "scalar" and a["dtype"] == b["dtype"]:
        dtype = np.dtype(a["dtype"])
        _assert_close_values(np.frombuffer(bytes.fromhex(a["hex"]), dtype),
                             np.frombuffer(bytes.fromhex(b["hex"]), dtype), where, rtol, atol)
        return
    assert list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
    for key in a:
        label = f"{where}.{key}" if kind != "dict" else where
        _assert_close_nodes(a[key], b[key], arrays_a, arrays_b, label, rtol, atol)


def assert_close_runs(first: list[tuple], second: list[tuple], rtol: float = CROSS_MACHINE_RTOL,
                      atol: float = CROSS_MACHINE_ATOL) -> None:
    """Two runs with the same actions, and scores, distributions and estimates within a
    stated tolerance (for runs that may have been computed on two machines)."""
    assert len(first) == len(second)
    for t, (a, b) in enumerate(zip(first, second)):
        assert a[0] == b[0], f"round {t}: actions {a[0]} != {b[0]}"
        assert len(a) == len(b)
        for i, (x, y) in enumerate(zip(a[1:], b[1:])):
            _assert_close_values(x, y, f"round {t}: field {i + 1}", rtol, atol)
