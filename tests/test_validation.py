"""The shared input rules of ``glmbandits._validation`` (issue 12, item 6 and part of item 5).

Kinds: strings, complex numbers, datetimes and object arrays are a ``TypeError`` wherever a
numeric array is expected (contexts, rewards, propensities, actions); booleans are rewards
only where 0/1 lies in the family's domain. Messages print plain, readable numbers.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import policy_catalogue
from glmbandits import LinUCB, UCBGLM, fit_glm, theory
from glmbandits.data import LoggedBanditData
from glmbandits._validation import (
    MAX_MAGNITUDE,
    as_float_array,
    check_contexts,
    check_real,
    format_value,
)
from glmbandits.families import LinearFamily
from glmbandits.policies.base import Policy

D = 3
POLICY_CLASSES, ids = policy_catalogue.POLICY_CLASSES, policy_catalogue.POLICY_IDS

BAD_KINDS = {
    "strings": np.array([["1.0", "0.0", "0.0"], ["0.0", "1.0", "0.0"]]),
    "string list": [["1", "0", "0"]],
    "complex": np.array([[1.0 + 1.0j, 0.0, 0.0]]),
    "complex zero imag": np.array([[1.0 + 0.0j, 0.0, 0.0]]),
    "datetimes": np.array([[np.datetime64("2020-01-01")] * 3]),
    "timedeltas": np.array([[np.timedelta64(1, "s")] * 3]),
    "object numbers": np.array([[1.0, 0.0, 0.0]], dtype=object),
    "object with None": [[1.0, None, 0.0]],
}
BAD_SCALARS = {
    "string": "1.0",
    "numpy string": np.str_("1.0"),
    "complex": 1.0 + 0.0j,
    "numpy complex": np.complex128(1.0),
    "datetime": np.datetime64("2020-01-01"),
    "object array": np.array(1.0, dtype=object),
}


def _warm(policy: Policy, rounds: int = 8) -> np.ndarray:
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        X = rng.normal(size=(4, D)) / 2.0
        a = policy.select(X)
        policy.update(X[a], float(rng.random() < 0.5))
    X = rng.normal(size=(4, D)) / 2.0
    return X[policy.select(X)]


@pytest.mark.parametrize("kind", list(BAD_KINDS), ids=list(BAD_KINDS))
def test_as_float_array_refuses_non_real_kinds(kind):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning: refused, not cast
        with pytest.raises(TypeError, match=r"owner: contexts must be a numeric array"):
            as_float_array(BAD_KINDS[kind], "contexts", "owner")


def test_booleans_are_numbers_unless_refused():
    np.testing.assert_array_equal(as_float_array([True, False], "y", "owner"), [1.0, 0.0])
    with pytest.raises(TypeError, match="owner: action must be a numeric array of real numbers, "
                                        "got booleans"):
        as_float_array([True, False], "action", "owner", allow_bool=False)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
@pytest.mark.parametrize("kind", list(BAD_KINDS), ids=list(BAD_KINDS))
def test_select_refuses_non_real_contexts_and_changes_nothing(cls, kind):
    policy = cls(n_features=D, seed=0)
    _warm(policy)
    before = pickle.dumps(policy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TypeError, match=rf"{cls.__name__}.select: contexts must be a numeric"):
            policy.select(BAD_KINDS[kind])
    assert pickle.dumps(policy) == before


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
@pytest.mark.parametrize("kind", list(BAD_SCALARS), ids=list(BAD_SCALARS))
def test_update_refuses_non_real_rewards_and_changes_nothing(cls, kind):
    policy = cls(n_features=D, seed=0)
    x = _warm(policy)
    before = pickle.dumps(policy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TypeError, match=rf"{cls.__name__}.update: reward must be"):
            policy.update(x, BAD_SCALARS[kind])
        with pytest.raises(TypeError, match=rf"{cls.__name__}.update: x must be a numeric array"):
            policy.update(x.astype(complex), 1.0)
    assert pickle.dumps(policy) == before


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_boolean_reward_is_the_0_1_reward(cls):
    as_bool, as_float = cls(n_features=D, seed=0), cls(n_features=D, seed=0)
    x = _warm(as_bool)
    _warm(as_float)
    as_bool.update(x, True)
    as_float.update(x, 1.0)
    assert as_bool.n_updates_ == as_float.n_updates_


class _PositiveLinear(LinearFamily):
    """A linear family whose reward domain is [2, 3]: 0/1 are outside it."""

    name = "positive-linear"
    reward_domain = "[2, 3]"

    def in_domain(self, y):
        y = np.asarray(y, dtype=np.float64)
        return (y >= 2.0) & (y <= 3.0)


def test_boolean_reward_is_refused_where_0_1_is_outside_the_domain():
    policy = UCBGLM(n_features=D, family=_PositiveLinear(), seed=0)
    before = pickle.dumps(policy)
    with pytest.raises(ValueError, match=r"UCBGLM.update: reward must lie in the "
                                         r"positive-linear reward domain \[2, 3\], got 1.0"):
        policy.update(np.zeros(D), True)
    assert pickle.dumps(policy) == before


def test_fit_glm_refuses_non_real_designs_and_rewards():
    with pytest.raises(TypeError, match="fit_glm: X must be a numeric array"):
        fit_glm(np.array([[1.0 + 1.0j]]), [1.0], "logistic")
    with pytest.raises(TypeError, match="fit_glm: y must be a numeric array"):
        fit_glm([[1.0]], ["1"], "logistic")
    with pytest.raises(TypeError, match="fit_glm: y must be a numeric array"):
        fit_glm([[1.0]], np.array([None], dtype=object), "logistic")
    with pytest.raises(TypeError, match="fit_glm: theta0 must be a numeric array"):
        fit_glm([[1.0]], [1.0], "logistic", theta0=np.array([np.datetime64("2020-01-01")]))


LOG_COLUMNS = dict(contexts=np.zeros((3, 2, 4)), actions=[0, 1, 1], rewards=[1.0, 0.0, 1.0],
                   propensities=[0.5, 0.5, 0.5])


@pytest.mark.parametrize("column, value, message", [
    ("actions", ["0", "1", "1"], "action must be a numeric array of real numbers, got strings"),
    ("actions", [True, False, True], "action must be a numeric array of real numbers, "
                                     "got booleans"),
    ("actions", np.array([0, 1, 1], dtype=complex), "action must be a numeric array"),
    ("propensities", np.array([0.5, 0.5, None]), "propensity must be a numeric array"),
    ("propensities", [True, True, True], "propensity must be a numeric array of real numbers, "
                                         "got booleans"),
    ("rewards", np.array(["2020-01-01"] * 3, dtype="datetime64[D]"), "reward must be a numeric"),
    ("contexts", np.zeros((3, 2, 4), dtype=complex), "contexts must be a numeric array"),
])
def test_logged_data_refuses_non_real_columns(column, value, message):
    with pytest.raises(TypeError, match=f"LoggedBanditData: {message}"):
        LoggedBanditData(**{**LOG_COLUMNS, column: value})


def test_messages_print_plain_and_readable_numbers():
    assert format_value(np.float64(2.0)) == "2.0"
    assert format_value(np.int64(7)) == "7"
    assert format_value(1e155) == "1e+155"
    with pytest.raises(ValueError) as info:
        UCBGLM(n_features=D, seed=0).update(np.zeros(D), np.float64(2.0))
    assert str(info.value).endswith("got 2.0") and "np.float64" not in str(info.value)
    with pytest.raises(ValueError) as info:
        fit_glm([[1.0]], np.array([2.0]), "logistic")
    assert str(info.value).endswith("got 2.0")
    with pytest.raises(ValueError, match=r"action must hold integers, got 0.5$"):
        LoggedBanditData(**{**LOG_COLUMNS, "actions": [0, 0.5, 1]})
    with pytest.raises(ValueError, match=r"propensity must lie in \(0, 1\], got 1.5 in round 1$"):
        LoggedBanditData(**{**LOG_COLUMNS, "propensities": [0.5, 1.5, 0.5]})
    with pytest.raises(ValueError, match=r"entries of magnitude <= 1e\+50 .* got 1e\+155"):
        check_contexts([[1e155, 0.0, 0.0]], D, "owner")
    with pytest.raises(ValueError, match=r"alpha must be 0 or have magnitude between 1e-50 and "
                                         r"1e\+50, got 1e\+300"):
        UCBGLM(n_features=D, alpha=1e300)


@pytest.mark.parametrize("make, message", [
    (lambda: LinUCB(D, l2=5e-324), r"LinUCB: l2 must be 0 or have magnitude .* got 5e-324"),
    (lambda: LinUCB(D, alpha=1e300), r"LinUCB: alpha must be 0 or have magnitude"),
    (lambda: theory.ucb_glm_alpha(3, 100, 5e-324, 0.5, 0.25),
     r"ucb_glm_alpha: delta must be 0 or have magnitude"),
    (lambda: theory.supcb_glm_alpha(100, 3, 0.05, 0.5, 1e-60), r"kappa must be 0 or have"),
])
def test_real_parameters_keep_their_reciprocals_finite(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_check_real_limits():
    assert check_real(0.0, "o", "p") == 0.0
    assert check_real(MAX_MAGNITUDE, "o", "p") == MAX_MAGNITUDE
    with pytest.raises(ValueError, match="o: p must be finite, got inf"):
        check_real(float("inf"), "o", "p")
    with pytest.raises(TypeError, match="o: p must be a real number, got complex"):
        check_real(1j, "o", "p")


def test_huge_python_ints_are_a_value_error_not_an_overflow():
    with pytest.raises(ValueError, match=r"ucb_glm_alpha: horizon must have magnitude <= 1e\+50, "
                                         r"got an int of 1329 bits"):
        theory.ucb_glm_alpha(3, 10**400, 0.05, 0.5, 0.25)
    with pytest.raises(ValueError, match=r"LinUCB: alpha must have magnitude <= 1e\+50"):
        LinUCB(D, alpha=10**400)


def test_normality_width_refuses_non_real_and_huge_inputs():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning
        with pytest.raises(TypeError, match="normality_width: V must be a numeric array"):
            theory.normality_width([1.0, 0.0], np.eye(2) * (1 + 1j), 0.1, 0.5, 0.25)
        with pytest.raises(TypeError, match="normality_width: x must be a numeric array"):
            theory.normality_width(["1", "0"], np.eye(2), 0.1, 0.5, 0.25)
        with pytest.raises(ValueError, match=r"normality_width: x must have entries of magnitude "
                                             r"<= 1e\+50 .* got 1e\+155"):
            theory.normality_width([1e155, 0.0], np.eye(2), 0.1, 0.5, 0.25)
