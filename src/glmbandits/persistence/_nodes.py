"""What the codec's encoder and decoder share: limits, allowed dtypes, the error class."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["COMPACT_MIN", "COMPACT_ITEM_BYTES", "ALLOWED_BIT_GENERATORS", "MAX_DEPTH", "MAX_INT_BITS", "MAX_POOL_SIZE",
           "MAX_SEED_WORDS", "MalformedStateError", "check_dtype", "slot_names"]

#: Lists of plain ints or floats with at least this many items are stored as one array.
COMPACT_MIN = 8
#: What one item of such a list costs once decoded (a Python int or float and its pointer):
#: the decoder builds at most ``max_bytes // COMPACT_ITEM_BYTES`` of them.
COMPACT_ITEM_BYTES = 36
#: The bit generators a ``numpy.random.Generator`` in a model file may use.
ALLOWED_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
#: Dtype kinds an array or scalar may have: bool, int, uint, float, complex, unicode.
_KINDS = "biufcU"
#: The deepest nesting the encoder writes and the decoder reads.
MAX_DEPTH = 200
#: The largest ints the encoder writes and the decoder builds, in bits (numpy's generator
#: states use 128).
MAX_INT_BITS = 65_536
#: The largest ``SeedSequence.pool_size`` the decoder accepts (numpy's default is 4; building a
#: SeedSequence costs time proportional to pool_size², hours at a few million).
MAX_POOL_SIZE = 1024
#: The most 32-bit words a ``SeedSequence``'s entropy and spawn key may hold together.
MAX_SEED_WORDS = 4096
SPECIAL_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class MalformedStateError(ValueError):
    """The tree cannot be decoded: an unknown node, a dangling name, a refused class."""


def check_dtype(dtype: np.dtype, where: str) -> None:
    """Refuse dtypes a model file may not hold (object, structured, datetime, void...).

    Raises
    ------
    TypeError
        Naming ``where``, the allowed kinds and the dtype given.

    Examples
    --------
    >>> check_dtype(np.dtype("<f8"), "x")
    >>> check_dtype(np.dtype(object), "policy.x_")
    Traceback (most recent call last):
    TypeError: policy.x_: arrays must have a bool, int, uint, float, complex or fixed-width unicode dtype, got object
    """
    if dtype.kind not in _KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise TypeError(f"{where}: arrays must have a bool, int, uint, float, complex or "
                        f"fixed-width unicode dtype, got {dtype}")


def slot_names(cls: type) -> list[str]:
    """The ``__slots__`` names of ``cls`` and its bases (without ``__dict__``/``__weakref__``)."""
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in [slots] if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and name not in names:
                names.append(name)
    return names
