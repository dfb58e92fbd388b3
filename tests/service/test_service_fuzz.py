"""An OpenAPI-driven fuzz run (schemathesis) over every operation: no 5xx answer, ever."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from servicekit import HEADERS

pytestmark = pytest.mark.slow


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


# Binary decide bodies (application/x-npy): .npy files of float arrays of any small shape
# (NaN and infinities included), the same cut short, and arbitrary bytes.
_dtypes = st.sampled_from(["<f8", ">f8", "<f4", "<f2", "<i8"])
_arrays = st.one_of(  # the fixture's server has n_features = 3, max_actions = 8
    hnp.arrays(_dtypes, st.tuples(st.integers(0, 9), st.just(3))),
    hnp.arrays(_dtypes, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=10)))
schemathesis.openapi.media_type("application/x-npy", st.one_of(
    _arrays.map(_npy), st.tuples(_arrays.map(_npy), st.integers(0, 200)).map(
        lambda pair: pair[0][:pair[1]]), st.binary(max_size=300)))


@pytest.fixture(scope="module")
def fuzz_schema(server):
    return schemathesis.openapi.from_url(server.url + "/v1/openapi.json")


schema = schemathesis.pytest.from_fixture("fuzz_schema")


@schema.parametrize()
@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_no_request_gets_a_server_error(case, server):
    response = case.call(base_url=server.url, headers=HEADERS, timeout=60)
    assert response.status_code < 500, (case.method, case.path, case.body, response.text)
    if case.path in ("/v1/decide", "/v1/reward") and response.status_code >= 400:
        assert response.text and json.loads(response.text)["detail"], (
            response.status_code, repr(response.text), case.body, case.headers)
    response = case.call(base_url=server.url, headers={}, timeout=60)  # and without a key
    assert response.status_code < 500
