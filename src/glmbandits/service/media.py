"""Which body a decide carries: JSON (the default) or an .npy file; anything else is a 415.

Also the strict query-string decoding every decide runs (:func:`parse_query`).

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

import re
from typing import Iterable
from urllib.parse import unquote_to_bytes

from .errors import Invalid, UnsupportedMediaType
from .npy_body import NPY_MEDIA_TYPE, QUERY_FIELDS, parse_decide_npy
from .named_body import NAMED_FIELDS, NamedDecide, is_named, parse_named
from .schemas import AnyDecideRequest, DecideRequest, check_dense, decode_body, parse_decide

__all__ = ["UnsupportedMediaType", "decide_encoding", "parse_decide_body", "parse_query",
           "JSON_MEDIA_TYPE"]

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
                      n_features: int, max_actions: int, *, named: bool = False
                      ) -> DecideRequest | AnyDecideRequest | NamedDecide:
    """Decode and check a decide in ``encoding`` (from :func:`decide_encoding`).

    Returns the request with ``contexts`` as a (K, d) float64 array, or, when ``named``
    (the service has a ``[features]`` schema) and the JSON body names its features, a
    :class:`~glmbandits.service.named_body.NamedDecide`; refusals are
    :class:`~glmbandits.service.core.Invalid` naming the field.
    """
    if encoding == "npy":
        return parse_decide_npy(body, query, n_features, max_actions)
    for name, _ in query:
        if name in QUERY_FIELDS:
            raise Invalid(f"{name} goes in the JSON body of a decide, not in the query string "
                          f"(the query carries it only with Content-Type: {NPY_MEDIA_TYPE})",
                          name)
    if not named:
        try:
            return parse_decide(body, n_features, max_actions)
        except Invalid as error:
            if error.field in NAMED_FIELDS:
                raise Invalid(f"{error.field}: this service has no feature schema (a "
                              "[features] table in its config), so a decide sends contexts: "
                              f"K rows of n_features = {n_features} numbers", error.field
                              ) from None
            raise
    request = decode_body(body, AnyDecideRequest)
    if is_named(request):
        return parse_named(request, max_actions)
    return check_dense(request, n_features, max_actions)


_BAD_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")


def _unquote(raw: bytes, field: str) -> str:
    """One name or value of a query string: ``+`` is a space, ``%XX`` a byte, and the
    bytes must be UTF-8 (a 422 naming ``field`` otherwise, never a replacement character)."""
    bad = _BAD_ESCAPE.search(raw)
    if bad:
        raise Invalid(f"{field} holds {raw[bad.start():bad.start() + 3]!r}, which is not a "
                      "percent-escape (% and two hex digits; a % itself is %25)", field)
    data = unquote_to_bytes(raw.replace(b"+", b" "))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Invalid(f"{field} must be UTF-8 text once percent-decoded, got the byte(s) "
                      f"{data[error.start:error.end]!r} ({error.reason})", field) from None


def parse_query(raw: bytes) -> list[tuple[str, str]]:
    """The (name, value) pairs of a raw query string, decoded strictly.

    As ``urllib.parse.parse_qsl(..., keep_blank_values=True)`` but an invalid
    percent-escape or bytes that are not UTF-8 are refused (422 naming the parameter)
    instead of kept as they are or replaced by U+FFFD, which would let two different ids
    become one.

    Examples
    --------
    >>> parse_query(b"decision_id=caf%C3%A9+1&excluded=0,2&flag")
    [('decision_id', 'café 1'), ('excluded', '0,2'), ('flag', '')]
    >>> parse_query(b"decision_id=a%FFb")
    Traceback (most recent call last):
    ...
    glmbandits.service.errors.Invalid: decision_id must be UTF-8 text once percent-decoded, got the byte(s) b'\\xff' (invalid start byte)
    """
    pairs = []
    for part in raw.split(b"&"):
        if not part:
            continue
        name, _, value = part.partition(b"=")
        text = _unquote(name, "query")
        pairs.append((text, _unquote(value, text[:100])))
    return pairs
