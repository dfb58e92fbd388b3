"""glmbandits: generalized linear contextual bandits.

K actions per round, each with its own feature vector x_{t,a}; one unknown θ*
shared by all actions; the chosen action's reward has mean μ(x'θ*) for a
logistic, probit, linear or Poisson link. Implements Li, Lu & Zhou (2017),
"Provably Optimal Algorithms for Generalized Linear Contextual Bandits" (ICML).
"""

from . import families, theory
from ._version import __version__ as __version__
from .environments import SyntheticGLMEnv
from .estimation import GLMFit, fit_glm
from .exceptions import ConvergenceWarning, GLMBanditsWarning
from .families import GLMFamily, LinearFamily, LogisticFamily, PoissonFamily, ProbitFamily
from .policies import Decision, LinUCB, Policy, RandomPolicy, SupCBGLM, UCBGLM, UnknownDecisionError
from .policies import (GLMTSL, GLMUCB, GLOC, ECOLog, EpsilonGreedy, LaplaceTS,
                       RSGLinCB)
from .policies import OFUGLB
from .simulation import SimulationResult, simulate
from .batch import BatchSimulationResult, simulate_batch
from .data import EventLog

__all__ = [
    "families",
    "theory",
    "fit_glm",
    "GLMFit",
    "GLMFamily",
    "LogisticFamily",
    "ProbitFamily",
    "LinearFamily",
    "PoissonFamily",
    "Policy",
    "Decision",
    "UnknownDecisionError",
    "UCBGLM",
    "SupCBGLM",
    "LinUCB",
    "RandomPolicy",
    "GLMUCB",
    "GLMTSL",
    "LaplaceTS",
    "GLOC",
    "ECOLog",
    "OFUGLB",
    "RSGLinCB",
    "EpsilonGreedy",
    "SyntheticGLMEnv",
    "simulate",
    "SimulationResult",
    "simulate_batch",
    "BatchSimulationResult",
    "EventLog",
    "ConvergenceWarning",
    "GLMBanditsWarning",
]
