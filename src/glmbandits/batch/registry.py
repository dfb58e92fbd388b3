"""Which lockstep kernel runs a list of policies: the registry, filled where it is defined.

The built-in kernels (:class:`~glmbandits.batch.linucb.LinUCBKernel`,
:class:`~glmbandits.batch.ucb_glm.UCBGLMKernel`) are entered below, at import of
this module; the kernel modules themselves know nothing of the registry, so
there is no import circle. Other policy classes can add theirs with
:func:`register_batch_kernel`; anything unregistered runs in
:class:`~glmbandits.batch.kernels.SequentialKernel`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..policies.base import Policy
from ..policies.linucb import LinUCB
from ..policies.ucb_glm import UCBGLM
from .backend import ArrayBackend
from .kernels import BatchKernel, SequentialKernel
from .linucb import LinUCBKernel
from .ucb_glm import UCBGLMKernel

__all__ = ["BATCH_KERNELS", "register_batch_kernel", "make_batch_kernel", "has_batch_kernel"]

#: policy class -> (builder(policies, backend) -> kernel, supports(policies) -> bool)
BATCH_KERNELS: dict[type, tuple[Callable[..., BatchKernel], Callable[[Sequence[Any]], bool]]] = {}


def register_batch_kernel(policy_class: type, builder: Callable[..., BatchKernel],
                          supports: Callable[[Sequence[Any]], bool] | None = None) -> None:
    """Use ``builder(policies, backend)`` for lists of exactly ``policy_class`` instances.

    ``supports(policies)`` may decline a particular list (e.g. settings the kernel
    does not batch); those lists then run sequentially.
    """
    BATCH_KERNELS[policy_class] = (builder, supports or (lambda policies: True))


def _entry(policies: Sequence[Policy]) -> Callable[..., BatchKernel] | None:
    classes = {type(policy) for policy in policies}
    if len(classes) == 1 and all(getattr(p, "exploration_floor", 0.0) == 0.0 for p in policies):
        entry = BATCH_KERNELS.get(classes.pop())
        if entry is not None and entry[1](policies):
            return entry[0]
    return None


def has_batch_kernel(policies: Sequence[Policy]) -> bool:
    """Whether :func:`make_batch_kernel` would give these policies a kernel (not sequential)."""
    return _entry(policies) is not None


def make_batch_kernel(policies: Sequence[Policy], backend: ArrayBackend) -> BatchKernel:
    """The registered kernel when every policy has the same registered class, else sequential.

    Policies with an exploration floor (ε > 0) run sequentially: the kernels
    implement the rules without the floor's extra draws.
    """
    builder = _entry(policies)
    return SequentialKernel(policies, backend) if builder is None else builder(policies, backend)


register_batch_kernel(LinUCB, LinUCBKernel)
register_batch_kernel(UCBGLM, UCBGLMKernel, UCBGLMKernel.supports)
