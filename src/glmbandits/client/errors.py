"""The client's exceptions: one class per refusal of the service, carrying its message.

The service answers every refusal with ``{"error", "detail", "field"}``
(:func:`glmbandits.service.errors.refusal_body`); :func:`error_from_response` turns
one into the class of its status, with ``message`` (the server's ``detail``),
``field`` (the field it names, if any) and ``status``. The classes are chosen by the
status, never by the message text.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["ClientError", "Unauthorized", "NotFound", "Conflict", "InvalidRequest",
           "PayloadTooLarge", "UnsupportedMediaType", "TooManyRequests",
           "ServiceUnavailable", "ServerError", "ConnectionFailed", "BY_STATUS",
           "error_from_response"]


class ClientError(Exception):
    """A request the service refused, or one that could not reach it.

    ``status`` is the HTTP status (None when no answer came), ``message`` the server's
    ``detail``, ``field`` the request field it names, ``error`` the status's word.

    Examples
    --------
    >>> error = error_from_response(422, {"error": "invalid request",
    ...                                   "detail": "reward must be a finite number",
    ...                                   "field": "reward"})
    >>> type(error).__name__, error.field, error.status
    ('InvalidRequest', 'reward', 422)
    >>> str(error)
    '422 invalid request: reward must be a finite number (field: reward)'
    """

    status: int | None = None

    def __init__(self, message: str, *, field: str | None = None, status: int | None = None,
                 error: str | None = None, retry_after: float | None = None) -> None:
        self.message = message
        self.field = field
        if status is not None:
            self.status = status
        self.error = error
        self.retry_after = retry_after
        where = f" (field: {field})" if field else ""
        head = f"{self.status} {error or 'error'}: " if self.status is not None else ""
        super().__init__(f"{head}{message}{where}")


class Unauthorized(ClientError):
    """401: no API key, or one the service does not accept."""

    status = 401


class NotFound(ClientError):
    """404: a reward for a decision id the service never decided (or forgot); an action
    id not in the catalogue; any catalogue call to a service without a ``[features]``
    schema (``field`` ``features``)."""

    status = 404


class Conflict(ClientError):
    """409: a decision id reused for another request, or after its decision closed; a
    ``PUT`` of a retired action id (ids are never reused)."""

    status = 409


class PayloadTooLarge(ClientError):
    """413: a body above the service's ``max_body_bytes``."""

    status = 413


class UnsupportedMediaType(ClientError):
    """415: a body in a format the endpoint does not read."""

    status = 415


class InvalidRequest(ClientError):
    """422: a malformed request; ``field`` names the offending field (``contexts[0]``)."""

    status = 422


class TooManyRequests(ClientError):
    """429: the service's queue was full; nothing was done (retried by the client)."""

    status = 429


class ServiceUnavailable(ClientError):
    """503: the service could not write its log, or is not ready (retried by the client)."""

    status = 503


class ServerError(ClientError):
    """Any other status of 400 or more (a 5xx the service should never answer)."""


class ConnectionFailed(ClientError):
    """No answer came (connection refused or reset, timeout) after every retry."""


#: the exception class of each refusal status the service answers with
BY_STATUS: dict[int, type[ClientError]] = {
    cls.status: cls for cls in (Unauthorized, NotFound, Conflict, PayloadTooLarge,
                                UnsupportedMediaType, InvalidRequest, TooManyRequests,
                                ServiceUnavailable) if cls.status is not None}


def error_from_response(status: int, body: Any, retry_after: float | None = None
                        ) -> ClientError:
    """The exception of a refusal: its class by ``status``, its message and field from the
    decoded JSON ``body`` (any other body becomes the message as text)."""
    if isinstance(body, Mapping):
        message = str(body.get("detail", body))
        field = body.get("field")
        error = body.get("error")
    else:
        message, field, error = str(body), None, None
    cls = BY_STATUS.get(status, ServerError)
    return cls(message, field=field if isinstance(field, str) else None, status=status,
               error=error if isinstance(error, str) else None, retry_after=retry_after)
