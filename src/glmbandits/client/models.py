"""What the client sends and reads: the routes, the request bodies and the typed results.

Every route the client calls is in :data:`ROUTES`; the bodies are built by
:func:`decide_body` and :func:`reward_body`; the answers are read into the dataclasses
:class:`Decision`, :class:`RewardResult` and :class:`Model`, whose fields are exactly
the response fields the client reads (their types and whether they may be absent).
``tests/client/test_client_openapi.py`` checks all of them against the service's
OpenAPI document (``/v1/openapi.json``), so the client and the server cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["ROUTES", "Decision", "RewardResult", "Model", "decide_body", "reward_body",
           "new_decision_id", "from_json"]

#: (method, path) of every operation the client calls, by the OpenAPI operationId.
ROUTES: dict[str, tuple[str, str]] = {
    "decide": ("POST", "/v1/decide"),
    "reward": ("POST", "/v1/reward"),
    "model": ("GET", "/v1/model"),
    "health": ("GET", "/v1/health"),
    "ready": ("GET", "/v1/ready"),
}


@dataclasses.dataclass(frozen=True)
class Decision:
    """The answer of ``POST /v1/decide``.

    ``action`` is the row chosen (in shadow mode the client's ``default_action``, and
    ``policy_action`` what the policy would have chosen); ``probabilities`` the chance of
    each row; ``propensity`` the chosen row's (None in shadow mode); ``explanation`` the
    server's explanation as a dict when asked with ``explain=True`` (else None).
    """

    decision_id: str
    action: int
    probabilities: tuple[float, ...]
    propensity: float | None
    model_version: int
    policy_action: int | None = None
    explanation: dict[str, Any] | None = None


@dataclasses.dataclass(frozen=True)
class RewardResult:
    """The answer of ``POST /v1/reward``: ``status`` is what the policy did with the
    reward (``learned``, ``duplicate``, ``late``, ...; docs/service.md)."""

    decision_id: str
    status: str
    model_version: int


@dataclasses.dataclass(frozen=True)
class Model:
    """The answer of ``GET /v1/model`` (the fields every server sends; ``raw`` holds
    the whole answer, with what a server adds beyond them)."""

    policy: str
    mode: str
    model_version: int
    n_features: int
    max_actions: int
    decisions: int
    rewards: int
    pending: int
    counts: dict[str, int]
    explanation: dict[str, Any] | None = None
    drift: dict[str, Any] | None = None
    raw: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)


def from_json(cls: type[Any], body: Any) -> Any:
    """An instance of the result dataclass ``cls`` read from a decoded JSON answer: its
    fields, by name (a field with a default may be absent); lists become tuples where the
    field is a tuple.

    Examples
    --------
    >>> from_json(RewardResult, {"decision_id": "d1", "status": "learned",
    ...                          "model_version": 3})
    RewardResult(decision_id='d1', status='learned', model_version=3)
    """
    if not isinstance(body, Mapping):
        raise TypeError(f"glmbandits.client: the answer must be a JSON object for "
                        f"{cls.__name__}, got {type(body).__name__}")
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.name == "raw":
            values["raw"] = dict(body)
            continue
        if field.name not in body:
            if (field.default is dataclasses.MISSING
                    and field.default_factory is dataclasses.MISSING):
                raise TypeError(f"glmbandits.client: the answer for {cls.__name__} lacks "
                                f"the field {field.name!r}, got the fields {sorted(body)}")
            continue
        value = body[field.name]
        if str(field.type).startswith("tuple") and isinstance(value, list):
            value = tuple(value)
        values[field.name] = value
    return cls(**values)


def new_decision_id() -> str:
    """A fresh decision id (a random UUID4), so that a retried request repeats it."""
    return str(uuid.uuid4())


def decide_body(contexts: Any, decision_id: str, *,
                excluded: Sequence[int] | None = None, default_action: int | None = None,
                explain: bool = False) -> dict[str, Any]:
    """The JSON body of ``POST /v1/decide`` (``contexts``: a (K, d) array or nested lists).

    Examples
    --------
    >>> decide_body(np.eye(2), "d1", excluded=[1])
    {'contexts': [[1.0, 0.0], [0.0, 1.0]], 'decision_id': 'd1', 'excluded': [1]}
    """
    try:
        X = np.asarray(contexts, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError("glmbandits.client decide: contexts must be a (K, d) array of "
                        f"numbers, got {type(contexts).__name__} ({error})") from None
    if X.ndim != 2:
        raise ValueError("glmbandits.client decide: contexts must be a (K, d) array, got "
                         f"shape {X.shape}")
    if not isinstance(decision_id, str):
        raise TypeError("glmbandits.client decide: decision_id must be a str, got "
                        f"{type(decision_id).__name__}")
    body: dict[str, Any] = {"contexts": X.tolist(), "decision_id": decision_id}
    if excluded is not None:
        body["excluded"] = [int(row) for row in excluded]
    if default_action is not None:
        body["default_action"] = int(default_action)
    if explain:
        body["explain"] = True
    return body


def reward_body(decision_id: str, value: float) -> dict[str, Any]:
    """The JSON body of ``POST /v1/reward``.

    Examples
    --------
    >>> reward_body("d1", 1)
    {'decision_id': 'd1', 'reward': 1.0}
    """
    if not isinstance(decision_id, str):
        raise TypeError("glmbandits.client reward: decision_id must be a str, got "
                        f"{type(decision_id).__name__}")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise TypeError("glmbandits.client reward: value must be a number, got "
                        f"{type(value).__name__}")
    return {"decision_id": decision_id, "reward": float(value)}
