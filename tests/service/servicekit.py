"""Helpers of the service tests: configs, a real server process on loopback, state comparison."""

from __future__ import annotations

import dataclasses
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
KEY = "test-key-0123456789"
HEADERS = {"Authorization": f"Bearer {KEY}"}


def write_config(folder: Path, *, name: str = "ucb-glm", n_features: int = 3,
                 max_actions: int = 8, extra: str = "", decisions: str = "",
                 service: str = "", policy: str = "") -> Path:
    """A small service config in ``folder`` (the key comes from the environment)."""
    path = folder / "service.toml"
    path.write_text(
        f'[policy]\nname = "{name}"\nn_features = {n_features}\nseed = 7\n{policy}\n'
        f'[decisions]\nmax_actions = {max_actions}\n{decisions}\n'
        f'[service]\nsnapshot_every = 25\nmax_body_bytes = 65536\n{service}\n{extra}')
    return path


#: A ``[features]`` table (a news schema) for the named-feature tests.
NAMED_FEATURES = '''
[features]
intercept = true
unit_ball = true
norm_bound = 3.0
interactions = [["context", "action"]]

[[features.context]]
kind = "categorical"
name = "country"
vocabulary = ["DE", "FR", "US"]

[[features.context]]
kind = "numeric"
name = "age"
scale = [40.0, 15.0]

[[features.action]]
kind = "categorical"
name = "topic"
vocabulary = ["news", "sport", "tech"]

[[features.action]]
kind = "boolean"
name = "fresh"
'''
#: Catalogue actions of :data:`NAMED_FEATURES`' schema.
NAMED_ARTICLES = {"a1": {"topic": "news", "fresh": True},
                  "a2": {"topic": "sport", "fresh": False},
                  "a3": {"topic": "tech", "fresh": True},
                  "a4": {"topic": "news", "fresh": False}}


def write_named_config(folder: Path, *, decisions: str = "", service: str = "") -> Path:
    """:func:`write_config` with :data:`NAMED_FEATURES` (``n_features`` left to the schema)
    and ``tau = 0`` (scored decisions from the first)."""
    path = write_config(folder, n_features=0, decisions=decisions, service=service,
                        extra="[policy.params]\ntau = 0\n" + NAMED_FEATURES)
    path.write_text(path.read_text().replace("n_features = 0\n", ""))
    return path


def environment(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env["GLMBANDITS_API_KEYS"] = KEY
    env.update(extra)
    return env


#: What a learner's log says once it holds the lock, or once it waits for it.
LEARNER_HOLDS = "holding the learner lock"
LEARNER_WAITS = "waiting for the learner lock"


class ServerProcess:
    """``glmbandits serve`` in a subprocess on 127.0.0.1 and a free port (``--port 0``).

    ``role`` is passed as ``--role``; a learner serves no HTTP (``url`` and ``client``
    are None) and counts as started once it holds the learner lock or waits for it.
    ``python`` is the interpreter that runs it (another install's, e.g. a virtual
    environment's; this one by default); ``args`` are more flags of ``glmbandits serve``.
    """

    def __init__(self, config: Path, db: str, *, startup_timeout: float = 60.0,
                 env: dict[str, str] | None = None, role: str = "all",
                 python: str | None = None, args: tuple[str, ...] = ()) -> None:
        self.log = config.parent / f"server-{role}-{time.monotonic_ns()}.log"
        self._log_handle = open(self.log, "wb")
        self.role = role
        self.process = subprocess.Popen(
            [python or sys.executable, "-m", "glmbandits", "serve", str(config),
             "--host", "127.0.0.1", "--port", "0", "--db", db, "--log-level", "info",
             "--role", role, *args],
            stdout=self._log_handle, stderr=subprocess.STDOUT, env=env or environment())
        self.url = self._wait_for_url(startup_timeout)
        self.client = None if self.url is None else \
            httpx.Client(base_url=self.url, headers=HEADERS, timeout=30.0)

    def wait_for(self, text: str, timeout: float = 60.0) -> None:
        """Wait (bounded) until ``text`` shows in the process's output."""
        deadline = time.monotonic() + timeout
        while text not in self.output():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise AssertionError(f"{text!r} did not show in {timeout} s:\n{self.output()}")
            time.sleep(0.05)

    def _wait_for_url(self, timeout: float) -> str | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace")
            if self.role == "learner" and (LEARNER_HOLDS in text or LEARNER_WAITS in text):
                return None
            marker = "Uvicorn running on "
            if marker in text:
                url = text.split(marker, 1)[1].split()[0]
                return url
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}:\n{text}")
            time.sleep(0.05)
        self.kill()
        raise TimeoutError(f"the server did not start in {timeout} s:\n"
                           f"{self.log.read_text(errors='replace')}")

    def terminate(self, timeout: float = 60.0) -> int:
        """SIGTERM, then wait (bounded); returns the exit code."""
        if self.client is not None:
            self.client.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            self.kill()

    def kill(self) -> None:
        """SIGKILL (kill -9) if still running, and reap it."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
        self._log_handle.close()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


class Client(threading.Thread):
    """Sends decide+reward pairs until ``rounds`` are done, ``stop`` is set or a request fails."""

    def __init__(self, url: str, index: int, rounds: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url, self.index, self.rounds, self.stop = url, index, rounds, stop
        self.decided: list[str] = []
        self.rewarded: list[tuple[str, str]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        rng = np.random.default_rng(self.index)
        with httpx.Client(base_url=self.url, headers=HEADERS, timeout=60.0) as client:
            for t in range(self.rounds):
                if self.stop.is_set():
                    return
                decision_id = f"c{self.index}-{t}"
                try:
                    answer = client.post("/v1/decide", json={
                        "decision_id": decision_id,
                        "contexts": unit_rows(rng, 6, 3).tolist()})
                    assert answer.status_code == 200, answer.text
                    self.decided.append(decision_id)
                    reward = client.post("/v1/reward", json={
                        "decision_id": decision_id, "reward": float(rng.random() < 0.5)})
                    assert reward.status_code == 200, reward.text
                    self.rewarded.append((decision_id, reward.json()["status"]))
                except httpx.TransportError as error:  # the server was killed
                    self.error = error
                    return


def unit_rows(rng: np.random.Generator, K: int, d: int) -> np.ndarray:
    X = rng.normal(size=(K, d))
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))


# -- bit-for-bit state comparison ------------------------------------------------------------
def assert_same_state(a: Any, b: Any, path: str = "policy", seen: set | None = None) -> None:
    """``a`` and ``b`` hold the same state, bit for bit (arrays, floats, RNGs, containers)."""
    seen = set() if seen is None else seen
    if id(a) in seen:
        return
    seen.add(id(a))
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{path}: {a.dtype}{a.shape}"
        if a.dtype == object:
            for index, (x, y) in enumerate(zip(a.ravel(), b.ravel())):
                assert_same_state(x, y, f"{path}[{index}]", seen)
        else:
            assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes(), path
    elif isinstance(a, np.random.Generator):
        assert a.bit_generator.state == b.bit_generator.state, path
    elif isinstance(a, (float, np.floating)):
        assert struct.pack("<d", float(a)) == struct.pack("<d", float(b)), f"{path}: {a} != {b}"
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys differ"
        for key in a:
            if key == "event_log":
                continue
            assert_same_state(a[key], b[key], f"{path}[{key!r}]", seen)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: lengths {len(a)} != {len(b)}"
        for index, (x, y) in enumerate(zip(a, b)):
            assert_same_state(x, y, f"{path}[{index}]", seen)
    elif dataclasses.is_dataclass(a) and not hasattr(a, "__dict__"):
        for field in dataclasses.fields(a):
            assert_same_state(getattr(a, field.name), getattr(b, field.name),
                              f"{path}.{field.name}", seen)
    elif (getattr(type(a), "__getstate__", None) not in (None, object.__getstate__)
          and not isinstance(a, type)):
        # the object says what its state is (e.g. a history buffer without its spare rows)
        assert_same_state(a.__getstate__(), b.__getstate__(), f"{path}.__getstate__()", seen)
    elif hasattr(a, "__dict__") and not isinstance(a, type):
        # attribute order is not state (a dict's order is: pending decisions are FIFO)
        assert sorted(vars(a)) == sorted(vars(b)), f"{path}: attributes differ"
        for key in sorted(vars(a)):
            if key != "event_log":
                assert_same_state(vars(a)[key], vars(b)[key], f"{path}.{key}", seen)
    elif hasattr(a, "__slots__"):
        for name in a.__slots__:
            assert_same_state(getattr(a, name, None), getattr(b, name, None),
                              f"{path}.{name}", seen)
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"
