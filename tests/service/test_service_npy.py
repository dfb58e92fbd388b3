"""The binary decide body (``Content-Type: application/x-npy``): the parser on its own, then
against a real server: the same decision as JSON, and every refusal writes nothing."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glmbandits.service.core import Invalid
from glmbandits.service.media import UnsupportedMediaType, decide_encoding, parse_decide_body
from glmbandits.service.npy_body import parse_decide_npy
from glmbandits.service.schemas import parse_decide

from servicekit import unit_rows

NPY = {"Content-Type": "application/x-npy"}


def npy(array, *, version: tuple[int, int] | None = None) -> bytes:
    """The bytes ``np.save`` writes (or ``write_array`` with a given format version)."""
    buffer = io.BytesIO()
    if version is None:
        np.save(buffer, array, allow_pickle=False)
    else:
        np.lib.format.write_array(buffer, np.asanyarray(array), version=version,
                                  allow_pickle=False)
    return buffer.getvalue()


def with_header(header: str, data: bytes = b"", version: int = 1) -> bytes:
    """An .npy body with a hand-written header (padded as np.save pads)."""
    text = header.encode("latin1")
    size = 2 if version == 1 else 4
    pad = (-(8 + size + len(text) + 1)) % 64
    text += b" " * pad + b"\n"
    return b"\x93NUMPY" + bytes([version, 0]) + len(text).to_bytes(size, "little") + text + data


ROWS = unit_rows(np.random.default_rng(3), 4, 3)


# -- the parser ------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["f8", "f8 fortran", ">f8", "f4", "f4 fortran", ">f4",
                                     "version 2.0"])
def test_an_npy_body_parses_to_the_same_contexts_as_json(variant):
    X = ROWS.astype(np.float32).astype(np.float64) if "f4" in variant else ROWS
    array = X.astype("f8" if variant == "version 2.0" else variant.split()[0])
    if "fortran" in variant:
        array = np.asfortranarray(array)
    body = npy(array, version=(2, 0) if variant == "version 2.0" else None)
    parsed = parse_decide_npy(body, [("decision_id", "a"), ("excluded", "1,3")], 3, 8)
    reference = parse_decide(json.dumps({"decision_id": "a", "contexts": X.tolist(),
                                         "excluded": [1, 3]}).encode(), 3, 8)
    assert parsed.contexts.dtype == np.float64 and parsed.contexts.flags.c_contiguous
    assert parsed.contexts.tobytes() == reference.contexts.tobytes()
    assert (parsed.decision_id, parsed.excluded) == (reference.decision_id, reference.excluded)


def test_the_header_cache_does_not_mix_up_bodies():
    first = parse_decide_npy(npy(ROWS), [], 3, 8).contexts
    second = parse_decide_npy(npy(2 * ROWS), [], 3, 8).contexts
    assert np.array_equal(first, ROWS) and np.array_equal(second, 2 * ROWS)
    assert parse_decide_npy(npy(ROWS[:2]), [], 3, 8).contexts.shape == (2, 3)


def test_no_query_means_a_new_id_and_no_exclusions():
    parsed = parse_decide_npy(npy(ROWS), [], 3, 8)
    assert parsed.decision_id is None and parsed.excluded is None
    assert parsed.default_action is None
    assert parse_decide_npy(npy(ROWS), [("default_action", "2")], 3, 8).default_action == 2
    assert parse_decide_npy(npy(ROWS), [("excluded", "")], 3, 8).excluded == []


GOOD = npy(ROWS)
REFUSED = [
    # (name, body, query, field)
    ("not npy", b'{"contexts": [[0, 0, 0]]}', [], "contexts"),
    ("empty", b"", [], "contexts"),
    ("magic only", b"\x93NUMPY", [], "contexts"),
    ("version 3.0", GOOD[:6] + b"\x03\x00" + GOOD[8:], [], "contexts"),
    ("version 1.1", GOOD[:6] + b"\x01\x01" + GOOD[8:], [], "contexts"),
    ("truncated header", GOOD[:40], [], "contexts"),
    ("header not a dict", with_header("[1, 2]"), [], "contexts"),
    ("header a call", with_header("{'descr': __import__('os'), 'fortran_order': False, "
                                  "'shape': (4, 3)}"), [], "contexts"),
    ("header extra key", with_header("{'descr': '<f8', 'fortran_order': False, "
                                     "'shape': (1, 3), 'x': 1}", bytes(24)), [], "contexts"),
    ("object dtype", with_header("{'descr': '|O', 'fortran_order': False, 'shape': (1, 3), }",
                                 bytes(24)), [], "contexts"),
    ("structured dtype", npy(np.zeros((4, 3), dtype=[("a", "<f8")])), [], "contexts"),
    ("float16", npy(ROWS.astype(np.float16)), [], "contexts"),
    ("int64", npy(np.ones((4, 3), dtype=np.int64)), [], "contexts"),
    ("complex", npy(ROWS.astype(np.complex128)), [], "contexts"),
    ("bool", npy(np.ones((4, 3), dtype=bool)), [], "contexts"),
    ("1-d", npy(ROWS.ravel()), [], "contexts"),
    ("3-d", npy(ROWS[None]), [], "contexts"),
    ("no rows", npy(np.zeros((0, 3))), [], "contexts"),
    ("negative shape", with_header("{'descr': '<f8', 'fortran_order': False, "
                                   "'shape': (-4, 3), }", bytes(96)), [], "contexts"),
    ("K above the limit", npy(np.zeros((9, 3))), [], "contexts"),
    ("wrong d", npy(np.zeros((4, 2))), [], "contexts[0]"),
    ("data too short", GOOD[:-8], [], "contexts"),
    ("data too long", GOOD + bytes(8), [], "contexts"),
    ("huge shape", with_header("{'descr': '<f8', 'fortran_order': False, "
                               "'shape': (3000000000000000000, 3), }", bytes(48)), [],
     "contexts"),
    ("NaN", npy(np.where(np.arange(12).reshape(4, 3) == 7, np.nan, ROWS)), [],
     "contexts[2][1]"),
    ("inf", npy(np.where(np.arange(12).reshape(4, 3) == 3, np.inf, ROWS)), [],
     "contexts[1][0]"),
    ("float32 -inf", npy(np.full((4, 3), -np.inf, dtype=np.float32)), [], "contexts[0][0]"),
    ("id empty", GOOD, [("decision_id", "")], "decision_id"),
    ("id too long", GOOD, [("decision_id", "x" * 257)], "decision_id"),
    ("id twice", GOOD, [("decision_id", "a"), ("decision_id", "b")], "decision_id"),
    ("excluded not a number", GOOD, [("excluded", "a")], "excluded[0]"),
    ("excluded negative", GOOD, [("excluded", "1,-1")], "excluded[1]"),
    ("excluded with a space", GOOD, [("excluded", "1, 2")], "excluded[1]"),
    ("excluded trailing comma", GOOD, [("excluded", "1,")], "excluded[1]"),
    ("excluded out of range", GOOD, [("excluded", "4")], "excluded[0]"),
    ("excluded all", GOOD, [("excluded", "0,1,2,3")], "excluded"),
    ("unknown parameter", GOOD, [("actions", "3")], "actions"),
    ("default_action not a number", GOOD, [("default_action", "x")], "default_action"),
    ("default_action negative", GOOD, [("default_action", "-1")], "default_action"),
    ("default_action twice", GOOD, [("default_action", "1"), ("default_action", "1")],
     "default_action"),
]


@pytest.mark.parametrize("name,body,query,field", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_malformed_npy_decide_is_refused_naming_the_field(name, body, query, field):
    with pytest.raises(Invalid) as refused:
        parse_decide_npy(body, query, 3, 8)
    assert refused.value.field == field, refused.value.message
    assert refused.value.message


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_damaged_npy_bodies_are_refused_cleanly(data):
    """Random bytes, truncations and flipped bytes of a valid body: parsed or Invalid,
    never another exception."""
    body = bytearray(npy(ROWS.astype(data.draw(st.sampled_from(["<f8", ">f4"])))))
    kind = data.draw(st.sampled_from(["random", "truncate", "flip"]))
    if kind == "random":
        body = bytearray(b"\x93NUMPY" + data.draw(st.binary(max_size=300)))
    elif kind == "truncate":
        body = body[:data.draw(st.integers(0, len(body)))]
    else:
        for _ in range(data.draw(st.integers(1, 4))):
            body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    try:
        parsed = parse_decide_npy(bytes(body), [], 3, 8)
    except Invalid as error:
        assert error.field and error.message
    else:
        assert parsed.contexts.dtype == np.float64 and np.isfinite(parsed.contexts).all()


@pytest.mark.parametrize("content_type,encoding", [
    (None, "json"), ("application/json", "json"), ("application/json; charset=utf-8", "json"),
    ("APPLICATION/JSON", "json"), ("application/x-npy", "npy"),
    (" application/x-npy ; q=1", "npy")])
def test_content_types_that_are_read(content_type, encoding):
    assert decide_encoding(content_type) == encoding


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "application/octet-stream", "", "multipart/form-data"])
def test_other_content_types_are_415(content_type):
    with pytest.raises(UnsupportedMediaType) as refused:
        decide_encoding(content_type)
    assert refused.value.status == 415 and "application/x-npy" in refused.value.message


def test_a_json_decide_refuses_npy_query_parameters():
    body = json.dumps({"contexts": ROWS.tolist()}).encode()
    for name in ("decision_id", "excluded", "default_action"):
        with pytest.raises(Invalid) as refused:
            parse_decide_body("json", body, [(name, "1")], 3, 8)
        assert refused.value.field == name
    assert parse_decide_body("json", body, [("other", "1")], 3, 8).contexts.shape == (4, 3)


# -- against a real server -------------------------------------------------------------------
def snapshot_of(server) -> tuple:
    model = server.client.get("/v1/model").json()
    return model["last_seq"], model["decisions"], model["model_version"], model["pending"]


@pytest.mark.slow
@pytest.mark.parametrize("first,retry", [("npy", "json"), ("json", "npy"),
                                         ("npy fortran float32", "json"),
                                         ("npy", "npy big-endian")])
def test_an_npy_decide_is_the_json_decide(server, first, retry):
    X = unit_rows(np.random.default_rng(len(first) + len(retry)), 5, 3)
    if "float32" in first:
        X = X.astype(np.float32).astype(np.float64)  # values a float32 holds exactly
    decision_id = f"npy-{first}-{retry}".replace(" ", "-")

    def send(encoding: str):
        if encoding == "json":
            return server.client.post("/v1/decide", json={
                "decision_id": decision_id, "contexts": X.tolist(), "excluded": [1]})
        array = X
        if "float32" in encoding:
            array = np.asfortranarray(X.astype(np.float32))
        if "big-endian" in encoding:
            array = X.astype(">f8")
        return server.client.post("/v1/decide", content=npy(array), headers=NPY,
                                  params={"decision_id": decision_id, "excluded": "1"})

    made = send(first)
    assert made.status_code == 200, made.text
    before = snapshot_of(server)
    again = send(retry)
    assert again.status_code == 200, again.text
    assert again.json() == made.json()  # the same decision, whichever encoding retried it
    assert made.json()["probabilities"][1] == 0.0
    after = snapshot_of(server)
    assert after[1:] == before[1:]  # no new decision: a retry (logged as one)
    events = [json.loads(line) for line in server.client.get("/v1/events").text.splitlines()]
    decided = [e for e in events if e["decision_id"] == decision_id and e["kind"] == "decision"]
    assert len(decided) == 1
    assert np.array(decided[0]["contexts"]).tobytes() == X.tobytes()  # float64, bit for bit


@pytest.mark.slow
def test_an_npy_retry_with_other_contexts_is_409(server):
    first = server.client.post("/v1/decide", content=npy(ROWS), headers=NPY,
                               params={"decision_id": "npy-conflict"})
    assert first.status_code == 200
    before = snapshot_of(server)
    other = server.client.post("/v1/decide", content=npy(ROWS[:3]), headers=NPY,
                               params={"decision_id": "npy-conflict"})
    assert other.status_code == 409 and other.json()["field"] == "decision_id"
    assert snapshot_of(server) == before


@pytest.mark.slow
@pytest.mark.parametrize("name,body,query,field", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_refused_npy_decide_is_422_and_writes_nothing(server, name, body, query, field):
    before = snapshot_of(server)
    response = server.client.post("/v1/decide", content=body, headers=NPY, params=query)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field, response.json()
    assert response.json()["error"] == "invalid request"
    assert snapshot_of(server) == before


@pytest.mark.slow
def test_an_npy_body_above_the_limit_is_413_and_writes_nothing(server):
    before = snapshot_of(server)
    big = npy(np.zeros((3000, 3)))
    assert len(big) > 65536
    response = server.client.post("/v1/decide", content=big, headers=NPY)
    assert response.status_code == 413

    def chunks():  # no Content-Length: the limit is counted while reading
        for start in range(0, len(big), 8192):
            yield big[start:start + 8192]

    streamed = server.client.post("/v1/decide", content=chunks(), headers=NPY)
    assert streamed.status_code == 413
    assert snapshot_of(server) == before


@pytest.mark.slow
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "application/octet-stream"])
def test_an_unknown_content_type_is_415_and_writes_nothing(server, content_type):
    before = snapshot_of(server)
    response = server.client.post("/v1/decide", headers={"Content-Type": content_type},
                                  content=json.dumps({"contexts": ROWS.tolist()}).encode())
    assert response.status_code == 415, response.text
    body = response.json()
    assert body["error"] == "unsupported media type" and body["field"] == "Content-Type"
    assert content_type in body["detail"] and "application/x-npy" in body["detail"]
    assert snapshot_of(server) == before


@pytest.mark.slow
def test_json_without_a_content_type_and_query_ids_on_json(server):
    plain = server.client.build_request("POST", "/v1/decide",
                                        content=json.dumps({"contexts": ROWS.tolist()}))
    assert "content-type" not in plain.headers
    answer = server.client.send(plain)
    assert answer.status_code == 200, answer.text
    before = snapshot_of(server)
    mixed = server.client.post("/v1/decide", params={"decision_id": "q"},
                               json={"contexts": ROWS.tolist()})
    assert mixed.status_code == 422 and mixed.json()["field"] == "decision_id"
    assert snapshot_of(server) == before
