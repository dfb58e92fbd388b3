"""The OpenAPI-driven fuzz run (schemathesis) over a service with a ``[features]`` schema: the
named decide body and the action catalogue's routes included, no 5xx answer, ever."""

from __future__ import annotations

import json

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from servicekit import HEADERS, NAMED_ARTICLES, ServerProcess, write_named_config

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def named_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("serve-named")
    process = ServerProcess(write_named_config(folder), f"sqlite:///{folder / 'log.db'}")
    with httpx.Client(base_url=process.url, headers=HEADERS, timeout=60) as client:
        for action_id, features in NAMED_ARTICLES.items():  # a catalogue to name
            assert client.put(f"/v1/actions/{action_id}",
                              json={"features": features}).status_code == 201
    yield process
    code = process.terminate()
    assert code == 0, process.output()


@pytest.fixture(scope="module")
def named_fuzz_schema(named_server):
    document = httpx.get(named_server.url + "/v1/openapi.json", timeout=60).json()
    assert "/v1/actions/{action_id}" in document["paths"]
    return schemathesis.openapi.from_dict(document)


schema = schemathesis.pytest.from_fixture("named_fuzz_schema")


@schema.parametrize()
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_no_request_to_a_named_service_gets_a_server_error(case, named_server):
    response = case.call(base_url=named_server.url, headers=HEADERS, timeout=60)
    assert response.status_code < 500, (case.method, case.path, case.body, response.text)
    if response.status_code >= 400 and case.path != "/v1/openapi.json":  # a JSON refusal
        assert json.loads(response.text)["detail"], (response.status_code, response.text)
