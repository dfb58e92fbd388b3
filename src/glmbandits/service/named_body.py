"""The named-feature decide: its body checked, and its features turned into contexts.

A service with a ``[features]`` schema takes, besides the dense ``contexts``, the
request engineers have (Azure Personalizer's rank call, Vowpal Wabbit's shared and
action namespaces)::

    {"decision_id": "r1", "context": {"country": "DE", "age": 34},
     "action_ids": ["a1", "a2", "a3"], "excluded_ids": ["a2"]}

or, with the candidates inline, ``"actions": [{"id": "a1", "features": {...}}, ...]``.
:func:`parse_named` checks what needs no model (one of ``actions``/``action_ids``, ids
unique, ``excluded_ids`` and ``default_action_id`` among them, K within
``max_actions``) and keeps the request as sent (:attr:`NamedDecide.request`, the text
the ``decision`` event logs); :func:`featurise` builds the (K, d) contexts on the
worker, with the catalogue as it is at that point of the log, every refusal an
:class:`~glmbandits.service.errors.Invalid` naming the field (``context.age``,
``actions[3].features.topic``, ``action_ids[2]``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from ..data.vocabulary import check_decision_id as check_id_rule
from .catalogue import ActionCatalogue, UnknownActionError
from .errors import Invalid
from .schemas import AnyDecideRequest, check_decision_id

__all__ = ["NAMED_FIELDS", "NamedDecide", "parse_named", "featurise", "is_named", "named_answer",
           "check_action_id", "refused_feature"]

#: The fields of a named decide's body (none of them is a dense body's).
NAMED_FIELDS = ("context", "actions", "action_ids", "excluded_ids", "default_action_id")
_DENSE_FIELDS = ("contexts", "excluded", "default_action")
# what FeatureSchema's refusals say (its messages name the feature and where it is)
_FEATURE = re.compile(r"feature '([^']*)' of (the context|the action|actions\[(\d+)\])")
_UNKNOWN = re.compile(r"(the context|the action|actions\[(\d+)\]) has an unknown feature "
                      r"'([^']*)'")


@dataclass(frozen=True)
class NamedDecide:
    """A checked named decide: the candidates' ``ids`` (in row order), their features
    inline (``features``) or None (from the catalogue), the excluded rows, the default
    row (shadow mode), and ``request``: the canonical JSON text the log keeps."""

    decision_id: str | None
    context: dict[str, Any]
    ids: list[str]
    features: list[dict[str, Any]] | None
    excluded: tuple[int, ...] | None
    default_action: int | None
    explain: bool
    request: str


def is_named(request: AnyDecideRequest) -> bool:
    """Whether a decoded body is a named decide (it has none of the dense fields); a body
    mixing both is refused (422)."""
    named = [name for name in NAMED_FIELDS if getattr(request, name) is not None]
    dense = [name for name in _DENSE_FIELDS if getattr(request, name) is not None]
    if named and dense:
        raise Invalid(f"a decide sends either contexts (dense rows) or context with actions "
                      f"or action_ids (named features), not both: got {dense[0]} and "
                      f"{named[0]}", named[0])
    if not named and not dense:
        raise Invalid("a decide needs contexts (dense rows) or action_ids / actions (named "
                      "features)", "action_ids")
    return bool(named)


def parse_named(request: AnyDecideRequest, max_actions: int) -> NamedDecide:
    """Check a decoded named decide (see the module docstring)."""
    check_decision_id(request.decision_id)
    if (request.actions is None) == (request.action_ids is None):
        raise Invalid("a named decide sends its candidates either inline (actions) or by "
                      "catalogue id (action_ids), exactly one of the two", "actions")
    if request.actions is not None:
        field = "actions"
        ids = [action.id for action in request.actions]
        features: list[dict[str, Any]] | None = [action.features for action in request.actions]
    else:
        field = "action_ids"
        ids = list(request.action_ids or ())
        features = None
    K = len(ids)
    if K == 0:
        raise Invalid(f"{field} must name at least one action", field)
    if K > max_actions:
        raise Invalid(f"{field} has K = {K} actions, above the limit max_actions = "
                      f"{max_actions}", field)
    rows: dict[str, int] = {}
    inline = field == "actions"  # (ids of action_ids are looked up in the catalogue, which
    for index, action_id in enumerate(ids):  # holds legal ids only: no rule check needed)
        where = f"{field}[{index}]" + (".id" if inline else "")
        if inline:
            check_action_id(action_id, where)
        if action_id in rows:
            raise Invalid(f"{where}: the action id {action_id!r} appears twice (first at "
                          f"{field}[{rows[action_id]}]); each candidate once", where)
        rows[action_id] = index
    excluded = None
    if request.excluded_ids is not None:
        excluded = tuple(_row_of(rows, action_id, f"excluded_ids[{index}]", field)
                         for index, action_id in enumerate(request.excluded_ids))
        if len(set(excluded)) >= K:
            raise Invalid(f"excluded_ids must leave at least one of the K = {K} actions",
                          "excluded_ids")
    default = None
    if request.default_action_id is not None:
        default = _row_of(rows, request.default_action_id, "default_action_id", field)
    context = {} if request.context is None else request.context
    sent: dict[str, Any] = {"context": context}
    if features is not None:
        sent["actions"] = [{"id": i, "features": f} for i, f in zip(ids, features)]
    else:
        sent["action_ids"] = ids
    if request.excluded_ids is not None:
        sent["excluded_ids"] = list(request.excluded_ids)
    if request.default_action_id is not None:
        sent["default_action_id"] = request.default_action_id
    text = msgspec.json.encode(sent, order="sorted").decode("utf-8")
    return NamedDecide(request.decision_id, context, ids, features, excluded, default,
                       request.explain, text)


def check_action_id(action_id: str, where: str) -> None:
    """The decision-id rule, for an action id (the catalogue's ids follow it too); 422
    naming ``where``."""
    try:
        check_id_rule(action_id, where, "action_id")
    except (TypeError, ValueError) as error:
        raise Invalid(str(error), where) from None


def _row_of(rows: dict[str, int], action_id: str, where: str, field: str) -> int:
    try:
        return rows[action_id]
    except KeyError:
        raise Invalid(f"{where} = {action_id!r} is not one of the request's {field}",
                      where) from None


def featurise(named: NamedDecide, schema: Any, catalogue: ActionCatalogue) -> np.ndarray:
    """The (K, d) contexts of a named decide, in a fresh array (the policy keeps it);
    refusals name the field."""
    X = np.empty((len(named.ids), schema.n_features_out_))
    try:
        if named.features is None:  # the catalogue's rows, encoded when put
            schema.transform_encoded(named.context, catalogue.encoded(named.ids), out=X)
        else:
            schema.transform(named.context, named.features, out=X)
    except UnknownActionError as error:
        raise Invalid(str(error), str(error).split(":", 1)[0]) from None
    except (TypeError, ValueError) as error:
        raise Invalid(str(error), _field_of(str(error), named)) from None
    return X


def refused_feature(message: str) -> tuple[str, str | None, str] | None:
    """``(where, index, feature)`` of a FeatureSchema refusal's message (where: ``the
    context``, ``the action`` or ``actions[i]``, with ``index`` i), or None if it names no
    feature."""
    found = _FEATURE.search(message)
    if found is not None:
        feature, where, index = found.groups()
        return where, index, feature
    unknown = _UNKNOWN.search(message)
    if unknown is None:
        return None
    where, index, feature = unknown.groups()
    return where, index, feature


def _field_of(message: str, named: NamedDecide) -> str:
    """The request's field a FeatureSchema refusal is about (``context.age``,
    ``actions[2].features.topic``, ``action_ids[2]``)."""
    found = refused_feature(message)
    if found is None:
        return "context"
    where, index, feature = found
    if where == "the context":
        return f"context.{feature}"
    if index is None:
        return "actions"
    if named.features is None:
        return f"action_ids[{index}]"
    return f"actions[{index}].features.{feature}"


def named_answer(answer: dict[str, Any], named: NamedDecide) -> dict[str, Any]:
    """A decide's answer with the ids: ``action_id``, ``probabilities_by_id`` (and
    ``policy_action_id`` in shadow mode; an explanation's ``chosen`` and ``runner_up``
    get their ``action_id``)."""
    ids = named.ids
    answer["action_id"] = ids[answer["action"]]
    answer["probabilities_by_id"] = dict(zip(ids, answer["probabilities"]))
    if "policy_action" in answer:
        answer["policy_action_id"] = ids[answer["policy_action"]]
    explanation = answer.get("explanation")
    if explanation is not None:  # (the same dict is GET /v1/model's latest explanation)
        for key in ("chosen", "runner_up"):
            if explanation.get(key) is not None:
                explanation[key]["action_id"] = ids[explanation[key]["action"]]
    return answer
