"""Request and response models of the HTTP API (msgspec), and their checks.

A body is decoded into a :class:`DecideRequest` or :class:`RewardRequest`
(unknown fields, strings for numbers and wrong nesting are refused by msgspec),
then checked against the service's problem: K rows of d numbers with
K <= ``max_actions``, every number finite, ``excluded`` in range. Every
refusal is an :class:`~glmbandits.service.core.Invalid` that names the field
(``contexts[3][1]``, ``excluded[0]``, ``reward``...). JSON parsers differ in
the non-finite spellings they accept (``NaN``, ``Infinity``, ``-Infinity``,
``1e999``): msgspec refuses all of them; the fallback parse only exists to say
which field held one.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Callable, Optional, TypeVar, Union

import msgspec
import numpy as np

from ..data.event_records import MAX_ID_LENGTH
from ..data.event_records import check_decision_id as check_id
from .errors import Invalid

__all__ = ["DecideRequest", "RewardRequest", "DecideResponse", "RewardResponse",
           "ErrorResponse", "ModelResponse", "HealthResponse", "ExplanationBody",
           "ActionExplanationBody", "FeatureContribution", "parse_decide", "parse_reward",
           "NamedAction", "NamedDecideRequest", "AnyDecideRequest", "ActionBody",
           "ActionResponse", "CatalogueResponse", "decode_body", "check_dense",
           "check_decision_id", "check_excluded_rows"]

DecisionId = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ID_LENGTH,
                                         description="1-256 characters")]


class DecideRequest(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /v1/decide``: one feature vector per action."""

    contexts: Annotated[list[list[float]], msgspec.Meta(
        min_length=1, description="K rows (1 <= K <= max_actions) of n_features finite numbers")]
    decision_id: Optional[DecisionId] = None
    # row numbers: JSON Schema counts 2.0 as an integer (and a client computing rows as
    # floats sends it so), so any integral number >= 0 is read (parse_decide makes it an
    # int; openapi.py states them as integers)
    excluded: Optional[list[Union[int, float]]] = None
    default_action: Optional[Union[int, float]] = None
    #: true: the answer carries ``explanation`` (glmbandits.policies.explain)
    explain: bool = False


ActionId = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ID_LENGTH,
                                       description="1-256 characters (the decision-id rule)")]


class NamedAction(msgspec.Struct, forbid_unknown_fields=True):
    """One candidate action of a named decide, sent inline: its id and named features."""

    id: ActionId
    features: dict[str, Any]


class NamedDecideRequest(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /v1/decide`` with named features (a service with a ``[features]`` schema):
    the context's features, and the candidates inline (``actions``) or by catalogue id
    (``action_ids``), one of the two."""

    context: dict[str, Any] = msgspec.field(default_factory=dict)
    actions: Optional[list[NamedAction]] = None
    action_ids: Optional[list[ActionId]] = None
    excluded_ids: Optional[list[ActionId]] = None
    default_action_id: Optional[ActionId] = None
    decision_id: Optional[DecisionId] = None
    explain: bool = False


class AnyDecideRequest(msgspec.Struct, forbid_unknown_fields=True):
    """What a service with a schema decodes: either body (:class:`DecideRequest` or
    :class:`NamedDecideRequest`), told apart by ``contexts``."""

    contexts: Optional[list[list[float]]] = None
    context: Optional[dict[str, Any]] = None
    actions: Optional[list[NamedAction]] = None
    action_ids: Optional[list[ActionId]] = None
    excluded_ids: Optional[list[ActionId]] = None
    default_action_id: Optional[ActionId] = None
    decision_id: Optional[DecisionId] = None
    excluded: Optional[list[Union[int, float]]] = None
    default_action: Optional[Union[int, float]] = None
    explain: bool = False


class ActionBody(msgspec.Struct, forbid_unknown_fields=True):
    """``PUT /v1/actions/{action_id}``: the action's named features."""

    features: dict[str, Any]


class ActionResponse(msgspec.Struct, omit_defaults=True):
    """One catalogue action; ``status`` says what a PUT or DELETE did (``created``,
    ``updated``, ``unchanged``, ``deleted``, ``already deleted``)."""

    id: str
    features: Optional[dict[str, Any]] = None
    status: Optional[str] = None


class CatalogueResponse(msgspec.Struct):
    """``GET /v1/actions``: the live actions (in the order they were first put) and the
    retired ids (never reused)."""

    actions: list[ActionResponse]
    retired: list[str]


class RewardRequest(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /v1/reward``: the reward of an earlier decision."""

    decision_id: DecisionId
    reward: float


class DecideResponse(msgspec.Struct, omit_defaults=True):
    """In shadow mode ``action`` is the default action, ``propensity`` is null and
    ``policy_action`` is what the policy would have chosen (absent in live mode)."""

    decision_id: str
    action: int
    probabilities: list[float]
    propensity: Optional[float]
    model_version: int
    policy_action: Optional[int] = None
    #: only when the request asked (``"explain": true``); null for a retry of a decision
    #: made without it or answered from the log
    explanation: Optional["ExplanationBody"] = None
    #: a named decide's: the chosen action's id, the probabilities by id (and in shadow
    #: mode the policy's choice by id)
    action_id: Optional[str] = None
    probabilities_by_id: Optional[dict[str, float]] = None
    policy_action_id: Optional[str] = None


class FeatureContribution(msgspec.Struct):
    """x_j θ̂_j summed over a feature schema's group (or one column, ``x[j]``)."""

    name: str
    value: float


class ActionExplanationBody(msgspec.Struct):
    """One action of an explanation (glmbandits.policies.explain.ActionExplanation)."""

    action: int
    index: float
    linear_predictor: float
    predicted_reward: float
    interval: Optional[Annotated[list[float], msgspec.Meta(min_length=2, max_length=2)]]
    bonus: float
    bonus_share: Optional[float]
    contributions: list[FeatureContribution]
    other: float
    intercept: float
    #: a named decide's: the candidate's id
    action_id: Optional[str] = None


class ExplanationBody(msgspec.Struct):
    """Why the decision chose its action (glmbandits.policies.explain.Explanation)."""

    policy: str
    kind: str
    reason: Optional[str]
    interval: Optional[str]
    interval_level: Optional[float]
    chosen: Optional[ActionExplanationBody]
    runner_up: Optional[ActionExplanationBody]
    chosen_is_best: bool


class LatestExplanation(msgspec.Struct):
    """``GET /v1/model``'s ``explanation``: the latest decision made with ``explain``."""

    decision_id: str
    model_version: int
    action: int
    explanation: ExplanationBody


class RewardResponse(msgspec.Struct):
    decision_id: str
    status: str
    model_version: int


class ErrorResponse(msgspec.Struct):
    error: str
    detail: str
    field: Optional[str] = None


class HealthResponse(msgspec.Struct):
    status: str


class ModelResponse(msgspec.Struct):
    """``counts`` holds ``decisions``, ``rewards``, ``pending`` and ``expired`` (what the
    dashboard reads) and the log's counts by status (``rewards_learned``, ...)."""

    policy: str
    mode: str
    model_version: int
    n_features: int
    max_actions: int
    decisions: int
    rewards: int
    pending: int
    counts: dict[str, int]
    #: the latest decision made with ``explain`` (this process's), else null
    explanation: Optional[LatestExplanation] = None
    #: The drift monitor's status (``[drift]`` configured; docs/drift.md), else null.
    drift: dict[str, Any] | None = None
    #: With a ``[features]`` schema: the name of each of the n_features columns, and the
    #: catalogue's size (``actions``, ``retired``); else null.
    feature_names: Optional[list[str]] = None
    catalogue: Optional[dict[str, int]] = None


def _path_of(message: str) -> str:
    """``contexts[0][1]`` from msgspec's ``... - at `$.contexts[0][1]```."""
    if "- at `$" in message:
        return message.rsplit("- at `$", 1)[1].rstrip("`").lstrip(".") or "body"
    if "unknown field" in message:
        return message.split("`")[1] if "`" in message else "body"
    if "missing required field" in message:
        return message.split("`")[1] if "`" in message else "body"
    return "body"


def _first_path(value: Any, path: str, bad: Callable[[Any], bool]) -> str | None:
    """The path (``contexts[2][0]``, ``a.b``) of the first leaf or key inside a decoded
    JSON ``value`` for which ``bad`` holds (None if there is none). A bad key names the
    object holding it."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _first_path(item, f"{path}[{index}]", bad)
            if found:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if bad(key):
                return path or "body"
            found = _first_path(item, f"{path}.{key}" if path else str(key), bad)
            if found:
                return found
        return None
    return path if bad(value) else None


def _non_finite(value: Any, path: str) -> str | None:
    """The path of the first non-finite number inside ``value`` (None if there is none)."""
    return _first_path(value, path,
                       lambda leaf: isinstance(leaf, float) and not math.isfinite(leaf))


def _not_utf8(value: Any, path: str) -> str | None:
    """The path of the first string (or key) inside ``value`` holding a byte that is not
    UTF-8 (decoded with ``surrogateescape``, such a byte is a code point U+DC80-U+DCFF)."""
    return _first_path(value, path, lambda leaf: isinstance(leaf, str) and any(
        "\udc80" <= c <= "\udcff" for c in leaf))


def _refuse_non_utf8(body: bytes, error: UnicodeDecodeError) -> Invalid:
    """The refusal of a body with bytes that are not UTF-8, naming the string that holds them."""
    bad = bytes(error.object[error.start:error.end])
    where = "body"
    try:
        where = _not_utf8(json.loads(body.decode("utf-8", "surrogateescape")), "") or "body"
    except (ValueError, RecursionError):
        pass
    return Invalid(f"{where} must be valid UTF-8 text (JSON is UTF-8), got the byte(s) "
                   f"{bad!r} ({error.reason})", where)


_Model = TypeVar("_Model")


def _decode(body: bytes, model: type[_Model]) -> _Model:
    try:
        return msgspec.json.decode(body, type=model)
    except UnicodeDecodeError as error:  # msgspec decodes strings strictly
        raise _refuse_non_utf8(body, error) from None
    except msgspec.ValidationError as error:
        message = str(error)
        if "out of range" in message:
            message = f"a number is out of range (not finite) {message[message.find('- at'):]}"
        raise Invalid(message, _path_of(str(error))) from None
    except msgspec.DecodeError as error:
        try:  # Python's parser accepts NaN/Infinity: say which field held one
            loose = json.loads(body)
        except (ValueError, RecursionError):
            raise Invalid(f"the body is not valid JSON ({error})", "body") from None
        where = _non_finite(loose, "")
        if where:
            raise Invalid(f"{where} must be a finite number; NaN and Infinity are not "
                          "accepted", where) from None
        raise Invalid(f"the body is not valid JSON ({error})", "body") from None


def check_decision_id(decision_id: str | None) -> None:
    """Refuse a decision id the policy would refuse (the one rule:
    :func:`glmbandits.data.event_records.check_decision_id`), naming the field."""
    if decision_id is None:
        return
    try:
        check_id(decision_id, "request")
    except (TypeError, ValueError) as error:
        raise Invalid(str(error), "decision_id") from None


def check_excluded_rows(excluded: list[int], K: int) -> None:
    """Every excluded row in ``0..K-1``, and at least one of the K rows left."""
    for index, value in enumerate(excluded):
        if value >= K:
            raise Invalid(f"excluded[{index}] = {value} is out of range: rows are 0 to "
                          f"{K - 1} (K = {K})", f"excluded[{index}]")
    if len(set(excluded)) >= K:
        raise Invalid(f"excluded must leave at least one of the K = {K} actions", "excluded")


def decode_body(body: bytes, model: type[_Model]) -> _Model:
    """Decode a JSON body into ``model`` (msgspec); every refusal an :class:`Invalid`
    naming the field."""
    return _decode(body, model)


def parse_decide(body: bytes, n_features: int, max_actions: int) -> DecideRequest:
    """Decode and check a decide body; returns it with ``contexts`` as a (K, d) array."""
    return check_dense(_decode(body, DecideRequest), n_features, max_actions)


_Dense = TypeVar("_Dense", DecideRequest, "AnyDecideRequest")


def check_dense(request: _Dense, n_features: int, max_actions: int) -> _Dense:
    """Check a decoded dense decide (``contexts``, ``excluded``, ``default_action``);
    returns it with ``contexts`` as a (K, d) array."""
    check_decision_id(request.decision_id)
    rows = request.contexts
    if rows is None:
        raise Invalid("Object missing required field `contexts`", "contexts")
    if len(rows) > max_actions:
        raise Invalid(f"contexts has K = {len(rows)} rows, above the limit max_actions = "
                      f"{max_actions}", "contexts")
    for index, row in enumerate(rows):
        if len(row) != n_features:
            raise Invalid(f"contexts[{index}] must have n_features = {n_features} numbers, "
                          f"got {len(row)}", f"contexts[{index}]")
    X = np.array(rows, dtype=np.float64)
    if not np.isfinite(X).all():
        row, column = np.argwhere(~np.isfinite(X))[0]
        raise Invalid(f"contexts[{row}][{column}] must be a finite number",
                      f"contexts[{row}][{column}]")
    if request.excluded is not None:
        request.excluded = [_row(value, f"excluded[{index}]")
                            for index, value in enumerate(request.excluded)]
    if request.default_action is not None:
        request.default_action = _row(request.default_action, "default_action")
    if request.excluded:
        check_excluded_rows(request.excluded, X.shape[0])  # type: ignore[arg-type]
    request.contexts = X  # type: ignore[assignment]
    return request


def _row(value: float, field: str) -> int:
    """A row number given as a JSON number: integral (``2`` or ``2.0``) and >= 0, else 422."""
    if value < 0 or not (isinstance(value, int) or value.is_integer()):
        raise Invalid(f"{field} must be an integer >= 0 (a row number), got {value!r}", field)
    return int(value)


def parse_reward(body: bytes) -> RewardRequest:
    """Decode and check a reward body (the family's domain is checked by the policy)."""
    request = _decode(body, RewardRequest)
    check_decision_id(request.decision_id)
    if not math.isfinite(request.reward):
        raise Invalid("reward must be a finite number", "reward")
    return request
