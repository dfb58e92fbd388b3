"""Which classes a model file may hold: an explicit allow-list plus user opt-ins.

A class is stored and restored by its module and qualified name. On load, a
name is looked up *before* anything is imported: only the names listed in
:data:`ALLOWED_CLASSES`, the ``Policy`` subclasses exported in
``glmbandits.__all__`` (concrete ones) and the classes a user has passed to
:func:`register_class` are ever resolved, so a file can never name
``os.system`` or ``builtins.eval`` into existence.

This module imports no other glmbandits layer: glmbandits classes are resolved
by name with :mod:`importlib` (``glmbandits.policies`` lives in a higher layer).

Examples
--------
>>> is_allowed_name("glmbandits.estimation.history", "SampleHistory")
True
>>> is_allowed_name("os", "system"), is_allowed_name("glmbandits.cli.main", "main")
(False, False)
"""

from __future__ import annotations

import importlib
import inspect
import sys
from typing import Any

__all__ = ["ALLOWED_CLASSES", "register_class", "registered_classes", "resolve_class",
           "is_allowed_class", "is_allowed_name", "qualified_name"]

#: The glmbandits classes (besides the exported policies) that a policy's state holds.
#: ``tests/persistence/test_allowed.py`` walks the state of every policy in several
#: configurations and checks that every class it meets is allowed.
ALLOWED_CLASSES: frozenset[str] = frozenset({
    # policies (also allowed through glmbandits.__all__; listed so the list is complete)
    "glmbandits.policies.ecolog.ECOLog",
    "glmbandits.policies.epsilon_greedy.EpsilonGreedy",
    "glmbandits.policies.glm_tsl.GLMTSL",
    "glmbandits.policies.glm_ucb.GLMUCB",
    "glmbandits.policies.gloc.GLOC",
    "glmbandits.policies.laplace_ts.LaplaceTS",
    "glmbandits.policies.linucb.LinUCB",
    "glmbandits.policies.ofuglb.OFUGLB",
    "glmbandits.policies.random_policy.RandomPolicy",
    "glmbandits.policies.rs_glincb.RSGLinCB",
    "glmbandits.policies.supcb_glm.SupCBGLM",
    "glmbandits.policies.ucb_glm.UCBGLM",
    # what policies hold
    "glmbandits.policies.scores.ActionScores",
    "glmbandits.policies.decisions.PendingDecisions",
    "glmbandits.policies.ofuglb.RidgePotential",
    "glmbandits.families.LogisticFamily",
    "glmbandits.families.ProbitFamily",
    "glmbandits.families.LinearFamily",
    "glmbandits.families.PoissonFamily",
    "glmbandits.estimation.estimates.GLMEstimate",
    "glmbandits.estimation.estimates.RidgeEstimate",
    "glmbandits.estimation.history.SampleHistory",
    "glmbandits.estimation.incremental.IncrementalMLE",
    "glmbandits.estimation.lazy.NewtonCache",
    "glmbandits.estimation.mle.GLMFit",
    "glmbandits.estimation.schedule.RarelySwitchingSnapshot",
})

#: Classes users opted in with :func:`register_class`, by qualified name.
_REGISTERED: dict[str, type] = {}


def qualified_name(cls: type) -> str:
    """``module.qualname`` of a class."""
    return f"{cls.__module__}.{cls.__qualname__}"


def register_class(cls: type) -> type:
    """Allow instances of ``cls`` in saved model files (usable as a class decorator).

    Use it for your own policy subclasses or for objects your policies hold. The
    class is stored by ``module.qualname``; the process that loads the file must
    register it too (loading never imports a module outside glmbandits).

    Parameters
    ----------
    cls : type
        A class defined at module level (not inside a function).

    Returns
    -------
    type
        ``cls`` itself.

    Examples
    --------
    >>> class Tally:
    ...     pass
    >>> register_class(Tally) is Tally
    True
    """
    if not inspect.isclass(cls):
        raise TypeError(f"register_class: cls must be a class, got {type(cls).__name__}")
    if "<locals>" in cls.__qualname__:
        raise ValueError(f"register_class: cls must be defined at module level, got "
                         f"{cls.__qualname__!r}")
    name = qualified_name(cls)
    known = _REGISTERED.get(name)
    if known is not None and known is not cls:
        raise ValueError(f"register_class: another class named {name!r} is already registered")
    _REGISTERED[name] = cls
    return cls


def registered_classes() -> dict[str, type]:
    """A copy of the user-registered classes, by qualified name."""
    return dict(_REGISTERED)


def _is_glmbandits_module(module: str) -> bool:
    return module == "glmbandits" or module.startswith("glmbandits.")


def _exported_policy(name: str) -> type | None:
    """The ``Policy`` subclass exported in ``glmbandits.__all__`` under this qualified name."""
    package = sys.modules.get("glmbandits") or importlib.import_module("glmbandits")
    policy_base = importlib.import_module("glmbandits.policies.base").Policy
    for export in getattr(package, "__all__", ()):
        obj = getattr(package, export, None)
        if (inspect.isclass(obj) and issubclass(obj, policy_base) and not inspect.isabstract(obj)
                and qualified_name(obj) == name):
            return obj
    return None


def is_allowed_name(module: str, qualname: str) -> bool:
    """Whether ``module.qualname`` may be resolved (checked before any import)."""
    if not isinstance(module, str) or not isinstance(qualname, str):
        return False
    name = f"{module}.{qualname}"
    if name in _REGISTERED:
        return True
    if not _is_glmbandits_module(module):
        return False
    return name in ALLOWED_CLASSES or _exported_policy(name) is not None


def resolve_class(module: str, qualname: str) -> type:
    """The allowed class named ``module.qualname``.

    Raises
    ------
    LookupError
        The name is not allowed, or does not resolve to a class of that name.
    """
    if not is_allowed_name(module, qualname):
        raise LookupError(f"class {module}.{qualname} is not allowed (only glmbandits' own "
                          "classes and those passed to glmbandits.persistence.register_class)")
    name = f"{module}.{qualname}"
    if name in _REGISTERED:
        return _REGISTERED[name]
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    if not inspect.isclass(obj) or obj.__module__ != module or obj.__qualname__ != qualname:
        raise LookupError(f"class {name} does not exist in this version of glmbandits")
    return obj


def is_allowed_class(cls: type) -> bool:
    """Whether instances of ``cls`` may be saved (and its name resolves back to ``cls``)."""
    try:
        return resolve_class(cls.__module__, cls.__qualname__) is cls
    except (LookupError, ImportError):
        return False
