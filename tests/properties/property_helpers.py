"""Shared pieces of the property suite: policy classes, invariant checks, state comparison."""

from __future__ import annotations

import inspect
import pickle
import warnings
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

import policy_catalogue
from glmbandits.exceptions import GLMBanditsWarning
from glmbandits.policies.base import Policy

POLICY_CLASSES = policy_catalogue.POLICY_CLASSES
FAMILIES = ("logistic", "probit", "linear", "poisson")


def takes_family(cls: type) -> bool:
    return "family" in inspect.signature(cls).parameters


def make_policy(cls: type, d: int, family: str, seed: int, **extra: Any) -> Policy:
    params = inspect.signature(cls).parameters
    kwargs: dict[str, Any] = {"seed": seed}
    if "family" in params:
        kwargs["family"] = family
    if "horizon" in params:
        kwargs["horizon"] = 200
    kwargs.update({k: v for k, v in extra.items() if k in params})
    return cls(n_features=d, **kwargs)


def policy_bytes(policy: Any) -> bytes:
    """The whole state, RNG included, as bytes: equal bytes = equal state."""
    return pickle.dumps(policy, protocol=pickle.HIGHEST_PROTOCOL)


def differing_attributes(before: Any, after: Any) -> list[str]:
    """Names of the attributes whose pickled value differs (for failure messages)."""
    names = set(vars(before)) | set(vars(after))
    return sorted(name for name in names
                  if pickle.dumps(vars(before).get(name)) != pickle.dumps(vars(after).get(name)))


@contextmanager
def no_foreign_warnings() -> Iterator[list]:
    """Fail on any warning that is not one of the library's own (RuntimeWarning above all)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught
    foreign = [w for w in caught if not issubclass(w.category, GLMBanditsWarning)]
    assert not foreign, [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})"
                         for w in foreign]


def assert_finite_outputs(policy: Policy, action: int, n_actions: int) -> None:
    """What select hands out: a valid index, finite scores, a propensity in (0, 1]."""
    assert isinstance(action, int) and 0 <= action < n_actions
    scores = policy.last_scores_
    assert scores is not None
    for field in ("ucb", "mean", "width"):
        values = np.asarray(getattr(scores, field), dtype=float)
        assert values.shape == (n_actions,), (field, values.shape)
        assert np.all(np.isfinite(values)), (field, values)
    propensity = policy.last_propensity_
    assert propensity is not None and np.isfinite(propensity) and 0.0 < propensity <= 1.0


def assert_no_nan_in_state(policy: Any) -> None:
    """No NaN in the policy's learned state (its ``name_`` attributes; inf may mean 'not yet').

    Solver work arrays inside estimate objects are not state and are not read.
    """
    for key, value in vars(policy).items():
        if key.startswith("_") or not key.endswith("_"):
            continue
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if isinstance(item, np.ndarray) and item.dtype.kind in "fc":
                assert not np.any(np.isnan(item)), key
            elif isinstance(item, float):
                assert item == item, key
