"""What the sync and async clients share: settings, headers, bodies and reading answers."""

from __future__ import annotations

import json
import math
import time
from typing import Any, Callable, Mapping

import numpy as np

from .errors import ClientError, ConnectionFailed, error_from_response
from .models import (CATALOGUE_ROUTES, ROUTES, ActionResult, Catalogue, Decision, Model,
                     RewardResult, action_body, action_path, decide_body, named_decide_body,
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
    def _decide_request(self, contexts: Any, decision_id: str | None, excluded: Any,
                        default_action: int | None, explain: bool,
                        named: Mapping[str, Any]) -> bytes:
        """The body of a decide: dense (``contexts``, ``excluded``, ``default_action``) or
        named (``named``: ``context``, ``actions``, ``action_ids``, ``excluded_ids``,
        ``default_action_id``), never a mix; refused before anything is sent."""
        dense = [name for name, value in (("contexts", contexts), ("excluded", excluded),
                                          ("default_action", default_action))
                 if value is not None]
        given = [name for name, value in named.items() if value is not None]
        where = f"{type(self).__name__}.decide"
        if dense and given:
            raise TypeError(f"{where}: pass either contexts= (dense rows, with excluded= and "
                            "default_action=) or context= with actions= or action_ids= "
                            "(named features, with excluded_ids= and default_action_id=), "
                            f"not both: got {dense[0]}= and {given[0]}=")
        if not given and contexts is None:
            raise TypeError(f"{where}: pass contexts= (a (K, d) array) or context= with "
                            "actions= or action_ids= (named features), got none of them")
        decision_id = new_decision_id() if decision_id is None else decision_id
        if given:
            body = named_decide_body(named["context"], decision_id, actions=named["actions"],
                                     action_ids=named["action_ids"],
                                     excluded_ids=named["excluded_ids"],
                                     default_action_id=named["default_action_id"],
                                     explain=explain)
        else:
            body = decide_body(contexts, decision_id, excluded=excluded,
                               default_action=default_action, explain=explain)
        return _encode(body, "decide")

    @staticmethod
    def _put_request(features: Mapping[str, Any]) -> bytes:
        return _encode(action_body(features), "put_action")

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
    def _route(operation: str, action_id: str | None = None) -> tuple[str, str]:
        """(method, path) of ``operation``; a catalogue route's path with ``action_id``."""
        if operation in ROUTES:
            return ROUTES[operation]
        method, template = CATALOGUE_ROUTES[operation]
        if action_id is None:
            return method, template
        return method, action_path(template, action_id)


def _encode(body: dict[str, Any], operation: str) -> bytes:
    try:
        return json.dumps(body, allow_nan=False, separators=(",", ":"),
                          default=_json_value).encode()
    except TypeError as error:
        raise TypeError(f"glmbandits.client {operation}: {error}") from None
    except ValueError:
        where = _first_non_finite(body) or "body"
        raise ValueError(f"glmbandits.client {operation}: {where} must be a finite number, "
                         "got NaN or infinity") from None


def _json_value(value: Any) -> Any:
    """NumPy scalars and arrays (a feature's value) as JSON values; anything else is
    refused naming its type."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    raise TypeError("a request value must be a JSON value (str, number, bool, None, list, "
                    f"mapping) or a NumPy number or array, got {type(value).__name__}")


def _first_non_finite(value: Any, path: str = "") -> str | None:
    if isinstance(value, (np.generic, np.ndarray)):
        value = value.tolist()
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, (list, tuple)):
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


#: the result class of each operation with a JSON answer (the OpenAPI check reads it)
RESULTS: dict[str, type] = {"decide": Decision, "reward": RewardResult, "model": Model,
                            "list_actions": Catalogue, "get_action": ActionResult,
                            "put_action": ActionResult, "delete_action": ActionResult}
