"""The codec's decoder: a JSON tree plus named arrays back to the object graph (see :mod:`.codec`).

Objects are created with ``cls.__new__(cls)`` for allowed classes only; the only
code run is an allowed class's ``__setstate__``.
"""

from __future__ import annotations

import base64
import math
import sys
from typing import Any, Mapping

import numpy as np

from ._nodes import (ALLOWED_BIT_GENERATORS, COMPACT_ITEM_BYTES, MAX_DEPTH, MAX_INT_BITS, MAX_POOL_SIZE,
                     MAX_SEED_WORDS, SPECIAL_FLOATS, MalformedStateError, check_dtype, slot_names)
from .allowed import qualified_name, resolve_class

__all__ = ["Decoder"]

_UNDER_CONSTRUCTION = object()


class Decoder:
    """One decoding: the memo, and which named arrays were used."""

    def __init__(self, arrays: Mapping[str, np.ndarray], inline_arrays: bool,
                 max_bytes: int | None = None) -> None:
        self._arrays = arrays
        self._inline = inline_arrays
        self._memo: list[Any] = []
        self.used: set[str] = set()
        self._max_bytes = max_bytes
        self._list_items = 0  # items of the compact lists so far

    def _array(self, node: dict[str, Any], where: str) -> np.ndarray:
        if "array" not in node:
            if not self._inline:
                raise MalformedStateError(f"{where}: an array must be named, not inline")
            return _inline_array(node, where)
        name = node["array"]
        if not isinstance(name, str) or name not in self._arrays:
            raise MalformedStateError(f"{where}: no array named {name!r} (dangling array name)")
        if name in self.used:
            raise MalformedStateError(f"{where}: array {name!r} is used twice")
        self.used.add(name)
        return self._arrays[name]

    def decode(self, node: Any, depth: int = 0) -> Any:
        if node is None or type(node) in (bool, int):
            return node
        if type(node) is float:
            if not math.isfinite(node):
                raise MalformedStateError("a non-finite float must be tagged")
            return node
        if depth > MAX_DEPTH:
            raise MalformedStateError(f"the tree is nested more than {MAX_DEPTH} levels deep")
        if type(node) is str:
            node = sys.intern(node)  # as attribute names and literals are in the original
            self._memo.append(node)
            return node
        if type(node) is list:
            result: list[Any] = []
            self._memo.append(result)
            result.extend(self.decode(item, depth + 1) for item in node)
            return result
        if type(node) is not dict:
            raise MalformedStateError(f"unexpected JSON value of type {type(node).__name__}")
        tag = node.get("$")
        handler = _HANDLERS.get(tag) if isinstance(tag, str) else None
        if handler is None or not isinstance(tag, str):
            raise MalformedStateError(f"unknown node type {tag!r}")
        expected = _FIELDS[tag]
        if not (set(node) - {"$"} <= expected[0] | expected[1]) or not expected[0] <= set(node):
            raise MalformedStateError(f"a {tag!r} node needs fields {sorted(expected[0])} "
                                      f"(optional {sorted(expected[1])}), got {sorted(node)}")
        return handler(self, node, depth)

    def _ref(self, node: dict, depth: int) -> Any:
        number = node["id"]
        if type(number) is not int or not 0 <= number < len(self._memo):
            raise MalformedStateError(f"ref {number!r} names nothing decoded so far (dangling ref)")
        value = self._memo[number]
        if value is _UNDER_CONSTRUCTION:
            raise MalformedStateError(f"ref {number} points into a value under construction")
        return value

    def _int(self, node: dict, depth: int) -> int:
        value = node["v"]
        if type(value) is not str or not value.lstrip("-").startswith("0x"):
            raise MalformedStateError(f"a large int must be a hex string, got {value[:40]!r}")
        digits = len(value) - value.index("x") - 1
        if 4 * digits > MAX_INT_BITS + 3:  # checked on the text, before the int is built
            raise MalformedStateError(f"an int of {4 * digits} bits, more than {MAX_INT_BITS}")
        number = int(value, 16)
        if number.bit_length() > MAX_INT_BITS:
            raise MalformedStateError(f"an int of {number.bit_length()} bits, more than "
                                      f"{MAX_INT_BITS}")
        return number

    def _float(self, node: dict, depth: int) -> float:
        value = SPECIAL_FLOATS.get(node["v"]) if isinstance(node["v"], str) else None
        if value is None:
            raise MalformedStateError(f"a tagged float must be nan, inf or -inf, got {node['v']!r}")
        return value

    def _tuple(self, node: dict, depth: int) -> tuple:
        items = _list_field(node, "items")
        slot = len(self._memo)
        self._memo.append(_UNDER_CONSTRUCTION)
        value = tuple(self.decode(item, depth + 1) for item in items)
        self._memo[slot] = value
        return value

    def _dict(self, node: dict, depth: int) -> dict:
        items = _list_field(node, "items")
        result: dict[Any, Any] = {}
        self._memo.append(result)
        for pair in items:
            if type(pair) is not list or len(pair) != 2:
                raise MalformedStateError("dict items must be [key, value] pairs")
            key = self.decode(pair[0], depth + 1)
            try:
                hash(key)
            except TypeError as error:
                raise MalformedStateError(f"bad dict key: {error}") from None
            result[key] = self.decode(pair[1], depth + 1)
        return result

    def _compact(self, node: dict, depth: int) -> list:
        array = self._array(node, "a compact list")
        dtype = np.int64 if node["$"] == "ints" else np.float64
        if array.ndim != 1 or array.dtype != dtype:
            raise MalformedStateError(f"a compact {node['$']} list must be a 1-d {np.dtype(dtype)} "
                                      f"array, got {array.dtype} of shape {array.shape}")
        self._list_items += array.shape[0]
        if self._max_bytes is not None and (
                self._list_items > self._max_bytes // COMPACT_ITEM_BYTES):
            raise MalformedStateError(
                f"the state's compact lists hold {self._list_items} items, more than "
                f"{self._max_bytes // COMPACT_ITEM_BYTES} (max_bytes // {COMPACT_ITEM_BYTES}, "
                f"max_bytes = {self._max_bytes}: each item becomes a Python number)")
        value: list[Any] = array.tolist()
        self._memo.append(value)
        return value

    def _ndarray(self, node: dict, depth: int) -> np.ndarray:
        array = self._array(node, "ndarray")
        self._memo.append(array)
        return array

    def _scalar(self, node: dict, depth: int) -> np.generic:
        try:
            dtype = np.dtype(node["dtype"]) if isinstance(node["dtype"], str) else None
            raw = bytes.fromhex(node["hex"]) if isinstance(node["hex"], str) else None
        except (TypeError, ValueError) as error:
            raise MalformedStateError(f"bad numpy scalar: {error}") from None
        if dtype is None or raw is None:
            raise MalformedStateError("a numpy scalar needs a dtype string and a hex string")
        _checked_dtype(dtype)
        if len(raw) != dtype.itemsize:
            raise MalformedStateError(f"a {dtype} scalar needs {dtype.itemsize} bytes, got {len(raw)}")
        value: np.generic = (np.frombuffer(raw, dtype=dtype, count=1)[0] if dtype.itemsize
                             else dtype.type())
        self._memo.append(value)
        return value

    def _generator(self, node: dict, depth: int) -> np.random.Generator:
        name = node["bit_generator"]
        if name not in ALLOWED_BIT_GENERATORS:
            raise MalformedStateError(f"bit generator {name!r} is not allowed (allowed: "
                                      f"{', '.join(ALLOWED_BIT_GENERATORS)})")
        slot = len(self._memo)
        self._memo.append(_UNDER_CONSTRUCTION)
        state = self.decode(node["state"], depth + 1)
        seed_seq = self.decode(node["seed_seq"], depth + 1)
        if seed_seq is not None and type(seed_seq) is not np.random.SeedSequence:
            raise MalformedStateError("a generator's seed_seq must be a SeedSequence or null")
        cls = getattr(np.random, name)
        try:
            bit_generator = cls(seed_seq) if seed_seq is not None else cls(0)
            bit_generator.state = state
        except (TypeError, ValueError, KeyError) as error:
            raise MalformedStateError(f"bad {name} state: {error}") from None
        generator = np.random.Generator(bit_generator)
        self._memo[slot] = generator
        return generator

    def _seedseq(self, node: dict, depth: int) -> np.random.SeedSequence:
        slot = len(self._memo)
        self._memo.append(_UNDER_CONSTRUCTION)
        entropy = self.decode(node["entropy"], depth + 1)
        spawn_key = self.decode(node["spawn_key"], depth + 1)
        _check_seed_sequence(entropy, spawn_key, node["pool_size"], node["n_children_spawned"])
        try:
            value = np.random.SeedSequence(entropy, spawn_key=spawn_key,
                                           pool_size=node["pool_size"],
                                           n_children_spawned=node["n_children_spawned"])
        except (TypeError, ValueError, OverflowError) as error:
            raise MalformedStateError(f"bad SeedSequence: {error}") from None
        self._memo[slot] = value
        return value

    def _object(self, node: dict, depth: int) -> Any:
        try:
            cls: Any = resolve_class(node["module"], node["qualname"])  # any allowed class
        except (LookupError, ImportError) as error:
            raise MalformedStateError(str(error)) from None
        obj = cls.__new__(cls)
        self._memo.append(obj)
        state = self.decode(node["state"], depth + 1)
        slots = self.decode(node["slots"], depth + 1) if "slots" in node else {}
        if type(slots) is not dict or not set(slots) <= set(slot_names(cls)):
            raise MalformedStateError(f"{qualified_name(cls)}: bad slot values")
        setstate = getattr(cls, "__setstate__", None)
        if setstate is not None:
            obj.__setstate__(state)
        elif state is not None:
            if type(state) is not dict or not all(type(k) is str for k in state):
                raise MalformedStateError(f"{qualified_name(cls)}: the state must be a dict "
                                          "of attribute names")
            vars(obj).update(state)
        for name, value in slots.items():
            object.__setattr__(obj, name, value)
        return obj


_HANDLERS = {"ref": Decoder._ref, "int": Decoder._int, "float": Decoder._float,
             "tuple": Decoder._tuple, "dict": Decoder._dict, "ints": Decoder._compact,
             "floats": Decoder._compact, "ndarray": Decoder._ndarray,
             "scalar": Decoder._scalar, "generator": Decoder._generator,
             "seedseq": Decoder._seedseq, "object": Decoder._object}
#: Required and optional fields of each node type (besides "$").
_FIELDS: dict[str, tuple[set[str], set[str]]] = {
    "ref": ({"id"}, set()), "int": ({"v"}, set()), "float": ({"v"}, set()),
    "tuple": ({"items"}, set()), "dict": ({"items"}, set()), "ints": ({"array"}, set()),
    "floats": ({"array"}, set()),
    "ndarray": (set(), {"array", "dtype", "shape", "fortran", "b64"}),
    "scalar": ({"dtype", "hex"}, set()),
    "generator": ({"bit_generator", "state", "seed_seq"}, set()),
    "seedseq": ({"entropy", "spawn_key", "pool_size", "n_children_spawned"}, set()),
    "object": ({"module", "qualname", "state"}, {"slots"}),
}


def _seed_words(value: Any, name: str) -> int:
    """The 32-bit words numpy makes of a SeedSequence's ``entropy`` or ``spawn_key``."""
    if value is None:
        return 0
    if type(value) is np.ndarray:
        if value.dtype.kind not in "iu" or (value.size and int(value.min()) < 0):
            raise MalformedStateError(f"a SeedSequence's {name} must hold non-negative ints, "
                                      f"got an array of {value.dtype}")
        return int(value.size * max(1, value.dtype.itemsize // 4))
    words = 0
    for item in value if type(value) in (list, tuple) else [value]:
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, (int, np.integer)) \
                or item < 0:
            raise MalformedStateError(f"a SeedSequence's {name} must hold non-negative ints, "
                                      f"got {type(item).__name__} {str(item)[:40]}")
        words += max(1, -(-int(item).bit_length() // 32))
    return words


def _check_seed_sequence(entropy: Any, spawn_key: Any, pool_size: Any,
                         n_children_spawned: Any) -> None:
    """Bound what numpy's SeedSequence costs to build (its time grows as pool_size²)."""
    if type(pool_size) is not int or not 4 <= pool_size <= MAX_POOL_SIZE:
        raise MalformedStateError(f"a SeedSequence's pool_size must lie in [4, {MAX_POOL_SIZE}], "
                                  f"got {str(pool_size)[:40]}")
    if type(n_children_spawned) is not int or not 0 <= n_children_spawned < 2 ** 64:
        raise MalformedStateError("a SeedSequence's n_children_spawned must lie in [0, 2**64), "
                                  f"got {str(n_children_spawned)[:40]}")
    if type(spawn_key) is not tuple:
        raise MalformedStateError(f"a SeedSequence's spawn_key must be a tuple, got "
                                  f"{type(spawn_key).__name__}")
    words = _seed_words(entropy, "entropy") + _seed_words(spawn_key, "spawn_key")
    if words > MAX_SEED_WORDS:
        raise MalformedStateError(f"a SeedSequence's entropy and spawn_key hold {words} 32-bit "
                                  f"words, more than {MAX_SEED_WORDS}")


def _list_field(node: dict, name: str) -> list:
    value = node[name]
    if type(value) is not list:
        raise MalformedStateError(f"the {name!r} of a {node['$']!r} node must be a list")
    return value


def _checked_dtype(dtype: np.dtype) -> None:
    try:
        check_dtype(dtype, "load")
    except TypeError as error:
        raise MalformedStateError(str(error)) from None


def _inline_array(node: dict, where: str) -> np.ndarray:
    try:
        dtype = np.dtype(node["dtype"])
        shape = tuple(node["shape"])
        data = base64.b64decode(node["b64"], validate=True)
    except (KeyError, TypeError, ValueError) as error:
        raise MalformedStateError(f"{where}: bad inline array: {error}") from None
    _checked_dtype(dtype)
    if not all(type(n) is int and n >= 0 for n in shape):
        raise MalformedStateError(f"{where}: bad inline array shape {shape}")
    fortran = node.get("fortran", False) is True
    try:
        flat = np.frombuffer(data, dtype=dtype).copy()
        array = flat.reshape(shape[::-1]).T if fortran else flat.reshape(shape)
    except ValueError as error:
        raise MalformedStateError(f"{where}: bad inline array: {error}") from None
    return array

