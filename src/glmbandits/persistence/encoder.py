"""The codec's encoder: an object graph to a JSON tree plus named arrays (see :mod:`.codec`)."""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

from ._nodes import (ALLOWED_BIT_GENERATORS, COMPACT_MIN, MAX_DEPTH, MAX_INT_BITS, check_dtype,
                     slot_names)
from .allowed import is_allowed_class, qualified_name

__all__ = ["Encoder"]

_MAX_JSON_INT = 2 ** 53
_INT64 = (-(2 ** 63), 2 ** 63 - 1)
_OBJECT_GETSTATE = getattr(object, "__getstate__", None)


class Encoder:
    """One encoding: the memo, the arrays met so far, inline or named arrays."""

    def __init__(self, inline_arrays: bool) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self._memo: dict[int, int] = {}
        self._keep: list[Any] = []  # keeps every memoised object alive: no id() reuse
        self._building: set[int] = set()
        self._inline = inline_arrays

    def _remember(self, obj: Any) -> None:
        self._memo[id(obj)] = len(self._keep)
        self._keep.append(obj)

    def encode(self, obj: Any, path: str, depth: int = 0) -> Any:
        kind = type(obj)
        if obj is None or kind is bool:
            return obj
        if kind is int:
            if -_MAX_JSON_INT <= obj <= _MAX_JSON_INT:
                return obj
            if obj.bit_length() > MAX_INT_BITS:
                raise ValueError(f"save: {path} is an int of {obj.bit_length()} bits, more than "
                                 f"a model file holds ({MAX_INT_BITS})")
            return {"$": "int", "v": hex(obj)}
        if kind is float:
            if math.isfinite(obj):
                return obj
            return {"$": "float", "v": "nan" if obj != obj else ("inf" if obj > 0 else "-inf")}
        if depth > MAX_DEPTH:
            raise ValueError(f"save: {path} is nested more than {MAX_DEPTH} levels deep")
        number = self._memo.get(id(obj))
        if number is not None:
            if number in self._building:
                raise ValueError(f"save: {path} refers back to a tuple that contains it")
            return {"$": "ref", "id": number}
        if kind is str:
            self._remember(obj)
            return obj
        if kind is list:
            return self._list(obj, path, depth)
        if kind is tuple:
            self._remember(obj)
            number = len(self._keep) - 1
            self._building.add(number)
            items = [self.encode(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(obj)]
            self._building.discard(number)
            return {"$": "tuple", "items": items}
        if kind is dict:
            self._remember(obj)
            return {"$": "dict", "items": [
                [self.encode(k, f"{path} (key {k!r})", depth + 1),
                 self.encode(v, f"{path}[{k!r}]", depth + 1)] for k, v in obj.items()]}
        if kind is np.ndarray:
            check_dtype(obj.dtype, f"save: {path}")
            self._remember(obj)
            return self._array(obj)
        if isinstance(obj, np.generic):
            check_dtype(obj.dtype, f"save: {path}")
            self._remember(obj)
            return {"$": "scalar", "dtype": obj.dtype.str, "hex": obj.tobytes().hex()}
        if kind is np.random.Generator:
            return self._generator(obj, path, depth)
        if kind is np.random.SeedSequence:
            self._remember(obj)
            return {"$": "seedseq",
                    "entropy": self.encode(obj.entropy, f"{path}.entropy", depth + 1),
                    "spawn_key": self.encode(tuple(obj.spawn_key), f"{path}.spawn_key", depth + 1),
                    "pool_size": int(obj.pool_size),
                    "n_children_spawned": int(obj.n_children_spawned)}
        if not isinstance(obj, type) and is_allowed_class(kind):
            return self._object(obj, path, depth)
        raise TypeError(
            f"save: {path} is a {qualified_name(kind)}, which a model file cannot hold (allowed: "
            "None, bool, int, float, str, list, tuple, dict, numpy arrays and scalars, "
            "Generator, SeedSequence and allowed classes; register your own classes with "
            "glmbandits.persistence.register_class)")

    def _list(self, obj: list, path: str, depth: int) -> Any:
        self._remember(obj)
        if len(obj) >= COMPACT_MIN and not self._inline:
            if all(type(v) is int for v in obj) and _INT64[0] <= min(obj) and max(obj) <= _INT64[1]:
                return {"$": "ints", "array": self._array(np.array(obj, dtype=np.int64))["array"]}
            if all(type(v) is float for v in obj):
                return {"$": "floats",
                        "array": self._array(np.array(obj, dtype=np.float64))["array"]}
        return [self.encode(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(obj)]

    def _array(self, array: np.ndarray) -> dict[str, Any]:
        if self._inline:
            fortran = bool(array.flags.f_contiguous and not array.flags.c_contiguous)
            data = (array.T if fortran else array).tobytes(order="C")
            return {"$": "ndarray", "dtype": array.dtype.str, "shape": list(array.shape),
                    "fortran": fortran, "b64": base64.b64encode(data).decode("ascii")}
        name = f"a{len(self.arrays)}"
        self.arrays[name] = array
        return {"$": "ndarray", "array": name}

    def _generator(self, obj: np.random.Generator, path: str, depth: int) -> Any:
        self._remember(obj)
        bit_generator = obj.bit_generator
        name = type(bit_generator).__name__
        if name not in ALLOWED_BIT_GENERATORS or getattr(np.random, name) is not type(bit_generator):
            raise TypeError(f"save: {path} is a Generator over {name}; allowed bit generators: "
                            f"{', '.join(ALLOWED_BIT_GENERATORS)}")
        seed_seq = getattr(bit_generator, "seed_seq", getattr(bit_generator, "_seed_seq", None))
        return {"$": "generator", "bit_generator": name,
                "state": self.encode(bit_generator.state, f"{path}.bit_generator.state", depth + 1),
                "seed_seq": self.encode(seed_seq if isinstance(seed_seq, np.random.SeedSequence)
                                        else None, f"{path}.bit_generator.seed_seq", depth + 1)}

    def _object(self, obj: Any, path: str, depth: int) -> Any:
        self._remember(obj)
        cls = type(obj)
        node: dict[str, Any] = {"$": "object", "module": cls.__module__, "qualname": cls.__qualname__}
        getstate = getattr(cls, "__getstate__", None)
        if getstate is not None and getstate is not _OBJECT_GETSTATE:
            node["state"] = self.encode(obj.__getstate__(), f"{path}.__getstate__()", depth + 1)
            return node
        node["state"] = self.encode(getattr(obj, "__dict__", None), path, depth + 1)
        slots = {name: getattr(obj, name) for name in slot_names(cls) if hasattr(obj, name)}
        if slots:
            node["slots"] = self.encode(slots, path, depth + 1)
        return node

