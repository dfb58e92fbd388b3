"""Families: derivatives against finite differences, constants, domains, samplers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from glmbandits.families import FAMILY_NAMES, LinearFamily, get_family

Z = np.linspace(-6.0, 6.0, 121)
H = 1e-5


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_dmean_matches_finite_differences_of_mean(name):
    family = get_family(name)
    numeric = (family.mean(Z + H) - family.mean(Z - H)) / (2 * H)
    np.testing.assert_allclose(family.dmean(Z), numeric, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_d2mean_matches_finite_differences_of_dmean(name):
    family = get_family(name)
    numeric = (family.dmean(Z + H) - family.dmean(Z - H)) / (2 * H)
    np.testing.assert_allclose(family.d2mean(Z), numeric, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_antiderivative_differentiates_to_mean(name):
    family = get_family(name)
    numeric = (family.antiderivative(Z + H) - family.antiderivative(Z - H)) / (2 * H)
    np.testing.assert_allclose(numeric, family.mean(Z), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_mean_is_strictly_increasing_and_dmean_positive(name):
    family = get_family(name)
    assert np.all(np.diff(family.mean(Z)) > 0)
    assert np.all(family.dmean(Z) > 0)


def test_vectorized_shapes_are_preserved():
    family = get_family("logistic")
    grid = np.zeros((3, 4))
    for method in (family.mean, family.dmean, family.d2mean, family.antiderivative):
        assert method(grid).shape == (3, 4)


def test_logistic_constants():
    family = get_family("logistic")
    assert family.lipschitz() == pytest.approx(0.25)
    assert family.smoothness() == pytest.approx(1 / (6 * math.sqrt(3)))
    assert family.smoothness(0.5) == pytest.approx(abs(float(family.d2mean(0.5))))
    assert family.kappa(4.0) == pytest.approx(math.exp(-4) / (1 + math.exp(-4)) ** 2)


def test_probit_constants():
    family = get_family("probit")
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    assert family.lipschitz() == pytest.approx(phi(0))
    assert family.smoothness() == pytest.approx(phi(1))
    assert family.kappa(2.0) == pytest.approx(phi(2))


def test_linear_and_poisson_constants():
    linear, poisson = get_family("linear"), get_family("poisson")
    assert (linear.lipschitz(), linear.smoothness(), linear.kappa(5.0)) == (1.0, 0.0, 1.0)
    assert poisson.kappa(2.0) == pytest.approx(math.exp(-2))
    assert poisson.lipschitz(2.0) == pytest.approx(math.exp(2))
    assert poisson.smoothness(1.0) == pytest.approx(math.e)
    assert poisson.lipschitz() == math.inf


@pytest.mark.parametrize("name", FAMILY_NAMES)
@pytest.mark.parametrize("radius", [0.0, 0.7, 2.5])
def test_constants_agree_with_a_dense_grid(name, radius):
    family = get_family(name)
    grid = np.linspace(-radius, radius, 20001)
    assert family.kappa(radius) == pytest.approx(family.dmean(grid).min(), rel=1e-6)
    assert family.lipschitz(radius) == pytest.approx(family.dmean(grid).max(), rel=1e-6)
    assert family.smoothness(radius) == pytest.approx(np.abs(family.d2mean(grid)).max(),
                                                      rel=1e-4, abs=1e-12)


def test_bad_radius_is_rejected():
    family = get_family("logistic")
    with pytest.raises(ValueError, match="LogisticFamily.kappa: radius must be >= 0, got -1.0"):
        family.kappa(-1.0)
    with pytest.raises(TypeError, match="radius"):
        family.kappa("1")


def test_reward_domains():
    assert list(get_family("logistic").in_domain([0, 0.5, 1, 2, -0.1])) == [
        True, True, True, False, False]
    assert list(get_family("poisson").in_domain([0, 3, -1])) == [True, True, False]
    assert list(get_family("linear").in_domain([-5.0, np.inf])) == [True, False]


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_sampler_has_the_right_mean_and_domain(name):
    family = get_family(name)
    rng = np.random.default_rng(0)
    means = family.mean(np.full(20000, 0.3))
    draws = family.sample(means, rng)
    assert draws.shape == (20000,)
    assert np.all(family.in_domain(draws))
    standard_error = np.sqrt(max(float(np.var(draws)), 1e-12) / draws.size)
    assert abs(draws.mean() - means[0]) < 6 * standard_error


def test_get_family_accepts_names_and_instances():
    assert get_family("Logistic").name == "logistic"
    instance = LinearFamily(noise_sd=2.0)
    assert get_family(instance) is instance
    assert get_family("linear") == LinearFamily()
    with pytest.raises(ValueError, match=r"family must be one of \['logistic', 'probit', "
                                         r"'linear', 'poisson'\], got 'gaussian'"):
        get_family("gaussian")
    with pytest.raises(TypeError, match="family must be a name"):
        get_family(3)


def test_sub_gaussian_constants():
    assert get_family("logistic").sub_gaussian_sigma() == 0.5
    assert LinearFamily(noise_sd=0.2).sub_gaussian_sigma() == 0.2
    with pytest.raises(ValueError, match="not sub-Gaussian"):
        get_family("poisson").sub_gaussian_sigma()
    with pytest.raises(ValueError, match="noise_sd must be > 0"):
        LinearFamily(noise_sd=0.0)
