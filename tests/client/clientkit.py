"""The client checked against an OpenAPI document: :func:`drift` lists every way the client
(its routes, the bodies it sends, the result fields it reads, the refusals it knows) differs
from what the document states. Also what the tests against a real server share: a config with
a ``[features]`` schema, a transport that loses an answer, the log's events of a decision."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import typing
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import jsonschema

from glmbandits.client import models
from glmbandits.client._base import RESULTS
from glmbandits.client.errors import BY_STATUS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))
from servicekit import ServerProcess  # noqa: E402

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


def _fields(document: dict, cls: type, schema: dict) -> list[str]:
    """Every field the result class ``cls`` reads is in ``schema`` with its type,
    nullability and required-ness."""
    problems = []
    for field in dataclasses.fields(cls):
        if field.name == "raw":
            continue
        where = f"{cls.__name__}.{field.name}"
        if field.name not in schema.get("properties", {}):
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
    return problems


def _requests(shadow: bool, named: bool, d: int) -> dict[str, list[dict]]:
    """Every body the client builds, with every option, by the schema it must match."""
    default = {"default_action": 0} if shadow else {}
    rows = [[0.5] * d, [0.1] * d]
    bodies = {"DecideRequest": [
        models.decide_body(rows, "d-1", **default),
        models.decide_body(rows, "d-2", excluded=[1], default_action=0, explain=True)],
        "RewardRequest": [models.reward_body("d-1", 1.0)]}
    if named:
        default_id = {"default_action_id": "a-1"} if shadow else {}
        bodies["NamedDecideRequest"] = [
            models.named_decide_body({"x": 1}, "d-3", action_ids=["a-1", "a/2"], **default_id),
            models.named_decide_body({"x": 1}, "d-4", actions={"a-1": {"y": "b"}},
                                     excluded_ids=[], default_action_id="a-1", explain=True),
            models.named_decide_body(None, "d-5", actions=[{"id": "a-1", "features": {}}],
                                     **default_id)]
        bodies["ActionBody"] = [models.action_body({"y": "b", "z": 0.5})]
    return bodies


def drift(document: dict, *, shadow: bool = False, named: bool = False,
          n_features: int = 3) -> list[str]:
    """The differences (empty: none). ``shadow``: the document of a shadow-mode service,
    where a caller passes ``default_action`` to every decide; ``named``: of a service with
    a ``[features]`` schema (the named decide and the action catalogue are checked too);
    ``n_features``: the service's d (the dense bodies' row length)."""
    problems: list[str] = []
    paths = document["paths"]
    routes = {**models.ROUTES, **(models.CATALOGUE_ROUTES if named else {})}
    for operation, (method, path) in routes.items():
        found = paths.get(path, {}).get(method.lower())
        if found is None:
            problems.append(f"{method} {path}: not in the document")
            continue
        if found.get("operationId") != operation:
            problems.append(f"{method} {path}: operationId {found.get('operationId')!r}, "
                            f"the client calls it {operation!r}")
        parameters = {p["name"] for p in paths[path].get("parameters", []) + found.get(
            "parameters", []) if p.get("in") == "path"}
        filled = {name for name in ("action_id",) if "{" + name + "}" in path}
        if parameters != filled:
            problems.append(f"{method} {path}: path parameters {sorted(parameters)}, the "
                            f"client fills {sorted(filled)}")
    # requests: every body the client builds, with every option, is valid and complete
    schemas = document["components"]["schemas"]
    for component, sent in _requests(shadow, named, n_features).items():
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
    if named:  # the decide route takes the named body
        decide = paths.get("/v1/decide", {}).get("post", {})
        taken = str(decide.get("requestBody", {}).get("content", {}))
        if "#/components/schemas/NamedDecideRequest" not in taken:
            problems.append("POST /v1/decide: does not take NamedDecideRequest")
    # answers: every field a result reads exists with its type and required-ness
    for operation, cls in RESULTS.items():
        if operation not in routes:
            continue
        method, path = routes[operation]
        answers = paths.get(path, {}).get(method.lower(), {}).get("responses", {})
        for status in ("200", "201") if operation == "put_action" else ("200",):
            try:
                schema = _resolve(document, answers[status]["content"]["application/json"]
                                  ["schema"])
            except KeyError:
                problems.append(f"{method} {path}: no JSON {status} answer")
                continue
            problems += _fields(document, cls, schema)
            if cls is models.Catalogue and "actions" in schema.get("properties", {}):
                items = schema["properties"]["actions"].get("items", {})
                problems += _fields(document, models.ActionResult, _resolve(document, items))
    # refusals: the body the client reads and the statuses it names
    error = schemas.get("ErrorResponse", {})
    if set(error.get("properties", {})) != {"error", "detail", "field"}:
        problems.append(f"ErrorResponse: {sorted(error.get('properties', {}))}, the client "
                        "reads error, detail and field")
    stated = {int(status) for operations in paths.values() for operation in operations.values()
              if isinstance(operation, dict)
              for status in operation.get("responses", {}) if status.isdigit()}
    problems += [f"the client has a class for {status}, no operation answers it"
                 for status in sorted(set(BY_STATUS) - stated)]
    problems += [f"the document answers {status}, the client has no class for it"
                 for status in sorted(s for s in stated - set(BY_STATUS) if s >= 400)]
    return problems


def docs_block(first_line: str) -> str:
    """The text of the fenced block of docs/service.md whose first line is ``first_line``
    (the page's examples are what these tests run)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "service.md").read_text()
    found = re.search(r"^```\w*\n(" + re.escape(first_line) + r"\n.*?)^```$", page,
                      re.M | re.S)
    assert found is not None, f"docs/service.md has no block starting {first_line!r}"
    return found.group(1)


#: The config of docs/service.md's named-features example (client-news.toml): a categorical context
#: feature, a categorical and a numeric action feature, their interaction, an intercept and
#: the unit-ball scaling with a declared norm bound.
NAMED_CONFIG = docs_block(
    "# client-news.toml: the client's example; users by country (d = 30 columns)")


#: the width of :data:`NAMED_CONFIG`'s schema (the served model's n_features is checked)
NAMED_D = 30


def named_config(folder: Path) -> Path:
    """:data:`NAMED_CONFIG` written to ``folder/service.toml`` (its path)."""
    path = folder / "service.toml"
    path.write_text(NAMED_CONFIG)
    return path


def serving(tmp_path_factory: Any, name: str, write: Callable[[Path], Path]
            ) -> Iterator[ServerProcess]:
    """A module fixture's body: ``glmbandits serve`` with the config ``write(folder)``
    writes and a SQLite log, stopped (cleanly) after the module's tests."""
    folder = tmp_path_factory.mktemp(name)
    process = ServerProcess(write(folder), f"sqlite:///{folder / 'log.db'}")
    yield process
    assert process.terminate() == 0, process.output()


class LosesTheFirstAnswer(httpx.BaseTransport):
    """A real HTTP transport that drops the first answer the service gives (it was sent and
    processed: the connection broke on the way back)."""

    def __init__(self) -> None:
        self.inner, self.lost, self.attempts = httpx.HTTPTransport(), None, 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.attempts += 1
        response = self.inner.handle_request(request)
        if self.lost is None:
            response.read()
            self.lost = json.loads(response.content)
            raise httpx.ReadError("the answer was lost", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


def logged(url: str, key: str) -> list[dict]:
    """Every event of the service's log (every page of GET /v1/events)."""
    events, after = [], 0
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as http:
        while True:
            page = [json.loads(line) for line in
                    http.get("/v1/events", params={"after": after}).text.splitlines()]
            if not page:
                return events
            events += page
            after = page[-1]["seq"]
