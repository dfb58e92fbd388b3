"""Policies by name, for the command line and experiment configs: THE list of policies.

Each entry maps a name to a policy class and a factory
``factory(problem, seed, **params)`` where ``problem`` is a :class:`ProblemSpec`
(d, K, family, horizon, ‖θ*‖). A new algorithm of the library is registered here,
with one :func:`register_policy` row, and nowhere else: ``glmbandits.__all__`` and
``glmbandits.<Class>`` list the library's registered classes, and model files allow
every policy class of the library from its definition (``Policy.__init_subclass__``).
The lockstep kernels of :mod:`glmbandits.batch.registry` are an optional extra,
registered where the kernels live.

Examples
--------
>>> policy = make_policy("ucb-glm", ProblemSpec(3, 5, "logistic", 100), seed=0)
>>> type(policy) is policy_classes()["ucb-glm"]
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .._validation import SeedLike
from .base import Policy
from .d_glucb import DGLUCB
from .d_linucb import DLinUCB
from .domd_glb import DOMDGLB
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
from .sw_glucb import SWGLUCB
from .ucb_glm import UCBGLM

__all__ = ["ProblemSpec", "POLICY_REGISTRY", "POLICY_CLASSES", "register_policy", "make_policy",
           "policy_names", "policy_classes"]


@dataclass(frozen=True)
class ProblemSpec:
    """What a policy factory may need to know about the problem."""

    n_features: int
    n_actions: int
    family: str
    horizon: int
    theta_norm: float = 3.0


PolicyFactory = Callable[..., Policy]
#: name -> factory(problem, seed, **params)
POLICY_REGISTRY: dict[str, PolicyFactory] = {}
#: name -> the class its factory builds
POLICY_CLASSES: dict[str, type[Policy]] = {}


def register_policy(name: str, cls: type[Policy], factory: PolicyFactory | None = None) -> None:
    """Make the policy class ``cls`` available under ``name`` (lower-case, hyphenated).

    Parameters
    ----------
    name : str
        The name the command line and experiment configs use.
    cls : type
        A :class:`~glmbandits.policies.base.Policy` subclass.
    factory : callable, optional
        ``factory(problem, seed, **params) -> cls``; by default
        ``cls(problem.n_features, family=problem.family, seed=seed, **params)``.
    """
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise TypeError(f"register_policy: cls must be a Policy subclass, got "
                        f"{getattr(cls, '__name__', type(cls).__name__)}")
    if not isinstance(name, str) or not name or name != name.lower() or " " in name:
        raise ValueError(f"register_policy: name must be lower-case and hyphenated, got {name!r}")

    def default(p: ProblemSpec, seed: SeedLike, **kw: Any) -> Policy:
        return cls(p.n_features, family=p.family, seed=seed, **kw)

    POLICY_REGISTRY[name] = default if factory is None else factory
    POLICY_CLASSES[name] = cls


def policy_names() -> list[str]:
    """The registered policy names."""
    return list(POLICY_REGISTRY)


def policy_classes() -> dict[str, type[Policy]]:
    """The registered policy classes, by name (a copy)."""
    return dict(POLICY_CLASSES)


def make_policy(name: str, problem: ProblemSpec, seed: SeedLike = None, **params: Any) -> Policy:
    """Build the policy registered as ``name`` for ``problem``."""
    if not isinstance(name, str) or name.lower() not in POLICY_REGISTRY:
        raise ValueError(f"make_policy: name must be one of {policy_names()}, got {name!r}")
    return POLICY_REGISTRY[name.lower()](problem, seed, **params)


# One row per policy. Without a factory: cls(d, family=problem.family, seed=seed, **params).
register_policy("ucb-glm", UCBGLM)
register_policy("supcb-glm", SupCBGLM, lambda p, seed, **kw: SupCBGLM(
    p.n_features, p.family, p.horizon, seed=seed, **kw))
# LinUCB and the random policy do not model the family; they take it to refuse rewards
# outside its domain, as every policy does (params may name another)
register_policy("linucb", LinUCB, lambda p, seed, **kw: LinUCB(
    p.n_features, seed=seed, **{"family": p.family, **kw}))
register_policy("random", RandomPolicy, lambda p, seed, **kw: RandomPolicy(
    p.n_features, seed=seed, **{"family": p.family, **kw}))
register_policy("glm-ucb", GLMUCB, lambda p, seed, **kw: GLMUCB(
    p.n_features, p.family, **{"radius": p.theta_norm, **kw}, seed=seed))
register_policy("glm-tsl", GLMTSL)
register_policy("laplace-ts", LaplaceTS)
register_policy("gloc", GLOC, lambda p, seed, **kw: GLOC(
    p.n_features, p.family, **{"radius": p.theta_norm, **kw}, seed=seed))
register_policy("ecolog", ECOLog, lambda p, seed, **kw: ECOLog(
    p.n_features, p.family, **{"radius": p.theta_norm, **kw}, seed=seed))
register_policy("rs-glincb", RSGLinCB, lambda p, seed, **kw: RSGLinCB(
    p.n_features, p.family, **{"horizon": p.horizon, "radius": p.theta_norm, **kw}, seed=seed))
register_policy("epsilon-greedy", EpsilonGreedy)
register_policy("ofuglb", OFUGLB, lambda p, seed, **kw: OFUGLB(
    p.n_features, p.family, **{"radius": p.theta_norm, **kw}, seed=seed))
register_policy("sw-glucb", SWGLUCB)
register_policy("domd-glb", DOMDGLB, lambda p, seed, **kw: DOMDGLB(
    p.n_features, p.family, **{"radius": p.theta_norm, **kw}, seed=seed))
register_policy("d-linucb", DLinUCB, lambda p, seed, **kw: DLinUCB(
    p.n_features, seed=seed, **{"family": p.family, "theta_norm": p.theta_norm, **kw}))
register_policy("d-glucb", DGLUCB, lambda p, seed, **kw: DGLUCB(
    p.n_features, p.family, **{"theta_norm": p.theta_norm, **kw}, seed=seed))
