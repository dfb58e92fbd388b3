"""A stand-in for the decision service's read API, to test the dashboard in a real browser.

:class:`DashboardStub` serves the dashboard's files (``glmbandits.dashboard.asset_folder``)
and canned answers for ``GET /v1/model`` (JSON), ``GET /v1/events?after=SEQ`` (NDJSON) and
``GET /v1/evaluation`` (a real :func:`glmbandits.evaluation.evaluate_shadow` result, as
JSON), checking ``Authorization: Bearer KEY`` on the API (401 otherwise), on 127.0.0.1 and
a free port. Tests change its numbers (:meth:`add_decisions`, :attr:`model`) while the page
polls. Used by ``tests/dashboard/`` and ``scripts/dashboard_screenshot.py``.
"""

from __future__ import annotations

import http.server
import json
import mimetypes
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np

from glmbandits.dashboard import asset_folder

__all__ = ["DashboardStub", "shadow_evaluation_json"]


def shadow_evaluation_json(seed: int = 0, T: int = 2000) -> dict[str, Any]:
    """``evaluate_shadow(...).to_dict()`` on a simulated shadow log (a policy better than
    a client heuristic), so the stub answers with the real JSON shape."""
    from glmbandits.data import LoggedBanditData
    from glmbandits.evaluation import evaluate_shadow
    from glmbandits.families import get_family

    rng = np.random.default_rng(seed)
    K, d = 6, 4
    theta = rng.normal(size=d)
    theta *= 2.0 / np.linalg.norm(theta)
    X = rng.normal(size=(T, K, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=2, keepdims=True))
    mu = get_family("logistic", "stub").mean(X @ theta)
    actions = np.argmax(X[:, :, 0], axis=1)
    rewards = (rng.random(T) < mu[np.arange(T), actions]).astype(float)
    scores = X @ (theta + rng.normal(scale=0.3, size=d)) / 0.3
    pi = np.exp(scores - scores.max(axis=1, keepdims=True))
    pi /= pi.sum(axis=1, keepdims=True)
    return evaluate_shadow(LoggedBanditData(X, actions, rewards), pi).to_dict()


class DashboardStub:
    """The stub server (see the module docstring); a context manager that stops it.

    Attributes
    ----------
    key : str
        The one API key it accepts.
    model : dict
        What ``GET /v1/model`` answers (change it freely).
    evaluation : dict or None
        What ``GET /v1/evaluation`` answers (``None``: ``{"available": false, "reason": ...}``).
    requests : list of (path, authorized)
        Every API request seen (path with its query string), for assertions.
    """

    def __init__(self, key: str = "test-key-123", *, evaluation: dict | None = None) -> None:
        self.key = key
        # the keys of the service's GET /v1/model (glmbandits.service.core)
        self.model: dict[str, Any] = {
            "policy": "ucb-glm", "class": "UCBGLM", "mode": "live",
            "parameters": {"alpha": 1.0}, "family": "logistic",
            "n_features": 10, "max_actions": 100, "model_version": 3,
            "pending": 0, "decisions": 0, "rewards": 0, "last_seq": 0, "snapshot_seq": 0,
            "counts": {"decisions": 0, "rewards": 0, "pending": 0, "expired": 0}}
        self.evaluation = evaluation
        self.events: list[dict[str, Any]] = []
        self.requests: list[tuple[str, bool]] = []
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def __enter__(self) -> "DashboardStub":
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=60)

    # -- canned data ---------------------------------------------------------------
    def add_decisions(self, n: int, *, seed: int = 0, spread: float = 30.0, K: int = 5,
                      reward_rate: float = 0.5) -> None:
        """Append ``n`` decisions over the last ``spread`` seconds (wall clock), each with a
        learned reward, and update the model's counts (rewards, pending) to match."""
        rng = np.random.default_rng(seed)
        now = time.time()
        with self._lock:
            version = int(self.model["model_version"])
            for i in range(n):
                seq = len(self.events) + 1
                scores = rng.normal(size=K) * 2
                p = np.exp(scores - scores.max())
                p /= p.sum()
                action = int(rng.choice(K, p=p))
                timestamp = now - spread + spread * (i + 0.5) / n
                decision_id = f"req-{seed}-{i:04d}"
                self.events.append({"seq": seq, "kind": "decision", "decision_id": decision_id,
                                    "timestamp": timestamp, "action": action,
                                    "probabilities": [round(float(x), 6) for x in p],
                                    "model_version": version})
                self.events.append({"seq": seq + 1, "kind": "reward",
                                    "decision_id": decision_id, "timestamp": timestamp + 0.2,
                                    "reward": float(i % round(1 / reward_rate) == 0),
                                    "status": "learned"})
            counts = self.model["counts"]
            counts["decisions"] += n
            counts["rewards"] += n

    def _events_after(self, after: int) -> list[dict[str, Any]]:
        with self._lock:
            return [event for event in self.events if event["seq"] > after]

    # -- the HTTP side ---------------------------------------------------------------
    def _handler(self) -> type:
        stub = self
        folder = asset_folder()

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, payload: Any) -> None:
                self._send(status, json.dumps(payload).encode(), "application/json")

            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                parts = urlsplit(self.path)
                if parts.path.startswith("/v1/"):
                    self._api(parts.path, parse_qs(parts.query), self.path)
                else:
                    self._asset(parts.path)

            def _api(self, path: str, query: dict[str, list[str]], full: str) -> None:
                authorized = self.headers.get("Authorization") == f"Bearer {stub.key}"
                stub.requests.append((full, authorized))
                if not authorized:
                    self._json(401, {"detail": "missing or wrong API key"})
                elif path == "/v1/model":
                    with stub._lock:
                        self._json(200, stub.model)
                elif path == "/v1/events":
                    after = int(query.get("after", ["0"])[0])
                    limit = min(1000, int(query.get("limit", ["1000"])[0]))  # as the service
                    lines = "".join(json.dumps(e) + "\n"
                                    for e in stub._events_after(after)[:limit])
                    self._send(200, lines.encode(), "application/x-ndjson")
                elif path == "/v1/evaluation":  # 200 either way: a 404 is a console error
                    self._json(200, stub.evaluation if stub.evaluation is not None else
                               {"available": False, "reason": "the policy is served live: "
                                "no shadow-mode rounds to evaluate"})
                else:
                    self._json(404, {"detail": f"no such endpoint {path}"})

            def _asset(self, path: str) -> None:
                relative = "index.html" if path in ("", "/") else path.lstrip("/")
                target = (folder / relative).resolve()
                if folder not in target.parents or not target.is_file():
                    self._send(404, b"not found", "text/plain")
                    return
                content_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
                self._send(200, target.read_bytes(), content_type)

        return Handler
