"""An OpenAPI-driven fuzz run (schemathesis) over every operation: no 5xx answer, ever."""

from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from servicekit import HEADERS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fuzz_schema(server):
    return schemathesis.openapi.from_url(server.url + "/v1/openapi.json")


schema = schemathesis.pytest.from_fixture("fuzz_schema")


@schema.parametrize()
@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_no_request_gets_a_server_error(case, server):
    response = case.call(base_url=server.url, headers=HEADERS, timeout=20)
    assert response.status_code < 500, (case.method, case.path, case.body, response.text)
    if case.path in ("/v1/decide", "/v1/reward") and response.status_code >= 400:
        assert response.text and json.loads(response.text)["detail"], (
            response.status_code, repr(response.text), case.body, case.headers)
    response = case.call(base_url=server.url, headers={}, timeout=20)  # and without a key
    assert response.status_code < 500
