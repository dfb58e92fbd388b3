"""The cheap single round (issue 23, item 1) keeps every guarantee of the checked one.

``select``/``update`` take the checks off the common path only where the input already
is what the check returns (``is_checked_contexts``/``is_checked_vector``), and UCB-GLM
and LinUCB learn inside a checkpoint of their estimate only (``_learn_checkpoint``,
the estimates' ``_add_checkpoint``) instead of one of the whole policy. These tests
show that the fast path and the checked path play the same trajectory bit for bit,
that a failure anywhere inside the fast path's learning still restores the policy
exactly, that contexts mutated in place between ``select`` and ``update`` are checked
again, and that a subclass which overrides ``_learn`` falls back to the whole-policy
checkpoint.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import glmbandits.policies.base as base
from glmbandits import LinUCB, UCBGLM
from glmbandits.estimation import estimates
from glmbandits.estimation.history import SampleHistory

D, K = 4, 6
FAST = {
    "ucbglm-lazy": lambda: UCBGLM(n_features=D, seed=3, refit="lazy"),
    "ucbglm-every-round": lambda: UCBGLM(n_features=D, seed=3),
    "ucbglm-l2-0": lambda: UCBGLM(n_features=D, seed=3, l2=0.0, tau=2),
    "linucb": lambda: LinUCB(n_features=D, seed=3, family="logistic"),
}


class _Injected(RuntimeError):
    pass


class CheckedUCBGLM(UCBGLM):
    """UCB-GLM whose ``_learn`` is its own: ``update`` checkpoints the whole policy."""

    def _learn(self, x: np.ndarray, reward: float) -> None:
        super()._learn(x, reward)


class CheckedLinUCB(LinUCB):
    def _learn(self, x: np.ndarray, reward: float) -> None:
        super()._learn(x, reward)


def _stream(seed: int, rounds: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rounds, K, D))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=2, keepdims=True))
    return [(X[t], rng.random(K)) for t in range(rounds)]


def _same(policy, other) -> bool:
    """Equal learned state, generator and counts (a pickle of a loaded policy differs from
    its original's in which objects are shared, so pickles of the two are not compared)."""
    return (all(np.array_equal(one, two) for one, two in zip(_learned(policy), _learned(other)))
            and policy.rng_.bit_generator.state == other.rng_.bit_generator.state
            and policy.n_updates_ == other.n_updates_)


def _play(policy, stream, as_lists: bool = False) -> list[int]:
    actions = []
    for X, u in stream:
        a = policy.select(X.tolist() if as_lists else X)
        reward = float(u[a] < 0.5)
        policy.update(X[a].tolist() if as_lists else X[a], reward)
        actions.append(a)
    return actions


def _learned(policy) -> list[np.ndarray]:
    estimate = policy.estimate_
    arrays = [estimate.theta_, estimate.V_inv_]
    if isinstance(policy, UCBGLM):
        arrays += [estimate.history.X, estimate.history.y]
        if policy.snapshot_ is not None:
            arrays += [policy.snapshot_.theta_, policy.snapshot_.V_inv_]
    return arrays


def test_ucbglm_and_linucb_take_the_fast_path_and_their_subclasses_do_not():
    assert UCBGLM._learn_checkpoint_of is UCBGLM._learn
    assert LinUCB._learn_checkpoint_of is LinUCB._learn
    assert CheckedUCBGLM._learn is not CheckedUCBGLM._learn_checkpoint_of
    assert CheckedLinUCB._learn is not CheckedLinUCB._learn_checkpoint_of


@pytest.mark.parametrize("make", FAST.values(), ids=FAST.keys())
def test_the_fast_update_takes_no_whole_policy_checkpoint(make, monkeypatch):
    policy = make()

    def refuse(owner):
        raise AssertionError("update took a checkpoint of the whole policy")

    monkeypatch.setattr(base, "checkpoint", refuse)
    _play(policy, _stream(0, 30))
    assert policy.n_updates_ == 30


@pytest.mark.parametrize("name", FAST, ids=FAST.keys())
def test_the_fast_path_and_the_checked_path_play_the_same_trajectory(name):
    """Bit for bit: actions, θ̂, V⁻¹, the history and the snapshot, after 150 rounds;
    also with every input given as lists (which the full checks convert)."""
    fast = FAST[name]()
    kwargs = {k: getattr(fast, k) for k in ("alpha", "l2")}
    if isinstance(fast, UCBGLM):
        checked = CheckedUCBGLM(n_features=D, seed=3, refit=fast.refit, tau=fast.tau, **kwargs)
    else:
        checked = CheckedLinUCB(n_features=D, seed=3, family="logistic", **kwargs)
    listed = FAST[name]()
    stream = _stream(1, 150)
    actions = _play(fast, stream)
    assert _play(checked, stream) == actions
    assert _play(listed, stream, as_lists=True) == actions
    for one, other, third in zip(_learned(fast), _learned(checked), _learned(listed)):
        assert np.array_equal(one, other) and np.array_equal(one, third)
    assert fast.n_updates_ == checked.n_updates_ == listed.n_updates_ == 150


def _inject_after(monkeypatch, owner, name: str, error: type[BaseException]) -> None:
    """``owner.name`` runs and then raises ``error``: its effects are in place when it fails."""
    real = getattr(owner, name)

    def failing(*args, **kwargs):
        real(*args, **kwargs)
        raise error("injected failure")

    monkeypatch.setattr(owner, name, failing)


# Every step of the estimates' add, failing after it has done its work (a rank-one update
# of V⁻¹ already applied, a sample already appended), with an error and with an interrupt.
FAILURES = [
    (estimates, "sherman_morrison_update", _Injected),
    (estimates, "sherman_morrison_update", KeyboardInterrupt),
    (SampleHistory, "append", _Injected),
    (SampleHistory, "append", KeyboardInterrupt),
]


@pytest.mark.parametrize("make", FAST.values(), ids=FAST.keys())
@pytest.mark.parametrize("owner, name, error", FAILURES,
                         ids=[f"{n}-{e.__name__}" for _, n, e in FAILURES])
def test_a_failure_in_the_middle_of_a_fast_update_restores_exactly(make, owner, name, error,
                                                                     monkeypatch):
    policy = make()
    stream = _stream(2, 40)
    _play(policy, stream[:25])
    X, _ = stream[25]
    a = policy.select(X)
    before = pickle.dumps(policy)
    clone = pickle.loads(before)
    if isinstance(policy, LinUCB) and owner is SampleHistory:
        name, owner = "sherman_morrison_update", estimates  # LinUCB keeps no history
    _inject_after(monkeypatch, owner, name, error)
    with pytest.raises(error, match="injected failure"):
        policy.update(X[a], 1.0)
    monkeypatch.undo()
    assert pickle.dumps(policy) == before
    policy.update(X[a], 1.0)  # then it plays on as a clone that never saw the failure
    clone.update(X[a], 1.0)
    assert _play(policy, stream[26:]) == _play(clone, stream[26:])
    assert _same(policy, clone)


@pytest.mark.parametrize("make", FAST.values(), ids=FAST.keys())
def test_contexts_mutated_in_place_after_select_are_checked_again(make):
    policy = make()
    stream = _stream(3, 30)
    _play(policy, stream[:20])
    X, _ = stream[20]
    X = X.copy()
    a = policy.select(X)
    before = pickle.dumps(policy)
    name = type(policy).__name__
    for value, message in [(np.nan, "x must be finite"), (np.inf, "x must be finite"),
                           (1e60, "x must have entries of magnitude <= 1e"),
                           (-1e300, "x must have entries of magnitude <= 1e")]:
        X[a, 1] = value
        with pytest.raises(ValueError, match=rf"{name}\.update: {message}"):
            policy.update(X[a], 1.0)
        assert pickle.dumps(policy) == before
    # a finite change is learned as given: the row passed, not the one selected
    X[a] = stream[21][0][0]
    clone = pickle.loads(before)
    policy.update(X[a], 1.0)
    clone.update(stream[21][0][0].copy(), 1.0)
    assert _same(policy, clone)


@pytest.mark.parametrize("make", FAST.values(), ids=FAST.keys())
def test_the_fast_checks_keep_every_refusal_and_its_message(make):
    """What ``is_checked_*`` leaves to the full checks is still refused, named, unchanged."""
    policy = make()
    _play(policy, _stream(4, 15))
    X = _stream(5, 1)[0][0]
    before = pickle.dumps(policy)
    name = type(policy).__name__
    bad_contexts = [
        (X.astype(np.float32), None),  # converted by the full check, then accepted
        (X[:, :2], rf"{name}\.select: contexts must have shape \(K, {D}\), got \({K}, 2\)"),
        (X[:0], "at least one action"),
        (X.astype(complex), "contexts must be a numeric array of real numbers"),
        (np.full((K, D), 1e200), "contexts must have entries of magnitude"),
    ]
    for contexts, message in bad_contexts:
        if message is None:
            assert policy.select(contexts) == pickle.loads(before).select(X)
            before = pickle.dumps(policy)
            continue
        with pytest.raises((ValueError, TypeError), match=message):
            policy.select(contexts)
        assert pickle.dumps(policy) == before
    a = policy.select(X)
    before = pickle.dumps(policy)
    bad_rows = [(X[a][:2], rf"{name}\.update: x must have shape \({D},\), got \(2,\)"),
                (X[a].astype(complex), "x must be a numeric array of real numbers"),
                (X[a:a + 1], rf"x must have shape \({D},\), got \(1, {D}\)")]
    for row, message in bad_rows:
        with pytest.raises((ValueError, TypeError), match=message):
            policy.update(row, 1.0)
        assert pickle.dumps(policy) == before
    with pytest.raises(ValueError, match=rf"{name}\.update: reward must lie in the logistic"):
        policy.update(X[a], 2.0)
    assert pickle.dumps(policy) == before


def test_a_subclass_that_learns_more_is_restored_whole():
    """A subclass whose ``_learn`` changes more than the estimate gets the whole-policy
    checkpoint: its extra state is restored too when learning fails after it."""

    class Counting(UCBGLM):
        def _learn(self, x: np.ndarray, reward: float) -> None:
            super()._learn(x, reward)
            self.seen_ = self.__dict__.get("seen_", 0) + 1
            if reward == 0.5:
                raise _Injected("injected failure")

    policy = Counting(n_features=D, seed=0, refit="lazy")
    _play(policy, _stream(6, 10))
    X = _stream(7, 1)[0][0]
    a = policy.select(X)
    before = pickle.dumps(policy.__getstate__())
    with pytest.raises(_Injected):
        policy.update(X[a], 0.5)
    assert pickle.dumps(policy.__getstate__()) == before
