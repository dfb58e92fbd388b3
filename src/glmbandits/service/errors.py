"""What the service refuses, as exceptions the app turns into HTTP answers, and the
body of a decide answer (shared by the single-process core and the API role)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ServiceError", "Invalid", "NotFound", "Conflict", "Unavailable",
           "StoreMismatchError", "decision_answer", "field_of"]


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


def field_of(message: str) -> str:
    """The request field a policy's error message is about (``body`` if none is named)."""
    for name in ("default_action", "excluded", "contexts", "decision_id"):
        if name in message:
            return name
    return "body"
