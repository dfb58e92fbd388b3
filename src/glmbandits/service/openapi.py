"""The OpenAPI 3.1 document served at ``/v1/openapi.json``, built from the msgspec models.

It states what the server enforces, for the config it serves, as far as JSON Schema can
say it, so that a client generated from it, or a schema-driven fuzzer, sends requests
that reach the core: every context row has exactly ``n_features`` numbers of magnitude
at most 1e50 (the library's bound, ``glmbandits._validation.MAX_MAGNITUDE``), at most
``max_actions`` rows, rows and ``excluded`` indices below ``max_actions``, the reward
within the configured family's domain, ``default_action`` required in shadow mode, the
decision id's length, and the bounds of ``after`` and ``limit``. What JSON Schema cannot
say (an excluded row below the request's own K, and not every row excluded) is in the
descriptions.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import msgspec

from .._validation import MAX_MAGNITUDE
from ..data.event_records import DECISION_ID_PATTERN, DECISION_ID_RULE
from .config import ServiceConfig

__all__ = ["openapi_document", "reward_schema", "MAX_EVENTS_PAGE", "MAX_AFTER"]

#: The most events one ``GET /v1/events`` returns (its ``limit`` default and maximum).
MAX_EVENTS_PAGE = 1000
#: The largest ``after`` (and ``limit``) the server reads: at most 18 digits.
MAX_AFTER = 10 ** 18 - 1


def reward_schema(family: str) -> dict[str, Any]:
    """The JSON Schema of a reward for ``family``: its domain, within the library's bound.

    The domain of every family of :mod:`glmbandits.families` is the closed range of its
    mean (``mean_range``), as ``in_domain`` accepts it (the tests check both agree).

    Examples
    --------
    >>> reward_schema("logistic")["minimum"], reward_schema("logistic")["maximum"]
    (0.0, 1.0)
    >>> reward_schema("linear")["maximum"]
    1e+50
    """
    from ..families import get_family

    law = get_family(family, "openapi_document")
    low, high = law.mean_range
    low = low if math.isfinite(low) else -MAX_MAGNITUDE
    high = high if math.isfinite(high) else MAX_MAGNITUDE
    return {"type": "number", "minimum": max(low, -MAX_MAGNITUDE),
            "maximum": min(high, MAX_MAGNITUDE),
            "description": f"the {law.name} family's reward domain {law.reward_domain} "
                           f"(finite, magnitude at most {MAX_MAGNITUDE:g})"}


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an ``Optional`` field's ``anyOf`` (the field itself otherwise)."""
    branches = [b for b in schema.get("anyOf", []) if b.get("type") != "null"]
    return branches[0] if len(branches) == 1 else schema


def _responses(ok: str | None, *errors: int, media: str = "application/json") -> dict:
    out: dict[str, Any] = {}
    if ok is not None:
        out["200"] = {"description": "OK",
                      "content": {media: {"schema": {"$ref": f"#/components/schemas/{ok}"}}}}
    texts = {401: "no or wrong API key", 404: "unknown decision id",
             409: "decision id reused for another request or after it closed",
             413: "body above max_body_bytes",
             415: "Content-Type neither application/json nor application/x-npy",
             422: "malformed request (field named)",
             429: "[service] max_queue requests already wait for the worker; nothing was "
                  "done: retry after Retry-After seconds (same decision_id)",
             503: "the event log could not be written; nothing was kept"}
    for status in errors:
        out[str(status)] = {"description": texts[status], "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/ErrorResponse"}}}}
        if status == 429:
            out["429"]["headers"] = {"Retry-After": {
                "description": "seconds to wait before retrying", "schema": {"type": "integer"}}}
    return out


def openapi_document(config: ServiceConfig) -> dict[str, Any]:
    """The OpenAPI document of the service (limits from ``config`` in the descriptions)."""
    from .._version import __version__
    from .schemas import (DecideRequest, DecideResponse, ErrorResponse, HealthResponse,
                          ModelResponse, RewardRequest, RewardResponse)

    _, components = msgspec.json.schema_components(
        [DecideRequest, RewardRequest, DecideResponse, RewardResponse, ErrorResponse,
         HealthResponse, ModelResponse], ref_template="#/components/schemas/{name}")
    d, K = config.policy.n_features, config.decisions.max_actions
    decide = components["DecideRequest"]
    number = {"type": "number", "minimum": -MAX_MAGNITUDE, "maximum": MAX_MAGNITUDE}
    decide["properties"]["contexts"] = {
        "description": f"K rows (1 <= K <= {K}) of {d} finite numbers of magnitude at most "
                       f"{MAX_MAGNITUDE:g}, one row per action",
        "type": "array", "minItems": 1, "maxItems": K,
        "items": {"type": "array", "minItems": d, "maxItems": d, "items": number}}
    row = {"type": "integer", "minimum": 0, "maximum": K - 1}  # 2.0 is read as 2 too
    decide["properties"]["excluded"] = {"anyOf": [
        {"type": "array", "items": row, "description": "rows that must not be chosen: each "
                                                       "below the request's K, and at least "
                                                       "one row left"},
        {"type": "null"}], "default": None}
    if config.decisions.mode == "shadow":  # the client's own choice is required there
        decide["properties"]["default_action"] = {
            **row, "description": "the row the client shows (below the request's K)"}
        decide["required"] = sorted({*decide["required"], "default_action"})
    else:
        decide["properties"]["default_action"] = {"anyOf": [
            {**row, "description": "shadow mode only (ignored in live mode)"},
            {"type": "null"}], "default": None}
    decide["properties"]["explain"]["description"] = (
        "true: the answer carries explanation (the chosen action and the runner-up: "
        "predicted reward, its interval, the exploration bonus and its share, the top "
        "feature contributions; docs/service.md, Explained decisions)")
    components["RewardRequest"]["properties"]["reward"] = reward_schema(config.policy.family)
    for model in ("DecideRequest", "RewardRequest"):  # the one rule of decision ids
        _without_null(components[model]["properties"]["decision_id"]).update(
            pattern=DECISION_ID_PATTERN, description=f"the decision's id: {DECISION_ID_RULE}")
    decision_id = copy.deepcopy(components["RewardRequest"]["properties"]["decision_id"])
    components["EvaluationResponse"] = {
        "type": "object", "required": ["available"],
        "description": "available false: nothing to evaluate yet (reason says why). "
                       "available true: glmbandits.evaluation.ShadowEvaluation.to_dict() "
                       "(default, policy_dr, policy_snips, lift_dr with ci_low/ci_high, "
                       "agreement, model_share, value_bounds, notes, ...) on the shadow "
                       "decisions with a reward; window: the log rows it read.",
        "properties": {"available": {"type": "boolean"}, "reason": {"type": "string"},
                       "window": {"type": "object"}},
        "additionalProperties": True}
    secured: list[dict[str, list[str]]] = [{"bearer": []}]

    def body(name: str) -> dict:
        return {"required": True, "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{name}"}}}}

    decide_body = body("DecideRequest")
    decide_body["description"] = (
        "JSON (DecideRequest), or for large K x d the contexts as a NumPy .npy file "
        "(application/x-npy, the bytes np.save writes: a (K, d) float64 or float32 array, "
        "C or Fortran order; never pickled objects) with decision_id, excluded and "
        "default_action in the query string (only then: with a JSON body they are 422 "
        "there, so they are listed under the .npy media type's x-query-parameters, not as "
        "the operation's parameters, which OpenAPI would apply to JSON bodies too). A "
        "missing Content-Type is read as JSON.")
    npy_query = [
        {"name": "decision_id", "in": "query", "required": False,
         "description": "only with an application/x-npy body (a JSON body carries it "
                        "itself): the decision's id, percent-encoded UTF-8 (an invalid "
                        "escape or invalid UTF-8 is 422)",
         "schema": decision_id},
        {"name": "excluded", "in": "query", "required": False,
         "description": "only with an application/x-npy body: rows that must not be "
                        "chosen, comma-separated (e.g. 0,3)",
         "schema": {"type": "string", "pattern": "^([0-9]{1,18}(,[0-9]{1,18})*)?$"}},
        {"name": "default_action", "in": "query", "required": False,
         "description": "only with an application/x-npy body, in shadow mode: the row the "
                        "client shows",
         "schema": dict(row)}]
    decide_body["content"]["application/x-npy"] = {
        "schema": {"type": "string", "format": "binary",
                   "description": f"an .npy file of a (K, {d}) float64 or float32 array, "
                                  f"1 <= K <= {K}, every number finite and of magnitude at "
                                  f"most {MAX_MAGNITUDE:g}"},
        "x-query-parameters": npy_query}

    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "glmbandits decision service", "version": __version__,
                 "description": f"Decide among K <= {K} actions with {d} features each; "
                                "reward decisions later by id. A request line and headers "
                                f"above {config.max_header_bytes} bytes or "
                                f"{config.max_headers} lines are 431; a request whose "
                                f"headers take over {config.header_timeout:g} s, or its body "
                                f"over {config.body_timeout:g} s more, is 408; a body above "
                                f"{config.max_body_bytes} bytes is 413."},
        "components": {"schemas": components, "securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": {
            "/v1/decide": {"post": {"summary": "choose an action", "security": secured,
                                    "requestBody": decide_body,
                                    "responses": _responses("DecideResponse", 401, 409, 413,
                                                            415, 422, 429, 503)}},
            "/v1/reward": {"post": {"summary": "the reward of a decision", "security": secured,
                                    "requestBody": body("RewardRequest"),
                                    "responses": _responses("RewardResponse", 401, 404, 413,
                                                            422, 429, 503)}},
            "/v1/health": {"get": {"summary": "liveness", "security": [],
                                   "responses": _responses("HealthResponse")}},
            "/v1/ready": {"get": {
                "summary": "readiness: 200 {\"status\": \"ready\"} once the model is restored "
                           "and the worker serves; 503 (status restoring or stopping) before "
                           "and while the service stops", "security": [],
                "responses": {**_responses("HealthResponse"), "503": {
                    "description": "not ready", "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/HealthResponse"}}}}}}},
            "/v1/model": {"get": {"summary": "the policy, model version and counts",
                                  "security": secured,
                                  "responses": _responses("ModelResponse", 401)}},
            "/v1/events": {"get": {
                "summary": "the event log as NDJSON, one event a line", "security": secured,
                "parameters": [
                    {"name": "after", "in": "query", "required": False,
                     "description": "only events with a larger seq (default 0)",
                     "schema": {"type": "integer", "minimum": 0, "maximum": MAX_AFTER}},
                    {"name": "limit", "in": "query", "required": False,
                     "description": f"at most {MAX_EVENTS_PAGE} (the default); page on with "
                                    "after = the last seq received",
                     "schema": {"type": "integer", "minimum": 0,
                                "maximum": MAX_EVENTS_PAGE}}],
                "responses": {"200": {"description": "NDJSON events", "content": {
                    "application/x-ndjson": {"schema": {"type": "string"}}}},
                    **_responses(None, 401, 422)}}},
            "/v1/evaluation": {"get": {
                "summary": "shadow mode: the policy's estimated value against the client's "
                           "default (DR, SNIPS, intervals, overlap diagnostics)",
                "security": secured, "responses": _responses("EvaluationResponse", 401)}},
            "/metrics": {"get": {"summary": "Prometheus metrics", "security": secured,
                                 "responses": {"200": {"description": "Prometheus text",
                                                       "content": {"text/plain": {
                                                           "schema": {"type": "string"}}}},
                                               **_responses(None, 401)}}},
            "/v1/openapi.json": {"get": {"summary": "this document", "security": [],
                                         "responses": {"200": {"description": "OpenAPI"}}}},
        },
    }
    if config.features is not None:
        _add_named_features(document, config, config.features, decide_body, secured)
    for path, operations in document["paths"].items():  # names for generated clients
        for operation in operations.values():
            if isinstance(operation, dict):  # (not a path's shared "parameters")
                operation.setdefault("operationId",
                                     path.rsplit("/", 1)[1].split(".")[0])
    return document


def _add_named_features(document: dict[str, Any], config: ServiceConfig, schema: Any,
                        decide_body: dict[str, Any], secured: list[dict[str, list[str]]]
                        ) -> None:
    """A service with a ``[features]`` schema: the named decide body (either body is
    accepted) and the action catalogue's routes."""
    from .schemas import ActionBody, ActionResponse, CatalogueResponse, NamedDecideRequest

    components = document["components"]["schemas"]
    _, named = msgspec.json.schema_components(
        [NamedDecideRequest, ActionBody, ActionResponse, CatalogueResponse],
        ref_template="#/components/schemas/{name}")
    components.update(named)
    K = config.decisions.max_actions
    request = components["NamedDecideRequest"]
    request["description"] = (
        f"named features: the context's ({', '.join(f.name for f in schema.context) or 'none'}) "
        "and each candidate's, inline (actions) or by catalogue id (action_ids), exactly one "
        f"of the two, 1 <= K <= {K} candidates with distinct ids; excluded_ids and "
        "default_action_id (required in shadow mode) are ids of the request's candidates. "
        f"Action features: {', '.join(f.name for f in schema.action) or 'none'}.")
    for name in ("actions", "action_ids"):
        _without_null(request["properties"][name]).update(minItems=1, maxItems=K)
    _without_null(request["properties"]["decision_id"]).update(
        pattern=DECISION_ID_PATTERN, description=f"the decision's id: {DECISION_ID_RULE}")
    decide_body["content"]["application/json"]["schema"] = {"oneOf": [
        {"$ref": "#/components/schemas/DecideRequest"},
        {"$ref": "#/components/schemas/NamedDecideRequest"}]}
    action_id = {"name": "action_id", "in": "path", "required": True,
                 "description": f"the action's id: {DECISION_ID_RULE}",
                 "schema": {"type": "string", "pattern": DECISION_ID_PATTERN}}
    document["paths"]["/v1/actions"] = {"get": {
        "summary": "the action catalogue: live actions and retired ids",
        "operationId": "list_actions", "security": secured,
        "responses": _responses("CatalogueResponse", 401)}}
    document["paths"]["/v1/actions/{action_id}"] = {
        "parameters": [action_id],
        "get": {"summary": "one catalogue action", "operationId": "get_action",
                "security": secured, "responses": _responses("ActionResponse", 401, 404)},
        "put": {"summary": "add an action or replace its features (201 when added); a "
                           "retired id, or a new id while the catalogue holds "
                           f"max_catalogue = {config.decisions.max_catalogue} live actions, "
                           "is refused (409)",
                "operationId": "put_action", "security": secured,
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/ActionBody"}}}},
                "responses": {**_responses("ActionResponse", 401, 409, 413, 422, 429, 503),
                              "201": {"description": "Created", "content": {
                                  "application/json": {"schema": {
                                      "$ref": "#/components/schemas/ActionResponse"}}}}}},
        "delete": {"summary": "retire an action (its id is never reused)",
                   "operationId": "delete_action", "security": secured,
                   "responses": _responses("ActionResponse", 401, 404, 429, 503)}}
    for method in ("get", "delete"):  # (a 404 here is an action id, not a decision id)
        document["paths"]["/v1/actions/{action_id}"][method]["responses"]["404"][
            "description"] = "no live action has this id (never put, or retired)"
