"""Lockstep simulation: R replicates of one policy advanced together.

* :mod:`.simulate` — :func:`simulate_batch`, bit-for-bit the sequential runs.
* :mod:`.environments` — batched environments ((R, K, d) rounds drawn ahead in
  blocks) and their registry (:func:`register_batch_environment`).
* :mod:`.backend` — the array module (numpy; CuPy or torch on a GPU).
* :mod:`.kernels` — the :class:`BatchKernel` interface and shared batched pieces.
* :mod:`.linucb`, :mod:`.ucb_glm` — the built-in kernels.
* :mod:`.registry` — policy class → kernel (:func:`register_batch_kernel`).
"""

from .environments import register_batch_environment
from .kernels import BatchKernel, SequentialKernel
from .registry import has_batch_kernel, make_batch_kernel, register_batch_kernel
from .simulate import BatchSimulationResult, simulate_batch

__all__ = [
    "simulate_batch",
    "BatchSimulationResult",
    "BatchKernel",
    "SequentialKernel",
    "register_batch_kernel",
    "make_batch_kernel",
    "has_batch_kernel",
    "register_batch_environment",
]
