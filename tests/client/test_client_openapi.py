"""The client and the service's OpenAPI document cannot drift apart: every route the client
calls, every field it sends and every field it reads is in the document with the same
method, type and required-ness (the served /v1/openapi.json is checked the same way in
test_client_server.py)."""

from __future__ import annotations

import copy

import pytest

from clientkit import drift
from glmbandits.service.config import parse_config
from glmbandits.service.openapi import openapi_document


def _document(**decisions: object) -> dict:
    return openapi_document(parse_config({"policy": {"name": "ucb-glm", "n_features": 3},
                                          "decisions": {"max_actions": 8, **decisions}}))


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
