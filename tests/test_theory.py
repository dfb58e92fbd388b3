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


# -- issue 21: refuse the illegal, return finite values for the legal ---------------------------


def test_ucb_glm_regret_bound_refuses_a_horizon_below_d_delta_instead_of_a_negative_bound():
    # T/(dδ) = 1/5 < 1 made log(T/(dδ)) < 0 and the "bound" -40.2
    with pytest.raises(ValueError, match=r"ucb_glm_regret_bound: horizon must be >= "
                                         r"n_features \* delta = 5.0 .*got 1"):
        theory.ucb_glm_regret_bound(10, 1, 0.5, 0.5, 0.1, 0.25, 0)
    # at T = dδ the log term is 0 and the bound is τ (used by the Theorem 2 figure's first rounds)
    assert theory.ucb_glm_regret_bound(10, 1, 0.1, 0.5, 0.1, 0.25, 7.0) == 7.0


def test_normality_min_eigenvalue_refuses_a_value_beyond_the_float_range_instead_of_inf():
    # 512·(1e50)²·(1e50)²/(1e-50)⁴ ≈ 1e402: not representable
    with pytest.raises(ValueError, match=r"normality_min_eigenvalue: .*about 1e\+40[0-9], "
                                         r".*largest float"):
        theory.normality_min_eigenvalue(10, 0.1, 1e50, 1e-50, 1e50)


def test_normality_min_eigenvalue_extreme_but_representable_is_finite():
    value = theory.normality_min_eigenvalue(10, 1e-50, 1e20, 1e-40, 1e20)
    expected = 512.0 * 1e40 * 1e40 / 1e-160 * (100.0 + 50.0 * math.log(10.0))  # about 1e245
    assert math.isfinite(value) and value == pytest.approx(expected)
    assert theory.normality_min_eigenvalue(3, 0.5, 1.0, 0.5, 0.0) == 0.0  # M_μ = 0 (linear)


def test_normality_width_of_a_representable_width_is_finite():
    # ‖x‖_{V⁻¹} = 1e50/√1e-300 = 1e200: the old x'V⁻¹x = 1e400 overflowed to inf
    width = theory.normality_width([1e50, 0.0], 1e-300 * np.eye(2), 0.1, 1.0, 1.0)
    assert width == pytest.approx(3.0 * math.sqrt(math.log(10.0)) * 1e200)
    widths = theory.normality_width(np.array([[1e50, 0.0], [0.0, 0.0]]), 1e-300 * np.eye(2),
                                    0.1, 1.0, 1.0)
    np.testing.assert_allclose(widths, [width, 0.0])


def test_normality_width_beyond_the_float_range_is_refused():
    with pytest.raises(ValueError, match=r"normality_width: .*largest float"):
        # 3e100 · 1e50/√1e-320 · √log 10 ≈ 4.6e310
        theory.normality_width([1e50, 0.0], 1e-320 * np.eye(2), 0.1, 1e50, 1e-50)


def test_normality_width_refuses_an_asymmetric_v():
    with pytest.raises(ValueError, match="normality_width: V must be symmetric"):
        theory.normality_width([1.0, 0.0], np.array([[2.0, 1.0], [0.0, 2.0]]), 0.1, 1.0, 1.0)


def test_kappa_that_underflows_to_zero_is_refused_naming_the_radius():
    # μ'(1000) = e^-1000 is below the smallest float: κ would be 0, and every bound divides by it
    with pytest.raises(ValueError, match=r"kappa: .*radius = 1000"):
        theory.kappa("logistic", 1000.0)
    with pytest.raises(ValueError, match=r"kappa: .*radius = inf"):
        theory.kappa("logistic", math.inf)
    assert theory.kappa("poisson", 700.0) == pytest.approx(math.exp(-700.0))
    assert theory.kappa("linear", math.inf) == 1.0


def test_kappa_and_sigma_refuses_a_theta_norm_whose_kappa_no_helper_accepts():
    # κ(201) = 5e-88 < 1e-50, the smallest kappa the helpers accept; say so, naming theta_norm
    with pytest.raises(ValueError, match=r"kappa_and_sigma: theta_norm = 200.0 gives "
                                         r"kappa = 5.09e-88"):
        theory.kappa_and_sigma("logistic", 200.0)
    kappa_, sigma_ = theory.kappa_and_sigma("logistic", 100.0)
    assert 1e-50 < kappa_ < 1e-40 and sigma_ == 0.5


def test_a_delta_below_the_smallest_accepted_is_refused_and_the_smallest_gives_finite_values():
    # the package's magnitude rule (glmbandits._validation): δ >= 1e-50, so log(1/δ) <= 115.1
    with pytest.raises(ValueError, match=r"ucb_glm_alpha: delta must .*1e-50.* got 1e-300"):
        theory.ucb_glm_alpha(10, 1000, 1e-300, 0.5, 0.1)
    for value in (theory.ucb_glm_alpha(10, 1000, 1e-50, 0.5, 0.1),
                  theory.ucb_glm_regret_bound(10, 10**50, 1e-50, 0.5, 1e-50, 0.25, 0.0),
                  theory.supcb_glm_regret_bound(10, 10**50, 10**50, 1e-50, 0.5, 1e-50, 0.25),
                  theory.normality_min_eigenvalue(10**50, 1e-50, 0.5, 1e-20, 0.25)):
        assert math.isfinite(value) and value > 0
