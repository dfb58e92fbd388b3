"""The client checked against an OpenAPI document: :func:`drift` lists every way the client
(its routes, the bodies it sends, the result fields it reads, the refusals it knows) differs
from what the document states."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import jsonschema

from glmbandits.client import models
from glmbandits.client.errors import BY_STATUS

#: the client's result class of each operation with a JSON answer
RESULTS = {"decide": models.Decision, "reward": models.RewardResult, "model": models.Model}
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
               tuple: "array", list: "array", dict: "object"}


def _resolve(document: dict, schema: dict) -> dict:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _branches(document: dict, schema: dict) -> tuple[set[str], bool]:
    """(the JSON types a property schema allows besides null, whether null is allowed)."""
    options = schema.get("anyOf", [schema])
    types, nullable = set(), False
    for option in options:
        option = _resolve(document, option)
        kind = option.get("type", "object" if "properties" in option else None)
        if kind == "null":
            nullable = True
        elif kind is not None:
            types.add(kind)
    return types, nullable


def _annotation(cls: type, name: str) -> tuple[str, bool]:
    """(the JSON type of a dataclass field's annotation, whether it may be None)."""
    hint = typing.get_type_hints(cls)[name]
    args = [a for a in typing.get_args(hint) if a is not type(None)] \
        if typing.get_origin(hint) in (typing.Union, __import__("types").UnionType) else [hint]
    nullable = type(None) in typing.get_args(hint)
    base = typing.get_origin(args[0]) or args[0]
    return _JSON_TYPES[base], nullable


def _validate(document: dict, component: str, body: dict) -> list[str]:
    schema = {"$ref": f"#/components/schemas/{component}", "components": document["components"]}
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{component}: {error.message}" for error in validator.iter_errors(body)]


def drift(document: dict, *, shadow: bool = False) -> list[str]:
    """The differences (empty: none). ``shadow``: the document of a shadow-mode service,
    where a caller passes ``default_action`` to every decide."""
    problems: list[str] = []
    paths = document["paths"]
    for operation, (method, path) in models.ROUTES.items():
        found = paths.get(path, {}).get(method.lower())
        if found is None:
            problems.append(f"{method} {path}: not in the document")
            continue
        if found.get("operationId") != operation:
            problems.append(f"{method} {path}: operationId {found.get('operationId')!r}, "
                            f"the client calls it {operation!r}")
    # requests: every body the client builds, with every option, is valid and complete
    schemas = document["components"]["schemas"]
    bodies = {"DecideRequest": [
        models.decide_body([[0.5, 0.5, 0.5], [0.1, 0.2, 0.3]], "d-1",
                           default_action=0 if shadow else None),
        models.decide_body([[0.5, 0.5, 0.5], [0.1, 0.2, 0.3]], "d-2", excluded=[1],
                           default_action=0, explain=True)],
        "RewardRequest": [models.reward_body("d-1", 1.0)]}
    for component, sent in bodies.items():
        schema = schemas.get(component)
        if schema is None:
            problems.append(f"{component}: not in the document")
            continue
        for body in sent:
            problems += [f"{component}.{key}: sent, not in the schema"
                         for key in body if key not in schema["properties"]]
            problems += [f"{component}.{key}: required, not sent"
                         for key in schema.get("required", []) if key not in body]
            problems += _validate(document, component, body)
    # answers: every field a result reads exists with its type and required-ness
    for operation, cls in RESULTS.items():
        method, path = models.ROUTES[operation]
        try:
            content = paths[path][method.lower()]["responses"]["200"]["content"]
            schema = _resolve(document, content["application/json"]["schema"])
        except KeyError:
            problems.append(f"{method} {path}: no JSON 200 answer")
            continue
        for field in dataclasses.fields(cls):
            if field.name == "raw":
                continue
            where = f"{cls.__name__}.{field.name}"
            if field.name not in schema["properties"]:
                problems.append(f"{where}: read, not in the answer's schema")
                continue
            kind, nullable = _annotation(cls, field.name)
            types, schema_nullable = _branches(document, schema["properties"][field.name])
            if types != {kind}:
                problems.append(f"{where}: the client reads {kind}, the schema says {types}")
            if nullable != schema_nullable:
                problems.append(f"{where}: nullable {nullable} in the client, "
                                f"{schema_nullable} in the schema")
            optional = (field.default is not dataclasses.MISSING
                        or field.default_factory is not dataclasses.MISSING)
            if optional == (field.name in schema.get("required", [])):
                problems.append(f"{where}: optional {optional} in the client, required "
                                f"{field.name in schema.get('required', [])} in the schema")
    # refusals: the body the client reads and the statuses it names
    error = schemas.get("ErrorResponse", {})
    if set(error.get("properties", {})) != {"error", "detail", "field"}:
        problems.append(f"ErrorResponse: {sorted(error.get('properties', {}))}, the client "
                        "reads error, detail and field")
    stated = {int(status) for operations in paths.values() for operation in operations.values()
              for status in operation.get("responses", {}) if status.isdigit()}
    problems += [f"the client has a class for {status}, no operation answers it"
                 for status in sorted(set(BY_STATUS) - stated)]
    problems += [f"the document answers {status}, the client has no class for it"
                 for status in sorted(stated - set(BY_STATUS) - {200})]
    return problems


