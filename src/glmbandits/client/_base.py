"""What the sync and async clients share: settings, headers, bodies and reading answers."""

from __future__ import annotations

import json
import math
import time
from typing import Any, Callable, Mapping

from .errors import ClientError, ConnectionFailed, error_from_response
from .models import (ROUTES, Decision, Model, RewardResult, decide_body, from_json,
                     new_decision_id, reward_body)
from .retry import RETRY_STATUSES, RetryPolicy, parse_retry_after

__all__ = ["ClientBase"]


class ClientBase:
    """Settings and the transport-free halves of every call (see :class:`Client`)."""

    def __init__(self, base_url: str, *, api_key: str | None = None,
                 timeout: float = 10.0, retry: RetryPolicy | None = None,
                 headers: Mapping[str, str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        name = type(self).__name__
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"{name}: base_url must be an http:// or https:// URL, got "
                             f"{base_url!r}")
        if api_key is not None and (not isinstance(api_key, str) or not api_key.strip()):
            raise ValueError(f"{name}: api_key must be a non-empty str or None, got "
                             f"{api_key!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
                or not math.isfinite(timeout) or timeout <= 0:
            raise ValueError(f"{name}: timeout must be a finite number > 0 (seconds), got "
                             f"{timeout!r}")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(f"{name}: retry must be a RetryPolicy or None, got "
                            f"{type(retry).__name__}")
        self.base_url = base_url.rstrip("/")
        self.timeout = float(timeout)
        self.retry = RetryPolicy() if retry is None else retry
        self.headers = {"Content-Type": "application/json", "Accept": "application/json",
                        **(headers or {})}
        if api_key is not None:
            self.headers["Authorization"] = f"Bearer {api_key.strip()}"
        self._clock = clock

    # -- bodies ------------------------------------------------------------------------------
    @staticmethod
    def _decide_request(contexts: Any, decision_id: str | None, excluded: Any,
                        default_action: int | None, explain: bool) -> bytes:
        body = decide_body(contexts, new_decision_id() if decision_id is None else decision_id,
                           excluded=excluded, default_action=default_action, explain=explain)
        return _encode(body, "decide")

    @staticmethod
    def _reward_request(decision_id: str, value: float) -> bytes:
        return _encode(reward_body(decision_id, value), "reward")

    # -- answers -----------------------------------------------------------------------------
    @staticmethod
    def _refusal(status: int, text: str, retry_after: str | None) -> ClientError:
        try:
            body: Any = json.loads(text)
        except ValueError:
            body = text
        return error_from_response(status, body, parse_retry_after(retry_after))

    def _settle(self, outcome: Any, operation: str, retry: int, started: float
                ) -> tuple[bool, Any]:
        """What an attempt's ``outcome`` (an httpx response, or the transport error raised
        instead) comes to: (True, the decoded answer), or (False, the wait before the next
        attempt); raises the refusal (or :class:`ConnectionFailed`) when it is final."""
        status = getattr(outcome, "status_code", None)
        if status is None:  # no answer
            failed = ConnectionFailed(f"{operation}: no answer from {self.base_url} after "
                                      f"{retry + 1} attempt(s): {type(outcome).__name__}: "
                                      f"{outcome}")
            wait = self.retry.next_wait(retry, started, None, self._clock)
            if wait is None:
                raise failed from outcome
            return False, wait
        if status < 400:
            return True, json.loads(outcome.text)
        error = self._refusal(status, outcome.text, outcome.headers.get("retry-after"))
        wait = None if status not in RETRY_STATUSES else \
            self.retry.next_wait(retry, started, error.retry_after, self._clock)
        if wait is None:
            raise error
        return False, wait

    def _is_ready(self, status: int, text: str) -> bool:
        """200: ready; 503: not yet (or stopping); any other status is a refusal."""
        if status in (200, 503):
            return status == 200
        raise self._refusal(status, text, None)

    @staticmethod
    def _route(operation: str) -> tuple[str, str]:
        return ROUTES[operation]


def _encode(body: dict[str, Any], operation: str) -> bytes:
    try:
        return json.dumps(body, allow_nan=False, separators=(",", ":")).encode()
    except ValueError:
        where = _first_non_finite(body) or "body"
        raise ValueError(f"glmbandits.client {operation}: {where} must be a finite number, "
                         "got NaN or infinity") from None


def _first_non_finite(value: Any, path: str = "") -> str | None:
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _first_non_finite(item, f"{path}[{index}]")
            if found:
                return found
    if isinstance(value, dict):
        for key, item in value.items():
            found = _first_non_finite(item, f"{path}.{key}" if path else key)
            if found:
                return found
    return None


RESULTS = {"decide": Decision, "reward": RewardResult, "model": Model}
