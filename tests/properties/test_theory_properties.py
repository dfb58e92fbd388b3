"""Every public helper of ``glmbandits.theory`` on legal inputs, extremes included (issue 21).

Legal inputs are those the shared rules accept: ints in [1, 1e50], reals in [1e-50, 1e50],
δ in [1e-50, 1). For them every helper returns a finite number, positive where the quantity
is positive (or 0 where it is: no noise smoothness, x = 0, τ = 0), or refuses with a
ValueError saying that the exact value is beyond the largest float; it never returns inf or
NaN, never raises OverflowError and never lets a RuntimeWarning out.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from glmbandits import theory
from property_helpers import no_foreign_warnings

#: log10 of the largest float, with a margin either side where rounding decides.
_LOG10_MAX = math.log10(np.finfo(float).max)


def _reals(low: float = 1e-50, high: float = 1e50) -> st.SearchStrategy[float]:
    """Reals in [low, high]: plain ones, and powers of ten across the whole range."""
    exponents = st.floats(math.log10(low), math.log10(high)).map(lambda e: 10.0 ** e)
    return st.one_of(st.floats(low, high), exponents).filter(lambda v: low <= v <= high)


_INTS = st.one_of(st.integers(1, 1000), st.integers(1, 10**50))
_DELTAS = st.one_of(st.floats(1e-50, 1.0, exclude_max=True),
                    st.floats(-50.0, -1e-9).map(lambda e: 10.0 ** e)).filter(
    lambda v: 1e-50 <= v < 1.0)
_FAMILIES = st.sampled_from(("logistic", "probit", "linear", "poisson"))


def _finite(value: float, positive: bool = True) -> None:
    assert isinstance(value, (int, float)) and not isinstance(value, bool), type(value)
    assert math.isfinite(value), value
    assert value > 0 if positive else value >= 0, value


@given(family=_FAMILIES, radius=st.one_of(_reals(), st.just(0.0)))
def test_kappa_is_positive_or_refused_when_it_underflows(family: str, radius: float) -> None:
    with no_foreign_warnings():
        try:
            value = theory.kappa(family, radius)
        except ValueError as error:
            assert "kappa" in str(error) and "radius" in str(error)
            assert radius > 700.0 or family == "probit" and radius > 37.0, radius
            return
    _finite(value)


@given(family=st.sampled_from(("logistic", "probit", "linear")),
       theta_norm=st.one_of(_reals(), st.just(0.0)))
def test_kappa_and_sigma_is_positive_or_names_theta_norm(family: str, theta_norm: float) -> None:
    with no_foreign_warnings():
        try:
            kappa_, sigma_ = theory.kappa_and_sigma(family, theta_norm)
        except ValueError as error:
            assert "theta_norm" in str(error), error
            return
    _finite(kappa_)
    _finite(sigma_)
    assert kappa_ >= 1e-50  # every other helper accepts it


@given(d=_INTS, T=_INTS, delta=_DELTAS, sigma=_reals(), kappa=_reals())
def test_ucb_glm_alpha_is_finite_and_positive(d: int, T: int, delta: float, sigma: float,
                                              kappa: float) -> None:
    with no_foreign_warnings():
        _finite(theory.ucb_glm_alpha(d, T, delta, sigma, kappa))


@given(d=_INTS, T=_INTS, delta=_DELTAS, sigma=_reals(), kappa=_reals(), lipschitz=_reals(),
       tau=st.one_of(st.just(0.0), _reals()))
def test_ucb_glm_regret_bound_is_finite_and_never_negative(
        d: int, T: int, delta: float, sigma: float, kappa: float, lipschitz: float,
        tau: float) -> None:
    with no_foreign_warnings():
        try:
            value = theory.ucb_glm_regret_bound(d, T, delta, sigma, kappa, lipschitz, tau)
        except ValueError as error:  # the only refusal of legal scalars: T < dδ
            assert "horizon must be >= n_features * delta" in str(error), error
            assert T < d * delta
            return
    _finite(value, positive=False)
    assert value >= tau


@given(sigma=_reals(), kappa=_reals(), lipschitz=_reals())
def test_ucb_glm_theorem4_alpha_is_finite_and_positive(sigma: float, kappa: float,
                                                       lipschitz: float) -> None:
    with no_foreign_warnings():
        _finite(theory.ucb_glm_theorem4_alpha(sigma, kappa, lipschitz))


@given(d=_INTS, T=_INTS, sigma=_reals(), kappa=_reals())
def test_ucb_glm_theorem4_tau_is_a_nonnegative_int(d: int, T: int, sigma: float,
                                                   kappa: float) -> None:
    with no_foreign_warnings():
        tau = theory.ucb_glm_theorem4_tau(d, T, sigma, kappa)
    assert isinstance(tau, int) and tau >= 0
    assert (tau > 0) == (T > 1)


@given(alpha=_reals(), refit_tol=st.floats(0.0, 1.0, exclude_max=True))
def test_widen_for_refit_tol_is_finite_and_at_least_alpha(alpha: float, refit_tol: float) -> None:
    assume(refit_tol == 0.0 or refit_tol >= 1e-50)
    with no_foreign_warnings():
        value = theory.widen_for_refit_tol(alpha, refit_tol)
    _finite(value)
    assert value >= alpha


@given(T=_INTS, K=_INTS, delta=_DELTAS, sigma=_reals(), kappa=_reals())
def test_supcb_glm_alpha_is_finite_and_positive(T: int, K: int, delta: float, sigma: float,
                                                kappa: float) -> None:
    with no_foreign_warnings():
        _finite(theory.supcb_glm_alpha(T, K, delta, sigma, kappa))


@given(d=_INTS, T=_INTS)
def test_supcb_glm_tau_is_a_positive_int(d: int, T: int) -> None:
    with no_foreign_warnings():
        tau = theory.supcb_glm_tau(d, T)
    assert isinstance(tau, int) and tau >= 1
    assert (tau - 1) ** 2 < d * T <= tau ** 2  # ⌈√(dT)⌉, exactly, even for 100-digit dT


@given(d=_INTS, T=_INTS, K=_INTS, delta=_DELTAS, sigma=_reals(), kappa=_reals(),
       lipschitz=_reals())
def test_supcb_glm_regret_bound_is_finite_and_positive(
        d: int, T: int, K: int, delta: float, sigma: float, kappa: float,
        lipschitz: float) -> None:
    assume(T > d)
    with no_foreign_warnings():
        _finite(theory.supcb_glm_regret_bound(d, T, K, delta, sigma, kappa, lipschitz))


def _log10_min_eigenvalue(d: int, delta: float, sigma: float, kappa: float, m_mu: float
                          ) -> float:
    return (math.log10(512.0) + 2 * math.log10(m_mu) + 2 * math.log10(sigma)
            - 4 * math.log10(kappa) + math.log10(d * d + math.log(1.0 / delta)))


@given(d=_INTS, delta=_DELTAS, sigma=_reals(), kappa=_reals(),
       m_mu=st.one_of(st.just(0.0), _reals()))
def test_normality_min_eigenvalue_is_finite_or_refused_when_beyond_the_float_range(
        d: int, delta: float, sigma: float, kappa: float, m_mu: float) -> None:
    exact = -math.inf if m_mu == 0.0 else _log10_min_eigenvalue(d, delta, sigma, kappa, m_mu)
    assume(abs(exact - _LOG10_MAX) > 1e-6)
    with no_foreign_warnings():
        try:
            value = theory.normality_min_eigenvalue(d, delta, sigma, kappa, m_mu)
        except ValueError as error:
            assert "largest float" in str(error), error
            assert exact > _LOG10_MAX
            return
    assert exact < _LOG10_MAX
    _finite(value, positive=False)
    if exact > -300.0:  # far from underflow
        assert value > 0 and math.log10(value) == pytest.approx(exact, abs=1e-9)


@st.composite
def _directions_and_grams(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    d = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    scale_x = 10.0 ** draw(st.integers(-300, 50))
    scale_v = 10.0 ** draw(st.integers(-300, 50))
    ridge = 10.0 ** draw(st.integers(-12, 2))
    A = rng.normal(size=(d, d))
    gram = A @ A.T + ridge * np.eye(d)
    V = scale_v * (gram / np.max(np.abs(gram)))  # largest entry scale_v <= 1e50: legal
    V = 0.5 * (V + V.T)
    x = scale_x * rng.normal(size=(draw(st.integers(1, 3)), d))
    x = np.clip(x, -1e50, 1e50)
    if draw(st.booleans()):
        x[0] = 0.0
    return x, V


@given(data=_directions_and_grams(), delta=_DELTAS, sigma=_reals(), kappa=_reals())
def test_normality_width_is_finite_and_nonnegative_or_refused(
        data: tuple[np.ndarray, np.ndarray], delta: float, sigma: float, kappa: float) -> None:
    x, V = data
    with no_foreign_warnings():
        try:
            widths = theory.normality_width(x, V, delta, sigma, kappa)
        except ValueError as error:
            assert "largest float" in str(error) or "positive definite" in str(error), error
            return
    assert widths.shape == (x.shape[0],)
    assert np.all(np.isfinite(widths)) and np.all(widths >= 0.0), widths
    nonzero = np.any(x != 0.0, axis=1)
    assert np.all(widths[~nonzero] == 0.0)


def test_every_public_helper_has_a_property_here() -> None:
    covered = {"kappa", "kappa_and_sigma", "ucb_glm_alpha", "ucb_glm_regret_bound",
               "ucb_glm_theorem4_alpha", "ucb_glm_theorem4_tau", "widen_for_refit_tol",
               "supcb_glm_alpha", "supcb_glm_tau", "supcb_glm_regret_bound",
               "normality_width", "normality_min_eigenvalue"}
    assert set(theory.__all__) == covered
