"""glmbandits.features: shapes, values against plain numpy, the reused buffer, bad input."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from glmbandits import UCBGLM, LinUCB
from glmbandits.environments.full_information import block_encode
from glmbandits.features import (Concat, FeatureBuilder, Intercept, Interaction, ItemFeatures,
                                 OneHotAction, Standardizer, UnitBall, UserFeatures,
                                 disjoint_features)


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(2.0, 3.0, size=(200, 5)), rng.normal(size=(7, 3))


def test_standardized_concat_matches_numpy(data):
    users, items = data
    b = Concat(UserFeatures(standardize=True), ItemFeatures(standardize=True), Intercept())
    b.fit(users, items)
    assert b.n_features_out_ == 5 + 3 + 1
    X = b.transform(users[3], items)
    zu = (users[3] - users.mean(0)) / users.std(0)
    zv = (items - items.mean(0)) / items.std(0)
    expected = np.hstack([np.tile(zu, (7, 1)), zv, np.ones((7, 1))])
    np.testing.assert_allclose(X, expected, rtol=1e-12)
    assert X.shape == (7, 9)


def test_interaction_is_the_row_wise_kronecker_product(data):
    users, items = data
    b = Interaction(UserFeatures(), ItemFeatures()).fit(users, items)
    X = b.transform(users[0], items)
    expected = np.stack([np.kron(users[0], v) for v in items])
    np.testing.assert_allclose(X, expected, rtol=1e-12)
    # the bilinear model: x_a'vec(Θ) = u'Θ v_a
    theta = np.random.default_rng(1).normal(size=(5, 3))
    np.testing.assert_allclose(X @ theta.ravel(), users[0] @ theta @ items.T, rtol=1e-10)


def test_one_hot_times_context_is_the_disjoint_block_encoding(data):
    users, _ = data
    b = Interaction(OneHotAction(4), UserFeatures()).fit(users)
    assert b.n_features_out_ == 20
    np.testing.assert_array_equal(b.transform(users[5]), block_encode(users[5], 4))
    # fewer available actions: rows are actions 0..K-1
    np.testing.assert_array_equal(b.transform(users[5], np.zeros((2, 9))),
                                  block_encode(users[5], 4)[:2])


def test_one_hot_inside_a_concat_writes_into_a_column_slice(data):
    users, _ = data
    b = Concat(UserFeatures(), OneHotAction(3)).fit(users)
    X = b.transform(users[0])
    np.testing.assert_array_equal(X[:, 5:], np.eye(3))
    np.testing.assert_array_equal(X[:, :5], np.tile(users[0], (3, 1)))


def test_low_rank_interaction_projects_on_the_leading_directions(data):
    users, items = data
    b = Interaction(UserFeatures(), ItemFeatures(), rank=(2, None)).fit(users, items)
    assert b.n_features_out_ == 2 * 3
    P = np.linalg.svd(users, full_matrices=False)[2][:2].T
    expected = np.stack([np.kron(users[1] @ P, v) for v in items])
    np.testing.assert_allclose(b.transform(users[1], items), expected, rtol=1e-10)
    full = Interaction(UserFeatures(), ItemFeatures(), rank=10).fit(users, items)
    assert full.n_features_out_ == 15  # a rank above the width keeps the side whole


def test_unit_ball_bounds_every_fitted_row(data):
    users, items = data
    b = UnitBall(Concat(Interaction(Concat(UserFeatures(standardize=True), Intercept()),
                                    ItemFeatures()), OneHotAction(7))).fit(users, items)
    norms = [np.linalg.norm(b.transform(u, items), axis=1).max() for u in users]
    assert max(norms) <= 1.0 + 1e-12
    d = disjoint_features(3).fit(users)
    assert max(np.linalg.norm(d.transform(u), axis=1).max() for u in users) == pytest.approx(1.0)


def test_the_buffer_is_reused_and_out_is_honoured(data):
    users, items = data
    b = Concat(UserFeatures(), ItemFeatures()).fit(users, items)
    first = b.transform(users[0], items)
    kept = first.copy()
    second = b.transform(users[1], items)
    assert np.shares_memory(first, second)  # documented: the next call overwrites
    assert not np.array_equal(first, kept)
    out = np.empty((7, 8))
    assert b.transform(users[0], items, out=out) is out
    np.testing.assert_array_equal(out, kept)
    # a larger K grows the buffer; a smaller K is a view of it
    assert b.transform(users[0], np.vstack([items, items])).shape == (14, 8)
    assert b.transform(users[0], items[:2]).shape == (2, 8)


def test_transform_allocates_nothing_once_warm(data):
    import tracemalloc

    users, _ = data
    items = np.random.default_rng(2).normal(size=(50, 3))
    b = UnitBall(Concat(UserFeatures(standardize=True), Interaction(OneHotAction(50),
                                                                  UserFeatures()),
                        ItemFeatures())).fit(users, items)
    b.transform(users[0], items)
    tracemalloc.start()
    for u in users[:50]:
        b.transform(u, items)
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 50 * b.n_features_out_ * 8 / 10  # a tenth of one (K, d) float array


def test_policies_fed_the_reused_buffer_learn_as_with_copies(data):
    """Policies copy the chosen row: feeding them the builder's buffer is safe."""
    users, _ = data
    builder = disjoint_features(4, standardize=True).fit(users)
    rng = np.random.default_rng(3)
    labels = rng.integers(4, size=users.shape[0])
    for cls in (UCBGLM, LinUCB):
        reused = cls(n_features=builder.n_features_out_, seed=0)
        copied = cls(n_features=builder.n_features_out_, seed=0)
        for u, y in zip(users, labels):
            X = builder.transform(u)
            a = reused.select(X)
            b = copied.select(X.copy())
            assert a == b
            copied.update(X[a].copy(), float(a == y))
            reused.update(X[a], float(a == y))
        assert pickle.dumps(reused) == pickle.dumps(copied)


def test_pickle_round_trip(data):
    users, items = data
    b = Interaction(UserFeatures(standardize=True), ItemFeatures(), rank=2).fit(users, items)
    clone = pickle.loads(pickle.dumps(b))
    np.testing.assert_array_equal(clone.transform(users[0], items), b.transform(users[0], items))


def test_bad_construction_names_the_parameter():
    with pytest.raises(TypeError, match="UserFeatures: standardize must be a bool, got str"):
        UserFeatures(standardize="yes")
    with pytest.raises(ValueError, match="OneHotAction: n_actions must be >= 1, got 0"):
        OneHotAction(0)
    with pytest.raises(TypeError, match="Concat: blocks\\[1\\] must be a FeatureBuilder, got int"):
        Concat(UserFeatures(), 3)
    with pytest.raises(ValueError, match="Concat: blocks must hold at least one"):
        Concat()
    with pytest.raises(ValueError, match="Interaction: rank must be >= 1, got 0"):
        Interaction(UserFeatures(), ItemFeatures(), rank=0)
    with pytest.raises(TypeError, match="Interaction: right must be a FeatureBuilder"):
        Interaction(UserFeatures(), None)
    with pytest.raises(TypeError, match="disjoint_features: n_actions must be an int"):
        disjoint_features(2.5)


def test_bad_fit_raises_and_changes_nothing(data):
    users, items = data
    b = Concat(UserFeatures(standardize=True), ItemFeatures()).fit(users, items)
    before = pickle.dumps(b)
    cases = [
        ((users, None), ValueError, "ItemFeatures.fit: items must be an \\(n, q\\) array, got None"),
        ((None, items), ValueError, "UserFeatures.fit: users must be"),
        ((users[:, 0], items), ValueError,
         r"Concat.fit: users must have shape \(n, q\) with n >= 1, got \(200,\)"),
        ((np.full((3, 5), np.nan), items), ValueError, "Concat.fit: users must be finite"),
        (("abc", items), TypeError, "Concat.fit: users must be a numeric array, got str"),
    ]
    for (u, v), error, message in cases:
        with pytest.raises(error, match=message):
            b.fit(u, v)
        assert pickle.dumps(b) == before
    low = Interaction(Concat(UserFeatures(), ItemFeatures()), OneHotAction(7), rank=2)
    with pytest.raises(ValueError, match="fitted rows differ in number"):
        low.fit(users, items)
    assert not hasattr(low, "n_features_out_")


def test_bad_transform_raises_and_changes_nothing(data):
    users, items = data
    b = Concat(UserFeatures(), ItemFeatures()).fit(users, items)
    X = b.transform(users[0], items)
    kept = X.copy()
    cases = [
        ((users[0][:4], items), ValueError, r"Concat.transform: user must have shape \(5,\), got \(4,\)"),
        ((users[0], items[:, :2]), ValueError, r"items must have shape \(n, 3\) with n >= 1, got \(7, 2\)"),
        ((None, items), ValueError, "user is required"),
        ((users[0], None), ValueError, "items is required"),
        ((np.full(5, np.inf), items), ValueError, "user must be finite"),
        (([["a"] * 5][0], items), TypeError, "user must be a numeric array"),
    ]
    for (u, v), error, message in cases:
        with pytest.raises(error, match=message):
            b.transform(u, v)
        np.testing.assert_array_equal(X, kept)
    with pytest.raises(ValueError, match=r"out must be a float64 ndarray of shape \(7, 8\)"):
        b.transform(users[0], items, out=np.empty((7, 7)))
    with pytest.raises(ValueError, match="call fit first"):
        UserFeatures().transform(np.zeros(2), np.zeros((1, 1)))
    with pytest.raises(ValueError, match="at most n_actions = 3 rows, got 4"):
        OneHotAction(3).fit().transform(items=np.zeros((4, 1)))


def test_standardizer():
    s = Standardizer().fit(np.array([[1.0, 2.0], [3.0, 2.0]]))
    np.testing.assert_array_equal(s.transform(np.array([[1.0, 5.0]])), [[-1.0, 3.0]])
    with pytest.raises(TypeError, match="Standardizer: with_std must be a bool"):
        Standardizer(with_std=1)
    with pytest.raises(ValueError, match="Standardizer.transform: call fit first"):
        Standardizer().transform(np.zeros(2))
    with pytest.raises(ValueError, match=r"x must have shape \(2,\) or \(K, 2\), got \(3,\)"):
        s.transform(np.zeros(3))


def test_every_builder_is_a_feature_builder():
    import glmbandits.features as features

    for name in features.__all__:
        obj = getattr(features, name)
        schema_parts = ("FeatureSchema", "Field", "Numeric", "Boolean", "Categorical",
                        "MultiCategorical", "Vector")  # the declared schema's classes
        if isinstance(obj, type) and name not in ("FeatureBuilder", "Standardizer",
                                                  *schema_parts):
            assert issubclass(obj, FeatureBuilder)
