"""Which body a decide carries: JSON (the default) or an .npy file; anything else is a 415.

``Content-Type: application/json`` (with or without parameters such as
``charset``) and a request without a Content-Type are read as JSON, as before
the binary body existed; ``application/x-npy`` as an .npy file (see
:mod:`~glmbandits.service.npy_body`). With a JSON body, ``decision_id``,
``excluded`` and ``default_action`` belong in the body: the same names in the
query string are refused (422), not silently ignored, since a retry that lost
its id would be decided anew.

Examples
--------
>>> decide_encoding(None), decide_encoding("application/json; charset=utf-8")
('json', 'json')
>>> decide_encoding("Application/X-NPY")
'npy'
>>> decide_encoding("text/plain")
Traceback (most recent call last):
...
glmbandits.service.errors.UnsupportedMediaType: Content-Type must be application/json or application/x-npy (or absent, for JSON), got 'text/plain'
"""

from __future__ import annotations

from typing import Iterable

from .errors import Invalid, UnsupportedMediaType
from .npy_body import NPY_MEDIA_TYPE, QUERY_FIELDS, parse_decide_npy
from .schemas import DecideRequest, parse_decide

__all__ = ["UnsupportedMediaType", "decide_encoding", "parse_decide_body", "JSON_MEDIA_TYPE"]

JSON_MEDIA_TYPE = "application/json"


def decide_encoding(content_type: str | None) -> str:
    """``"json"`` or ``"npy"`` for a decide's Content-Type header; 415 for any other."""
    if content_type is None:
        return "json"
    media = content_type.split(";", 1)[0].strip().lower()
    if media == JSON_MEDIA_TYPE:
        return "json"
    if media == NPY_MEDIA_TYPE:
        return "npy"
    raise UnsupportedMediaType(f"Content-Type must be {JSON_MEDIA_TYPE} or {NPY_MEDIA_TYPE} "
                               f"(or absent, for JSON), got {content_type[:100]!r}",
                               "Content-Type")


def parse_decide_body(encoding: str, body: bytes, query: Iterable[tuple[str, str]],
                      n_features: int, max_actions: int) -> DecideRequest:
    """Decode and check a decide in ``encoding`` (from :func:`decide_encoding`).

    Returns the request with ``contexts`` as a (K, d) float64 array; refusals are
    :class:`~glmbandits.service.core.Invalid` naming the field.
    """
    if encoding == "npy":
        return parse_decide_npy(body, query, n_features, max_actions)
    for name, _ in query:
        if name in QUERY_FIELDS:
            raise Invalid(f"{name} goes in the JSON body of a decide, not in the query string "
                          f"(the query carries it only with Content-Type: {NPY_MEDIA_TYPE})",
                          name)
    return parse_decide(body, n_features, max_actions)
