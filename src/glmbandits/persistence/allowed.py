"""Which classes a model file may hold: an explicit allow-list plus user opt-ins.

A class is stored and restored by its module and qualified name. On load, only
the names listed in :data:`ALLOWED_CLASSES`, the concrete classes glmbandits
declared where it defines them (:func:`allow_library_class`: every ``Policy``
subclass of the library, from ``Policy.__init_subclass__``) and the classes a
user has passed to :func:`register_class` are ever resolved. A name outside
glmbandits is refused before anything is imported, so a file can never name
``os.system`` or ``builtins.eval`` into existence.

This module imports no other glmbandits layer. The layers above it fill its
registries when they define their classes; a name this process has not met yet
is looked up after importing the glmbandits *package* it names (``glmbandits.x``
for ``glmbandits.x.y``, a package face only, never a module that runs anything),
whose classes then declare themselves.

Examples
--------
>>> is_allowed_name("glmbandits.estimation.history", "SampleHistory")
True
>>> is_allowed_name("os", "system"), is_allowed_name("glmbandits.cli.main", "main")
(False, False)
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from typing import Any

__all__ = ["ALLOWED_CLASSES", "register_class", "registered_classes", "resolve_class",
           "is_allowed_class", "is_allowed_name", "qualified_name", "allow_library_class",
           "declare_model_root", "model_roots"]

#: The glmbandits classes that a policy's state holds (the policies themselves declare
#: themselves: :func:`allow_library_class`). ``tests/persistence/test_allowed.py`` walks
#: the state of every policy in several configurations and checks that every class it
#: meets is allowed.
ALLOWED_CLASSES: frozenset[str] = frozenset({
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
    "glmbandits.estimation.discounted.DiscountedGram",
    "glmbandits.estimation.discounted.DiscountedRidgeEstimate",
    "glmbandits.estimation.discounted.DiscountedGLMEstimate",
    "glmbandits.estimation.windowed.SlidingWindow",
    "glmbandits.estimation.windowed.WindowedGLMEstimate",
    # a policy's feature_schema_ (glmbandits.features.attach_schema): saved as JSON values
    # (its declaration and fitted state), rebuilt and checked by its __setstate__
    "glmbandits.features.schema.FeatureSchema",
})

#: Classes users opted in with :func:`register_class`, by qualified name.
_REGISTERED: dict[str, type] = {}
#: glmbandits' own classes, declared where they are defined (:func:`allow_library_class`).
_LIBRARY: dict[str, type] = {}
#: The classes a model file's top object derives from (:func:`declare_model_root`).
_ROOTS: list[type] = []


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


def allow_library_class(cls: type) -> type:
    """Allow a glmbandits class in model files, from where it is defined.

    ``Policy.__init_subclass__`` calls it for every policy class of the library, so
    a new policy needs no entry here. An abstract class is declared too but never
    resolved (checked at lookup, when its abstract methods are known).

    Raises
    ------
    ValueError
        ``cls`` is not defined in a glmbandits module (a user's class goes through
        :func:`register_class`).
    """
    if not _is_glmbandits_module(getattr(cls, "__module__", "")):
        raise ValueError(f"allow_library_class: cls must be defined in glmbandits, got "
                         f"{cls.__module__}.{cls.__qualname__} (use register_class)")
    _LIBRARY[qualified_name(cls)] = cls
    return cls


def declare_model_root(cls: type) -> type:
    """Declare the base class every model file's top object derives from (``Policy``)."""
    if cls not in _ROOTS:
        _ROOTS.append(cls)
    return cls


def model_roots() -> tuple[type, ...]:
    """The classes declared with :func:`declare_model_root` (empty before any is defined)."""
    return tuple(_ROOTS)


def _library_class(module: str, name: str) -> type | None:
    """The concrete library class declared under ``name``, importing its package face first."""
    if name not in _LIBRARY:
        package = ".".join(module.split(".")[:2])
        try:
            spec = importlib.util.find_spec(package)
            if spec is not None and spec.submodule_search_locations is not None:
                importlib.import_module(package)  # its classes declare themselves
        except ImportError:  # a package of an optional extra that is not installed
            return None
    cls = _LIBRARY.get(name)
    return None if cls is None or inspect.isabstract(cls) else cls


def is_allowed_name(module: str, qualname: str) -> bool:
    """Whether ``module.qualname`` may be resolved (a name outside glmbandits is refused
    before any import)."""
    if not isinstance(module, str) or not isinstance(qualname, str):
        return False
    name = f"{module}.{qualname}"
    if name in _REGISTERED:
        return True
    if not _is_glmbandits_module(module):
        return False
    return name in ALLOWED_CLASSES or _library_class(module, name) is not None


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
    if name in _LIBRARY:
        return _LIBRARY[name]
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
