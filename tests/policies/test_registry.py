"""A policy of the library is registered in one place: its row in ``policies/registry.py``.

Everything else follows from that row or from the class definition: the name the
command line and configs use, ``glmbandits.__all__`` and ``glmbandits.<Class>``, and
the persistence allow-list (``Policy.__init_subclass__``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys

import pytest

import glmbandits
import glmbandits.policies
from glmbandits.persistence import allowed
from glmbandits.policies import registry
from glmbandits.policies.base import Policy
from glmbandits.policies.random_policy import RandomPolicy


def _library_policy_classes() -> set[type]:
    """Every concrete Policy subclass defined in a module of ``glmbandits.policies``."""
    for module in pkgutil.iter_modules(glmbandits.policies.__path__):
        importlib.import_module(f"glmbandits.policies.{module.name}")
    found, todo = set(), [Policy]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("glmbandits.policies.") and not inspect.isabstract(sub):
                found.add(sub)
    return found


def test_the_registry_exports_and_allows_every_policy_of_the_library():
    classes = _library_policy_classes()
    assert set(registry.policy_classes().values()) == classes
    exported = {obj for name in glmbandits.__all__
                if inspect.isclass(obj := getattr(glmbandits, name)) and issubclass(obj, Policy)
                and not inspect.isabstract(obj)}
    assert exported == classes
    for cls in classes:
        assert allowed.is_allowed_class(cls), cls
        assert getattr(glmbandits, cls.__name__) is cls


def test_no_second_list_names_a_policy():
    names = {cls.__name__ for cls in registry.policy_classes().values()}
    qualified = {allowed.qualified_name(cls) for cls in registry.policy_classes().values()}
    assert not qualified & allowed.ALLOWED_CLASSES
    source = ast.parse(inspect.getsource(glmbandits))
    strings = {node.value for node in ast.walk(source)
               if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert not names & strings


def test_a_new_policy_of_the_library_needs_its_registry_row_only(tmp_path):
    namespace = {"__module__": "glmbandits.policies.random_policy", "__qualname__": "ToyPolicy"}
    toy = type("ToyPolicy", (RandomPolicy,), namespace)  # as if defined in the library
    try:
        registry.register_policy("toy", toy,
                                 lambda p, seed, **kw: toy(p.n_features, seed=seed, **kw))
        policy = registry.make_policy("toy", registry.ProblemSpec(3, 4, "logistic", 10), seed=0)
        assert type(policy) is toy
        assert "ToyPolicy" in glmbandits.__all__ and glmbandits.ToyPolicy is toy
        assert type(glmbandits.load(policy.save(tmp_path / "toy.glmb"))) is toy
    finally:
        registry.POLICY_REGISTRY.pop("toy", None)
        registry.POLICY_CLASSES.pop("toy", None)
        vars(glmbandits).pop("ToyPolicy", None)
        allowed._LIBRARY.pop(allowed.qualified_name(toy), None)
    assert "ToyPolicy" not in glmbandits.__all__


def test_a_user_policy_is_neither_exported_nor_allowed_unless_registered():
    class UserPolicy(RandomPolicy):
        pass
    try:
        registry.register_policy("user", UserPolicy)
        assert registry.make_policy("user", registry.ProblemSpec(3, 4, "logistic", 10),
                                    seed=0).family.name == "logistic"
        assert "UserPolicy" not in glmbandits.__all__
        assert not allowed.is_allowed_class(UserPolicy)
    finally:
        registry.POLICY_REGISTRY.pop("user", None)
        registry.POLICY_CLASSES.pop("user", None)


def test_register_policy_checks_its_arguments():
    with pytest.raises(TypeError, match="register_policy: cls must be a Policy subclass, got int"):
        registry.register_policy("x", int)
    with pytest.raises(ValueError, match="register_policy: name must be lower-case"):
        registry.register_policy("Bad Name", RandomPolicy)


def test_a_fresh_process_loads_a_policy_before_importing_the_policies(tmp_path):
    """The allow-list is filled where the classes are defined: a process that has not
    imported ``glmbandits.policies`` yet still loads a model file (persistence imports the
    package face the file names, never a module upwards by a fixed name)."""
    path = registry.make_policy("supcb-glm", registry.ProblemSpec(3, 4, "logistic", 50),
                                seed=0).save(tmp_path / "m.glmb")
    code = ("import sys, glmbandits\n"
            "assert 'glmbandits.policies' not in sys.modules\n"
            f"policy = glmbandits.load({str(path)!r})\n"
            "print(type(policy).__name__)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["SupCBGLM"]
