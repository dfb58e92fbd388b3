"""The client and the service's OpenAPI document cannot drift apart: every route the client
calls, every field it sends and every field it reads is in the document with the same
method, type and required-ness (the served /v1/openapi.json is checked the same way in
test_client_server.py)."""

from __future__ import annotations

import copy
import tomllib

import pytest

from clientkit import NAMED_CONFIG, NAMED_D, drift
from glmbandits.service.config import parse_config
from glmbandits.service.openapi import openapi_document


def _document(**decisions: object) -> dict:
    return openapi_document(parse_config({"policy": {"name": "ucb-glm", "n_features": 3},
                                          "decisions": {"max_actions": 8, **decisions}}))


def _named_document(mode: str = "live") -> dict:
    """The document of a service with a ``[features]`` schema (clientkit.NAMED_CONFIG)."""
    data = tomllib.loads(NAMED_CONFIG)
    data["decisions"]["mode"] = mode
    return openapi_document(parse_config(data))


@pytest.mark.parametrize("mode", ["live", "shadow"])
def test_the_client_matches_the_schema(mode: str) -> None:
    assert drift(_document(mode=mode), shadow=mode == "shadow") == []


def _changed(edit) -> list[str]:
    document = copy.deepcopy(_document())
    edit(document)
    return drift(document)


def test_the_check_sees_every_kind_of_drift() -> None:
    schemas = lambda d: d["components"]["schemas"]  # noqa: E731
    moved = _changed(lambda d: d["paths"].__setitem__("/v2/reward", d["paths"].pop("/v1/reward")))
    assert "POST /v1/reward: not in the document" in moved
    renamed = _changed(lambda d: schemas(d)["DecideResponse"]["properties"].__setitem__(
        "chosen", schemas(d)["DecideResponse"]["properties"].pop("action")))
    assert "Decision.action: read, not in the answer's schema" in renamed
    retyped = _changed(lambda d: schemas(d)["RewardResponse"]["properties"]["model_version"]
                       .__setitem__("type", "string"))
    assert any(p.startswith("RewardResult.model_version: the client reads integer")
               for p in retyped)
    nullable = _changed(lambda d: schemas(d)["DecideResponse"]["properties"].__setitem__(
        "propensity", {"type": "number"}))
    assert "Decision.propensity: nullable True in the client, False in the schema" in nullable
    required = _changed(lambda d: schemas(d)["ModelResponse"]["required"].remove("counts"))
    assert any(p.startswith("Model.counts: optional False") for p in required)
    request = _changed(lambda d: schemas(d)["DecideRequest"]["properties"].pop("explain"))
    assert "DecideRequest.explain: sent, not in the schema" in request
    new_field = _changed(lambda d: schemas(d)["RewardRequest"]["required"].append("weight"))
    assert "RewardRequest.weight: required, not sent" in new_field
    bounds = _changed(lambda d: schemas(d)["RewardRequest"]["properties"].__setitem__(
        "reward", {"type": "string"}))
    assert any("RewardRequest: 1.0 is not of type 'string'" in p for p in bounds)
    status = _changed(lambda d: d["paths"]["/v1/reward"]["post"]["responses"].__setitem__(
        "418", {"description": "teapot"}))
    assert "the document answers 418, the client has no class for it" in status


@pytest.mark.parametrize("mode", ["live", "shadow"])
def test_the_client_matches_the_schema_of_a_service_with_features(mode: str) -> None:
    document = _named_document(mode)
    assert drift(document, shadow=mode == "shadow", named=True, n_features=NAMED_D) == []
    # a service without [features] has no catalogue: the client's routes are not there
    assert "GET /v1/actions: not in the document" in drift(_document(), named=True)


def _named_changed(edit) -> list[str]:
    document = copy.deepcopy(_named_document())
    edit(document)
    return drift(document, named=True, n_features=NAMED_D)


def test_the_check_sees_drift_of_the_catalogue_and_the_named_decide() -> None:
    schemas = lambda d: d["components"]["schemas"]  # noqa: E731
    one = "/v1/actions/{action_id}"
    moved = _named_changed(lambda d: d["paths"].__setitem__(
        "/v1/catalogue", d["paths"].pop("/v1/actions")))
    assert "GET /v1/actions: not in the document" in moved
    renamed_op = _named_changed(lambda d: d["paths"][one]["put"].__setitem__(
        "operationId", "upsert_action"))
    assert any(p.startswith(f"PUT {one}: operationId 'upsert_action'") for p in renamed_op)
    parameter = _named_changed(lambda d: d["paths"][one]["parameters"][0].__setitem__(
        "name", "id"))
    assert f"GET {one}: path parameters ['id'], the client fills ['action_id']" in parameter
    field = _named_changed(lambda d: schemas(d)["ActionResponse"]["properties"].__setitem__(
        "action_id", schemas(d)["ActionResponse"]["properties"].pop("id")))
    assert "ActionResult.id: read, not in the answer's schema" in field
    retired = _named_changed(lambda d: schemas(d)["CatalogueResponse"]["properties"].pop(
        "retired"))
    assert "Catalogue.retired: read, not in the answer's schema" in retired
    created = _named_changed(lambda d: d["paths"][one]["put"]["responses"].pop("201"))
    assert f"PUT {one}: no JSON 201 answer" in created
    by_id = _named_changed(lambda d: schemas(d)["DecideResponse"]["properties"].pop(
        "probabilities_by_id"))
    assert "Decision.probabilities_by_id: read, not in the answer's schema" in by_id
    names = _named_changed(lambda d: schemas(d)["ModelResponse"]["properties"].__setitem__(
        "feature_names", {"type": "string"}))
    assert any(p.startswith("Model.feature_names: the client reads array") for p in names)
    request = _named_changed(lambda d: schemas(d)["NamedDecideRequest"]["properties"].pop(
        "excluded_ids"))
    assert "NamedDecideRequest.excluded_ids: sent, not in the schema" in request
    body = _named_changed(lambda d: schemas(d)["ActionBody"]["required"].append("weight"))
    assert "ActionBody.weight: required, not sent" in body
    dense_only = _named_changed(lambda d: d["paths"]["/v1/decide"]["post"]["requestBody"][
        "content"]["application/json"].__setitem__(
        "schema", {"$ref": "#/components/schemas/DecideRequest"}))
    assert "POST /v1/decide: does not take NamedDecideRequest" in dense_only
