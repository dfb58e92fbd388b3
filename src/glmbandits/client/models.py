"""What the client sends and reads: the routes, the request bodies and the typed results.

Every route the client calls is in :data:`ROUTES` (the action catalogue's, which only a
service with a ``[features]`` schema has, in :data:`CATALOGUE_ROUTES`); the bodies are
built by :func:`decide_body`, :func:`named_decide_body`, :func:`action_body` and
:func:`reward_body`; the answers are read into the dataclasses :class:`Decision`,
:class:`RewardResult`, :class:`Model`, :class:`ActionResult` and :class:`Catalogue`,
whose fields are exactly the response fields the client reads (their types and whether
they may be absent).
``tests/client/test_client_openapi.py`` checks all of them against the service's
OpenAPI document (``/v1/openapi.json``), so the client and the server cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
import uuid
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["ROUTES", "CATALOGUE_ROUTES", "Decision", "RewardResult", "Model", "ActionResult",
           "Catalogue", "decide_body", "named_decide_body", "action_body", "action_path",
           "reward_body", "new_decision_id", "from_json", "read_catalogue"]

#: (method, path) of every operation the client calls, by the OpenAPI operationId.
ROUTES: dict[str, tuple[str, str]] = {
    "decide": ("POST", "/v1/decide"),
    "reward": ("POST", "/v1/reward"),
    "model": ("GET", "/v1/model"),
    "health": ("GET", "/v1/health"),
    "ready": ("GET", "/v1/ready"),
}

#: The action catalogue's operations (a service with a ``[features]`` schema only); the
#: ``{action_id}`` of a path is filled by :func:`action_path`.
CATALOGUE_ROUTES: dict[str, tuple[str, str]] = {
    "list_actions": ("GET", "/v1/actions"),
    "get_action": ("GET", "/v1/actions/{action_id}"),
    "put_action": ("PUT", "/v1/actions/{action_id}"),
    "delete_action": ("DELETE", "/v1/actions/{action_id}"),
}


@dataclasses.dataclass(frozen=True)
class Decision:
    """The answer of ``POST /v1/decide``.

    ``action`` is the row chosen (in shadow mode the client's ``default_action``, and
    ``policy_action`` what the policy would have chosen); ``probabilities`` the chance of
    each row; ``propensity`` the chosen row's (None in shadow mode); ``explanation`` the
    server's explanation as a dict when asked with ``explain=True`` (else None). A named
    decide's answer also names the actions by id: ``action_id`` (the chosen row's id),
    ``probabilities_by_id`` and, in shadow mode, ``policy_action_id``; all three are None
    for a dense decide.
    """

    decision_id: str
    action: int
    probabilities: tuple[float, ...]
    propensity: float | None
    model_version: int
    policy_action: int | None = None
    explanation: dict[str, Any] | None = None
    action_id: str | None = None
    probabilities_by_id: dict[str, float] | None = None
    policy_action_id: str | None = None


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
    the whole answer, with what a server adds beyond them). With a ``[features]`` schema,
    ``feature_names`` names each of the ``n_features`` columns and ``catalogue`` counts
    the live and retired actions (``{"actions": n, "retired": m}``); else both are None."""

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
    feature_names: tuple[str, ...] | None = None
    catalogue: dict[str, int] | None = None
    raw: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class ActionResult:
    """One action of the catalogue (``GET``, ``PUT`` and ``DELETE /v1/actions/{id}``):
    its ``id``, its named ``features`` (None in a ``DELETE``'s answer) and, for a ``PUT``
    or a ``DELETE``, what it did (``status``: ``created``, ``updated``, ``unchanged``,
    ``deleted``, ``already deleted``; None for a ``GET``).

    Examples
    --------
    >>> put = ActionResult("a1", {"topic": "sports"}, "created")
    >>> put.created, ActionResult("a1", {"topic": "news"}, "updated").created
    (True, False)
    """

    id: str
    features: dict[str, Any] | None = None
    status: str | None = None

    @property
    def created(self) -> bool:
        """Whether the ``PUT`` added the action (the service answered 201)."""
        return self.status == "created"


@dataclasses.dataclass(frozen=True)
class Catalogue:
    """The answer of ``GET /v1/actions``: the live ``actions`` (in the order they were
    first put) and the ``retired`` ids (deleted; never reused)."""

    actions: tuple[ActionResult, ...]
    retired: tuple[str, ...]


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


def read_catalogue(body: Any) -> Catalogue:
    """A :class:`Catalogue` read from the decoded answer of ``GET /v1/actions``.

    Examples
    --------
    >>> read_catalogue({"actions": [{"id": "a1", "features": {"topic": "news"}}],
    ...                 "retired": ["a0"]})
    Catalogue(actions=(ActionResult(id='a1', features={'topic': 'news'}, status=None),), retired=('a0',))
    """
    read = from_json(Catalogue, body)
    if not isinstance(read.actions, tuple) or not isinstance(read.retired, tuple):
        raise TypeError("glmbandits.client: the answer for Catalogue must hold the lists "
                        f"actions and retired, got {type(read.actions).__name__} and "
                        f"{type(read.retired).__name__}")
    return Catalogue(tuple(from_json(ActionResult, action) for action in read.actions),
                     read.retired)


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


def named_decide_body(context: Mapping[str, Any] | None, decision_id: str, *,
                      actions: Any = None, action_ids: Sequence[str] | None = None,
                      excluded_ids: Sequence[str] | None = None,
                      default_action_id: str | None = None,
                      explain: bool = False) -> dict[str, Any]:
    """The JSON body of a named-feature ``POST /v1/decide`` (a service with a
    ``[features]`` schema): the ``context``'s named features, and the candidates either
    inline (``actions``: a sequence of ``{"id", "features"}`` mappings, or a mapping id ->
    features) or by catalogue id (``action_ids``), exactly one of the two. Kinds are
    checked here; the values (feature names, types, ids among the candidates) by the
    service, whose 422 names the field.

    Examples
    --------
    >>> named_decide_body({"country": "DE"}, "d1", action_ids=["a1", "a2"],
    ...                   excluded_ids=["a2"])
    {'decision_id': 'd1', 'context': {'country': 'DE'}, 'action_ids': ['a1', 'a2'], 'excluded_ids': ['a2']}
    >>> named_decide_body(None, "d2", actions={"a1": {"topic": "news"}})["actions"]
    [{'id': 'a1', 'features': {'topic': 'news'}}]
    """
    where = "glmbandits.client decide"
    if (actions is None) == (action_ids is None):
        raise TypeError(f"{where}: a named decide takes its candidates either inline "
                        "(actions=) or by catalogue id (action_ids=), exactly one of the "
                        f"two, got {'both' if actions is not None else 'neither'}")
    if not isinstance(decision_id, str):
        raise TypeError(f"{where}: decision_id must be a str, got "
                        f"{type(decision_id).__name__}")
    body: dict[str, Any] = {"decision_id": decision_id,
                            "context": _features({} if context is None else context,
                                                 "context")}
    if actions is not None:
        body["actions"] = _inline_actions(actions)
    else:
        body["action_ids"] = _ids(action_ids, "action_ids")
    if excluded_ids is not None:
        body["excluded_ids"] = _ids(excluded_ids, "excluded_ids")
    if default_action_id is not None:
        if not isinstance(default_action_id, str):
            raise TypeError(f"{where}: default_action_id must be an action id (a str), got "
                            f"{type(default_action_id).__name__}")
        body["default_action_id"] = default_action_id
    if explain:
        body["explain"] = True
    return body


def action_body(features: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body of ``PUT /v1/actions/{action_id}``: the action's named features.

    Examples
    --------
    >>> action_body({"topic": "sports", "length": 350})
    {'features': {'topic': 'sports', 'length': 350}}
    """
    return {"features": _features(features, "features")}


def action_path(template: str, action_id: str) -> str:
    """``template``'s ``{action_id}`` filled with the id percent-encoded (every reserved
    character, ``/`` included; an id of dots only as ``%2E``, which no URL normalises
    away), so that the service's route reads the id back exactly.

    Examples
    --------
    >>> action_path("/v1/actions/{action_id}", "news/2024 #1")
    '/v1/actions/news%2F2024%20%231'
    >>> action_path("/v1/actions/{action_id}", "..")
    '/v1/actions/%2E%2E'
    """
    if not isinstance(action_id, str):
        raise TypeError("glmbandits.client actions: action_id must be a str, got "
                        f"{type(action_id).__name__}")
    if not action_id:
        raise ValueError("glmbandits.client actions: action_id must be a non-empty str, "
                         "got ''")
    quoted = urllib.parse.quote(action_id, safe="")
    if set(action_id) == {"."}:
        quoted = "%2E" * len(action_id)
    return template.replace("{action_id}", quoted)


def _features(values: Any, where: str) -> dict[str, Any]:
    """A mapping of named features as a dict, its names checked to be str."""
    if not isinstance(values, Mapping):
        raise TypeError(f"glmbandits.client: {where} must be a mapping of feature names to "
                        f"values, got {type(values).__name__}")
    for name in values:
        if not isinstance(name, str):
            raise TypeError(f"glmbandits.client: {where} must have str feature names, got "
                            f"{name!r} ({type(name).__name__})")
    return dict(values)


def _ids(ids: Any, where: str) -> list[str]:
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise TypeError(f"glmbandits.client decide: {where} must be a sequence of action ids "
                        f"(str), got {type(ids).__name__}")
    for index, action_id in enumerate(ids):
        if not isinstance(action_id, str):
            raise TypeError(f"glmbandits.client decide: {where}[{index}] must be an action id "
                            f"(a str), got {type(action_id).__name__}")
    return list(ids)


def _inline_actions(actions: Any) -> list[dict[str, Any]]:
    """Inline candidates as ``[{"id", "features"}]``, from a mapping id -> features or a
    sequence of ``{"id", "features"}`` mappings."""
    if isinstance(actions, Mapping):
        _ids(list(actions), "actions")
        return [{"id": action_id, "features": _features(features, f"actions[{index}].features")}
                for index, (action_id, features) in enumerate(actions.items())]
    if isinstance(actions, (str, bytes)) or not isinstance(actions, Sequence):
        raise TypeError("glmbandits.client decide: actions must be a sequence of {'id', "
                        "'features'} mappings or a mapping id -> features, got "
                        f"{type(actions).__name__}")
    sent = []
    for index, action in enumerate(actions):
        if not isinstance(action, Mapping) or set(action) != {"id", "features"}:
            got = sorted(action) if isinstance(action, Mapping) else type(action).__name__
            raise ValueError(f"glmbandits.client decide: actions[{index}] must be a mapping "
                             f"with the keys 'id' and 'features', got {got}")
        if not isinstance(action["id"], str):
            raise TypeError(f"glmbandits.client decide: actions[{index}].id must be an action "
                            f"id (a str), got {type(action['id']).__name__}")
        sent.append({"id": action["id"],
                     "features": _features(action["features"], f"actions[{index}].features")})
    return sent


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
