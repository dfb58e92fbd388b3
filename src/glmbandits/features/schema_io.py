"""A feature schema's declaration as JSON values, and its checks.

:meth:`FeatureSchema.declaration <glmbandits.features.schema.FeatureSchema.declaration>`
writes the schema as plain JSON values (what a config file holds, what a model file
saves, what a fingerprint hashes); :func:`fields_from_declaration` reads it back into
the constructor's arguments, naming any key it does not know. :data:`SCHEMA_FORMAT` is
the version of that layout: a declaration of a newer format is refused.

Examples
--------
>>> args = fields_from_declaration({"context": [{"kind": "numeric", "name": "age"}]}, "example")
>>> args["context"]
[Numeric('age', missing='refuse', scale=None, range=None)]
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from .categorical_fields import Categorical, MultiCategorical
from .fields import Field
from .numeric_fields import Boolean, Numeric, Vector

__all__ = ["SCHEMA_FORMAT", "RESERVED_NAMES", "FIELD_KINDS", "check_fields",
           "check_interactions", "fields_from_declaration", "difference"]

#: The field classes by their declared ``kind`` (how a declaration names them).
FIELD_KINDS: dict[str, type[Field]] = {cls.kind: cls for cls in (
    Numeric, Boolean, Categorical, MultiCategorical, Vector)}

#: The version of the declaration's layout (``"format"``); older layouts stay readable.
SCHEMA_FORMAT = 1
#: Names a field may not take: the groups an interaction names, and the intercept's column.
RESERVED_NAMES = ("context", "action", "intercept")
_SCHEMA_KEYS = ("format", "context", "action", "interactions", "intercept", "unit_ball",
                "unknown")


def check_fields(context: Any, action: Any, owner: str) -> tuple[tuple[Field, ...],
                                                                 tuple[Field, ...]]:
    """The two groups as tuples of fields with unique, unreserved names."""
    groups = []
    seen: set[str] = set()
    for group, fields in (("context", context), ("action", action)):
        if isinstance(fields, (str, bytes, Mapping)) or not isinstance(fields, Sequence):
            raise TypeError(f"{owner}: {group} must be a sequence of fields, got "
                            f"{type(fields).__name__}")
        for i, f in enumerate(fields):
            if not isinstance(f, Field):
                raise TypeError(f"{owner}: {group}[{i}] must be a field (Numeric, Boolean, "
                                f"Categorical, MultiCategorical, Vector), got "
                                f"{type(f).__name__}")
            if f.name in RESERVED_NAMES:
                raise ValueError(f"{owner}: {group}[{i}] may not be named {f.name!r} (reserved: "
                                 f"{list(RESERVED_NAMES)})")
            if f.name in seen:
                raise ValueError(f"{owner}: {group}[{i}] repeats the field name {f.name!r} "
                                 "(names are unique across context and action)")
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
        raise TypeError(f"{owner}: interactions must be a sequence of (str, str) pairs, got "
                        f"{type(interactions).__name__}")
    pairs = []
    for i, pair in enumerate(interactions):
        if (isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2
                or not all(isinstance(p, str) for p in pair)):
            raise TypeError(f"{owner}: interactions[{i}] must be a pair of names, got {pair!r}")
        for name in pair:
            if name not in known:
                raise ValueError(f"{owner}: interactions[{i}] names {name!r}, which is no field "
                                 f"and no group with fields (known: {sorted(known)})")
        if tuple(pair) in pairs:
            raise ValueError(f"{owner}: interactions[{i}] repeats the pair {tuple(pair)!r}")
        pairs.append((pair[0], pair[1]))
    return pairs


def fields_from_declaration(declaration: Any, owner: str) -> dict[str, Any]:
    """The constructor's arguments of the schema a declaration describes.

    Raises
    ------
    TypeError, ValueError
        Naming the key (``context[2].scal``) or the field's own refusal.
    """
    if not isinstance(declaration, Mapping):
        raise TypeError(f"{owner}: the declaration must be a mapping, got "
                        f"{type(declaration).__name__}")
    unknown = sorted(set(declaration) - set(_SCHEMA_KEYS), key=str)
    if unknown:
        raise ValueError(f"{owner}: unknown key {unknown[0]!r} (expected some of "
                         f"{list(_SCHEMA_KEYS)})")
    version = declaration.get("format", SCHEMA_FORMAT)
    if type(version) is not int or not 1 <= version <= SCHEMA_FORMAT:
        raise ValueError(f"{owner}: format must be an int in [1, {SCHEMA_FORMAT}] (this "
                         f"version of glmbandits), got {version!r}")
    arguments: dict[str, Any] = {k: declaration[k] for k in _SCHEMA_KEYS[3:] if k in declaration}
    for group in ("context", "action"):
        items = declaration.get(group, [])
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
            raise TypeError(f"{owner}: {group} must be a list of fields, got "
                            f"{type(items).__name__}")
        arguments[group] = [_field(item, f"{group}[{i}]", owner) for i, item in enumerate(items)]
    return arguments


def _field(item: Any, where: str, owner: str) -> Field:
    if not isinstance(item, Mapping):
        raise TypeError(f"{owner}: {where} must be a mapping with a kind and a name, got "
                        f"{type(item).__name__}")
    kind = item.get("kind")
    cls = FIELD_KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"{owner}: {where}.kind must be one of {sorted(FIELD_KINDS)}, got "
                         f"{kind!r}")
    parameters = inspect.signature(cls.__init__).parameters
    allowed = [p for p in parameters if p != "self"]
    for key in item:
        if key != "kind" and key not in allowed:
            raise ValueError(f"{owner}: {where} (a {kind} field) has an unknown key {key!r} "
                             f"(expected some of {allowed})")
    arguments = {k: v for k, v in item.items() if k != "kind"}
    try:
        return cls(**arguments)
    except TypeError as error:  # e.g. a required key missing
        raise TypeError(f"{owner}: {where}: {error}") from None


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
