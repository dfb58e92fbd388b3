"""Every policy refuses a reward outside its family's reward domain, however it was built.

Before: LinUCB and RandomPolicy took no family, and the registry (which the service and
the experiment runner use) built them without one, so a LinUCB service configured with a
logistic family learned rewards of 2, -1 and 1e6. The per-class check over every
exported policy is in ``tests/test_common.py``; here the registry and persistence.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from glmbandits import LinUCB, load
from glmbandits.policies.registry import ProblemSpec, make_policy, policy_names


def _problem(family: str) -> ProblemSpec:
    return ProblemSpec(n_features=2, n_actions=3, family=family, horizon=100)


@pytest.mark.parametrize("name", policy_names())
def test_every_registered_policy_refuses_what_its_problem_family_cannot_give(name):
    family = "probit" if name == "ecolog" else "logistic"  # ECOLog: logistic or probit
    policy = make_policy(name, _problem(family), seed=0)
    assert policy.family is not None and policy.family.name == family
    decision = policy.decide(np.eye(2), "d1", now=0.0)
    for bad in (2.0, -1.0, 1e6):
        before = pickle.dumps(policy)
        with pytest.raises(ValueError, match=rf"reward must lie in the {family} reward domain "
                                             rf"\[0, 1\], got {bad!r}"):
            policy.reward("d1", bad, now=1.0)
        assert pickle.dumps(policy) == before
    assert decision.decision_id == "d1" and policy.reward("d1", 1.0, now=1.0) == "learned"


@pytest.mark.parametrize("name", ["linucb", "random"])
def test_a_family_with_a_wide_domain_still_accepts_its_rewards(name):
    linear = make_policy(name, _problem("linear"), seed=0)
    linear.update_batch(np.eye(2), [1e6, -3.5])
    poisson = make_policy(name, _problem("poisson"), seed=0)
    poisson.update_batch(np.eye(2), [1e6, 0.0])
    with pytest.raises(ValueError, match=r"poisson reward domain \[0, inf\), got -1.0"):
        poisson.update_batch(np.eye(2), [1.0, -1.0])
    assert poisson.n_updates_ == 2


def test_linucb_keeps_its_family_through_save_load_and_pickle(tmp_path):
    policy = LinUCB(n_features=2, seed=0, family="logistic")
    assert repr(policy) == "LinUCB(n_features=2, seed=0, family='logistic')"
    for clone in (load(policy.save(tmp_path / "linucb.glmb")),
                  pickle.loads(pickle.dumps(policy))):
        with pytest.raises(ValueError, match=r"LinUCB.update: reward must lie in the logistic"):
            clone.update([1.0, 0.0], 2.0)
    unbounded = LinUCB(n_features=2, seed=0)  # no family: any finite reward, as before
    unbounded.update([1.0, 0.0], 1e6)
    assert repr(unbounded) == "LinUCB(n_features=2, seed=0)"
