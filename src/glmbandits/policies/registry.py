"""Policies by name, for the command line and experiment configs.

Each entry maps a name to a factory ``factory(problem, seed, **params)`` where
``problem`` is a :class:`ProblemSpec` (d, K, family, horizon, ‖θ*‖). New
algorithms register themselves here with :func:`register_policy`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .._validation import SeedLike
from .base import Policy
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

__all__ = ["ProblemSpec", "POLICY_REGISTRY", "register_policy", "make_policy", "policy_names"]


@dataclass(frozen=True)
class ProblemSpec:
    """What a policy factory may need to know about the problem."""

    n_features: int
    n_actions: int
    family: str
    horizon: int
    theta_norm: float = 3.0


PolicyFactory = Callable[..., Policy]
POLICY_REGISTRY: dict[str, PolicyFactory] = {}


def register_policy(name: str, factory: PolicyFactory) -> None:
    """Make ``factory`` available under ``name`` (lower-case, hyphenated)."""
    POLICY_REGISTRY[name] = factory


def policy_names() -> list[str]:
    """The registered policy names."""
    return list(POLICY_REGISTRY)


def make_policy(name: str, problem: ProblemSpec, seed: SeedLike = None, **params: Any) -> Policy:
    """Build the policy registered as ``name`` for ``problem``."""
    if not isinstance(name, str) or name.lower() not in POLICY_REGISTRY:
        raise ValueError(f"make_policy: name must be one of {policy_names()}, got {name!r}")
    return POLICY_REGISTRY[name.lower()](problem, seed, **params)


register_policy("ucb-glm", lambda p, seed, **kw: UCBGLM(p.n_features, p.family, seed=seed, **kw))
register_policy("supcb-glm", lambda p, seed, **kw: SupCBGLM(p.n_features, p.family, p.horizon,
                                                            seed=seed, **kw))
# LinUCB and the random policy do not model the family; they take it to refuse rewards
# outside its domain, as every policy does
register_policy("linucb", lambda p, seed, **kw: LinUCB(p.n_features, seed=seed,
                                                       **{"family": p.family, **kw}))
register_policy("random", lambda p, seed, **kw: RandomPolicy(p.n_features, seed=seed,
                                                             **{"family": p.family, **kw}))
register_policy("glm-ucb", lambda p, seed, **kw: GLMUCB(
    p.n_features, p.family, **{"radius": p.theta_norm, **kw}, seed=seed))
register_policy("glm-tsl", lambda p, seed, **kw: GLMTSL(p.n_features, p.family, seed=seed, **kw))
register_policy("laplace-ts", lambda p, seed, **kw: LaplaceTS(p.n_features, p.family, seed=seed,
                                                              **kw))
register_policy("gloc", lambda p, seed, **kw: GLOC(
    p.n_features, p.family, **{"radius": p.theta_norm, **kw}, seed=seed))
register_policy("ecolog", lambda p, seed, **kw: ECOLog(
    p.n_features, p.family, **{"radius": p.theta_norm, **kw}, seed=seed))
register_policy("rs-glincb", lambda p, seed, **kw: RSGLinCB(
    p.n_features, p.family, **{"horizon": p.horizon, "radius": p.theta_norm, **kw}, seed=seed))
register_policy("epsilon-greedy", lambda p, seed, **kw: EpsilonGreedy(p.n_features, p.family,
                                                                      seed=seed, **kw))
register_policy("ofuglb", lambda p, seed, **kw: OFUGLB(
    p.n_features, p.family, **{"radius": p.theta_norm, **kw}, seed=seed))
