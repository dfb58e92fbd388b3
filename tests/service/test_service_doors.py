"""The service's doors: no key valid unless the operator chose it; header size and count
limits and slow heads and bodies, measured on real uvicorn processes over raw sockets;
invalid UTF-8 and invalid percent-escapes refused naming the field; only the dashboard's
files served; a 405 with ``Allow`` on every route; reads not counted as commits; a
reward outside the family's domain refused; an OpenAPI document that states what the
server enforces."""

from __future__ import annotations

import io
import json
import math
import re
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from glmbandits.dashboard import ASSET_FILES, asset_folder
from glmbandits.families import FAMILY_NAMES, get_family
from glmbandits.service.app import create_app
from glmbandits.service.config import (ConfigError, ServiceConfig, example_config, hash_key,
                                       load_config, parse_config, tomllib)
from glmbandits.service.core import DecisionService
from glmbandits.service.openapi import openapi_document
from glmbandits.service.store import open_store
from servicekit import HEADERS, KEY, ROOT, ServerProcess, environment, write_config
from test_hot_routes import AUTH, call

#: The timeouts of the servers of this module (seconds): short, so that a test takes ~1 s.
TIMEOUT = 1.0
#: How long a test waits for a condition before it fails (generous: busy CPUs beside us).
DEADLINE = 60.0


@pytest.fixture
def app(tmp_path: Path):
    """An in-process app (n_features 3, max_actions 8, logistic) with the test key."""
    config = load_config(write_config(tmp_path, n_features=3, max_actions=8))
    service = DecisionService(config, open_store(f"sqlite:///{tmp_path / 'log.db'}")).start()
    yield create_app(config, service, environ={"GLMBANDITS_API_KEYS": KEY})
    if service.running:
        service.stop(snapshot=False)


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """A real server with short header and body timeouts and the default header limits."""
    folder = tmp_path_factory.mktemp("doors")
    config = write_config(folder, service=f"header_timeout = {TIMEOUT}\n"
                                          f"body_timeout = {TIMEOUT}\n")
    process = ServerProcess(config, f"sqlite:///{folder / 'log.db'}")
    yield process
    assert process.terminate() == 0, process.output()


# -- API keys ------------------------------------------------------------------------------
def _documented_keys() -> set[str]:
    """Every literal key the README and docs/ show (not the $VARIABLES they expand)."""
    keys = set()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        keys.update(re.findall(r"GLMBANDITS_API_KEYS=([^\s$'\"`]+)", text))
        keys.update(re.findall(r"Bearer ([^\s$'\"`]+)", text))
    return keys - {"KEY"}


def test_the_example_config_holds_no_key():
    text = example_config()
    assert not re.search(r"[0-9a-f]{64}", text), "a key digest in the example"
    config = parse_config(tomllib.loads(text))
    assert config.api_key_sha256 == () and config.key_hashes({}) == ()


@pytest.mark.parametrize("key", ["change-me", "replace-with-a-long-random-key"])
def test_a_documented_key_is_refused_from_the_environment_and_the_config(tmp_path, key):
    config = load_config(write_config(tmp_path))
    with pytest.raises(ConfigError, match=f"GLMBANDITS_API_KEYS holds the key '{key}'"):
        config.key_hashes({"GLMBANDITS_API_KEYS": f"mine-0123456789, {key}"})
    text = example_config().replace("api_key_sha256 = []",
                                    f'api_key_sha256 = ["{hash_key(key)}"]')
    with pytest.raises(ConfigError, match=r"\[auth\] api_key_sha256 holds the key"):
        parse_config(tomllib.loads(text))
    service = DecisionService(config, open_store(f"sqlite:///{tmp_path / 'log.db'}")).start()
    try:
        with pytest.raises(ConfigError, match="example key"):
            create_app(config, service, environ={"GLMBANDITS_API_KEYS": key})
    finally:
        service.stop(snapshot=False)
    assert config.key_hashes({"GLMBANDITS_API_KEYS": "mine-0123456789"}) == (
        hash_key("mine-0123456789"),)


def test_every_key_the_docs_show_is_refused(tmp_path):
    config = load_config(write_config(tmp_path))
    keys = _documented_keys()
    for key in keys:
        with pytest.raises(ConfigError, match="example key"):
            config.key_hashes({"GLMBANDITS_API_KEYS": key})


@pytest.mark.slow
def test_serve_with_a_documented_key_refuses_to_start(tmp_path):
    config = tmp_path / "service.toml"
    config.write_text(example_config())
    process = subprocess.run(
        [sys.executable, "-m", "glmbandits", "serve", str(config), "--port", "0"],
        env=environment(GLMBANDITS_API_KEYS="change-me"), capture_output=True, text=True,
        timeout=DEADLINE)
    assert process.returncode == 2, process.stderr
    assert "'change-me', an example key" in process.stderr
    assert "secrets.token_hex" in process.stderr
    assert not (tmp_path / "service.db").exists()  # refused before the log was opened
    process = subprocess.run(  # the example config alone has no key at all
        [sys.executable, "-m", "glmbandits", "serve", str(config), "--port", "0"],
        env=environment(GLMBANDITS_API_KEYS=""), capture_output=True, text=True,
        timeout=DEADLINE)
    assert process.returncode == 2 and "at least one API key is needed" in process.stderr


# -- header size and count, slow heads and bodies (real uvicorn, raw sockets) ---------------
def _address(server: ServerProcess) -> tuple[str, int]:
    host, port = server.url.split("//", 1)[1].rsplit(":", 1)
    return host, int(port)


def _read_until_closed(sock: socket.socket, deadline: float) -> tuple[bytes, bool]:
    """Everything the server sends until it closes the connection (True) or the deadline."""
    data = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([sock], [], [], 0.1)
        if not ready:
            continue
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data, True
        if not chunk:
            return data, True
        data += chunk
    return data, False


def _status_and_body(answer: bytes) -> tuple[int, dict]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc for the RSS")
def test_a_60_mb_header_is_refused_at_once_and_stalls_no_one(guarded, record_property):
    """The figures of docs/service.md (Limits on requests) come from this test's output."""
    pid = guarded.process.pid
    rss = [_rss_mib(pid)]
    latencies: list[float] = []
    stop = threading.Event()

    def sample_rss() -> None:
        while not stop.is_set():
            rss.append(_rss_mib(pid))
            stop.wait(0.005)

    def other_client() -> None:
        with httpx.Client(base_url=guarded.url, timeout=DEADLINE) as client:
            while not stop.is_set():
                started = time.perf_counter()
                assert client.get("/v1/health").status_code == 200
                latencies.append(time.perf_counter() - started)

    threads = [threading.Thread(target=sample_rss), threading.Thread(target=other_client)]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + DEADLINE
        while not latencies:  # the other client is served before the attack starts
            assert time.monotonic() < deadline and threads[1].is_alive()
            time.sleep(0.01)
        before = len(latencies)
        sent = 0
        answer = b""
        with socket.create_connection(_address(guarded)) as sock:
            started = time.perf_counter()
            try:
                sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ")
                chunk = b"a" * (1 << 20)
                for _ in range(60):
                    sock.sendall(chunk)
                    sent += len(chunk)
                sock.sendall(b"\r\n\r\n")
            except OSError:  # the server closed the connection: refused
                pass
            answer, closed = _read_until_closed(sock, time.monotonic() + DEADLINE)
            refused_after = time.perf_counter() - started
        deadline = time.monotonic() + DEADLINE
        while len(latencies) < before + 3:  # the other client goes on being served
            assert time.monotonic() < deadline and threads[1].is_alive()
            time.sleep(0.01)
    finally:
        stop.set()
        for thread in threads:
            thread.join(DEADLINE)
    assert closed and (answer == b"" or answer.startswith(b"HTTP/1.1 431 ")), answer[:200]
    assert sent < 60 << 20, "the whole 60 MB header was read"
    grown = max(rss) - rss[0]
    worst = max(latencies[before - 1:])
    figures = {"refused_after_s": round(refused_after, 4), "sent_mib": sent >> 20,
               "rss_before_mib": round(rss[0], 1), "rss_peak_growth_mib": round(grown, 1),
               "other_client_worst_latency_s": round(worst, 4)}
    print("60 MB header:", figures)
    for name, value in figures.items():
        record_property(name, value)
    assert refused_after < 10.0 and grown < 50.0 and worst < 10.0, figures


def _send_and_read(server: ServerProcess, request: bytes) -> tuple[bytes, bool]:
    with socket.create_connection(_address(server)) as sock:
        sock.sendall(request)
        return _read_until_closed(sock, time.monotonic() + DEADLINE)


def test_a_head_above_max_header_bytes_is_431_and_closed(guarded):
    limit = ServiceConfig.max_header_bytes
    filler = b"X-Filler: " + b"a" * (limit + 10) + b"\r\n"
    answer, closed = _send_and_read(guarded, b"GET /v1/health HTTP/1.1\r\nHost: x\r\n"
                                    + filler + b"\r\n")
    status, body = _status_and_body(answer)
    assert closed and status == 431 and body["field"] == "headers", answer
    assert f"max_header_bytes = {limit}" in body["detail"]
    # a head just under the limit is served
    response = httpx.get(guarded.url + "/v1/health",
                         headers={"X-Filler": "a" * (limit - 200)})
    assert response.status_code == 200


def test_more_header_lines_than_max_headers_is_431(guarded):
    count = ServiceConfig.max_headers
    lines = b"".join(b"X-H%d: v\r\n" % i for i in range(count + 1))
    answer, closed = _send_and_read(guarded, b"GET /v1/health HTTP/1.1\r\n" + lines + b"\r\n")
    status, body = _status_and_body(answer)
    assert closed and status == 431 and f"max_headers = {count}" in body["detail"]
    response = httpx.get(guarded.url + "/v1/health",
                         headers={f"X-H{i}": "v" for i in range(count - 10)})
    assert response.status_code == 200


def _trickle(server: ServerProcess, start: bytes, drip: bytes) -> tuple[float, bytes, bool]:
    """Send ``start``, then ``drip`` a byte every 0.1 s (nothing if empty) until the server
    closes the connection or the deadline passes; (seconds until closed, its answer, closed)."""
    with socket.create_connection(_address(server)) as sock:
        started = time.monotonic()
        sock.sendall(start)
        position = 0
        while time.monotonic() - started < DEADLINE:
            ready, _, _ = select.select([sock], [], [], 0.1)
            if ready:  # an answer, or the end of the connection
                answer, closed = _read_until_closed(sock, started + DEADLINE)
                return time.monotonic() - started, answer, closed
            if drip:
                try:
                    sock.sendall(drip[position % len(drip):][:1])
                except OSError:
                    return time.monotonic() - started, b"", True
                position += 1
        return time.monotonic() - started, b"", False


SLOW = [
    ("headers a byte at a time", b"GET /v1/health HTTP/1.1\r\n", b"X-Slow: aaaaaaaa\r\n"),
    ("a connection that sends nothing", b"", b""),
    ("headers that never end", b"GET /v1/health HTTP/1.1\r\nHost: x\r\n", b""),
    ("a body announced and never sent",
     b"POST /v1/reward HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode()
     + b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n", b""),
    ("a body a byte at a time",
     b"POST /v1/reward HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode()
     + b"\r\nContent-Length: 60000\r\n\r\n", b" "),
]


@pytest.mark.slow
@pytest.mark.parametrize("case,start,drip", SLOW, ids=[case for case, _, _ in SLOW])
def test_a_slow_client_is_closed_after_its_timeout(guarded, case, start, drip,
                                                   record_property):
    before = guarded.client.get("/v1/model").json()["last_seq"]
    seconds, answer, closed = _trickle(guarded, start, drip)
    print(f"{case}: closed after {seconds:.3f} s (timeout {TIMEOUT} s)")
    record_property("closed_after_s", round(seconds, 3))
    assert closed, f"{case}: still open after {DEADLINE} s"
    assert TIMEOUT * 0.9 <= seconds < DEADLINE
    status, body = _status_and_body(answer)
    assert status == 408 and body["field"] == ("body" if b"Content-Length" in start
                                               else "headers"), answer
    assert guarded.client.get("/v1/model").json()["last_seq"] == before  # nothing logged


def test_keep_alive_and_pipelined_requests_still_work(guarded):
    request = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
    with socket.create_connection(_address(guarded)) as sock:
        for payload in (request, request, request * 2):  # two in turn, then two at once
            sock.sendall(payload)
            expected = payload.count(b"GET ")
            data, deadline = b"", time.monotonic() + DEADLINE
            while data.count(b'{"status":"ok"}') < expected and time.monotonic() < deadline:
                ready, _, _ = select.select([sock], [], [], 0.1)
                if ready:
                    chunk = sock.recv(65536)
                    assert chunk, data
                    data += chunk
            assert data.count(b"HTTP/1.1 200 OK") == expected, data


@pytest.mark.parametrize("key,value,message", [
    ("max_header_bytes", 100, "an integer >= 1024"),
    ("max_headers", 0, "an integer >= 1"),
    ("header_timeout", 0, "a finite number of seconds >= 0.01"),
    ("body_timeout", float("inf"), "a finite number of seconds >= 0.01"),
    ("body_timeout", "30", "seconds > 0"),
])
def test_the_limits_are_checked_config_keys(key, value, message):
    data = {"policy": {"name": "ucb-glm", "n_features": 3}, "service": {key: value}}
    with pytest.raises(ConfigError, match=re.escape(f"[service] {key} must be")) as error:
        parse_config(data)
    assert message in str(error.value)
    config = parse_config({"policy": {"name": "ucb-glm", "n_features": 3}})
    assert (config.max_header_bytes, config.max_headers, config.header_timeout,
            config.body_timeout) == (32768, 100, 10.0, 30.0)


# -- invalid UTF-8, percent-escapes --------------------------------------------------------
@pytest.mark.parametrize("path,body,field", [
    ("/v1/decide", b'{"contexts": [[0.1, 0.2, 0.3]], "decision_id": "\xff"}', "decision_id"),
    ("/v1/decide", b'{"contexts": [[0.1, 0.2, 0.3]], "decision_id": "a\xed\xa0\x80"}',
     "decision_id"),
    ("/v1/decide", b'{"contexts": [[0.1, 0.2, 0.3]], "d\xffx": 1}', "body"),
    ("/v1/reward", b'{"decision_id": "ok-\xc3", "reward": 1}', "decision_id"),
    ("/v1/reward", b'{"reward": 1, "decision_id": "\xfe\xff"}', "decision_id"),
])
def test_invalid_utf8_in_a_json_string_is_422_naming_the_field(server, path, body, field):
    before = server.client.get("/v1/model").json()["last_seq"]
    response = server.client.post(path, content=body,
                                  headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field and "UTF-8" in response.json()["detail"]
    assert server.client.get("/v1/model").json()["last_seq"] == before


def _npy(rows: int = 2) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.full((rows, 3), 0.1))
    return buffer.getvalue()


@pytest.mark.parametrize("query,field", [
    (b"decision_id=a%zzb", "decision_id"),  # not an escape
    (b"decision_id=a%ffb", "decision_id"),  # not UTF-8 (would become a\ufffdb, like a%feb)
    (b"decision_id=a%feb", "decision_id"),
    (b"decision_id=caf%C3", "decision_id"),  # cut in the middle of a character
    (b"decision_id=%ED%A0%80", "decision_id"),  # a surrogate in UTF-8 form
    (b"decision_id=abc%", "decision_id"),
    (b"decision%zz=x", "query"),
    (b"excluded=0%2", "excluded"),
])
def test_the_npy_query_is_decoded_strictly(app, query, field):
    status, _, answer = call(app, "POST", "/v1/decide", [_npy()], query=query,
                             headers=[AUTH, (b"content-type", b"application/x-npy")])
    assert status == 422, answer
    assert json.loads(answer)["field"] == field
    assert app.service.totals().get("decisions", 0) == 0


def test_an_npy_query_with_escapes_decodes_exactly(app):
    status, _, answer = call(app, "POST", "/v1/decide", [_npy()],
                             query=b"decision_id=caf%C3%A9+%2B%25&excluded=0",
                             headers=[AUTH, (b"content-type", b"application/x-npy")])
    assert status == 200 and json.loads(answer)["decision_id"] == "café +%"


# -- the dashboard's files, 405 -----------------------------------------------------------
@pytest.mark.parametrize("path", ["/__init__.py", "/__pycache__/__init__.cpython-311.pyc",
                                  "/vendor/uplot/VENDORED.md", "/vendor/", "/vendor/uplot",
                                  "/../service/app.py", "/%2e%2e/service/app.py",
                                  "/index.html/x"])
def test_only_the_dashboard_assets_are_served(app, path):
    status, _, _ = call(app, "GET", path, headers=[])
    assert status == 404
    assert call(app, "GET", path)[0] == 404  # with a key neither


def test_every_dashboard_asset_is_served_without_a_key(server):
    for name in ASSET_FILES:
        response = httpx.get(f"{server.url}/{name}")
        assert response.status_code == 200, name
        assert response.content == (asset_folder() / name).read_bytes(), name
    response = httpx.get(server.url + "/")
    assert response.status_code == 200 and response.headers["content-type"].startswith(
        "text/html")
    assert response.content == (asset_folder() / "index.html").read_bytes()
    head = httpx.head(server.url + "/dashboard.js")
    assert head.status_code == 200 and head.content == b""
    etag = httpx.get(server.url + "/dashboard.js").headers["etag"]
    assert httpx.get(server.url + "/dashboard.js",
                     headers={"If-None-Match": etag}).status_code == 304
    # every file the page loads is one of them
    page = (asset_folder() / "index.html").read_text()
    loaded = set(re.findall(r'(?:src|href)="([^":]+)"', page))
    assert loaded <= set(ASSET_FILES), loaded - set(ASSET_FILES)


def _routes() -> list[tuple[str, set[str]]]:
    config = parse_config({"policy": {"name": "ucb-glm", "n_features": 3}})
    paths = [(path, {method.upper() for method in methods})
             for path, methods in openapi_document(config)["paths"].items()]
    return paths + [("/", {"GET"})] + [(f"/{name}", {"GET"}) for name in ASSET_FILES]


@pytest.mark.parametrize("path,allowed", _routes(), ids=[p for p, _ in _routes()])
def test_a_405_names_the_allowed_methods(app, path, allowed):
    for method in ("GET", "POST", "PUT", "DELETE", "PATCH"):
        if method in allowed:
            continue
        status, head, answer = call(app, method, path)
        assert status == 405, (method, path, status)
        named = {m.strip() for m in head["allow"].split(",")}
        assert allowed <= named <= allowed | {"HEAD"}, head
        assert json.loads(answer)["error"] == "method not allowed"


def test_a_405_over_http_carries_allow(server):
    response = server.client.post("/v1/model")
    assert response.status_code == 405
    assert {m.strip() for m in response.headers["allow"].split(",")} == {"GET", "HEAD"}


# -- reads are not commits -------------------------------------------------------------------
def _commits(app) -> tuple[int, int]:
    text = call(app, "GET", "/metrics")[2].decode()
    values = dict(line.split() for line in text.splitlines()
                  if line.startswith(("glmbandits_commits_total ",
                                      "glmbandits_committed_requests_total ")))
    return (int(values["glmbandits_commits_total"]),
            int(values["glmbandits_committed_requests_total"]))


def test_model_reads_are_not_counted_as_commits(app):
    assert _commits(app) == (0, 0)
    for _ in range(3):
        assert call(app, "GET", "/v1/model")[0] == 200
    assert _commits(app) == (0, 0)
    body = json.dumps({"decision_id": "m1", "contexts": [[0.1, 0.2, 0.3]]}).encode()
    assert call(app, "POST", "/v1/decide", [body])[0] == 200
    assert call(app, "POST", "/v1/reward", [b'{"decision_id": "nope", "reward": 1}'])[0] \
        == 404  # refused: writes nothing, no commit
    assert _commits(app) == (1, 1)


# -- rewards outside the family's domain -------------------------------------------------------
@pytest.fixture(scope="module", params=["linucb", "ucb-glm"])
def logistic_server(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"domain-{request.param}")
    config = write_config(folder, name=request.param, policy='family = "logistic"\n')
    process = ServerProcess(config, f"sqlite:///{folder / 'log.db'}")
    yield process
    assert process.terminate() == 0, process.output()


@pytest.mark.slow
@pytest.mark.parametrize("reward", [2.0, -1.0, 1e6])
def test_a_reward_outside_the_family_domain_is_422_and_learns_nothing(logistic_server, reward):
    # The service hands the reward to the policy, whose family's domain is the one rule
    # (GLMFamily.in_domain, checked by every policy: LinUCB learned 2, -1 and 1e6 under a
    # logistic family before it took the configured family); the service keeps no copy of it.
    client = logistic_server.client
    decided = client.post("/v1/decide", json={"contexts": [[0.1, 0.2, 0.3], [0.3, 0.2, 0.1]]})
    assert decided.status_code == 200
    before = client.get("/v1/model").json()
    response = client.post("/v1/reward", json={"decision_id": decided.json()["decision_id"],
                                               "reward": reward})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "reward"
    after = client.get("/v1/model").json()
    assert (after["model_version"], after["last_seq"], after["rewards"]) == (
        before["model_version"], before["last_seq"], before["rewards"])
    learned = client.post("/v1/reward", json={"decision_id": decided.json()["decision_id"],
                                              "reward": 1.0})
    assert learned.status_code == 200 and learned.json()["status"] == "learned"


# -- the OpenAPI document states what the server enforces ---------------------------------------
def _document(**service: object) -> dict:
    policy = service.pop("policy", {})
    decisions = service.pop("decisions", {})
    return openapi_document(parse_config({
        "policy": {"name": "ucb-glm", "n_features": 3, **policy},
        "decisions": {"max_actions": 8, **decisions}}))


def test_the_schema_states_rows_k_rows_and_after():
    document = _document()
    decide = document["components"]["schemas"]["DecideRequest"]["properties"]
    contexts = decide["contexts"]
    assert (contexts["minItems"], contexts["maxItems"]) == (1, 8)
    row = contexts["items"]
    assert (row["minItems"], row["maxItems"]) == (3, 3)
    assert (row["items"]["minimum"], row["items"]["maximum"]) == (-1e50, 1e50)
    excluded = next(b for b in decide["excluded"]["anyOf"] if b["type"] == "array")
    assert (excluded["items"]["minimum"], excluded["items"]["maximum"]) == (0, 7)
    events = {p["name"]: p["schema"] for p in document["paths"]["/v1/events"]["get"]
              ["parameters"]}
    assert events["after"] == {"type": "integer", "minimum": 0, "maximum": 10 ** 18 - 1}
    assert (events["limit"]["minimum"], events["limit"]["maximum"]) == (0, 1000)
    # the .npy query parameters are not the operation's (a JSON decide refuses them)
    decide_operation = document["paths"]["/v1/decide"]["post"]
    assert "parameters" not in decide_operation
    npy = decide_operation["requestBody"]["content"]["application/x-npy"]
    assert [p["name"] for p in npy["x-query-parameters"]] == ["decision_id", "excluded",
                                                            "default_action"]
    assert {op["operationId"] for methods in document["paths"].values()
            for op in methods.values()} >= {"decide", "reward"}


def test_the_schema_states_the_decision_id_rule():
    from glmbandits.data.event_records import check_decision_id

    document = _document()
    schemas = document["components"]["schemas"]
    rules = [schemas["RewardRequest"]["properties"]["decision_id"],
             next(b for b in schemas["DecideRequest"]["properties"]["decision_id"]["anyOf"]
                  if b["type"] == "string")]
    for rule in rules:
        pattern = re.compile(rule["pattern"])
        for text in ["a", "req-1 café", "x" * 256, "x" * 257, "", "a\x00", "a\x1f", "a\x7f",
                     "a\x9f", "a\xa0", "\u2028", "😀"]:
            try:
                check_decision_id(text, "test")
                legal = True
            except ValueError:
                legal = False
            assert bool(pattern.fullmatch(text)) == legal, (text, rule)
            assert (rule["minLength"] <= len(text) <= rule["maxLength"]) or not legal


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_the_schema_states_the_reward_domain_of_the_family(family):
    reward = _document(policy={"family": family})["components"]["schemas"][
        "RewardRequest"]["properties"]["reward"]
    low, high = reward["minimum"], reward["maximum"]
    law = get_family(family)
    assert law.in_domain(np.array([low, high, (low + high) / 2])).all()
    for outside in (math.nextafter(low, -math.inf), math.nextafter(high, math.inf)):
        if abs(outside) <= 1e50:  # beyond the magnitude bound every policy refuses anyway
            assert not law.in_domain(outside), (family, outside)
    if family in ("logistic", "probit"):
        assert (low, high) == (0.0, 1.0)


def test_shadow_mode_states_default_action_is_required():
    decide = _document(decisions={"mode": "shadow"})["components"]["schemas"]["DecideRequest"]
    assert "default_action" in decide["required"]
    assert decide["properties"]["default_action"] == {
        "type": "integer", "minimum": 0, "maximum": 7,
        "description": "the row the client shows (below the request's K)"}
    live = _document()["components"]["schemas"]["DecideRequest"]
    assert live["required"] == ["contexts"]


@pytest.mark.parametrize("body,status", [
    ({"contexts": [[1e50, -1e50, 0.0]]}, 200),  # the schema's bounds are accepted
    ({"contexts": [[1.1e50, 0.0, 0.0]]}, 422),
    ({"contexts": [[0.1, 0.2]]}, 422),
    ({"contexts": [[0.1, 0.2, 0.3, 0.4]]}, 422),
    ({"contexts": [[0.1, 0.2, 0.3]] * 8}, 200),
    ({"contexts": [[0.1, 0.2, 0.3]] * 9}, 422),
    ({"contexts": [[0.1, 0.2, 0.3]] * 8, "excluded": [7.0, 0], "default_action": 1.0}, 200),
    ({"contexts": [[0.1, 0.2, 0.3]] * 8, "excluded": [6.5]}, 422),
])
def test_the_server_enforces_what_the_schema_states(app, body, status):
    answer = call(app, "POST", "/v1/decide", [json.dumps(body).encode()])
    assert answer[0] == status, answer
    events = call(app, "GET", "/v1/events", query=b"after=999999999999999999")
    assert events[0] == 200 and events[2] == b""
    assert call(app, "GET", "/v1/events", query=b"after=1000000000000000000")[0] == 422
    assert call(app, "GET", "/v1/events", query="after=²".encode())[0] == 422
