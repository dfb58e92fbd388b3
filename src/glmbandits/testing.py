"""The checks every policy, ours or a user's, must pass: :func:`check_policy`.

The test suite runs them over every policy class of the library
(``tests/test_common.py``); run them over your own policy class in your own tests.
A failed check raises :class:`AssertionError` naming the check and the class, so
the checks need no test framework.

The checks, in order (:data:`CHECKS`):

* the same seed gives the same actions; ``seed`` takes an int, a Generator or
  None and refuses anything else with ``TypeError``;
* the number of actions K may change from round to round;
* bad contexts and bad updates raise (``ValueError``/``TypeError`` naming the
  method and the parameter) and change nothing;
* inputs are not mutated;
* a pickle round-trip and a save/load round-trip continue identically (bit for
  bit; a user's class must be passed to
  :func:`glmbandits.persistence.register_class` first);
* scores and the propensity of the chosen action are exposed and finite;
* bad hyperparameters (``n_features``, and ``alpha``, ``tau``, ``l2``, ``family``
  where the constructor takes them) are refused;
* ``decide``/``reward`` are ``select``/``update`` plus the bookkeeping: the same
  actions, a retried decision returned again, a reward learned once (a second is a
  ``"duplicate"``), an unknown id refused;
* a reward outside the family's domain is refused by every door (``update``,
  ``update_batch``, ``reward``, ``reward_batch``, ``configure_decisions``).
* scikit-learn's conventions (:mod:`glmbandits._params`): ``get_params`` gives
  exactly the constructor's parameters, as given; ``set_params`` takes them back
  (the same objects), refuses a bad value or a policy that has learned and then
  changes nothing; a copy built from ``get_params`` (what ``sklearn.base.clone``
  does) keeps every value as given and plays as a fresh policy; ``repr`` shows the
  parameters that differ from their defaults.

The class must be constructible as ``cls(n_features=3, seed=0)`` and take a
``family`` keyword (``Policy`` does).

Why this module is long: the checks are the contract a user's policy is held to, kept in
one module with :data:`CHECKS` so that one import runs all of them, and each is small.

Examples
--------
>>> from glmbandits import LinUCB
>>> check_policy(LinUCB)
>>> check_policy(LinUCB, checks=["the same seed gives the same actions"])
"""

from __future__ import annotations

import copy
import inspect
import pickle
import re
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .policies.base import Policy
from .policies.decisions import Decision, UnknownDecisionError

__all__ = ["CHECKS", "check_policy"]

#: The dimension the checks play in.
D = 3

#: The checks by name, in the order :func:`check_policy` runs them.
CHECKS: dict[str, Callable[[type], None]] = {}


def _check(name: str) -> Callable[[Callable[[type], None]], Callable[[type], None]]:
    def add(function: Callable[[type], None]) -> Callable[[type], None]:
        CHECKS[name] = function
        return function
    return add


def check_policy(cls: type, *, checks: Sequence[str] | None = None) -> None:
    """Run the common policy checks on ``cls``.

    Parameters
    ----------
    cls : type
        A :class:`~glmbandits.policies.base.Policy` subclass, constructible as
        ``cls(n_features=3, seed=0)``.
    checks : sequence of str, optional
        Names from :data:`CHECKS` (default: all of them, in order).

    Raises
    ------
    AssertionError
        ``check_policy(Name): the check '...' failed: ...``, for the first check
        the class fails.
    TypeError, ValueError
        ``cls`` is not a Policy subclass, or a name is not in :data:`CHECKS`.
    """
    if not (inspect.isclass(cls) and issubclass(cls, Policy)):
        raise TypeError(f"check_policy: cls must be a Policy subclass, got {cls!r}")
    names = list(CHECKS) if checks is None else list(checks)
    unknown = [name for name in names if name not in CHECKS]
    if unknown:
        raise ValueError(f"check_policy: checks must be names from {list(CHECKS)}, got {unknown}")
    for name in names:
        try:
            CHECKS[name](cls)
        except Exception as error:  # an AssertionError of a check, or what the policy raised
            detail = str(error) if isinstance(error, AssertionError) else (
                f"{type(error).__name__}: {error}")
            raise AssertionError(f"check_policy({cls.__qualname__}): the check '{name}' "
                                 f"failed: {detail}") from error


def _contexts(rng: np.random.Generator, k: int) -> np.ndarray:
    """k Gaussian rows shrunk into the unit ball."""
    X = rng.normal(size=(k, D))
    rows: np.ndarray = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    return rows


def _play(policy: Any, rounds: int, seed: int, k: int | tuple[int, int] = 5) -> list[int]:
    """A fixed stream of contexts and 0/1 rewards (valid for every family); the actions."""
    rng = np.random.default_rng(seed)
    actions = []
    for _ in range(rounds):
        n = k if isinstance(k, int) else int(rng.integers(k[0], k[1] + 1))
        X = _contexts(rng, n)
        a = policy.select(X)
        if not (isinstance(a, int) and 0 <= a < n):
            raise AssertionError(f"select returned {a!r}, not an int in [0, {n})")
        policy.update(X[a], float(rng.random() < 0.5))
        actions.append(a)
    return actions


def _state(policy: Any) -> bytes:
    """The policy's state as bytes (its class need not be importable: defined in a notebook)."""
    return pickle.dumps(policy.__getstate__())


def _raises(call: Callable[[], Any], error: type[BaseException], pattern: str, what: str) -> None:
    """``call()`` raises ``error`` with a message matching ``pattern`` (re.search)."""
    try:
        call()
    except error as raised:
        if not re.search(pattern, str(raised)):
            raise AssertionError(f"{what} raised {type(raised).__name__}({str(raised)!r}), "
                                 f"expected a message matching {pattern!r}") from None
        return
    except Exception as raised:
        raise AssertionError(f"{what} raised {type(raised).__name__}({str(raised)!r}), expected "
                             f"{error.__name__} matching {pattern!r}") from None
    raise AssertionError(f"{what} did not raise {error.__name__} (expected a message matching "
                         f"{pattern!r})")


def _unchanged(policy: Any, before: bytes, what: str) -> None:
    if _state(policy) != before:
        raise AssertionError(f"{what} was refused but changed the policy")


@_check("the same seed gives the same actions")
def _seeding(cls: type) -> None:
    first = _play(cls(n_features=D, seed=0), 60, seed=1)
    second = _play(cls(n_features=D, seed=0), 60, seed=1)
    if first != second:
        raise AssertionError("two policies built with seed=0 chose different actions on the "
                             "same stream")


@_check("seed takes an int, a Generator or None")
def _seed_kinds(cls: type) -> None:
    cls(n_features=D, seed=None)
    a = _play(cls(n_features=D, seed=np.random.default_rng(4)), 30, seed=2)
    b = _play(cls(n_features=D, seed=np.random.default_rng(4)), 30, seed=2)
    if a != b:
        raise AssertionError("two policies seeded with equal Generators chose different actions")
    _raises(lambda: cls(n_features=D, seed="zero"), TypeError, "seed must be an int",
            "seed='zero'")
    _raises(lambda: cls(n_features=D, seed=1.5), TypeError, "seed", "seed=1.5")


@_check("the number of actions may change between rounds")
def _changing_k(cls: type) -> None:
    _play(cls(n_features=D, seed=0), 40, seed=3, k=(1, 8))


@_check("bad contexts raise and change nothing")
def _bad_contexts(cls: type) -> None:
    policy = cls(n_features=D, seed=0)
    _play(policy, 25, seed=5)
    before = _state(policy)
    name = cls.__name__
    good = _contexts(np.random.default_rng(0), 4)
    with_nan = good.copy()
    with_nan[1, 2] = np.nan
    with_inf = good.copy()
    with_inf[0, 0] = np.inf
    cases = [
        (with_nan, ValueError, rf"{name}\.select: contexts must be finite", "NaN contexts"),
        (with_inf, ValueError, "contexts must be finite", "infinite contexts"),
        (np.zeros((4, D + 1)), ValueError,
         rf"{name}\.select: contexts must have shape \(K, {D}\), got \(4, {D + 1}\)",
         "contexts of the wrong width"),
        (np.zeros(D), ValueError, rf"contexts must have shape \(K, {D}\), got \({D},\)",
         "one-dimensional contexts"),
        (np.zeros((0, D)), ValueError, "at least one action", "no action"),
        ([["a", "b", "c"]], TypeError, "contexts must be a numeric array", "string contexts"),
    ]
    for contexts, error, message, what in cases:
        _raises(lambda: policy.select(contexts), error, message, f"select with {what}")
        _unchanged(policy, before, f"select with {what}")


@_check("bad updates raise and change nothing")
def _bad_updates(cls: type) -> None:
    policy = cls(n_features=D, seed=0)
    _play(policy, 25, seed=6)
    X = _contexts(np.random.default_rng(1), 4)
    a = policy.select(X)
    before = _state(policy)
    name = cls.__name__
    cases: list[tuple[Any, Any, type[BaseException], str, str]] = [
        (np.zeros(D + 1), 1.0, ValueError, rf"{name}\.update: x must have shape \({D},\)",
         "x of the wrong length"),
        (np.full(D, np.nan), 1.0, ValueError, "x must be finite", "a NaN x"),
        (X[a], np.nan, ValueError, "reward must be finite", "a NaN reward"),
        (X[a], np.inf, ValueError, "reward must be finite", "an infinite reward"),
        (X[a], [1.0, 0.0], ValueError, "reward must be a scalar", "a list reward"),
        (X[a], "one", TypeError, "reward must be a numeric", "a string reward"),
    ]
    family = getattr(policy, "family", None)
    for bad in (2.0, -1.0):
        if family is not None and not family.in_domain(bad):
            cases.append((X[a], bad, ValueError, "reward must lie in the",
                          f"a reward of {bad} outside the family's domain"))
    for x, reward, error, message, what in cases:
        _raises(lambda: policy.update(x, reward), error, message, f"update with {what}")
        _unchanged(policy, before, f"update with {what}")
    updates = policy.n_updates_
    policy.update(X[a], 1.0)  # a good update still works afterwards
    if policy.n_updates_ != updates + 1:
        raise AssertionError(f"a good update after refused ones left n_updates_ at "
                             f"{policy.n_updates_}, expected {updates + 1}")


@_check("inputs are not mutated")
def _inputs_kept(cls: type) -> None:
    policy = cls(n_features=D, seed=0)
    rng = np.random.default_rng(8)
    for _ in range(30):
        X = _contexts(rng, 5)
        X_copy = X.copy()
        a = policy.select(X)
        x = X[a].copy()
        x_copy = x.copy()
        policy.update(x, 1.0)
        if not (np.array_equal(X, X_copy) and np.array_equal(x, x_copy)):
            raise AssertionError("select or update changed the array it was given")


@_check("a pickle round-trip continues identically")
def _pickle_round_trip(cls: type) -> None:
    policy = cls(n_features=D, seed=0)
    _play(policy, 40, seed=9)
    clone = pickle.loads(pickle.dumps(policy))
    if _play(policy, 40, seed=10) != _play(clone, 40, seed=10):
        raise AssertionError("the unpickled copy chose other actions than the original")


@_check("a save/load round-trip is exact")
def _save_load_round_trip(cls: type[Any]) -> None:
    policy = cls(n_features=D, seed=0)
    _play(policy, 40, seed=9)
    with tempfile.TemporaryDirectory() as folder:
        clone = cls.load(policy.save(Path(folder) / "policy.glmb"))
    if type(clone) is not cls or _state(clone) != _state(policy):
        raise AssertionError("the loaded policy differs from the saved one")
    if _play(policy, 40, seed=10) != _play(clone, 40, seed=10) or _state(clone) != _state(policy):
        raise AssertionError("the loaded policy continued differently from the saved one")


@_check("scores and the propensity are exposed and finite")
def _scores(cls: type) -> None:
    policy = cls(n_features=D, seed=0)
    rng = np.random.default_rng(11)
    for _ in range(30):
        X = _contexts(rng, 6)
        a = policy.select(X)
        scores = policy.last_scores_
        for field in ("ucb", "mean", "width"):
            array = getattr(scores, field)
            if array.shape != (6,) or np.any(np.isnan(array)):
                raise AssertionError(f"last_scores_.{field} is not 6 numbers: {array!r}")
        if not 0.0 < policy.last_propensity_ <= 1.0:
            raise AssertionError(f"last_propensity_ is {policy.last_propensity_!r}, not in (0, 1]")
        policy.update(X[a], 0.0)


@_check("bad hyperparameters are refused")
def _bad_hyperparameters(cls: type) -> None:
    parameters = inspect.signature(cls).parameters
    name = cls.__name__
    _raises(lambda: cls(n_features=0), ValueError, "n_features must be >= 1, got 0",
            "n_features=0")
    _raises(lambda: cls(n_features=2.5), TypeError, "n_features must be an int",
            "n_features=2.5")
    if "alpha" in parameters:
        for bad in (0.0, -1.0):
            _raises(lambda: cls(n_features=D, alpha=bad), ValueError,
                    f"{name}: alpha must be > 0", f"alpha={bad}")
        _raises(lambda: cls(n_features=D, alpha=np.nan), ValueError, "alpha must be finite",
                "alpha=nan")
    if "tau" in parameters:
        _raises(lambda: cls(n_features=D, tau=-1), ValueError, "tau must be >= 0, got -1",
                "tau=-1")
    if "l2" in parameters:
        _raises(lambda: cls(n_features=D, l2=-1.0), ValueError, "l2 must be", "l2=-1.0")
    if "family" in parameters:
        _raises(lambda: cls(n_features=D, family="cauchit"), ValueError,
                "family must be one of", "family='cauchit'")
        if parameters["family"].default is not None:  # a GLM policy needs its link
            _raises(lambda: cls(n_features=D, family=None), TypeError,
                    f"{name}: family must be a name", "family=None")


@_check("decide and reward are select and update plus the bookkeeping")
def _decide_reward(cls: type) -> None:
    deciding, selecting = cls(n_features=D, seed=0), cls(n_features=D, seed=0)
    rng = np.random.default_rng(14)
    for t in range(30):
        X = _contexts(rng, 5)
        reward = float(rng.random() < 0.5)
        decision = deciding.decide(X, f"d{t}", now=float(t))
        a = selecting.select(X)
        if not isinstance(decision, Decision) or decision.action != a:
            raise AssertionError(f"decide chose {getattr(decision, 'action', decision)!r} where "
                                 f"select chose {a} (same seed, same contexts)")
        if decision.decision_id != f"d{t}" or decision.propensity != decision.probabilities[a]:
            raise AssertionError(f"decision {decision!r} does not carry its id and the "
                                 "probability of its action")
        if deciding.decide(X, f"d{t}", now=float(t)) != decision:
            raise AssertionError("deciding again with a pending id returned another decision")
        if (status := deciding.reward(f"d{t}", reward, now=t + 0.5)) != "learned":
            raise AssertionError(f"the first reward of a decision returned {status!r}, "
                                 "not 'learned'")
        selecting.update(X[a], reward)
        if (status := deciding.reward(f"d{t}", reward, now=t + 0.5)) != "duplicate":
            raise AssertionError(f"a second reward of a decision returned {status!r}, "
                                 "not 'duplicate'")
        if deciding.n_updates_ != selecting.n_updates_:
            raise AssertionError(f"after {t + 1} rewards n_updates_ is {deciding.n_updates_}, "
                                 f"select/update made {selecting.n_updates_}")
    before = _state(deciding)
    _raises(lambda: deciding.reward("never-decided", 1.0, now=40.0), UnknownDecisionError,
            "never-decided", "a reward for an unknown decision id")
    _unchanged(deciding, before, "a reward for an unknown decision id")


@_check("a reward outside the family's domain is refused by every door")
def _reward_domain(cls: type) -> None:
    if "family" not in inspect.signature(cls).parameters:
        raise AssertionError("the constructor takes no family (every policy refuses rewards "
                             "outside its family's domain)")
    policy = cls(n_features=D, seed=0, family="logistic")
    _play(policy, 25, seed=12)
    X = _contexts(np.random.default_rng(13), 4)
    policy.decide(X, "pending", now=0.0)
    a = policy.select(X)
    name = cls.__name__
    for bad in (2.0, -1.0, 1e6, 2):
        doors: dict[str, Callable[[], Any]] = {
            "update": lambda: policy.update(X[a], bad),
            "update_batch": lambda: policy.update_batch(X[:2], [0.0, bad]),
            "reward": lambda: policy.reward("pending", bad, now=1.0),
            "reward_batch": lambda: policy.reward_batch(["pending"], [bad], now=1.0),
            "configure_decisions": lambda: policy.configure_decisions(default_reward=bad),
        }
        for door, call in doors.items():
            before = _state(policy)
            _raises(call, ValueError, rf"{name}\.{door}: reward must lie in the logistic reward "
                                      rf"domain \[0, 1\], got {re.escape(repr(float(bad)))}",
                    f"{door} with a reward of {bad!r}")
            _unchanged(policy, before, f"{door} with a reward of {bad!r}")
    if (status := policy.reward("pending", 1.0, now=1.0)) != "learned":
        raise AssertionError(f"a reward inside the domain returned {status!r}, not 'learned'")
    policy.update(X[a], 0.0)


def _given(cls: type) -> dict[str, Any]:
    """Constructor arguments the parameter checks build with (non-default where possible)."""
    parameters = inspect.signature(cls).parameters
    given: dict[str, Any] = {"n_features": D, "seed": 7}
    given.update({name: value for name, value in (("alpha", 0.7), ("exploration_floor", 0.25))
                  if name in parameters})
    return given


def _parameter_names(cls: type) -> list[str]:
    return [name for name, parameter in inspect.signature(cls).parameters.items()
            if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)]


@_check("get_params gives the constructor's parameters as given")
def _get_params(cls: type) -> None:
    given = _given(cls)
    policy = cls(**given)
    params = policy.get_params(deep=False)
    expected = sorted(_parameter_names(cls))
    if not isinstance(params, dict) or sorted(params) != expected:
        gave = sorted(params) if isinstance(params, dict) else params
        raise AssertionError(f"get_params gave {gave!r}, not the constructor's parameters "
                             f"{expected}")
    for name, value in given.items():
        if params[name] != value:
            raise AssertionError(f"get_params gave {name}={params[name]!r}, the constructor was "
                                 f"given {value!r}")
    defaults = {name: parameter.default
                for name, parameter in inspect.signature(cls).parameters.items()
                if parameter.default is not parameter.empty and name not in given}
    for name, default in defaults.items():
        if not (params[name] is default or params[name] == default):
            raise AssertionError(f"get_params gave {name}={params[name]!r} for a policy built "
                                 f"with its default {default!r}")
    deep = policy.get_params(deep=True)
    if any(deep.get(name, deep) is not value for name, value in params.items()):
        raise AssertionError("get_params(deep=True) does not hold get_params(deep=False)")


@_check("set_params checks first, sets what get_params gives and returns the policy")
def _set_params(cls: type) -> None:
    policy = cls(**_given(cls))
    params = policy.get_params(deep=False)
    if policy.set_params(**params) is not policy:
        raise AssertionError("set_params did not return the policy")
    again = policy.get_params(deep=False)
    for name, value in params.items():
        if again[name] is not value:
            raise AssertionError(f"after set_params({name}={value!r}) get_params gave "
                                 f"{again[name]!r}")
    before = _state(policy)
    _raises(lambda: policy.set_params(n_features=0), ValueError, "n_features must be >= 1",
            "set_params(n_features=0)")
    _raises(lambda: policy.set_params(not_a_parameter=1.0), ValueError, "not_a_parameter",
            "set_params(not_a_parameter=1.0)")
    if "alpha" in params:
        _raises(lambda: policy.set_params(alpha=-1.0, n_features=D + 1), ValueError,
                "alpha must be > 0", "set_params(alpha=-1.0, n_features=4)")
    _unchanged(policy, before, "a refused set_params")
    policy.set_params(n_features=D + 1)
    if policy.get_params()["n_features"] != D + 1 or policy.n_features != D + 1:
        raise AssertionError("set_params(n_features=4) did not make a policy of 4 features")
    X = np.full((3, D + 1), 0.25)
    policy.update(X[policy.select(X)], 1.0)
    before = _state(policy)
    _raises(lambda: policy.set_params(seed=1), ValueError, "has played",
            "set_params on a policy that has learned")
    _unchanged(policy, before, "set_params on a policy that has learned")


@_check("a clone is an unfitted copy with the same parameters")
def _clone(cls: type) -> None:
    played = cls(**_given(cls))
    _play(played, 20, seed=5)
    params = played.get_params(deep=False)
    arguments = {name: copy.deepcopy(value) for name, value in params.items()}
    clone = cls(**arguments)  # what sklearn.base.clone does
    kept = clone.get_params(deep=False)
    for name, value in arguments.items():
        if kept[name] is not value:
            raise AssertionError(f"the constructor does not keep {name} as given (got "
                                 f"{kept[name]!r} for {value!r}): sklearn.base.clone refuses it")
    fresh = cls(**_given(cls))
    if clone.n_updates_ != 0 or _play(clone, 20, seed=6) != _play(fresh, 20, seed=6):
        raise AssertionError("a copy built from get_params does not play as a fresh policy "
                             "with the same parameters")


@_check("repr shows the parameters that differ from their defaults")
def _repr(cls: type) -> None:
    given = _given(cls)
    text = repr(cls(**given))
    for name, value in given.items():
        if f"{name}={value!r}" not in text:
            raise AssertionError(f"repr {text!r} does not show {name}={value!r}")
    plain = repr(cls(n_features=D))
    if plain != f"{cls.__name__}(n_features={D})":
        raise AssertionError(f"repr of a policy built with its defaults is {plain!r}, not "
                             f"{cls.__name__}(n_features={D})")
