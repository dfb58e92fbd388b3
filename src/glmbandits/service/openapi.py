"""The OpenAPI 3.1 document served at ``/v1/openapi.json``, built from the msgspec models."""

from __future__ import annotations

from typing import Any

import msgspec

from .config import ServiceConfig

__all__ = ["openapi_document", "MAX_EVENTS_PAGE"]

#: The most events one ``GET /v1/events`` returns (its ``limit`` default and maximum).
MAX_EVENTS_PAGE = 1000


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
             503: "the event log could not be written; nothing was kept"}
    for status in errors:
        out[str(status)] = {"description": texts[status], "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/ErrorResponse"}}}}
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
    components["DecideRequest"]["properties"]["contexts"]["description"] = (
        f"K rows (1 <= K <= {K}) of {d} finite numbers, one per action")
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
    secured = [{"bearer": []}]

    def body(name: str) -> dict:
        return {"required": True, "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{name}"}}}}

    decide_body = body("DecideRequest")
    decide_body["description"] = (
        "JSON (DecideRequest), or for large K x d the contexts as a NumPy .npy file "
        "(application/x-npy, the bytes np.save writes: a (K, d) float64 or float32 array, "
        "C or Fortran order; never pickled objects) with decision_id, excluded and "
        "default_action in the query string. A missing Content-Type is read as JSON.")
    decide_body["content"]["application/x-npy"] = {"schema": {
        "type": "string", "format": "binary",
        "description": f"an .npy file of a (K, {d}) float64 or float32 array, "
                       f"1 <= K <= {K}, every number finite"}}
    npy_query = [
        {"name": "decision_id", "in": "query", "required": False,
         "description": "only with an application/x-npy body (a JSON body carries it "
                        "itself): the decision's id, 1-256 characters",
         "schema": {"type": "string", "minLength": 1, "maxLength": 256}},
        {"name": "excluded", "in": "query", "required": False,
         "description": "only with an application/x-npy body: rows that must not be "
                        "chosen, comma-separated (e.g. 0,3)",
         "schema": {"type": "string", "pattern": "^([0-9]+(,[0-9]+)*)?$"}},
        {"name": "default_action", "in": "query", "required": False,
         "description": "only with an application/x-npy body, in shadow mode: the row the "
                        "client shows",
         "schema": {"type": "integer", "minimum": 0}}]

    return {
        "openapi": "3.1.0",
        "info": {"title": "glmbandits decision service", "version": __version__,
                 "description": f"Decide among K <= {K} actions with {d} features each; "
                                "reward decisions later by id."},
        "components": {"schemas": components, "securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": {
            "/v1/decide": {"post": {"summary": "choose an action", "security": secured,
                                    "requestBody": decide_body, "parameters": npy_query,
                                    "responses": _responses("DecideResponse", 401, 409, 413,
                                                            415, 422, 503)}},
            "/v1/reward": {"post": {"summary": "the reward of a decision", "security": secured,
                                    "requestBody": body("RewardRequest"),
                                    "responses": _responses("RewardResponse", 401, 404, 413,
                                                            422, 503)}},
            "/v1/health": {"get": {"summary": "liveness", "security": [],
                                   "responses": _responses("HealthResponse")}},
            "/v1/model": {"get": {"summary": "the policy, model version and counts",
                                  "security": secured,
                                  "responses": _responses("ModelResponse", 401)}},
            "/v1/events": {"get": {
                "summary": "the event log as NDJSON, one event a line", "security": secured,
                "parameters": [
                    {"name": "after", "in": "query", "required": False,
                     "schema": {"type": "integer", "minimum": 0}},
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
