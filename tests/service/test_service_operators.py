"""What the service gives operators (issue 26 item 5): readiness apart from liveness, and a
429 with ``Retry-After`` when the worker's queue is full. Against real servers: uvicorn
in a thread of this process (to hold the restore back) and ``glmbandits serve``."""

from __future__ import annotations

import collections
import json
import threading
import time

import httpx
import numpy as np
import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

import uvicorn  # noqa: E402

from glmbandits.service.app import create_app  # noqa: E402
from glmbandits.service.config import ConfigError, load_config  # noqa: E402
from glmbandits.service.core import DecisionService  # noqa: E402
from glmbandits.service.roles import AllRole  # noqa: E402
from glmbandits.service.store import open_store  # noqa: E402
from servicekit import HEADERS, KEY, ServerProcess, unit_rows, write_config  # noqa: E402


def _until(condition, what: str, timeout: float = 60.0):
    """Poll ``condition`` until it returns something true (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"{what} did not happen in {timeout} s")


class _HeldRestore(AllRole):
    """The default role, whose restore waits until the test lets it go (a long log)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def restore(self, service) -> None:
        self.entered.set()
        assert self.release.wait(60), "the test never released the restore"
        super().restore(service)


def test_live_before_ready_and_ready_once_restored(tmp_path):
    config = load_config(write_config(tmp_path))
    role = _HeldRestore()
    service = DecisionService(config, open_store(f"sqlite:///{tmp_path / 'log.db'}"),
                              role=role)
    app = create_app(config, service, environ={"GLMBANDITS_API_KEYS": KEY})
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on",
                                           log_level="warning"))
    serving = threading.Thread(target=server.run, daemon=True)
    serving.start()
    starting = threading.Thread(target=service.start, daemon=True)
    try:
        _until(lambda: server.started, "uvicorn's start")
        port = server.servers[0].sockets[0].getsockname()[1]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            starting.start()
            assert role.entered.wait(60)
            # restoring: live (the process answers), not ready
            assert client.get("/v1/health").json() == {"status": "ok"}
            not_ready = client.get("/v1/ready")
            assert (not_ready.status_code, not_ready.json()) == (503, {"status": "restoring"})
            role.release.set()
            ready = _until(lambda: (r := client.get("/v1/ready")).status_code == 200 and r,
                           "readiness after the restore")
            assert ready.json() == {"status": "ready"}
            answer = client.post("/v1/decide", headers=HEADERS, json={
                "decision_id": "a", "contexts": np.eye(2, 3).tolist()})
            assert answer.status_code == 200, answer.text
            assert "/v1/ready" in client.get("/v1/openapi.json").json()["paths"]
    finally:
        role.release.set()
        starting.join(60)
        server.should_exit = True
        serving.join(60)
    # the lifespan's shutdown stopped the service: not ready any more
    assert not service.ready and service.stopping


def test_serve_is_ready_once_listening(tmp_path):
    process = ServerProcess(write_config(tmp_path), f"sqlite:///{tmp_path / 'log.db'}")
    try:
        answer = httpx.get(process.url + "/v1/ready", timeout=60)  # no key needed
        assert (answer.status_code, answer.json()) == (200, {"status": "ready"})
    finally:
        assert process.terminate() == 0, process.output()


def test_max_queue_is_checked_naming_the_key(tmp_path):
    with pytest.raises(ConfigError, match=r"\[service\] max_queue must be an integer from 1 "
                                          r"to 1000000, got 0"):
        load_config(write_config(tmp_path, service="max_queue = 0"))
    assert load_config(write_config(tmp_path)).max_queue == 10_000


def test_full_queue_is_429_with_retry_after_and_retries_are_idempotent(tmp_path):
    """16 clients at once against max_queue = 1: some are refused with 429 and Retry-After,
    nothing is 5xx, a refused decide retried with its decision_id is decided once, and
    every decision answered 200 is in the log exactly once."""
    folder = tmp_path
    process = ServerProcess(write_config(folder, service="max_queue = 1"),
                            f"sqlite:///{folder / 'log.db'}")
    statuses: collections.Counter = collections.Counter()
    decided: list[str] = []
    refused: list[str] = []
    lock = threading.Lock()

    def burst(index: int, round_: int) -> None:
        rng = np.random.default_rng(1000 * round_ + index)
        with httpx.Client(base_url=process.url, headers=HEADERS, timeout=60) as client:
            for t in range(8):
                decision_id = f"r{round_}-c{index}-{t}"
                answer = client.post("/v1/decide", json={
                    "decision_id": decision_id, "contexts": unit_rows(rng, 4, 3).tolist()})
                with lock:
                    statuses[answer.status_code] += 1
                    if answer.status_code == 200:
                        decided.append(decision_id)
                    elif answer.status_code == 429:
                        assert answer.headers["retry-after"].isdigit(), answer.headers
                        assert int(answer.headers["retry-after"]) >= 1
                        body = answer.json()
                        assert body["error"] == "too many requests"
                        assert "max_queue" in body["detail"], body
                        refused.append(decision_id)

    try:
        deadline = time.monotonic() + 60
        round_ = 0
        while not refused:  # rounds of 16 concurrent clients until the queue overflows
            assert time.monotonic() < deadline, f"no 429 in 60 s: {statuses}"
            threads = [threading.Thread(target=burst, args=(i, round_)) for i in range(16)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
            round_ += 1
        assert set(statuses) <= {200, 429}, statuses
        assert statuses[200] > 0
        # a refused decide did nothing: retried with its decision_id, it is decided now
        with httpx.Client(base_url=process.url, headers=HEADERS, timeout=60) as client:
            for decision_id in refused[:20]:
                answer = client.post("/v1/decide", json={
                    "decision_id": decision_id, "contexts": np.eye(4, 3).tolist()})
                assert answer.status_code == 200, answer.text
                decided.append(decision_id)
            events: list[dict] = []
            while True:  # the whole log, page by page
                page = client.get("/v1/events", params={
                    "after": events[-1]["seq"] if events else 0})
                assert page.status_code == 200, page.text
                lines = [json.loads(line) for line in page.text.splitlines()]
                if not lines:
                    break
                events += lines
        logged = collections.Counter(event["decision_id"] for event in events
                                     if event["kind"] == "decision")
        assert all(logged[decision_id] == 1 for decision_id in decided), logged
        assert set(logged) == set(decided)  # a refused decide never reached the log
    finally:
        assert process.terminate() == 0, process.output()
