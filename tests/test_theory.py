"""The theory helpers reproduce the paper's formulas on hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from glmbandits import theory

# Hand-computed with d=10, T=1000, K=20, δ=0.1, σ=0.5, κ=0.1, L_μ=0.25, M_μ=0.25:
#   Theorem 2 α  = (0.5/0.1)·√(5·ln 201 + ln 10)                       = 26.841716...
#   Theorem 2 R  = 20 + (2·0.25·0.5·10/0.1)·ln(1000/1)·√1000            = 5481.0600...
#   Theorem 3 α  = (3·0.5/0.1)·√(2·ln 200000)                           = 74.112972...
#   Theorem 3 R  = 45·(0.5·0.25/0.1)·√(ln1000·ln200000·ln100)·√10000    = 110841.35...
#   eq. (4)      = 512·0.25²·0.5²/0.1⁴·(100 + ln 10)                    = 8184206.8...


def test_ucb_glm_alpha_theorem_2():
    assert theory.ucb_glm_alpha(10, 1000, 0.1, 0.5, 0.1) == pytest.approx(26.84171642857877)


def test_ucb_glm_regret_bound_theorem_2():
    value = theory.ucb_glm_regret_bound(10, 1000, 0.1, 0.5, 0.1, 0.25, 20)
    assert value == pytest.approx(5481.060050158851)


def test_supcb_glm_alpha_theorem_3():
    assert theory.supcb_glm_alpha(1000, 20, 0.1, 0.5, 0.1) == pytest.approx(74.11297248450218)


def test_supcb_glm_tau_theorem_3():
    assert theory.supcb_glm_tau(10, 1000) == 100
    assert theory.supcb_glm_tau(3, 10) == 6  # √30 = 5.48, rounded up


def test_supcb_glm_regret_bound_theorem_3():
    value = theory.supcb_glm_regret_bound(10, 1000, 20, 0.1, 0.5, 0.1, 0.25)
    assert value == pytest.approx(110841.3523473934)


def test_normality_min_eigenvalue_eq_4():
    value = theory.normality_min_eigenvalue(10, 0.1, 0.5, 0.1, 0.25)
    assert value == pytest.approx(8184206.807439523)


def test_normality_width_eq_5_scalar_and_vectorized():
    V = np.array([[4.0, 0.0], [0.0, 1.0]])
    # (3·1/0.5)·√(ln(1/e^{-1}))·‖x‖_{V⁻¹} = 6·‖x‖_{V⁻¹}
    assert theory.normality_width([1.0, 0.0], V, math.exp(-1), 1.0, 0.5) == pytest.approx(3.0)
    widths = theory.normality_width(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), V,
                                    math.exp(-1), 1.0, 0.5)
    np.testing.assert_allclose(widths, [3.0, 6.0, 6.0 * math.sqrt(1.25)])


def test_kappa_is_inf_of_dmean_on_the_radius():
    assert theory.kappa("logistic", 4.0) == pytest.approx(math.exp(4) / (1 + math.exp(4)) ** 2)
    assert theory.kappa("linear", 10.0) == 1.0


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: theory.ucb_glm_alpha(10, 1000, 0.0, 0.5, 0.1), "delta must lie in \\(0, 1\\)"),
        (lambda: theory.ucb_glm_alpha(10, 1000, 1.0, 0.5, 0.1), "delta must lie in \\(0, 1\\)"),
        (lambda: theory.ucb_glm_alpha(10, 1000, 0.1, -0.5, 0.1), "sigma must be > 0"),
        (lambda: theory.ucb_glm_alpha(0, 1000, 0.1, 0.5, 0.1), "n_features must be >= 1"),
        (lambda: theory.supcb_glm_alpha(1000, 20, 0.1, 0.5, 0.0), "kappa must be > 0"),
        (lambda: theory.supcb_glm_regret_bound(10, 5, 20, 0.1, 0.5, 0.1, 0.25),
         "horizon must exceed n_features"),
        (lambda: theory.normality_width([1.0], np.eye(2), 0.1, 1.0, 1.0), "x must have shape"),
        (lambda: theory.normality_width([1.0, 0.0], np.zeros((2, 2)), 0.1, 1.0, 1.0),
         "positive definite"),
        (lambda: theory.kappa("logistic", -1.0), "radius must be >= 0"),
    ],
)
def test_bad_arguments_raise_value_errors_naming_the_parameter(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_wrong_types_raise_type_errors():
    with pytest.raises(TypeError, match="horizon must be an int"):
        theory.ucb_glm_alpha(10, 1000.5, 0.1, 0.5, 0.1)
