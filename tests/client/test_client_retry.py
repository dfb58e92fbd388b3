"""The client's retries and refusals against httpx.MockTransport (no network, no sleeps: the
sleep function is injected and records the waits)."""

from __future__ import annotations

import asyncio
import json

import httpx
import numpy as np
import pytest

from glmbandits.client import (AsyncClient, Client, ClientError, Conflict, ConnectionFailed,
                               InvalidRequest, NotFound, RetryPolicy, ServiceUnavailable,
                               TooManyRequests, Unauthorized)

DECISION = {"action": 1, "probabilities": [0.25, 0.75], "propensity": 0.75,
            "model_version": 3}


class Script:
    """A fake service answering attempt n with ``steps[n]`` (a status, an exception class,
    or a (status, headers) pair); records every request body."""

    def __init__(self, *steps):
        self.steps, self.bodies, self.paths = list(steps), [], []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(request.content)
        self.paths.append((request.method, request.url.path))
        step = self.steps[min(len(self.bodies) - 1, len(self.steps) - 1)]
        headers = {}
        if isinstance(step, tuple):
            step, headers = step
        if isinstance(step, type) and issubclass(step, Exception):
            raise step("scripted failure", request=request)
        if step == 200:
            body = json.loads(request.content) if request.content else {}
            return httpx.Response(200, json={"decision_id": body.get("decision_id"),
                                             **DECISION})
        return httpx.Response(step, headers=headers, json={
            "error": "scripted", "detail": f"scripted {step}", "field": "decision_id"})


def client_for(script: Script, waits: list, **retry) -> Client:
    policy = RetryPolicy(**{"max_retries": 4, "backoff": 0.1, "max_backoff": 1.0,
                            "deadline": 60.0, "seed": 1, **retry})
    return Client("http://service", api_key="k", retry=policy, sleep=waits.append,
                  transport=httpx.MockTransport(script))


@pytest.mark.parametrize("failure", [httpx.ConnectError, httpx.ReadError, httpx.ReadTimeout,
                                     503, (429, {"Retry-After": "7"})])
def test_a_retry_repeats_the_request_with_its_decision_id(failure) -> None:
    script, waits = Script(failure, failure, 200), []
    with client_for(script, waits) as client:
        decision = client.decide(np.array([[0.1, 0.2], [0.3, 0.4]]))
    assert len(script.bodies) == 3 and len(set(script.bodies)) == 1  # byte for byte
    sent = json.loads(script.bodies[0])
    assert decision.decision_id == sent["decision_id"] and len(sent["decision_id"]) == 36
    assert decision.action == 1 and decision.probabilities == (0.25, 0.75)
    assert len(waits) == 2
    if isinstance(failure, tuple):  # Retry-After is waited at least
        assert all(wait >= 7.0 for wait in waits)
    else:  # exponential with equal jitter: [cap / 2, cap], cap = 0.1 * 2**n
        assert 0.05 <= waits[0] <= 0.1 and 0.1 <= waits[1] <= 0.2


@pytest.mark.parametrize("status, cls", [(401, Unauthorized), (404, NotFound),
                                         (409, Conflict), (422, InvalidRequest),
                                         (413, ClientError), (400, ClientError)])
def test_a_refusal_other_than_429_and_503_is_never_retried(status, cls) -> None:
    script, waits = Script(status, 200), []
    with client_for(script, waits) as client, pytest.raises(cls) as caught:
        client.reward("d-1", 1.0)
    assert len(script.bodies) == 1 and waits == []
    assert caught.value.status == status and caught.value.message == f"scripted {status}"
    assert caught.value.field == "decision_id"
    assert script.paths == [("POST", "/v1/reward")]


def test_retries_are_bounded_by_max_retries() -> None:
    script, waits = Script(503), []
    with client_for(script, waits, max_retries=3) as client, \
            pytest.raises(ServiceUnavailable, match="scripted 503"):
        client.decide([[0.0, 1.0]], decision_id="d-2")
    assert len(script.bodies) == 4 and len(waits) == 3
    script, waits = Script(httpx.ConnectError), []
    with client_for(script, waits, max_retries=2) as client, \
            pytest.raises(ConnectionFailed, match="after 3 attempt"):
        client.model()
    assert len(script.bodies) == 3 and script.paths[0] == ("GET", "/v1/model")


def test_retries_are_bounded_by_the_deadline() -> None:
    """No retry starts past ``deadline`` seconds: a clock that the waits advance."""
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    script = Script((429, {"Retry-After": "4"}))
    client = Client("http://service", retry=RetryPolicy(max_retries=100, deadline=10.0),
                    sleep=sleep, clock=lambda: now[0], transport=httpx.MockTransport(script))
    with client, pytest.raises(TooManyRequests) as caught:
        client.reward("d-3", 0.0)
    assert len(script.bodies) == 3 and now[0] <= 10.0  # waits at 0 and 4; 8 + 4 > 10
    assert caught.value.retry_after == 4.0


def test_the_jitter_comes_from_the_policy_seed_only() -> None:
    import random

    first = [RetryPolicy(seed=5, max_backoff=100.0).delay(n) for n in range(8)]
    random.seed(0)
    second = [RetryPolicy(seed=5, max_backoff=100.0).delay(n) for n in range(8)]
    assert first == second
    assert first != [RetryPolicy(seed=6, max_backoff=100.0).delay(n) for n in range(8)]
    assert all(0.05 * 2 ** n <= wait <= 0.1 * 2 ** n for n, wait in enumerate(first))


def test_bad_input_is_refused_before_anything_is_sent() -> None:
    script, waits = Script(200), []
    with client_for(script, waits) as client:
        with pytest.raises(ValueError, match=r"contexts\[0\]\[1\] must be a finite number"):
            client.decide([[0.0, float("nan")]])
        with pytest.raises(ValueError, match=r"contexts must be a \(K, d\) array, got shape"):
            client.decide([0.0, 1.0])
        with pytest.raises(TypeError, match="value must be a number, got str"):
            client.reward("d-4", "1")  # type: ignore[arg-type]
    assert script.bodies == []
    with pytest.raises(ValueError, match="RetryPolicy: max_retries must be an int >= 0"):
        RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError, match="Client: timeout must be a finite number > 0"):
        Client("http://service", timeout=0)
    with pytest.raises(ValueError, match="Client: base_url must be an http"):
        Client("service:8000")


def test_the_async_client_retries_the_same_way() -> None:
    script, waits = Script(httpx.ConnectError, 503, 200), []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def main():
        async with AsyncClient("http://service", api_key="k", sleep=sleep,
                               retry=RetryPolicy(seed=1),
                               transport=httpx.MockTransport(script)) as client:
            decision = await client.decide([[0.1, 0.2], [0.3, 0.4]], decision_id="a-1",
                                           excluded=[0], explain=True)
            with pytest.raises(Conflict):
                script.steps = [409]
                await client.reward("a-1", 1.0)
        return decision

    decision = asyncio.run(main())
    assert decision.decision_id == "a-1" and len(waits) == 2
    assert len(set(script.bodies[:3])) == 1
    assert json.loads(script.bodies[0]) == {"contexts": [[0.1, 0.2], [0.3, 0.4]],
                                            "decision_id": "a-1", "excluded": [0],
                                            "explain": True}
    assert len(script.bodies) == 4


def test_ready_polls_without_retrying() -> None:
    answers = iter([httpx.ConnectError, 503, 200])

    def service(request: httpx.Request) -> httpx.Response:
        step = next(answers)
        if step is httpx.ConnectError:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(step, json={"status": "ready" if step == 200 else "restoring"})

    waits: list = []
    with Client("http://service", sleep=waits.append,
                transport=httpx.MockTransport(service)) as client:
        assert [client.ready(), client.ready(), client.ready()] == [False, False, True]
    assert waits == []


def test_httpx_is_imported_only_when_a_client_is_made() -> None:
    import subprocess
    import sys

    code = ("import sys, glmbandits, glmbandits.client as c; assert 'httpx' not in sys.modules; "
            "c.Client('http://x').close(); assert 'httpx' in sys.modules")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
