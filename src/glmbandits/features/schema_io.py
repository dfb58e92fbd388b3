"""A feature schema's declaration as JSON values, and its checks.

:meth:`FeatureSchema.declaration <glmbandits.features.schema.FeatureSchema.declaration>`
writes the schema as plain JSON values (what a config file holds, what a model file
saves, what a fingerprint hashes); :func:`fields_from_declaration` reads it back into
the constructor's arguments, naming any key it does not know. :data:`SCHEMA_FORMAT` is
the version of that layout: a declaration of a newer format is refused. Every refusal
of a declaration or of the schema's arguments is a :class:`DeclarationError` (a
``TypeError`` or a ``ValueError``) whose ``key`` names the key it is about
(``context[2] scale``, ``interactions[1]``), so a config file can name it.

Examples
--------
>>> args = fields_from_declaration({"context": [{"kind": "numeric", "name": "age"}]}, "example")
>>> args["context"]
[Numeric('age', missing='refuse', scale=None, range=None)]
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .categorical_fields import Categorical, MultiCategorical
from .fields import Field
from .numeric_fields import Boolean, Numeric, Vector

__all__ = ["SCHEMA_FORMAT", "RESERVED_NAMES", "FIELD_KINDS", "check_fields",
           "check_interactions", "fields_from_declaration", "difference", "DeclarationError",
           "refuse", "json_copy"]

#: The field classes by their declared ``kind`` (how a declaration names them).
FIELD_KINDS: dict[str, type[Field]] = {cls.kind: cls for cls in (
    Numeric, Boolean, Categorical, MultiCategorical, Vector)}

#: The version of the declaration's layout (``"format"``); older layouts stay readable.
SCHEMA_FORMAT = 1
#: Names a field may not take: the groups an interaction names, and the intercept's column.
RESERVED_NAMES = ("context", "action", "intercept")
_SCHEMA_KEYS = ("format", "context", "action", "interactions", "intercept", "unit_ball",
                "unknown")


class DeclarationError(Exception):
    """A refused schema declaration; ``key`` names the key (``""``: the whole of it).

    Raised as :class:`DeclarationTypeError` (a wrong kind) or :class:`DeclarationValueError`
    (a wrong value), so ``except TypeError`` and ``except ValueError`` catch them too.

    Examples
    --------
    >>> try:
    ...     fields_from_declaration({"context": [{"kind": "numeric", "name": "a=b"}]}, "example")
    ... except DeclarationError as error:
    ...     print(error.key)
    context[0] name
    """

    key: str = ""


class DeclarationTypeError(DeclarationError, TypeError):
    """A :class:`DeclarationError` about a value of the wrong kind."""


class DeclarationValueError(DeclarationError, ValueError):
    """A :class:`DeclarationError` about a wrong value."""


def refuse(kind: type[Exception], key: str, message: str) -> DeclarationError:
    """The :class:`DeclarationError` of ``kind`` (TypeError or ValueError) naming ``key``."""
    error = (DeclarationTypeError if issubclass(kind, TypeError)
             else DeclarationValueError)(message)
    error.key = key
    return error


def check_fields(context: Any, action: Any, owner: str) -> tuple[tuple[Field, ...],
                                                                 tuple[Field, ...]]:
    """The two groups as tuples of fields with unique, unreserved names."""
    groups = []
    seen: set[str] = set()
    for group, fields in (("context", context), ("action", action)):
        if isinstance(fields, (str, bytes, Mapping)) or not isinstance(fields, Sequence):
            raise refuse(TypeError, group, f"{owner}: {group} must be a sequence of fields, "
                         f"got {type(fields).__name__}")
        for i, f in enumerate(fields):
            if not isinstance(f, Field):
                raise refuse(TypeError, f"{group}[{i}]", f"{owner}: {group}[{i}] must be a "
                             "field (Numeric, Boolean, Categorical, MultiCategorical, Vector), "
                             f"got {type(f).__name__}")
            if f.name in RESERVED_NAMES:
                raise refuse(ValueError, f"{group}[{i}] name", f"{owner}: {group}[{i}] may not "
                             f"be named {f.name!r} (reserved: {list(RESERVED_NAMES)})")
            if f.name in seen:
                raise refuse(ValueError, f"{group}[{i}] name", f"{owner}: {group}[{i}] repeats "
                             f"the field name {f.name!r} (names are unique across context and "
                             "action)")
            seen.add(f.name)
        groups.append(tuple(fields))
    return groups[0], groups[1]


def check_interactions(interactions: Any, context: Sequence[Field], action: Sequence[Field],
                       owner: str) -> list[tuple[str, str]]:
    """The pairs, each naming a non-empty group or a field."""
    known = {f.name for f in (*context, *action)}
    known |= {g for g, fields in (("context", context), ("action", action)) if fields}
    if isinstance(interactions, (str, bytes, Mapping)) or not isinstance(interactions,
                                                                          Sequence):
        raise refuse(TypeError, "interactions", f"{owner}: interactions must be a sequence "
                     f"of (str, str) pairs, got {type(interactions).__name__}")
    pairs = []
    for i, pair in enumerate(interactions):
        where = f"interactions[{i}]"
        if (isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2
                or not all(isinstance(p, str) for p in pair)):
            raise refuse(TypeError, where, f"{owner}: {where} must be a pair of names, got "
                         f"{pair!r}")
        for name in pair:
            if name not in known:
                raise refuse(ValueError, where, f"{owner}: {where} names {name!r}, which is no "
                             f"field and no group with fields (known: {sorted(known)})")
        if tuple(pair) in pairs:
            raise refuse(ValueError, where, f"{owner}: {where} repeats the pair "
                         f"{tuple(pair)!r}")
        pairs.append((pair[0], pair[1]))
    return pairs


def fields_from_declaration(declaration: Any, owner: str) -> dict[str, Any]:
    """The constructor's arguments of the schema a declaration describes.

    Raises
    ------
    DeclarationError
        A ``TypeError`` or ``ValueError`` naming the key (``context[2] scale``): the
        message says which, then the field's own refusal.
    """
    if not isinstance(declaration, Mapping):
        raise refuse(TypeError, "", f"{owner}: the declaration must be a mapping, got "
                     f"{type(declaration).__name__}")
    unknown = sorted(set(declaration) - set(_SCHEMA_KEYS), key=str)
    if unknown:
        raise refuse(ValueError, str(unknown[0]), f"{owner}: unknown key {unknown[0]!r} "
                     f"(expected some of {list(_SCHEMA_KEYS)})")
    version = declaration.get("format", SCHEMA_FORMAT)
    if type(version) is not int or not 1 <= version <= SCHEMA_FORMAT:
        raise refuse(ValueError, "format", f"{owner}: format must be an int in "
                     f"[1, {SCHEMA_FORMAT}] (this version of glmbandits), got {version!r}")
    arguments: dict[str, Any] = {k: declaration[k] for k in _SCHEMA_KEYS[3:] if k in declaration}
    for group in ("context", "action"):
        items = declaration.get(group, [])
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
            raise refuse(TypeError, group, f"{owner}: {group} must be a list of fields, got "
                         f"{type(items).__name__}")
        arguments[group] = [_field(item, f"{group}[{i}]", owner) for i, item in enumerate(items)]
    return arguments


def _field(item: Any, where: str, owner: str) -> Field:
    if not isinstance(item, Mapping):
        raise refuse(TypeError, where, f"{owner}: {where} must be a mapping with a kind and a "
                     f"name, got {type(item).__name__}")
    kind = item.get("kind")
    cls = FIELD_KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise refuse(ValueError, f"{where} kind", f"{owner}: {where}.kind must be one of "
                     f"{sorted(FIELD_KINDS)}, got {kind!r}")
    parameters = inspect.signature(cls.__init__).parameters
    allowed = [p for p in parameters if p != "self"]
    for key in item:
        if key != "kind" and key not in allowed:
            raise refuse(ValueError, f"{where} {key}", f"{owner}: {where} (a {kind} field) has "
                         f"an unknown key {key!r} (expected some of {allowed})")
    arguments = {k: v for k, v in item.items() if k != "kind"}
    try:
        return cls(**arguments)
    except (TypeError, ValueError) as error:  # a required key missing, a value refused
        key = _culprit(cls, arguments, [p for p in allowed if parameters[p].default
                                        is inspect.Parameter.empty])
        raise refuse(type(error), f"{where} {key}" if key else where,
                     f"{owner}: {where}: {error}") from None


#: A valid value of the keys that no default can stand for (a field's name, a vector's
#: length, a categorical's vocabulary or buckets: one of them is needed).
_VALID: dict[str, Any] = {"name": "x", "length": 1, "vocabulary": ["x"], "buckets": 1}


def _culprit(cls: type[Field], arguments: dict[str, Any], required: list[str]) -> str | None:
    """The key a field's refusal is about: a required key missing, else the first key
    whose value, left to its default or set to a valid one, makes the field valid (None
    when no one key does)."""
    missing = [key for key in required if key not in arguments]
    if missing:
        return missing[0]
    for key in arguments:
        trials = [] if key in required else [{k: v for k, v in arguments.items() if k != key}]
        trials += [{**arguments, key: _VALID[key]}] if key in _VALID else []
        for trial in trials:
            try:
                cls(**trial)
            except (TypeError, ValueError):
                continue
            return key
    return None


def json_copy(value: Any, where: str, owner: str) -> Any:
    """``value`` as plain JSON values: a str, a bool, an int, a finite float or None as
    themselves (numpy's as Python's), a list for a tuple, a set (sorted) or an array, a
    dict of str keys for a mapping; anything else is refused naming ``where``.

    Examples
    --------
    >>> json_copy({"tags": ("a", "b"), "n": np.int64(3), "ok": np.bool_(True)}, "x", "example")
    {'tags': ['a', 'b'], 'n': 3, 'ok': True}
    """
    if isinstance(value, np.ndarray):
        value = value.tolist()  # numpy's scalars become Python's
    if value is None or isinstance(value, str):
        return None if value is None else str(value)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        if not math.isfinite(value):
            raise ValueError(f"{owner}: {where} must be a finite number, got {value!r}")
        return float(value)
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"{owner}: {where} must have str keys, got {list(value)!r:.60}")
        return {k: json_copy(v, f"{where}.{k}", owner) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        value = sorted(value, key=lambda v: (type(v).__name__, str(v)))
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        return [json_copy(v, f"{where}[{i}]", owner) for i, v in enumerate(value)]
    raise TypeError(f"{owner}: {where} must be a JSON value (str, number, bool, null, list, "
                    f"mapping), got {type(value).__name__}")


def difference(theirs: Any, mine: Any, path: str = "") -> str:
    """The first place where two JSON values differ, as a sentence.

    Examples
    --------
    >>> difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]})
    'a[1].b is 2 in the model, 3 here'
    """
    if isinstance(theirs, dict) and isinstance(mine, dict):
        for key in list(theirs) + [k for k in mine if k not in theirs]:
            where = f"{path}.{key}" if path else str(key)
            if key not in mine or key not in theirs:
                side = "here" if key not in mine else "in the model"
                return f"{where} is missing {side}"
            if theirs[key] != mine[key]:
                return difference(theirs[key], mine[key], where)
    if isinstance(theirs, list) and isinstance(mine, list):
        if len(theirs) == len(mine) or not all(isinstance(v, (dict, list)) for v in theirs):
            for i, (a, b) in enumerate(zip(theirs, mine)):
                if a != b and isinstance(a, (dict, list)):
                    return difference(a, b, f"{path}[{i}]")
    shown = [repr(v) if len(repr(v)) <= 200 else repr(v)[:197] + "..." for v in (theirs, mine)]
    return f"{path} is {shown[0]} in the model, {shown[1]} here"
