"""The binary decide body: a NumPy ``.npy`` file of the (K, d) contexts.

``POST /v1/decide`` with ``Content-Type: application/x-npy`` carries the
contexts as the bytes ``np.save`` writes (float64 or float32, either byte
order, C or Fortran order); ``decision_id``, ``excluded`` (comma-separated
row numbers) and ``default_action`` (shadow mode) come as query parameters. For K=100, d=50 this replaces parsing
5,000 JSON numbers into Python floats and building an array from them (about
230 µs) by a header check and a view of the body's bytes.

The body is untrusted, so it is read the safe way: never with ``allow_pickle``;
the magic string and version are checked, the header is parsed by
``numpy.lib.format`` (``read_magic``, ``read_array_header_1_0``/``_2_0``,
which evaluate only literals, at most 10,000 characters) and then only a
two-dimensional float64/float32 array whose byte count is exactly what the
header announces is accepted. Parsed headers are kept in a small cache keyed
by their bytes, since a client sends the same header with every request.
Every refusal is an :class:`~glmbandits.service.core.Invalid` (422) naming the
field, as the JSON path does: ``contexts`` (the body), ``contexts[i][j]`` (a
NaN or infinity), ``contexts[0]`` (rows of the wrong length), ``decision_id``,
``excluded``, ``excluded[i]`` or ``default_action``.

Examples
--------
>>> import io
>>> import numpy as np
>>> buffer = io.BytesIO()
>>> np.save(buffer, np.eye(3, 2))
>>> request = parse_decide_npy(buffer.getvalue(), [("decision_id", "r1"),
...                                                ("excluded", "0,2")], 2, 10)
>>> request.contexts.shape, request.decision_id, request.excluded
((3, 2), 'r1', [0, 2])
"""

from __future__ import annotations

import io
import re
from typing import Iterable

import numpy as np
from numpy.lib import format as npy_format

from .errors import Invalid
from .schemas import DecideRequest, check_decision_id, check_excluded_rows

__all__ = ["NPY_MEDIA_TYPE", "parse_decide_npy", "QUERY_FIELDS"]

NPY_MEDIA_TYPE = "application/x-npy"
#: the query parameters of a binary decide
QUERY_FIELDS = ("decision_id", "excluded", "default_action")
_MAGIC = b"\x93NUMPY"
#: the size in bytes of the header-length field, by accepted major version (minor 0)
_VERSIONS = {1: 2, 2: 4}
_ACCEPTED = {np.dtype("<f8"), np.dtype(">f8"), np.dtype("<f4"), np.dtype(">f4")}
_ROW = re.compile(r"[0-9]{1,18}\Z")
_CACHE_SIZE = 256
_headers: dict[bytes, tuple[tuple[int, ...], bool, np.dtype, int]] = {}


def _header(body: bytes) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """(shape, fortran_order, dtype, offset of the data) of an .npy body."""
    if len(body) < 10 or body[:6] != _MAGIC:
        raise Invalid("contexts: the body is not a NumPy .npy file (it must start with "
                      f"b'\\x93NUMPY', as np.save writes), got {body[:8]!r}", "contexts")
    major, minor = body[6], body[7]
    size = _VERSIONS.get(major)
    if size is None or minor != 0:
        raise Invalid(f"contexts: the .npy format version must be 1.0 or 2.0, got "
                      f"{major}.{minor}", "contexts")
    length = int.from_bytes(body[8:8 + size], "little")
    offset = 8 + size + length
    if offset > len(body):
        raise Invalid(f"contexts: the .npy header announces {length} bytes but the body "
                      f"has {len(body) - 8 - size} after the magic", "contexts")
    key = body[:offset]
    cached = _headers.get(key)
    if cached is not None:
        return cached
    stream = io.BytesIO(key)
    try:
        version = npy_format.read_magic(stream)
        read = (npy_format.read_array_header_1_0 if version == (1, 0)
                else npy_format.read_array_header_2_0)
        shape, fortran, dtype = read(stream)
    except Exception as error:  # the header is not the literal dict np.save writes
        reason = str(error)[:200]
        raise Invalid(f"contexts: the .npy header is malformed ({reason})", "contexts") from None
    if dtype not in _ACCEPTED or dtype.names is not None or dtype.subdtype is not None:
        raise Invalid(f"contexts: the .npy dtype must be float64 or float32, got {dtype.str!r}"
                      f" ({dtype})", "contexts")
    if len(shape) != 2 or any(type(n) is not int or n < 0 for n in shape):
        raise Invalid(f"contexts must be a two-dimensional (K, d) array, got shape {shape!r}",
                      "contexts")
    parsed = (shape, bool(fortran), dtype, offset)
    if len(_headers) >= _CACHE_SIZE:
        _headers.clear()
    _headers[key] = parsed
    return parsed


def _query(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The query parameters, each at most once and only the known ones."""
    out: dict[str, str] = {}
    for name, value in items:
        if name not in QUERY_FIELDS:
            raise Invalid(f"{name[:100]!r} is not a parameter of a binary decide: the query "
                          f"may hold only {', '.join(QUERY_FIELDS)}", name)
        if name in out:
            raise Invalid(f"{name} must be given at most once in the query, got it twice", name)
        out[name] = value
    return out


def _excluded(text: str | None) -> list[int] | None:
    """``"0,2"`` -> ``[0, 2]``; an empty value excludes nothing (as ``[]`` in JSON)."""
    if text is None:
        return None
    if text == "":
        return []
    rows = []
    for index, item in enumerate(text.split(",")):
        if not _ROW.match(item):
            raise Invalid(f"excluded[{index}] must be an integer >= 0 (excluded is "
                          f"comma-separated row numbers, e.g. excluded=0,3), got {item[:30]!r}",
                          f"excluded[{index}]")
        rows.append(int(item))
    return rows


def _default_action(text: str | None) -> int | None:
    """``"3"`` -> 3 (shadow mode's shown row; its range is checked with the policy's)."""
    if text is None:
        return None
    if not _ROW.match(text):
        raise Invalid(f"default_action must be an integer >= 0, got {text[:30]!r}",
                      "default_action")
    return int(text)


def parse_decide_npy(body: bytes, query: Iterable[tuple[str, str]], n_features: int,
                     max_actions: int) -> DecideRequest:
    """Decode and check a binary decide; returns it with ``contexts`` a C-ordered float64 array.

    Parameters
    ----------
    body : bytes
        The request body: an .npy file holding the (K, d) contexts.
    query : iterable of (str, str)
        The query parameters, in order (``decision_id``, ``excluded``,
        ``default_action``; each at most once).
    n_features : int
        d, the number of features of every row.
    max_actions : int
        The largest K accepted.

    Raises
    ------
    Invalid
        Naming the field, for any body or parameter the JSON path would refuse.
    """
    fields = _query(query)
    decision_id = fields.get("decision_id")
    check_decision_id(decision_id)
    excluded = _excluded(fields.get("excluded"))
    default_action = _default_action(fields.get("default_action"))
    shape, fortran, dtype, offset = _header(body)
    K, d = shape
    if K == 0:
        raise Invalid("contexts must hold at least one row (K >= 1), got K = 0", "contexts")
    if K > max_actions:
        raise Invalid(f"contexts has K = {K} rows, above the limit max_actions = "
                      f"{max_actions}", "contexts")
    if d != n_features:
        raise Invalid(f"contexts[0] must have n_features = {n_features} numbers, got {d} "
                      f"(the .npy array has shape ({K}, {d}))", "contexts[0]")
    size = len(body) - offset
    if size != K * d * dtype.itemsize:
        raise Invalid(f"contexts: the .npy header announces shape ({K}, {d}) of {dtype} "
                      f"({K * d * dtype.itemsize} bytes of data) but the body holds {size}",
                      "contexts")
    flat = np.frombuffer(body, dtype=dtype, count=K * d, offset=offset)
    array = flat.reshape((d, K)).T if fortran else flat.reshape((K, d))
    X = np.ascontiguousarray(array, dtype=np.float64)
    if not np.isfinite(X).all():
        row, column = np.argwhere(~np.isfinite(X))[0]
        raise Invalid(f"contexts[{row}][{column}] must be a finite number, got "
                      f"{X[row, column]}", f"contexts[{row}][{column}]")
    if excluded:
        check_excluded_rows(excluded, K)
    # the parsed form (as parse_decide's): an array and ints where the wire has lists of numbers
    return DecideRequest(contexts=X, excluded=excluded,  # type: ignore[arg-type]
                         decision_id=decision_id, default_action=default_action)
