"""glmbandits.features under hostile values: a low rank above the fitted rows, huge values,
NaN, and results beyond float64 are refused with a ValueError naming the parameter or the
column; nothing non-finite leaves a fit or a transform, and no RuntimeWarning either."""

from __future__ import annotations

import math
import pickle
from fractions import Fraction

import numpy as np
import pytest

from glmbandits.features import (Concat, Interaction, ItemFeatures, Standardizer, UnitBall,
                                 UserFeatures)


# -- Interaction's rank ------------------------------------------------------------------
@pytest.mark.parametrize("rank, users, items, side, n_rows", [
    ((2, None), np.arange(5.0)[None, :], np.ones((3, 3)), "left", 1),
    ((None, 3), np.ones((4, 2)), np.arange(8.0).reshape(2, 4), "right", 2),
    (2, np.arange(5.0)[None, :], np.ones((3, 3)), "left", 1),
])
def test_a_rank_above_the_fitted_rows_is_refused_at_fit(rank, users, items, side, n_rows):
    b = Interaction(UserFeatures(), ItemFeatures(), rank=rank)
    wanted = rank[0 if side == "left" else 1] if isinstance(rank, tuple) else rank
    with pytest.raises(ValueError, match=rf"Interaction.fit: rank of the {side} side is "
                                         rf"{wanted}.*{n_rows} fitted row"):
        b.fit(users, items)
    assert not hasattr(b, "n_features_out_")  # a refused fit commits nothing


def test_a_refused_refit_leaves_the_fitted_builder_as_it_was():
    rng = np.random.default_rng(0)
    users, items = rng.normal(size=(4, 5)), rng.normal(size=(3, 3))
    b = Interaction(UserFeatures(), ItemFeatures(), rank=(2, None)).fit(users, items)
    X = b.transform(users[0], items).copy()
    before = pickle.dumps(b)
    with pytest.raises(ValueError, match="rank of the left side is 2"):
        b.fit(users[:1], items)
    assert pickle.dumps(b) == before
    np.testing.assert_array_equal(b.transform(users[0], items), X)


def test_a_rank_equal_to_the_fitted_rows_fits_and_transforms():
    rng = np.random.default_rng(0)
    users, items = rng.normal(size=(2, 5)), rng.normal(size=(3, 3))
    b = Interaction(UserFeatures(), ItemFeatures(), rank=(2, None)).fit(users, items)
    assert b.n_features_out_ == 2 * 3
    X = b.transform(users[0], items)
    assert X.shape == (3, 6) and np.isfinite(X).all()


# -- Standardizer ------------------------------------------------------------------------
def _exact_standardized(column: np.ndarray) -> np.ndarray:
    """(x - mean) / std of the float values, in exact rational arithmetic (an oracle)."""
    values = [Fraction(float(v)) for v in column]
    mean = sum(values) / len(values)
    variance = sum((v - mean) ** 2 for v in values) / len(values)
    return np.array([math.copysign(math.sqrt(float((v - mean) ** 2 / variance)),
                                   float(v - mean)) for v in values])


@pytest.mark.parametrize("scale", [1e200, 1e300, 1.7e308, 1e-300, 5e-320])
def test_standardizing_huge_or_tiny_values_keeps_mean_and_scale_finite(scale):
    unit = np.array([[0.25, 0.5], [-0.5, 0.5], [1.0, 0.5], [0.125, 0.5]])
    X = unit * scale
    s = Standardizer().fit(X)
    assert np.isfinite(s.mean_).all() and np.isfinite(s.scale_).all()
    assert s.scale_[0] > 0 and s.scale_[1] == 1.0  # a constant column is centred only
    Z = s.transform(X)
    assert np.isfinite(Z).all()
    # subnormal inputs: mean_ itself is rounded to a multiple of 2**-1074
    np.testing.assert_allclose(Z[:, 0], _exact_standardized(X[:, 0]),
                               rtol=1e-13 if scale >= 1e-300 else 1e-2)
    np.testing.assert_array_equal(Z[:, 1], 0.0)


def test_ordinary_values_standardize_as_numpy_does():
    X = np.random.default_rng(1).normal(3.0, 2.0, size=(100, 4))
    s = Standardizer().fit(X)
    np.testing.assert_allclose(s.mean_, X.mean(axis=0), rtol=1e-15)
    np.testing.assert_allclose(s.scale_, X.std(axis=0), rtol=1e-15)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_standardizer_transform_refuses_nan_and_inf_naming_the_column(bad):
    s = Standardizer().fit(np.array([[0.0, 1.0, 2.0], [2.0, 3.0, 4.0]]))
    state = pickle.dumps(s)
    with pytest.raises(ValueError, match=r"Standardizer.transform: x must be finite, got "
                                         r"\S+ in column 1"):
        s.transform(np.array([0.0, bad, 1.0]))
    with pytest.raises(ValueError, match=r"x must be finite, got \S+ in column 2 \(row 1\)"):
        s.transform(np.array([[0.0, 1.0, 1.0], [0.0, 1.0, bad]]))
    assert pickle.dumps(s) == state


def test_a_standardised_value_beyond_float64_is_refused_naming_the_column():
    s = Standardizer().fit(np.array([[0.0, 0.0], [1.0, 1e-300]]))  # scale_[1] = 5e-301
    with pytest.raises(ValueError, match=r"Standardizer.transform: column 1 .*beyond float64"):
        s.transform(np.array([0.5, 1e10]))
    b = ItemFeatures(standardize=True).fit(items=np.array([[0.0, 0.0], [1.0, 1e-300]]))
    with pytest.raises(ValueError, match=r"ItemFeatures.transform: column 1 of the output .*"
                                         r"beyond float64"):
        b.transform(items=np.array([[0.5, 1e10]]))
    assert np.isfinite(b.transform(items=np.array([[0.5, 1e-300]]))).all()


# -- fitted norms and products beyond float64 -----------------------------------------------
def test_huge_but_finite_rows_keep_a_finite_unit_ball_factor():
    users = np.array([[1e200, 1e200], [0.0, 1e200]])
    b = UnitBall(UserFeatures()).fit(users=users)
    assert np.isfinite(b.factor_)
    np.testing.assert_allclose(b.factor_, np.sqrt(2.0) * 1e200, rtol=1e-14)
    np.testing.assert_allclose(b.transform(users[0], np.zeros((1, 1))), [[2 ** -0.5] * 2],
                               rtol=1e-14)
    c = UnitBall(Concat(UserFeatures(), ItemFeatures())).fit(users=users,
                                                             items=np.array([[1e200]]))
    np.testing.assert_allclose(c.factor_, np.sqrt(3.0) * 1e200, rtol=1e-14)


@pytest.mark.parametrize("builder, users, items", [
    (Interaction(UserFeatures(), ItemFeatures()), [[1e200, 1.0]], [[1e200, 1.0]]),
    (UnitBall(Interaction(UserFeatures(), ItemFeatures())), [[1e200, 1.0]], [[1e200, 1.0]]),
    (UnitBall(UserFeatures()), [[1.7e308, 1.7e308]], None),
    (Concat(UserFeatures(), ItemFeatures()), [[1.7e308]], [[1.7e308]]),
], ids=["interaction", "unit-ball-interaction", "unit-ball-row", "concat"])
def test_a_fitted_norm_beyond_float64_is_refused_at_fit(builder, users, items):
    with pytest.raises(ValueError, match=r"\.fit: the fitted rows' norm is beyond float64"):
        builder.fit(users=np.array(users), items=None if items is None else np.array(items))
    assert not hasattr(builder, "n_features_out_")


def test_a_transform_beyond_float64_is_refused_naming_the_output_column():
    b = Interaction(UserFeatures(), ItemFeatures()).fit(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"Interaction.transform: column 3 of the output "
                                         r"\(row 1\) is beyond float64"):
        b.transform(np.array([1.0, 1e200]), np.array([[1.0, 1.0], [1.0, 1e200]]))
    assert np.isfinite(b.transform(np.ones(2), np.ones((2, 2)))).all()
