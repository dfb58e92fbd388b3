"""Every class met in the state of every policy (several configurations, after play) is allowed,
and the allow-list names only classes that exist."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import glmbandits
import policy_catalogue
from glmbandits.persistence import allowed
from persistence_play import play

CONFIGS = [{}, {"refit": "lazy"}, {"l2": 0.0}, {"family": "probit"}, {"family": "linear"},
           {"family": "poisson"}, {"exploration_floor": 0.3}]


def _classes_in(obj, seen, found):
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, dict):
        for key, value in obj.items():
            _classes_in(key, seen, found)
            _classes_in(value, seen, found)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            _classes_in(value, seen, found)
    elif type(obj).__module__.startswith("glmbandits"):
        found.add(type(obj))
        getstate = type(obj).__getstate__
        state = obj.__getstate__() if getstate is not object.__getstate__ else vars(obj)
        _classes_in(state, seen, found)


@pytest.mark.parametrize("cls", policy_catalogue.POLICY_CLASSES, ids=policy_catalogue.POLICY_IDS)
def test_every_class_in_a_played_policy_is_allowed(cls):
    found: set[type] = set()
    tried = 0
    for config in CONFIGS:
        if any(name not in inspect.signature(cls.__init__).parameters for name in config):
            continue
        try:
            policy = cls(n_features=3, seed=0, **config)
        except ValueError:
            continue
        tried += 1
        play(policy, 40, seed=2, k=(1, 6))
        _classes_in(policy, set(), found)
    assert tried >= 2 and cls in found
    refused = [allowed.qualified_name(c) for c in found if not allowed.is_allowed_class(c)]
    assert refused == []


def test_the_allow_list_names_existing_classes_inside_glmbandits():
    for name in allowed.ALLOWED_CLASSES:
        module, _, qualname = name.rpartition(".")
        assert module.startswith("glmbandits.")
        assert inspect.isclass(allowed.resolve_class(module, qualname))


def test_exported_policies_are_allowed_the_rest_is_not():
    assert allowed.is_allowed_class(glmbandits.UCBGLM)
    assert not allowed.is_allowed_class(glmbandits.Policy)  # abstract
    assert not allowed.is_allowed_name("glmbandits.cli.main", "main")
    assert not allowed.is_allowed_name("os", "system")
    assert not allowed.is_allowed_class(np.ndarray)


def test_register_class_checks_its_argument():
    with pytest.raises(TypeError, match="register_class: cls must be a class, got int"):
        allowed.register_class(3)

    def factory():
        class Local:
            pass
        return Local
    with pytest.raises(ValueError, match="must be defined at module level"):
        allowed.register_class(factory())
