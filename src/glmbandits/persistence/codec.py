"""A policy's object graph as (a JSON tree, named numpy arrays), and back, exactly.

The tree holds the structure and the small values; every numpy array becomes a
named entry of a separate dict (stored as ``.npy`` members of an ``.npz``, read
without pickle). Decoding builds objects with ``cls.__new__(cls)`` and never
calls ``__init__``; the only code it runs is the ``__setstate__`` of an allowed
class (:mod:`.allowed`).

Node types of the tree (a JSON object always carries its type under ``"$"``):

* ``null``, ``true``/``false``, JSON numbers, JSON strings: ``None``, ``bool``,
  ``int`` (``|i| <= 2**53``), finite ``float`` (written as Python's shortest
  round-trip repr, so ``-0.0`` stays ``-0.0``), ``str``;
* ``{"$": "int", "v": "-0x1f"}``: a larger int, in hex (at most :data:`MAX_INT_BITS` bits);
  ``{"$": "float", "v": "nan" | "inf" | "-inf"}``: what JSON cannot hold;
* a JSON array: a ``list``; ``{"$": "tuple", "items": [...]}``;
  ``{"$": "dict", "items": [[key, value], ...]}`` (any encodable keys, order kept);
* ``{"$": "ints" | "floats", "array": name}``: a list of more than
  :data:`COMPACT_MIN` plain ints (in the int64 range) or floats, as one
  int64/float64 array;
* ``{"$": "ndarray", "array": name}``; ``{"$": "scalar", "dtype": "<f8", "hex": ...}``
  (the scalar's bytes);
* ``{"$": "generator", "bit_generator": "PCG64", "state": ..., "seed_seq": ...}``,
  ``{"$": "seedseq", "entropy": ..., "spawn_key": ..., "pool_size": ...,
  "n_children_spawned": ...}``;
* ``{"$": "object", "module": ..., "qualname": ..., "state": ..., ["slots": ...]}``;
* ``{"$": "ref", "id": n}``: the n-th memoised object again.

Shared references and identity are kept as pickle keeps them: strings, lists,
tuples, dicts, arrays, numpy scalars, generators, seed sequences and objects
are numbered in the order they are first met (the encoder and the decoder walk
the tree in the same order, so the numbers are not written), and a second
meeting is a ``ref``.

Examples
--------
>>> import numpy as np
>>> shared = np.arange(3.0)
>>> tree, arrays = encode({"a": shared, "b": shared, "x": float("-inf")})
>>> tree
{'$': 'dict', 'items': [['a', {'$': 'ndarray', 'array': 'a0'}], ['b', {'$': 'ref', 'id': 2}], ['x', {'$': 'float', 'v': '-inf'}]]}
>>> back = decode(tree, arrays)
>>> back["a"] is back["b"], back["x"]
(True, -inf)
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import numpy as np

from ._nodes import (ALLOWED_BIT_GENERATORS, COMPACT_MIN, MAX_INT_BITS, MalformedStateError,
                     check_dtype)
from .decoder import Decoder
from .encoder import Encoder

__all__ = ["COMPACT_MIN", "ALLOWED_BIT_GENERATORS", "MAX_INT_BITS", "MalformedStateError", "encode",
           "decode",
           "to_json_value", "from_json_value", "dumps_json", "loads_json", "check_dtype"]


def encode(obj: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """Split ``obj`` into a JSON-able tree and a dict of named arrays.

    Parameters
    ----------
    obj : object
        A policy, or anything made of the supported types.

    Returns
    -------
    tree : JSON-able
        The structure; arrays appear as ``{"$": "ndarray", "array": name}``.
    arrays : dict of str to ndarray
        The arrays themselves (not copied), named ``a0``, ``a1``, ... in the
        order they are met.

    Raises
    ------
    TypeError
        A value of an unsupported type, or an instance of a class that is not
        allowed (the message gives its path, e.g. ``policy.estimate_.solver_``).

    Examples
    --------
    >>> tree, arrays = encode([1.5, 2 ** 70, (None, "s")])
    >>> tree, arrays
    ([1.5, {'$': 'int', 'v': '0x400000000000000000'}, {'$': 'tuple', 'items': [None, 's']}], {})
    """
    encoder = Encoder(inline_arrays=False)
    tree = encoder.encode(obj, "policy")
    return tree, encoder.arrays


def decode(tree: Any, arrays: Mapping[str, np.ndarray], max_bytes: int | None = None) -> Any:
    """Rebuild the object graph of :func:`encode`.

    Every array of ``arrays`` must be used exactly once. With ``max_bytes``, the
    compact lists (``ints``, ``floats``) hold at most ``max_bytes //
    COMPACT_ITEM_BYTES`` items together (each becomes a Python number).

    Raises
    ------
    MalformedStateError
        An unknown node, a dangling array or ref name, an unused array, a class
        that is not allowed, a bad value.
    """
    decoder = Decoder(arrays, inline_arrays=False, max_bytes=max_bytes)
    try:
        value = decoder.decode(tree)
    except RecursionError:
        raise MalformedStateError("the tree is nested too deeply") from None
    unused = sorted(set(arrays) - decoder.used)
    if unused:
        raise MalformedStateError(f"arrays {unused} are not used by the state")
    return value


def to_json_value(obj: Any) -> Any:
    """``obj`` as one self-contained JSON value (arrays inline, base64).

    For small values such as a policy's constructor parameters in a manifest.

    Examples
    --------
    >>> import numpy as np
    >>> to_json_value({"seed": 3, "alpha": float("nan")})
    {'$': 'dict', 'items': [['seed', 3], ['alpha', {'$': 'float', 'v': 'nan'}]]}
    >>> rng = np.random.default_rng(1)
    >>> value = to_json_value(rng)
    >>> value["$"], value["bit_generator"]
    ('generator', 'PCG64')
    >>> int(from_json_value(value).integers(10 ** 6)) == int(rng.integers(10 ** 6))
    True
    """
    return Encoder(inline_arrays=True).encode(obj, "value")


def from_json_value(tree: Any) -> Any:
    """The value of :func:`to_json_value`."""
    return Decoder({}, inline_arrays=True).decode(tree)


def _refuse_constant(name: str) -> Any:
    raise MalformedStateError(f"JSON constant {name} is not allowed")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise MalformedStateError("a JSON object repeats a key")
    return result


def dumps_json(tree: Any) -> bytes:
    """Strict UTF-8 JSON (no NaN or Infinity tokens)."""
    return json.dumps(tree, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode()


def loads_json(data: bytes | bytearray) -> Any:
    """Parse strict JSON: NaN/Infinity tokens and repeated keys are refused.

    Raises
    ------
    ValueError
        Bad UTF-8 or bad JSON (:class:`MalformedStateError` for the refusals).
    """
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_refuse_constant,
                          object_pairs_hook=_unique_keys)
    except RecursionError:
        raise MalformedStateError("the JSON is nested too deeply") from None
