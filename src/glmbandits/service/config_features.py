"""The service config's ``[features]`` table: a declared
:class:`~glmbandits.features.FeatureSchema`, checked at start.

The table holds a schema's declaration in the form ``FeatureSchema.declaration()``
writes (arrays of tables ``[[features.context]]`` and ``[[features.action]]``, one per
field) with every value declared, plus ``norm_bound``, the unit-ball factor: a service
fits nothing at start, so ``vocabulary = "fit"`` and ``scale = "fit"`` are refused, and
with ``unit_ball = true`` the factor is given. Its keys and their types are declared with
every other key in :data:`~glmbandits.service.config.CONFIG_FIELDS`; :func:`feature_schema`
checks the rest through the schema itself, whose refusals name their key
(:class:`~glmbandits.features.schema_io.DeclarationError`), as a ``ValueError`` that starts
with the key (``[features] context[2] vocabulary: ...``), which
:func:`~glmbandits.service.config.parse_config` raises as a ``ConfigError``. This module
imports nothing of the config, which imports it.
:func:`features_table` writes the table of a schema fitted offline (its fitted values
declared), so the service makes the same columns.

References
----------
Li, Lu & Zhou (2017), Section 2: x_{t,a} with ‖x‖ <= 1 (the unit-ball factor).
"""

from __future__ import annotations

import json
from typing import Any

from ..features import FeatureSchema
from ..features.schema_io import DeclarationError

__all__ = ["feature_schema", "schema_width", "features_table"]


def _schema_refusal(error: Exception) -> ValueError:
    """A feature schema's refusal naming the key (``[features] action[0] name: ...``), from
    the key it carries (:class:`~glmbandits.features.schema_io.DeclarationError`)."""
    key = error.key if isinstance(error, DeclarationError) else ""
    return ValueError(f"[features]{' ' + key if key else ''}: {error}")


def feature_schema(section: dict[str, Any]) -> FeatureSchema:
    """The ``[features]`` table (typed and in range by ``CONFIG_FIELDS``) as a schema
    fitted on nothing: every value declared, the unit-ball factor ``norm_bound``.

    Raises
    ------
    ValueError
        Starting with the key: a refusal of the schema's (``[features] action[0] name``),
        a value declared as fitted, ``norm_bound`` missing with ``unit_ball`` or given
        without it.

    Examples
    --------
    >>> table = {"context": [{"kind": "categorical", "name": "c", "vocabulary": "fit"}],
    ...          "norm_bound": 2.0}
    >>> feature_schema(table)
    Traceback (most recent call last):
    ...
    ValueError: [features] context[0] vocabulary: "fit" cannot be served: a service fits nothing at start. Declare the values: fit the schema offline on your data, then copy the [features] table of glmbandits.service.config_features.features_table(schema) (or schema.declaration(fitted=True), with the fitted values)
    """
    where = "[features]"
    try:
        schema = FeatureSchema.from_declaration({key: value for key, value in section.items()
                                                 if key != "norm_bound"})
    except (TypeError, ValueError) as error:
        raise _schema_refusal(error) from None
    for group in ("context", "action"):
        for i, item in enumerate(getattr(schema, group)):
            for key in item.fitted_keys():
                raise ValueError(
                    f'{where} {group}[{i}] {key}: "fit" cannot be served: a service fits '
                    "nothing at start. Declare the values: fit the schema offline on your "
                    "data, then copy the [features] table of glmbandits.service."
                    "config_features.features_table(schema) (or "
                    "schema.declaration(fitted=True), with the fitted values)")
    if schema.unit_ball and "norm_bound" not in section:
        raise ValueError(f"{where} norm_bound is missing: with unit_ball = true (the "
                          "default) every row is divided by this factor, which a service "
                          "cannot fit at start; give the norm_bound_ of the schema fitted "
                          "offline, or unit_ball = false")
    try:
        return schema.fit(norm_bound=section.get("norm_bound"))
    except (TypeError, ValueError) as error:
        raise _schema_refusal(error) from None


def schema_width(policy: dict[str, Any], schema: FeatureSchema) -> dict[str, Any]:
    """``[policy]`` with n_features the schema's width (given: it must be that width).

    Examples
    --------
    >>> schema = feature_schema({"action": [{"kind": "boolean", "name": "new"}],
    ...                          "unit_ball": False})
    >>> schema_width({"name": "linucb"}, schema)
    {'name': 'linucb', 'n_features': 2}
    >>> schema_width({"name": "linucb", "n_features": 3}, schema)
    Traceback (most recent call last):
    ...
    ValueError: [policy] n_features is 3, but the [features] schema makes 2 columns; give n_features = 2 or leave it out
    """
    width = schema.n_features_out_
    if policy.get("n_features", width) != width:
        raise ValueError(f"[policy] n_features is {policy['n_features']}, "
                          f"but the [features] schema makes {width} columns; give "
                          f"n_features = {width} or leave it out")
    return {**policy, "n_features": width}


def features_table(schema: FeatureSchema) -> str:
    """The ``[features]`` table (TOML) of a fitted schema, for a service's config: its
    declaration with what was fitted declared (``declaration(fitted=True)``) and, with
    ``unit_ball``, its ``norm_bound_``; the service's schema then makes the same columns.

    Raises ``ValueError`` for a fitted value without a declared form (a ``Vector`` with
    ``scale="fit"``), which no config can hold.

    Examples
    --------
    >>> from glmbandits.features import Boolean, Categorical, Numeric
    >>> from glmbandits.service.config import parse_config, tomllib
    >>> schema = FeatureSchema(context=[Numeric("age", scale=(40.0, 10.0))],
    ...                        action=[Categorical("topic", vocabulary="fit"), Boolean("new")])
    >>> text = features_table(schema.fit([{"age": 30}], [{"topic": "news", "new": True}]))
    >>> print(text, end="")
    [features]
    format = 1
    interactions = []
    intercept = true
    unit_ball = true
    unknown = "refuse"
    norm_bound = 2.0
    <BLANKLINE>
    [[features.context]]
    kind = "numeric"
    name = "age"
    missing = "refuse"
    scale = [40.0, 10.0]
    <BLANKLINE>
    [[features.action]]
    kind = "categorical"
    name = "topic"
    missing = "refuse"
    vocabulary = ["news"]
    unseen = "other"
    <BLANKLINE>
    [[features.action]]
    kind = "boolean"
    name = "new"
    missing = "refuse"
    >>> config = parse_config(tomllib.loads(text + '[policy]\\nname = "linucb"\\n'))
    >>> config.policy.n_features, config.features.feature_names_out_ == schema.feature_names_out_
    (5, True)
    """
    declaration = schema.declaration(fitted=True)
    for group in ("context", "action"):
        for i, item in enumerate(declaration[group]):
            fitted = [key for key in ("scale", "vocabulary") if item.get(key) == "fit"]
            if fitted:  # (a Vector's fitted scale has no declared form)
                raise ValueError(f"features_table: {group}[{i}] ({item['name']!r}) has "
                                 f"{fitted[0]}='fit' with no declared form, which a service "
                                 "cannot serve; declare the field without it")
    lines = ["[features]"] + [f"{key} = {_toml(value)}" for key, value in declaration.items()
                              if key not in ("context", "action")]
    if schema.unit_ball:
        lines.append(f"norm_bound = {_toml(schema.norm_bound_)}")
    for group in ("context", "action"):
        for item in declaration[group]:
            lines += ["", f"[[features.{group}]]"] + [f"{key} = {_toml(value)}"
                                                       for key, value in item.items()
                                                       if value is not None]
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    """A JSON value as a TOML value (None has no TOML form: the caller leaves its key out)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)  # (finite: a declaration holds no inf or nan)
    if isinstance(value, str):  # JSON's escapes are TOML's; TOML escapes DEL too
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    raise TypeError(f"features_table: no TOML form for {type(value).__name__} {value!r:.60}")
