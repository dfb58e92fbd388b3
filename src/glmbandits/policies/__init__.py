"""Bandit policies: one module per algorithm, all behind :class:`~.base.Policy`."""

from .base import ActionScores, Policy
from .decisions import Decision, UnknownDecisionError
from .ecolog import ECOLog
from .epsilon_greedy import EpsilonGreedy
from .glm_tsl import GLMTSL
from .glm_ucb import GLMUCB
from .gloc import GLOC
from .laplace_ts import LaplaceTS
from .linucb import LinUCB
from .ofuglb import OFUGLB
from .random_policy import RandomPolicy
from .rs_glincb import RSGLinCB
from .supcb_glm import SupCBGLM
from .ucb_glm import UCBGLM

__all__ = ["ActionScores", "Policy", "Decision", "UnknownDecisionError", "UCBGLM", "SupCBGLM", "LinUCB", "RandomPolicy",
           "GLMUCB", "GLMTSL", "LaplaceTS", "GLOC", "ECOLog", "RSGLinCB", "EpsilonGreedy",
           "OFUGLB"]
