"""What the service refuses, as exceptions the app turns into HTTP answers, and the
body of a decide answer (shared by the single-process core and the API role).

A policy's refusals are typed (:mod:`glmbandits.policies.decisions`): :func:`refused`
maps each type to its HTTP refusal (a conflict 409, an unknown id 404, an invalid field
422 naming it), never by reading the message.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..policies.decisions import DecisionConflict, FieldError, UnknownDecisionError

__all__ = ["ServiceError", "Invalid", "NotFound", "Conflict", "Unavailable",
           "StoreMismatchError", "decision_answer", "refused", "conflict"]


class ServiceError(Exception):
    """A request the service refuses; ``status`` is the HTTP status the app answers with."""

    status = 500

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class Invalid(ServiceError):
    """A malformed request (422); ``field`` names the offending field."""

    status = 422


class NotFound(ServiceError):
    """A reward for a decision id that was never decided (404)."""

    status = 404


class Conflict(ServiceError):
    """A decision id reused for another request, or after its decision closed (409)."""

    status = 409


class Unavailable(ServiceError):
    """The store failed; nothing of the request was kept (503)."""

    status = 503


class StoreMismatchError(RuntimeError):
    """The store's log was written by a service with another policy config."""


def decision_answer(decision_id: str, action: int, probabilities: np.ndarray,
                    propensity: float | None, model_version: int,
                    policy_action: int | None) -> dict[str, Any]:
    """The body of a ``POST /v1/decide`` answer; ``policy_action`` only for a shadow
    decision (whose ``propensity`` is None: the client chose)."""
    answer = {"decision_id": decision_id, "action": int(action),
              "probabilities": probabilities.tolist(), "propensity": propensity,
              "model_version": int(model_version)}
    if policy_action is not None:
        answer["policy_action"] = int(policy_action)
    return answer


def conflict(decision_id: str, closed_as: str | None, *, logged: bool = False) -> Conflict:
    """The 409 of a decision id reused: for another request (``closed_as`` None; ``logged``:
    found in the log by an API process), or after its decision closed (``closed_as``)."""
    if closed_as is not None:
        return Conflict(f"decision_id {decision_id!r} was already closed ({closed_as}); use "
                        "a new decision_id", "decision_id")
    if logged:
        return Conflict(f"decision_id {decision_id!r} was logged for another request (other "
                        "contexts, excluded or default_action); a retry must repeat the "
                        "request exactly, a new request needs a new decision_id",
                        "decision_id")
    return Conflict(f"decision_id {decision_id!r} is pending for another request (other "
                    "contexts, excluded or default_action); a retry must repeat the request "
                    "exactly", "decision_id")


def refused(error: Exception) -> ServiceError:
    """The HTTP refusal of a policy's refusal, by its type: :class:`DecisionConflict` 409,
    :class:`UnknownDecisionError` 404, a :class:`FieldError` 422 naming its field, any
    other ``ValueError``/``TypeError`` 422 on the ``body``."""
    if isinstance(error, DecisionConflict):
        return conflict(error.decision_id, error.closed_as)
    if isinstance(error, UnknownDecisionError):
        return NotFound(f"no decision has decision_id {error.decision_id!r}: it was never "
                        "decided by this service, or closed longer ago than the last "
                        f"max_resolved closed decisions ({error})", "decision_id")
    if isinstance(error, FieldError):
        return Invalid(str(error), error.field)
    if isinstance(error, (TypeError, ValueError)):
        return Invalid(str(error), "body")
    raise error
