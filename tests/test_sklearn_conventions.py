"""scikit-learn's conventions (issue 26 item 3), checked with scikit-learn's own checks.

Policies: ``get_params``/``set_params`` over exactly the constructor's parameters,
``sklearn.base.clone`` an unfitted copy, ``repr`` of the non-default parameters.

scikit-learn's checks that apply, run on every registered policy:
``check_get_params_invariance``, ``check_set_params`` (with its fuzz values -inf, inf
and None: a refused value leaves the parameters as they were), ``check_estimator_cloneable``,
``check_parameters_default_constructible`` (every parameter but the required
n_features has a default that the policy built with it reports) and ``check_estimator_repr``.

The checks that do not apply to policies, and why:

* ``check_no_attributes_set_in_init``: a policy acts from round 0, so its constructor
  builds the starting estimate (``estimate_`` from ``l2``, the generator ``rng_``);
  scikit-learn estimators do that in ``fit``, which a policy does not have.
* ``check_do_not_raise_errors_in_init_or_set_params``: the project validates in
  ``__init__`` (docs: "Hyperparameters ... validated in __init__"), so a bad value is
  refused where it is given; ``set_params`` runs the same checks.
* ``check_estimator`` as a whole, and the checks on ``fit(X, y)``/``predict``: a policy
  learns one reward at a time through ``select``/``update``; it has no ``fit(X, y)``.
"""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import ParameterGrid  # noqa: E402
from sklearn.utils import estimator_checks  # noqa: E402

import glmbandits  # noqa: E402
from glmbandits import features  # noqa: E402
from glmbandits import (DGLUCB, DOMDGLB, GLOC, SWGLUCB, UCBGLM, DLinUCB, LinUCB,  # noqa: E402
                        RSGLinCB, SupCBGLM)
from glmbandits._params import parameter_names  # noqa: E402
from glmbandits.policies.registry import policy_classes  # noqa: E402

POLICIES = sorted(policy_classes().values(), key=lambda cls: cls.__name__)
SKLEARN_CHECKS = ("check_get_params_invariance", "check_set_params",
                  "check_estimator_cloneable", "check_parameters_default_constructible",
                  "check_estimator_repr")


@pytest.mark.parametrize("check", SKLEARN_CHECKS)
@pytest.mark.parametrize("cls", POLICIES, ids=lambda cls: cls.__name__)
def test_sklearn_checks_pass_on_every_policy(cls, check):
    policy = cls(n_features=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        getattr(estimator_checks, check)(cls.__name__, policy)
    changed = [str(w.message) for w in caught if "changed after set_params" in str(w.message)]
    assert not changed  # sklearn only warns when a refused set_params changed the parameters


@pytest.mark.parametrize("cls", POLICIES, ids=lambda cls: cls.__name__)
def test_get_params_is_exactly_the_constructor_parameters(cls):
    policy = cls(n_features=4, seed=np.random.default_rng(3))
    params = policy.get_params()
    assert list(params) == list(parameter_names(cls))
    assert params["seed"] is policy.seed  # the caller's Generator, as in sklearn
    twin = clone(policy)
    assert twin is not policy and twin.get_params(deep=False).keys() == params.keys()
    assert twin.seed is not policy.seed  # clone deep-copies a Generator, as for sklearn's


@pytest.mark.parametrize("cls, name", [(UCBGLM, "tau"), (SupCBGLM, "tau"), (GLOC, "kappa"),
                                       (RSGLinCB, "kappa"), (RSGLinCB, "beta"),
                                       (RSGLinCB, "gamma")])
def test_a_parameter_resolved_from_none_is_reported_as_given(cls, name):
    policy = cls(n_features=3, seed=0)
    resolved = getattr(policy, name)
    assert resolved is not None and policy.get_params()[name] is None
    bigger = clone(policy).set_params(n_features=6)  # resolved again from the new d
    assert bigger.get_params()[name] is None
    if name == "tau":
        assert (resolved, bigger.tau) == (6, 12)
    # not saved state: restored, a policy reports the value it plays with (a clone of it
    # plays the same); the model file and the pickle are what they were before
    restored = pickle.loads(pickle.dumps(policy))
    assert restored.get_params()[name] == resolved
    assert "_given_params" not in policy.__getstate__()


def test_the_family_is_reported_by_name_and_a_custom_one_as_the_object():
    assert UCBGLM(n_features=2, family="Probit").get_params()["family"] == "probit"
    noisy = glmbandits.families.LinearFamily(noise_sd=2.0)
    policy = UCBGLM(n_features=2, family=noisy)
    assert policy.get_params()["family"] is noisy
    assert clone(policy).family == noisy
    assert LinUCB(n_features=2).get_params()["family"] is None
    with pytest.raises(TypeError, match=r"^DGLUCB: family must be a name .* got NoneType$"):
        DGLUCB(n_features=2, family=None)  # a GLM policy needs its link (was AttributeError)


def test_repr_shows_the_non_default_parameters():
    assert repr(UCBGLM(n_features=10, alpha=0.5)) == "UCBGLM(n_features=10, alpha=0.5)"
    assert repr(DLinUCB(n_features=2, gamma=0.9, family="linear")) == (
        "DLinUCB(n_features=2, gamma=0.9, family='linear')")
    assert repr(SWGLUCB(n_features=2, window=20)) == "SWGLUCB(n_features=2, window=20)"
    assert repr(DOMDGLB(n_features=2)) == "DOMDGLB(n_features=2)"


def test_set_params_checks_then_sets_and_refuses_a_policy_that_has_played():
    policy = DGLUCB(n_features=3, seed=0)
    before = copy.deepcopy(policy.__getstate__())
    with pytest.raises(ValueError, match=r"^DGLUCB: gamma must lie in \(0, 1\), got 1.5$"):
        policy.set_params(alpha=2.0, gamma=1.5)
    with pytest.raises(ValueError, match=r"^DGLUCB.set_params: parameter must be one of "
                                         r"\[.*\], got 'gama'$"):
        policy.set_params(gama=0.5)
    assert pickle.dumps(policy.__getstate__()) == pickle.dumps(before)  # unchanged
    policy.set_params(gamma=0.9, alpha=2.0)
    assert (policy.gamma, policy.alpha, policy.estimate_.gram_.gamma) == (0.9, 2.0, 0.9)
    X = np.eye(3) * 0.5
    policy.update(X[policy.select(X)], 1.0)
    state = pickle.dumps(policy.__getstate__())
    with pytest.raises(ValueError, match=r"^DGLUCB.set_params: the policy has played \(1 "
                                         r"update\(s\), 0 pending decision\(s\)\); set the "
                                         r"parameters of an unfitted copy"):
        policy.set_params(alpha=1.0)
    assert pickle.dumps(policy.__getstate__()) == state
    fresh = clone(policy)
    assert fresh.n_updates_ == 0 and fresh.get_params() == policy.get_params()


def test_set_params_keeps_what_was_attached_and_guards_what_it_was_checked_against():
    policy = UCBGLM(n_features=3, seed=0).configure_decisions(default_reward=1.0)
    policy.set_params(alpha=3.0)
    assert policy.decisions_.default_reward == 1.0 and policy.alpha == 3.0
    with pytest.raises(ValueError, match=r"^UCBGLM.set_params: family cannot change while "
                                         r"decisions_.default_reward is attached"):
        policy.set_params(family="poisson")
    assert policy.get_params()["family"] == "logistic"


def test_a_grid_search_over_alpha_with_sklearn_tools():
    """The docs' search (docs/offline-evaluation.md), on a small log: every candidate is a
    fresh policy with its grid point's α, and the base policy is left as it was."""
    log = glmbandits.evaluation.collect_log(
        glmbandits.SyntheticGLMEnv(3, n_actions=3, seed=1), 300, "uniform", seed=1)
    base = LinUCB(n_features=3, family="logistic", seed=0)
    seen = {}
    for params in ParameterGrid({"alpha": [0.5, 2.0], "l2": [1.0, 4.0]}):
        candidate = clone(base).set_params(**params)
        assert candidate.n_updates_ == 0
        seen[(candidate.alpha, candidate.l2)] = glmbandits.evaluation.replay(candidate, log)
        assert candidate.n_updates_ == seen[(candidate.alpha, candidate.l2)].n_matched
    assert sorted(seen) == [(0.5, 1.0), (0.5, 4.0), (2.0, 1.0), (2.0, 4.0)]
    assert base.n_updates_ == 0 and base.alpha == 1.0


# -- feature builders -------------------------------------------------------------------
# scikit-learn's checks that apply to the builders: the parameter checks, the clone and
# repr checks, and check_no_attributes_set_in_init (a builder's constructor only keeps its
# parameters; fit makes the rest). Not check_estimator, nor the checks on fit(X, y) and
# transform(X) (check_transformer_general, check_transformer_get_feature_names_out,
# check_n_features_in, ...): a builder fits on (users, items) and transforms one round,
# (user, items) -> (K, d), not X -> X'. Concat takes its blocks as *blocks: a tuple made
# anew by each call, so check_set_params' identity test (`is`) cannot hold for it, and
# the checks that build a class with keywords only (default-constructible, no attributes
# in init) cannot pass blocks; sklearn's clone copies it through __sklearn_clone__.
BUILDERS = {
    "UserFeatures": lambda: features.UserFeatures(),
    "ItemFeatures": lambda: features.ItemFeatures(standardize=True),
    "OneHotAction": lambda: features.OneHotAction(3),
    "Intercept": lambda: features.Intercept(),
    "Interaction": lambda: features.Interaction(features.UserFeatures(),
                                                features.ItemFeatures(), rank=(2, None)),
    "UnitBall": lambda: features.UnitBall(features.UserFeatures(standardize=True)),
    "Standardizer": lambda: features.Standardizer(with_std=False),
}
BUILDER_CHECKS = ("check_get_params_invariance", "check_set_params",
                  "check_estimator_cloneable", "check_parameters_default_constructible",
                  "check_estimator_repr", "check_no_attributes_set_in_init")


@pytest.mark.parametrize("check", BUILDER_CHECKS)
@pytest.mark.parametrize("name", list(BUILDERS))
def test_sklearn_checks_pass_on_the_builders(name, check):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        getattr(estimator_checks, check)(name, BUILDERS[name]())
    assert not [w for w in caught if "changed after set_params" in str(w.message)]


@pytest.mark.parametrize("check", ("check_get_params_invariance", "check_estimator_cloneable",
                                   "check_estimator_repr"))
def test_sklearn_checks_that_apply_pass_on_concat(check):
    getattr(estimator_checks, check)("Concat", features.Concat(features.UserFeatures(),
                                                                 features.Intercept()))


def _fitted_builder():
    rng = np.random.default_rng(0)
    users, items = rng.normal(size=(6, 2)), rng.normal(size=(4, 3))
    builder = features.UnitBall(features.Concat(
        features.Interaction(features.UserFeatures(standardize=True), features.ItemFeatures(),
                             rank=(None, 2)),
        features.OneHotAction(4), features.Intercept()))
    return builder, users, items


def test_clone_of_a_fitted_builder_is_unfitted_with_the_same_parameters():
    builder, users, items = _fitted_builder()
    builder.fit(users, items)
    twin = clone(builder)
    assert not hasattr(twin, "n_features_out_") and repr(twin) == repr(builder)
    assert twin.block is not builder.block  # the blocks are copies too
    np.testing.assert_array_equal(twin.fit(users, items).transform(users[0], items),
                                  builder.transform(users[0], items))
    params = builder.get_params()
    assert params["block__blocks"][2] is builder.block.blocks[2]


def test_fit_transform_is_fit_then_transform_of_every_fitted_user():
    builder, users, items = _fitted_builder()
    out = builder.fit_transform(users, items)
    assert out.shape == (6, 4, builder.n_features_out_)
    for i, user in enumerate(users):
        np.testing.assert_array_equal(out[i], builder.transform(user, items))
    assert not np.shares_memory(out, builder.transform(users[0], items))  # a new array
    assert features.OneHotAction(2).fit_transform().tolist() == [[[1.0, 0.0], [0.0, 1.0]]]
    scaler = features.Standardizer()
    np.testing.assert_array_equal(scaler.fit_transform(users), scaler.transform(users))


def test_get_feature_names_out_names_every_column():
    builder, users, items = _fitted_builder()
    with pytest.raises(ValueError, match=r"^UnitBall.get_feature_names_out: call fit first$"):
        builder.get_feature_names_out()
    builder.fit(users, items)
    names = builder.get_feature_names_out((["age", "income"], None))
    assert names.dtype == object and len(names) == builder.n_features_out_ == 2 * 2 + 4 + 1
    assert names.tolist() == ["age*right_svd0", "age*right_svd1", "income*right_svd0",
                              "income*right_svd1", "action_0", "action_1", "action_2",
                              "action_3", "intercept"]
    whole = features.Interaction(features.UserFeatures(), features.ItemFeatures())
    whole.fit(users, items)
    assert whole.get_feature_names_out()[:4].tolist() == [
        "user_0*item_0", "user_0*item_1", "user_0*item_2", "user_1*item_0"]
    # the names follow the columns: user_1*item_0 is the product of those two inputs
    row = whole.transform(users[0], items)[1]
    assert row[3] == users[0][1] * items[1][0]
    with pytest.raises(ValueError, match=r"the user names must be 2 str .* got \['a'\]"):
        whole.get_feature_names_out((["a"], None))


def test_set_params_on_a_builder_checks_first_and_leaves_it_unfitted():
    builder, users, items = _fitted_builder()
    builder.fit(users, items)
    inner = builder.block.blocks[0]
    with pytest.raises(TypeError, match=r"^UserFeatures: standardize must be a bool"):
        inner.set_params(left__standardize="yes")
    with pytest.raises(ValueError, match=r"^Interaction: rank must be >= 1, got 0$"):
        inner.set_params(rank=0)
    assert inner.left.standardize is True and inner.rank == (None, 2)
    assert builder.transform(users[0], items).shape == (4, 9)  # still fitted: unchanged
    inner.set_params(left__standardize=False)
    assert inner.left.standardize is False and not hasattr(inner, "n_features_out_")
    concat = features.Concat(features.Intercept())
    concat.set_params(blocks=(features.Intercept(), features.OneHotAction(2)))
    assert concat.fit().transform().shape == (2, 3)


def test_a_block_that_does_not_name_its_columns_gets_numbered_names():
    class Doubled(features.UserFeatures):
        def _names(self, user, item):  # noqa: ANN001 - the base class's default instead
            return features.FeatureBuilder._names(self, user, item)

    builder = features.Concat(Doubled(), features.Intercept()).fit(np.ones((2, 2)))
    assert builder.get_feature_names_out().tolist() == ["Doubled_0", "Doubled_1", "intercept"]


def test_a_star_args_parameter_is_passed_back_positionally_with_those_before_it():
    from glmbandits._params import Parameters, unfitted_copy

    class Blocks(Parameters):
        def __init__(self, first, *rest, scale=1.0):  # noqa: ANN001
            self.first, self.rest, self.scale = first, rest, scale

    blocks = Blocks("a", "b", "c", scale=2.0)
    assert blocks.get_params() == {"first": "a", "rest": ("b", "c"), "scale": 2.0}
    assert repr(unfitted_copy(blocks)) == "Blocks(first='a', rest=('b', 'c'), scale=2.0)"
    assert repr(blocks.set_params(rest=("z",))) == "Blocks(first='a', rest=('z',), scale=2.0)"
