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
#: The policy classes are not listed: every policy of the library registered in
#: ``glmbandits.policies.registry`` (its one list) is public (:func:`_policy_classes`).
_EXPORTS: dict[str, str] = {
    "families": ".families", "theory": ".theory",
    "SyntheticGLMEnv": ".environments",
    "GLMFit": ".estimation", "fit_glm": ".estimation",
    "ConvergenceWarning": ".exceptions", "GLMBanditsWarning": ".exceptions",
    "ModelFileError": ".exceptions",
    "GLMFamily": ".families", "LinearFamily": ".families", "LogisticFamily": ".families",
    "PoissonFamily": ".families", "ProbitFamily": ".families",
    "Decision": ".policies", "Policy": ".policies", "UnknownDecisionError": ".policies",
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
    from .policies import *  # noqa: F401,F403  (Policy, Decision and the policy classes)
    from .simulation import SimulationResult, simulate


def _policy_classes() -> dict[str, type]:
    """The library's registered policy classes, by class name (imports numpy)."""
    from .policies.registry import policy_classes

    return {cls.__name__: cls for cls in policy_classes().values()
            if cls.__module__.startswith(f"{__name__}.")}


def __getattr__(name: str) -> _Any:
    """Import a public name (or a subpackage, or a policy class) on first use and keep it."""
    if name == "__all__":  # computed: the policies are those registered now
        return [*_PUBLIC, *_policy_classes()]
    if name in _EXPORTS:
        module = _importlib.import_module(_EXPORTS[name], __name__)
        value = module if module.__name__ == f"{__name__}.{name}" else getattr(module, name)
    elif name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    elif _importlib_util.find_spec(f"{__name__}.{name}") is not None:
        value = _importlib.import_module(f".{name}", __name__)
    elif name in (policies := _policy_classes()):
        value = policies[name]
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(_policy_classes()))


#: The public names besides the policy classes (``__all__`` adds those).
_PUBLIC = [
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
