"""Lockstep simulation: R replicates of one policy advanced together.

* :mod:`.simulate` — :func:`simulate_batch`, bit-for-bit the sequential runs.
* :mod:`.backend` — the array module (numpy; CuPy or torch on a GPU).
* :mod:`.kernels` — the :class:`BatchKernel` interface and shared batched pieces.
* :mod:`.linucb`, :mod:`.ucb_glm` — the built-in kernels.
* :mod:`.registry` — policy class → kernel (:func:`register_batch_kernel`).
"""

from .kernels import BatchKernel, SequentialKernel
from .registry import make_batch_kernel, register_batch_kernel
from .simulate import BatchSimulationResult, simulate_batch

__all__ = [
    "simulate_batch",
    "BatchSimulationResult",
    "BatchKernel",
    "SequentialKernel",
    "register_batch_kernel",
    "make_batch_kernel",
]
