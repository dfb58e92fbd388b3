"""Bandit policies: one module per algorithm, all behind :class:`~.base.Policy`."""

from .base import ActionScores, Policy
from .linucb import LinUCB
from .random_policy import RandomPolicy
from .supcb_glm import SupCBGLM
from .ucb_glm import UCBGLM

__all__ = ["ActionScores", "Policy", "UCBGLM", "SupCBGLM", "LinUCB", "RandomPolicy"]
