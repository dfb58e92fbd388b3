"""``fit_glm`` on legal extremes: finite estimates, honest convergence flags, no foreign warnings."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from glmbandits import fit_glm
from glmbandits.exceptions import ConvergenceWarning
from glmbandits.families import get_family
from property_helpers import FAMILIES, no_foreign_warnings


@st.composite
def problems(draw: Any) -> tuple[np.ndarray, np.ndarray, str, float, np.ndarray | None]:
    family = draw(st.sampled_from(FAMILIES))
    n = draw(st.integers(1, 40))
    d = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    scale = draw(st.sampled_from((1.0, 1e-3, 1e-9, 10.0)))
    X = rng.normal(size=(n, d)) * scale
    kind = draw(st.sampled_from(("random", "constant", "separable", "extreme")))
    positive = X[:, 0] > 0
    if family in ("logistic", "probit"):
        y = {"constant": np.ones(n), "separable": positive.astype(float)}.get(
            kind, (rng.random(n) < 0.5).astype(float))
    elif family == "linear":
        y = {"constant": np.full(n, 0.5), "separable": np.where(positive, 1.0, -1.0),
             "extreme": rng.normal(size=n) * 1e6}.get(kind, rng.normal(size=n))
    else:
        y = {"constant": np.zeros(n), "separable": np.where(positive, 1e6, 0.0),
             "extreme": rng.poisson(1e5, size=n).astype(float)}.get(
            kind, rng.poisson(2.0, size=n).astype(float))
    l2 = draw(st.sampled_from((0.0, 1e-8, 1.0)))
    theta0 = draw(st.sampled_from((None, "zero", "far")))
    start = None if theta0 is None else np.zeros(d) if theta0 == "zero" else np.full(d, 30.0)
    return X, y, family, l2, start


@given(problem=problems())
def test_fit_glm_is_finite_and_its_flag_is_honest(problem: Any) -> None:
    X, y, family, l2, theta0 = problem
    with no_foreign_warnings() as caught:
        fit = fit_glm(X, y, family, l2=l2, theta0=theta0)
    assert fit.theta.shape == (X.shape[1],)
    assert np.all(np.isfinite(fit.theta))
    assert np.isfinite(fit.gradient_norm)
    if fit.converged:
        fam = get_family(family)
        with np.errstate(over="ignore"):
            residual = fam.mean(X @ fit.theta) - y
        gradient = X.T @ residual + l2 * fit.theta
        scale = max(1.0, float(np.abs(X).sum(axis=0).max()) * max(1.0, float(np.abs(y).max())))
        assert float(np.abs(gradient).max()) <= 1e-5 * scale * max(1, X.shape[0])
    else:
        assert any(issubclass(w.category, ConvergenceWarning) for w in caught)


@pytest.mark.parametrize("X, y", [([[1e4]], [0.0]), ([[1.0], [-1.0]], [1.0, 0.0]),
                                  ([[1.0, 0.0], [-1.0, 0.0], [2.0, 0.0]], [1.0, 0.0, 1.0])])
def test_separable_logistic_data_never_report_converged(X: Any, y: Any) -> None:
    with pytest.warns(ConvergenceWarning):
        fit = fit_glm(X, y, "logistic")
    assert not fit.converged
    assert np.all(np.isfinite(fit.theta))
