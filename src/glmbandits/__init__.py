"""glmbandits: generalized linear contextual bandits.

K actions per round, each with its own feature vector x_{t,a}; one unknown θ*
shared by all actions; the chosen action's reward has mean μ(x'θ*) for a
logistic, probit, linear or Poisson link. Implements Li, Lu & Zhou (2017),
"Provably Optimal Algorithms for Generalized Linear Contextual Bandits" (ICML).
"""

import importlib as _importlib
import importlib.util as _importlib_util
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from ._version import __version__ as __version__

#: Where each public name lives. They are imported on first use (PEP 562), so that
#: ``import glmbandits`` and ``glmbandits --version`` load neither numpy nor scipy.
_EXPORTS: dict[str, str] = {
    "families": ".families", "theory": ".theory",
    "SyntheticGLMEnv": ".environments",
    "GLMFit": ".estimation", "fit_glm": ".estimation",
    "ConvergenceWarning": ".exceptions", "GLMBanditsWarning": ".exceptions",
    "ModelFileError": ".exceptions",
    "GLMFamily": ".families", "LinearFamily": ".families", "LogisticFamily": ".families",
    "PoissonFamily": ".families", "ProbitFamily": ".families",
    "Decision": ".policies", "LinUCB": ".policies", "Policy": ".policies",
    "RandomPolicy": ".policies", "SupCBGLM": ".policies", "UCBGLM": ".policies",
    "UnknownDecisionError": ".policies", "GLMTSL": ".policies", "GLMUCB": ".policies",
    "GLOC": ".policies", "ECOLog": ".policies", "EpsilonGreedy": ".policies",
    "LaplaceTS": ".policies", "RSGLinCB": ".policies", "OFUGLB": ".policies",
    "SimulationResult": ".simulation", "simulate": ".simulation",
    "BatchSimulationResult": ".batch", "simulate_batch": ".batch",
    "load": ".persistence", "save": ".persistence",
    "EventLog": ".data",
}

if _TYPE_CHECKING:  # pragma: no cover  (what static checkers and IDEs see)
    from . import families, theory
    from .batch import BatchSimulationResult, simulate_batch
    from .data import EventLog
    from .environments import SyntheticGLMEnv
    from .estimation import GLMFit, fit_glm
    from .exceptions import ConvergenceWarning, GLMBanditsWarning, ModelFileError
    from .families import (GLMFamily, LinearFamily, LogisticFamily, PoissonFamily,
                           ProbitFamily)
    from .persistence import load, save
    from .policies import (GLMTSL, GLMUCB, GLOC, OFUGLB, Decision, ECOLog, EpsilonGreedy,
                           LaplaceTS, LinUCB, Policy, RandomPolicy, RSGLinCB, SupCBGLM, UCBGLM,
                           UnknownDecisionError)
    from .simulation import SimulationResult, simulate


def __getattr__(name: str) -> _Any:
    """Import a public name (or a subpackage) on first use and keep it."""
    if name in _EXPORTS:
        module = _importlib.import_module(_EXPORTS[name], __name__)
        value = module if module.__name__ == f"{__name__}.{name}" else getattr(module, name)
    elif _importlib_util.find_spec(f"{__name__}.{name}") is not None:
        value = _importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


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
    "ModelFileError",
    "save",
    "load",
]
