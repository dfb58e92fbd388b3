"""The optional compiled (numba) backend of the per-round arithmetic.

``backend="numba"`` (on :class:`~glmbandits.LinUCB`, :class:`~glmbandits.UCBGLM`
and :func:`~glmbandits.simulate_batch`) runs the round's scores, its argmax and
the Sherman–Morrison step as compiled loops
(:mod:`glmbandits.estimation._numba_kernels`) instead of a dozen small numpy
calls, which is where a round's time goes at small d and K. numpy stays the
default and the reference; numba comes with the ``compiled`` extra
(``pip install 'glmbandits[compiled]'``) and is imported only when asked for.
The first call of each function compiles it (a few seconds), once per machine:
the machine code is cached on disk next to the module.

References
----------
Li, Lu & Zhou (2017), "Provably Optimal Algorithms for Generalized Linear
Contextual Bandits", ICML, Algorithm 1 steps 2–3.

Examples
--------
>>> from glmbandits.estimation.compiled import ROUND_BACKENDS, check_backend
>>> ROUND_BACKENDS
('numpy', 'numba')
>>> check_backend("numpy", "LinUCB")
'numpy'
>>> check_backend("fortran", "LinUCB")
Traceback (most recent call last):
...
ValueError: LinUCB: backend must be one of ['numpy', 'numba'], got 'fortran'
"""

from __future__ import annotations

import importlib.util
from types import ModuleType
from typing import Any

__all__ = ["ROUND_BACKENDS", "check_backend", "kernels", "numba_available"]

#: The backends of a single policy's round: numpy (default, the reference) or numba.
ROUND_BACKENDS = ("numpy", "numba")

_KERNELS: ModuleType | None = None


def numba_available() -> bool:
    """Whether numba can be imported (without importing it)."""
    return importlib.util.find_spec("numba") is not None


def kernels(owner: str = "backend 'numba'") -> ModuleType:
    """The compiled kernels module, importing numba on the first call.

    Raises
    ------
    ImportError
        When numba is not installed; the message names ``owner`` and the extra.
    """
    global _KERNELS
    if _KERNELS is None:
        if not numba_available():
            raise ImportError(f"{owner}: backend 'numba' needs numba, which is not installed "
                              "(pip install 'glmbandits[compiled]')")
        from . import _numba_kernels
        _KERNELS = _numba_kernels
    return _KERNELS


def check_backend(backend: Any, owner: str) -> str:
    """A policy's ``backend`` argument, checked: ``"numpy"`` or ``"numba"`` (installed).

    Raises
    ------
    TypeError
        ``backend`` is not a string.
    ValueError
        An unknown name.
    ImportError
        ``"numba"`` without numba installed (the message names the extra).
    """
    if not isinstance(backend, str):
        raise TypeError(f"{owner}: backend must be a str, got {type(backend).__name__}")
    if backend not in ROUND_BACKENDS:
        raise ValueError(f"{owner}: backend must be one of {list(ROUND_BACKENDS)}, "
                         f"got {backend!r}")
    if backend == "numba":
        kernels(owner)
    return backend
