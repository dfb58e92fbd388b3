"""A swappable array module for the lockstep batch simulator: numpy, numba, CuPy or torch.

Only the handful of operations the batch kernels need are wrapped, so that the
same kernel code runs on numpy arrays (the default, always available), on CuPy
arrays (numpy's API on an NVIDIA GPU) or on torch tensors (CPU or GPU). The
``"numba"`` backend keeps numpy arrays and runs each round's scores, argmax and
rank-one steps as compiled loops (:mod:`glmbandits.estimation.compiled`, exposed
as :attr:`ArrayBackend.compiled`). numba, CuPy and torch are optional: they are
imported only when asked for. What each backend guarantees against numpy is in
``docs/performance.md`` ("Backends and their guarantees").
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special as _special

__all__ = ["ArrayBackend", "get_backend", "BACKEND_NAMES"]

#: Names accepted by :func:`get_backend`.
BACKEND_NAMES = ("numpy", "numba", "cupy", "torch")


class ArrayBackend:
    """The few array operations of the batch kernels, for one array module.

    Parameters
    ----------
    name : {"numpy", "numba", "cupy", "torch"}
    module : module
        The imported array module (numpy for ``"numba"``).
    device : str or None
        torch device (``"cuda"`` when available, else ``"cpu"``); unused otherwise.
    compiled : module or None
        ``"numba"``: the compiled kernels
        (:func:`glmbandits.estimation.compiled.kernels`) the batch kernels call
        for their rounds; None for the array modules.
    """

    def __init__(self, name: str, module: Any, device: str | None = None,
                 compiled: Any = None) -> None:
        self.name = name
        self.xp = module
        self.device = device
        self.compiled = compiled

    # -- conversions ---------------------------------------------------------------
    def asarray(self, array: Any) -> Any:
        """Host (numpy) data -> a float64 array of this module."""
        if self.name == "torch":
            return self.xp.as_tensor(np.asarray(array, dtype=np.float64), device=self.device)
        return self.xp.asarray(array, dtype=np.float64)

    def to_numpy(self, array: Any) -> np.ndarray:
        """An array of this module (or already a numpy array) -> a numpy array on the host."""
        if isinstance(array, np.ndarray):
            return array
        host: np.ndarray
        if self.name == "torch":
            host = array.detach().cpu().numpy()
        elif self.name == "cupy":
            host = self.xp.asnumpy(array)
        else:
            host = np.asarray(array)
        return host

    def copy(self, array: Any) -> Any:
        return array.clone() if self.name == "torch" else array.copy()

    # -- arithmetic --------------------------------------------------------------------
    def einsum(self, subscripts: str, *operands: Any) -> Any:
        return self.xp.einsum(subscripts, *operands)

    def matmul(self, a: Any, b: Any) -> Any:
        return self.xp.matmul(a, b)

    def sqrt_positive(self, array: Any) -> Any:
        """√max(array, 0)."""
        if self.name == "torch":
            return self.xp.sqrt(self.xp.clamp(array, min=0.0))
        return self.xp.sqrt(self.xp.maximum(array, 0.0))

    def log1p(self, array: Any) -> Any:
        return self.xp.log1p(array)

    def sigmoid(self, array: Any) -> Any:
        """The logistic function 1 / (1 + e^{-z}), elementwise."""
        if self.name == "torch":
            return self.xp.sigmoid(array)
        if self.name == "cupy":
            from cupyx.scipy import special as cupy_special
            return cupy_special.expit(array)
        if array.size < 512:
            return _special.expit(array)
        # 1 / (1 + e^{-z}) in place: ~3x faster than expit on long arrays, same to ~1 ulp
        out = np.negative(array)
        np.minimum(out, 700.0, out=out)  # e^{700} is finite: no overflow warning
        np.exp(out, out=out)
        out += 1.0
        return np.reciprocal(out, out=out)

    def solve(self, a: Any, b: Any) -> Any:
        """Batched ``a⁻¹b`` for a of shape (..., d, d) and b of shape (..., d, k)."""
        return self.xp.linalg.solve(a, b)

    def transpose_last(self, array: Any) -> Any:
        """Swap the last two axes (a view)."""
        return array.transpose(-1, -2) if self.name == "torch" else self.xp.swapaxes(array, -1, -2)

    def max_abs_rows(self, array: Any) -> Any:
        """max |array[i, ...]| over all axes but the first, shape (rows,)."""
        axes = tuple(range(1, array.ndim))
        if self.name == "torch":
            return self.xp.amax(self.xp.abs(array), dim=axes)
        return self.xp.abs(array).max(axis=axes)

    def index(self, rows: np.ndarray) -> Any:
        """Host integer indices as an index of this module's arrays."""
        if self.name == "torch":
            return self.xp.as_tensor(rows, device=self.device)
        return rows if self.name == "numpy" else self.xp.asarray(rows)

    def __repr__(self) -> str:
        return f"ArrayBackend({self.name!r})"


def get_backend(backend: Any = "numpy") -> ArrayBackend:
    """The :class:`ArrayBackend` for ``"numpy"``, ``"numba"``, ``"cupy"``, ``"torch"`` or an instance.

    Raises
    ------
    ValueError
        For an unknown name.
    ImportError
        When numba, CuPy or torch is asked for but not installed.

    Examples
    --------
    >>> get_backend("numpy")
    ArrayBackend('numpy')
    >>> get_backend("jax")
    Traceback (most recent call last):
    ...
    ValueError: get_backend: backend must be one of ['numpy', 'numba', 'cupy', 'torch'], got 'jax'
    """
    if isinstance(backend, ArrayBackend):
        return backend
    if not isinstance(backend, str) or backend not in BACKEND_NAMES:
        raise ValueError(f"get_backend: backend must be one of {list(BACKEND_NAMES)}, "
                         f"got {backend!r}")
    if backend == "numpy":
        return ArrayBackend("numpy", np)
    if backend == "numba":
        from ..estimation.compiled import kernels
        return ArrayBackend("numba", np, compiled=kernels("get_backend"))
    if backend == "cupy":
        try:
            import cupy
        except ImportError as error:
            raise ImportError("get_backend: backend 'cupy' needs CuPy "
                              "(pip install cupy-cuda12x)") from error
        return ArrayBackend("cupy", cupy)
    try:
        import torch
    except ImportError as error:
        raise ImportError("get_backend: backend 'torch' needs PyTorch (pip install torch)") from error
    return ArrayBackend("torch", torch, "cuda" if torch.cuda.is_available() else "cpu")
