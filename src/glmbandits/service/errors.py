"""Every HTTP refusal of the service, as exceptions (each with its status), and the JSON
body of a refusal (:func:`error_body`).

A policy's refusals are typed (:mod:`glmbandits.policies.decisions`): :func:`refused`
maps each type to its HTTP refusal (a conflict 409, an unknown id 404, an invalid field
422 naming it), never by reading the message.
"""

from __future__ import annotations

from ..policies.decisions import DecisionConflict, FieldError, UnknownDecisionError

__all__ = ["ServiceError", "Invalid", "NotFound", "Conflict", "Unavailable", "Overloaded",
           "Unauthorized", "RETRY_AFTER_SECONDS",
           "TooLarge", "UnsupportedMediaType", "StoreMismatchError", "ERROR_NAMES",
           "refusal_body", "error_body", "refused", "conflict"]

#: the ``error`` word of a refusal's JSON body, by status
ERROR_NAMES = {401: "unauthorized", 404: "not found", 405: "method not allowed",
               408: "request timeout", 409: "conflict", 413: "body too large",
               415: "unsupported media type", 422: "invalid request", 429: "too many requests",
               431: "request header fields too large", 500: "internal server error",
               503: "unavailable"}


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


#: the ``Retry-After`` of a 429 (seconds): the worker answers a full queue of requests in
#: well under a second (docs/service.md, Performance), so one second later it has room.
RETRY_AFTER_SECONDS = 1


class Overloaded(ServiceError):
    """The worker's queue is full (``[service] max_queue``); nothing of the request was done
    (429, answered with ``Retry-After``)."""

    status = 429


class Unauthorized(ServiceError):
    """No accepted API key (401; answered with ``WWW-Authenticate: Bearer``)."""

    status = 401


class TooLarge(ServiceError):
    """A body above ``max_body_bytes`` (413)."""

    status = 413


class UnsupportedMediaType(ServiceError):
    """A body in a format the endpoint does not read (415); ``field`` is ``Content-Type``."""

    status = 415


def refusal_body(status: int, detail: str, field: str | None = None, *,
                 error: str | None = None) -> bytes:
    """The JSON body of every refusal: ``{"error", "detail", "field"}``; ``error`` is the
    status's word (:data:`ERROR_NAMES`) unless given (Starlette's own refusals)."""
    import msgspec  # the serve extra; the core runs without it

    return msgspec.json.encode({"error": ERROR_NAMES.get(status, "error") if error is None
                                else error, "detail": detail, "field": field})


def error_body(error: ServiceError) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    """(status, JSON body, extra headers) of a refusal (:func:`refusal_body`), with
    ``WWW-Authenticate: Bearer`` on a 401 and ``Retry-After`` (whole seconds) on a 429."""
    extra = ([(b"www-authenticate", b"Bearer")] if error.status == 401 else
             [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())] if error.status == 429
             else [])
    return error.status, refusal_body(error.status, error.message, error.field), extra


class StoreMismatchError(RuntimeError):
    """The store's log was written by a service with another policy config."""


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
