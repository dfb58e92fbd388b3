"""Hyperparameters the scikit-learn way: ``get_params``, ``set_params``, a short ``repr``.

An object's parameters are the named parameters of its class's ``__init__``
(introspected by :func:`parameter_names`, the one home of that rule), each kept by
the constructor under its own name, as checked and normalised there (``alpha=1``
is kept as ``1.0``). :class:`Parameters` is the mixin that policies and feature
builders share:

* ``get_params(deep=True)`` returns exactly those names. A value the constructor
  resolved from ``None`` (UCB-GLM's ``tau = 2d``, RS-GLinCB's ``beta``) is reported
  as given: the constructor notes it with :func:`keep_given`. A class may report a
  kept value in its own terms (:meth:`Parameters._reported_param`: a policy reports
  its family by name).
* ``set_params(**params)`` checks the new values by building the class again from
  the merged parameters (the constructor is the one home of the checks), so a
  refused value raises its ``TypeError``/``ValueError`` and changes nothing; only then
  does the object take the new parameters (:meth:`Parameters._adopt`).
* ``repr`` shows the parameters whose value differs from the default.

So ``sklearn.base.clone(obj)`` (``type(obj)(**obj.get_params(deep=False))``) gives an
unfitted copy with the same parameters, and scikit-learn's parameter searches
(``ParameterGrid``) apply to these objects. scikit-learn itself is not imported.

Examples
--------
>>> from glmbandits import UCBGLM
>>> policy = UCBGLM(n_features=3, alpha=0.5)
>>> policy
UCBGLM(n_features=3, alpha=0.5)
>>> policy.get_params()["tau"] is None  # resolved to 2d = 6 inside, reported as given
True
>>> policy.set_params(alpha=2.0, family="probit")
UCBGLM(n_features=3, family='probit', alpha=2.0)
>>> policy.set_params(alpha=-1.0)
Traceback (most recent call last):
ValueError: UCBGLM: alpha must be > 0, got -1.0
>>> policy.alpha
2.0
"""

from __future__ import annotations

import copy
import inspect
import numbers
from typing import Any

__all__ = ["Parameters", "parameter_names", "parameter_defaults", "keep_given", "unfitted_copy",
           "GIVEN_PARAMS"]

#: Where a constructor notes the parameters given as None that it resolved (:func:`keep_given`);
#: not state: a class that saves its state leaves it out (``Policy.__getstate__``).
GIVEN_PARAMS = "_given_params"


def parameter_names(cls: type) -> tuple[str, ...]:
    """The names of the parameters of ``cls.__init__``, in order (no ``self``, no ``**kwargs``).

    A ``*args`` parameter (``Concat(*blocks)``) is one parameter, its tuple, passed
    back positionally (scikit-learn's ``clone`` passes keywords only: such a class
    defines ``__sklearn_clone__`` with :func:`unfitted_copy`).

    Examples
    --------
    >>> from glmbandits import LinUCB
    >>> parameter_names(LinUCB)[:3]
    ('n_features', 'alpha', 'l2')
    """
    names = []
    for parameter in inspect.signature(cls).parameters.values():
        if parameter.name == "self" or parameter.kind is parameter.VAR_KEYWORD:
            continue
        names.append(parameter.name)
    return tuple(names)


def parameter_defaults(cls: type) -> dict[str, Any]:
    """The defaults of the parameters of ``cls.__init__`` that have one (``*args``: ``()``)."""
    parameters = inspect.signature(cls).parameters
    defaults = {name: parameters[name].default for name in parameter_names(cls)
                if parameters[name].default is not inspect.Parameter.empty}
    defaults.update((name, ()) for name in parameter_names(cls)
                    if parameters[name].kind is inspect.Parameter.VAR_POSITIONAL)
    return defaults


def keep_given(obj: Any, **given: Any) -> None:
    """Note the parameters given as ``None`` that the constructor keeps resolved.

    ``get_params`` reports ``None`` for them (e.g. ``tau=None``) instead of the
    attribute (``tau = 2d``), so a clone resolves them again from its own parameters.
    A value given otherwise is the attribute (as checked), and is not noted. The note
    is not saved state: a policy restored from a model file or a pickle reports the
    resolved value (the one it plays with), and a clone of it plays the same.
    """
    noted = {name: value for name, value in given.items() if value is None}
    if noted:
        obj.__dict__.setdefault(GIVEN_PARAMS, {}).update(noted)


def _is_default(value: Any, default: Any) -> bool:
    """Whether a parameter value equals its default (``repr`` leaves it out)."""
    if value is default:
        return True
    if isinstance(value, (bool, str)) or isinstance(default, (bool, str)):
        return type(value) is type(default) and value == default
    if isinstance(value, numbers.Real) and isinstance(default, numbers.Real):
        return bool(value == default)
    return False


def _build(cls: type, params: dict[str, Any]) -> Any:
    """``cls(**params)``, a ``*args`` parameter (and those before it) passed positionally."""
    parameters = list(inspect.signature(cls).parameters.values())
    params = dict(params)
    positional: list[Any] = []
    if any(parameter.kind is parameter.VAR_POSITIONAL for parameter in parameters):
        for parameter in parameters:
            if parameter.kind is parameter.VAR_POSITIONAL:
                positional.extend(params.pop(parameter.name))
                break
            positional.append(params.pop(parameter.name))
    return cls(*positional, **params)


def unfitted_copy(obj: Any) -> Any:
    """A new object of ``obj``'s class with copies of its parameters (recursively unfitted).

    What ``sklearn.base.clone`` makes, also for a class whose ``*args`` parameter clone
    cannot pass (``Concat(*blocks)`` calls it from ``__sklearn_clone__``).
    """
    if isinstance(obj, Parameters):
        return _build(type(obj), {name: unfitted_copy(value)
                                  for name, value in obj.get_params(deep=False).items()})
    if isinstance(obj, tuple):
        return tuple(unfitted_copy(value) for value in obj)
    return copy.deepcopy(obj)


class Parameters:
    """Mixin: ``get_params``/``set_params`` over the constructor's parameters, and ``repr``.

    A class adopts new parameters in :meth:`_adopt` (default: every attribute the
    constructor sets); :meth:`_check_settable` may refuse ``set_params`` on an object
    whose state the new parameters would not describe (a policy that has learned).
    """

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters, by name.

        Parameters
        ----------
        deep : bool, default True
            Also list ``name__sub`` for each parameter value that has parameters of
            its own (a feature builder's blocks).

        Returns
        -------
        dict
            Exactly the names of ``__init__``'s parameters.
        """
        given = self.__dict__.get(GIVEN_PARAMS, {})
        params: dict[str, Any] = {}
        for name in parameter_names(type(self)):
            if name in given:
                value = given[name]
            else:
                try:
                    value = getattr(self, name)
                except AttributeError:
                    raise AttributeError(f"{type(self).__name__}.get_params: the constructor "
                                         f"parameter {name!r} is not kept as an attribute of "
                                         "the same name") from None
                value = self._reported_param(name, value)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{key}", sub)
                              for key, sub in value.get_params(deep=True).items())
            params[name] = value
        return params

    def set_params(self, **params: Any) -> Any:
        """Set constructor parameters; a refused value changes nothing. Returns ``self``.

        The new values go through the constructor's own checks (the class is built
        again from the merged parameters) before anything changes. ``name__sub`` sets
        ``sub`` of the parameter ``name`` (a block of a feature builder).

        Raises
        ------
        ValueError
            An unknown name, a value the constructor refuses, or an object that
            refuses new parameters in its state (:meth:`_check_settable`).
        TypeError
            A value of the wrong kind.
        """
        if not params:
            return self
        cls = type(self)
        owner = f"{cls.__name__}.set_params"
        names = parameter_names(cls)
        merged = self.get_params(deep=False)
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, nest, sub = key.partition("__")
            if name not in names:
                raise ValueError(f"{owner}: parameter must be one of {list(names)}, "
                                 f"got {key!r}")
            if nest:
                if not hasattr(merged[name], "set_params"):
                    raise ValueError(f"{owner}: {name} has no parameters to set, got {key!r}")
                nested.setdefault(name, {})[sub] = value
            else:
                merged[name] = value
        for name, values in nested.items():  # the sub-object is rebuilt: the original stays
            rebuilt = _build(type(merged[name]), merged[name].get_params(deep=False))
            merged[name] = rebuilt.set_params(**values)
        self._check_settable(owner, {name: merged[name] for name in
                                     {key.partition("__")[0] for key in params}})
        fresh = _build(cls, merged)  # every check of the constructor; raises before any change
        self._adopt(fresh)
        return self

    def _reported_param(self, name: str, value: Any) -> Any:
        """How ``get_params`` reports the kept value of ``name`` (default: as it is)."""
        return value

    def _check_settable(self, owner: str, changes: dict[str, Any]) -> None:
        """Refuse ``set_params`` (``ValueError``) when this object's state forbids it."""

    def _adopt(self, fresh: Any) -> None:
        """Take the parameters (and what the constructor derives from them) of ``fresh``."""
        self.__dict__.update(vars(fresh))
        if GIVEN_PARAMS not in vars(fresh):
            self.__dict__.pop(GIVEN_PARAMS, None)

    def _repr_params(self) -> dict[str, Any]:
        """The parameters that differ from their defaults (all required ones)."""
        defaults = parameter_defaults(type(self))
        return {name: value for name, value in self.get_params(deep=False).items()
                if name not in defaults or not _is_default(value, defaults[name])}

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self._repr_params().items())
        return f"{type(self).__name__}({shown})"
