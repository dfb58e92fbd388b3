"""glmbandits.testing.check_policy: a user's policy runs it; a broken policy fails it, with a
message naming the check and the class."""

from __future__ import annotations

import re

import numpy as np
import pytest

from glmbandits import LinUCB, RandomPolicy
from glmbandits.persistence import register_class
from glmbandits.testing import CHECKS, check_policy


@register_class
class CarefulPolicy(RandomPolicy):
    """A user's policy that keeps the rules: it counts the rewards it learned."""

    def _learn(self, x, reward):  # noqa: ANN001 - the base class's hook
        self.total_ = getattr(self, "total_", 0.0) + reward
        super()._learn(x, reward)


class SeedlessPolicy(RandomPolicy):
    """Draws from a fresh generator: it ignores its seed."""

    def _choose(self, X):  # noqa: ANN001
        self.rng_ = np.random.default_rng()
        return super()._choose(X)


class LeakyPolicy(RandomPolicy):
    """Counts every update call, even the ones it then refuses."""

    def update(self, x, reward):  # noqa: ANN001
        self.calls_ = getattr(self, "calls_", 0) + 1
        return super().update(x, reward)


@register_class
class ForgetfulPolicy(RandomPolicy):
    """Reports a repeated reward as learned (a client would count it twice)."""

    def reward(self, decision_id, reward, *, now=None):  # noqa: ANN001
        status = super().reward(decision_id, reward, now=now)
        return "learned" if status == "duplicate" else status


def test_a_users_policy_that_keeps_the_rules_passes():
    check_policy(CarefulPolicy)  # the parameter checks included: CarefulPolicy inherits them


def test_a_policy_that_ignores_its_seed_fails():
    with pytest.raises(AssertionError, match=re.escape(
            "check_policy(SeedlessPolicy): the check 'the same seed gives the same actions' "
            "failed: two policies built with seed=0 chose different actions")):
        check_policy(SeedlessPolicy)


def test_a_policy_that_changes_on_refused_input_fails():
    with pytest.raises(AssertionError, match=re.escape(
            "check_policy(LeakyPolicy): the check 'bad updates raise and change nothing' "
            "failed: update with x of the wrong length was refused but changed the policy")):
        check_policy(LeakyPolicy)


def test_a_policy_that_misreports_a_repeated_reward_fails():
    with pytest.raises(AssertionError, match=re.escape(
            "check_policy(ForgetfulPolicy): the check 'decide and reward are select and update "
            "plus the bookkeeping' failed: a second reward of a decision returned 'learned'")):
        check_policy(ForgetfulPolicy)


def test_an_unregistered_users_policy_fails_the_save_load_check_saying_why():
    with pytest.raises(AssertionError, match=r"check_policy\(LeakyPolicy\): the check 'a save/"
                                             r"load round-trip is exact' failed: TypeError: .*"
                                             r"register_class"):
        check_policy(LeakyPolicy, checks=["a save/load round-trip is exact"])


def test_check_policy_checks_its_arguments():
    with pytest.raises(TypeError, match="check_policy: cls must be a Policy subclass, got 3"):
        check_policy(3)
    with pytest.raises(ValueError, match="check_policy: checks must be names from"):
        check_policy(LinUCB, checks=["no such check"])
    assert list(CHECKS)[0] == "the same seed gives the same actions"


class LyingParamsPolicy(RandomPolicy):
    """Its get_params reports the default exploration floor, whatever it was built with."""

    def get_params(self, deep=True):  # noqa: ANN001
        params = super().get_params(deep)
        params["exploration_floor"] = 0.0
        return params


class RoundingPolicy(RandomPolicy):
    """Keeps its exploration floor rounded: a copy built from get_params differs from it."""

    def __init__(self, n_features, seed=None, exploration_floor=0.0, family=None):  # noqa: ANN001
        super().__init__(n_features, seed, round(exploration_floor + 1e-9, 6), family)


class StickyParamsPolicy(RandomPolicy):
    """Takes new parameters before checking them: a refused set_params changes it."""

    def set_params(self, **params):  # noqa: ANN003
        self.__dict__.update(params)
        return super().set_params(**params)


@pytest.mark.parametrize("cls, check, message", [
    (LyingParamsPolicy, "get_params gives the constructor's parameters as given",
     "get_params gave exploration_floor=0.0, the constructor was given 0.25"),
    (RoundingPolicy, "a clone is an unfitted copy with the same parameters",
     "the constructor does not keep exploration_floor as given"),
    (StickyParamsPolicy, "set_params checks first, sets what get_params gives and returns "
                         "the policy", "a refused set_params was refused but changed the policy"),
], ids=["get_params lies", "keeps a transformed parameter", "refused set_params changes it"])
def test_a_policy_that_breaks_the_parameter_conventions_fails(cls, check, message):
    with pytest.raises(AssertionError, match=re.escape(
            f"check_policy({cls.__name__}): the check '{check}' failed: {message}")):
        check_policy(cls, checks=[check])
