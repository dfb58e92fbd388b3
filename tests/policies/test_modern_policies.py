"""Focused tests of the maths of each modern policy (issue 5)."""

import pickle

import numpy as np
import pytest
from scipy import optimize

import glmbandits as gb
from glmbandits import (ECOLog, EpsilonGreedy, GLMTSL, GLMUCB, GLOC, LaplaceTS, RSGLinCB,
                        SyntheticGLMEnv, simulate)
from glmbandits.families import get_family
from glmbandits.policies.registry import ProblemSpec, make_policy

MODERN = [GLMUCB, GLMTSL, LaplaceTS, GLOC, ECOLog, RSGLinCB, EpsilonGreedy]
NAMES = ["glm-ucb", "glm-tsl", "laplace-ts", "gloc", "ecolog", "rs-glincb", "epsilon-greedy"]


def _feed(policy, n, seed=0, d=3, K=5):
    rng = np.random.default_rng(seed)
    theta = np.array([1.0, -1.0, 0.5])[:d]
    for _ in range(n):
        X = rng.normal(size=(K, d))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
        a = policy.select(X)
        y = float(rng.random() < 1.0 / (1.0 + np.exp(-X[a] @ theta)))
        policy.update(X[a], y)
    return policy


@pytest.mark.parametrize("cls", MODERN)
def test_exported_and_default_constructible(cls):
    assert cls.__name__ in gb.__all__
    policy = cls(n_features=3, seed=0)
    assert policy.family.name == "logistic"
    _feed(policy, 30)
    assert policy.n_updates_ == 30
    assert 0.0 < policy.last_propensity_ <= 1.0


@pytest.mark.parametrize("name", NAMES)
def test_registered(name):
    policy = make_policy(name, ProblemSpec(3, 5, "logistic", 100, 2.0), seed=0)
    assert type(policy).__name__ in gb.__all__


@pytest.mark.parametrize("cls", MODERN)
def test_seeded_pickle_and_rejection(cls):
    a, b = _feed(cls(n_features=3, seed=7), 40), _feed(cls(n_features=3, seed=7), 40)
    assert pickle.dumps(a) == pickle.dumps(b)
    clone = pickle.loads(pickle.dumps(a))
    X = np.random.default_rng(3).normal(size=(6, 3)) / 3
    assert [a.select(X) for _ in range(5)] == [clone.select(X) for _ in range(5)]
    before = pickle.dumps(a)
    for bad in (np.full((4, 3), np.nan), np.zeros((0, 3)), np.zeros((4, 2))):
        with pytest.raises(ValueError):
            a.select(bad)
    with pytest.raises(ValueError):
        a.update(np.zeros(3), 2.0)
    assert pickle.dumps(a) == before


@pytest.mark.parametrize("cls,param", [(GLMUCB, "alpha"), (GLOC, "alpha"), (ECOLog, "alpha"),
                                       (GLMTSL, "a"), (LaplaceTS, "exploration"),
                                       (RSGLinCB, "radius"), (EpsilonGreedy, "epsilon")])
def test_bad_hyperparameters(cls, param):
    with pytest.raises(ValueError, match=param):
        cls(n_features=3, **{param: -1.0})
    with pytest.raises(TypeError, match=param):
        cls(n_features=3, **{param: "big"})


def test_ecolog_rejects_non_bernoulli_family():
    with pytest.raises(ValueError, match="family"):
        ECOLog(n_features=2, family="poisson")


# -- GLOC / ECOLog: no stored history ------------------------------------------
@pytest.mark.parametrize("cls", [GLOC, ECOLog, LaplaceTS])
def test_constant_state_size(cls):
    short = len(pickle.dumps(_feed(cls(n_features=3, seed=0), 100)))
    long = len(pickle.dumps(_feed(cls(n_features=3, seed=0), 2000)))
    assert abs(long - short) <= 8  # only integer counters change encoding width
    assert len(pickle.dumps(_feed(UCBGLMlike(), 2000))) > 2 * short  # a history policy grows


def UCBGLMlike():
    return gb.UCBGLM(n_features=3, seed=0)


def test_gloc_centre_is_ridge_regression_of_online_predictions():
    policy = GLOC(n_features=3, l2=2.0, seed=0)
    rng = np.random.default_rng(0)
    xs, zs = [], []
    for _ in range(50):
        X = rng.normal(size=(4, 3)) / 2
        a = policy.select(X)
        zs.append(float(X[a] @ policy.theta_online_))
        xs.append(X[a])
        policy.update(X[a], float(rng.random() < 0.5))
    Xh = np.array(xs)
    V = 2.0 * np.eye(3) + Xh.T @ Xh
    np.testing.assert_allclose(policy.theta_, np.linalg.solve(V, Xh.T @ np.array(zs)), atol=1e-10)
    np.testing.assert_allclose(policy.V_inv_, np.linalg.inv(V), atol=1e-10)
    assert np.linalg.norm(policy.theta_online_) <= policy.radius + 1e-9


def test_gloc_ons_step():
    policy = GLOC(n_features=2, kappa=0.25, l2=1.0, radius=100.0)
    x = np.array([0.6, 0.8])
    policy.update(x, 1.0)
    V_inv = np.linalg.inv(np.eye(2) + np.outer(x, x))
    np.testing.assert_allclose(policy.theta_online_, (0.5 / 0.25) * V_inv @ x)


def test_ecolog_step_and_weighted_gram():
    policy = ECOLog(n_features=2, l2=1.0, radius=50.0)
    family = get_family("logistic")
    x = np.array([0.6, 0.8])
    policy.update(x, 1.0)
    theta = policy.theta_

    def objective(t):
        return 0.5 * t @ t + float(family.antiderivative(x @ t)) - x @ t

    np.testing.assert_allclose(theta, optimize.minimize(objective, np.zeros(2)).x, atol=1e-5)
    W = np.eye(2) + float(family.dmean(x @ theta)) * np.outer(x, x)
    np.testing.assert_allclose(policy.W_inv_, np.linalg.inv(W), atol=1e-12)
    assert policy.confidence_radius() > 0


def test_ecolog_estimate_approaches_theta_star():
    env = SyntheticGLMEnv(2, 20, "logistic", 2.0, seed=1)
    policy = ECOLog(n_features=2, radius=2.0, seed=0)
    simulate(policy, env, 1500, seed=1)
    assert np.linalg.norm(policy.theta_ - env.theta_star) < 1.0


# -- RS-GLinCB -------------------------------------------------------------
@pytest.mark.parametrize("family,norm", [("logistic", 3.0), ("probit", 2.0)])
def test_rs_glincb_refits_within_budget(family, norm):
    T = 3000
    env = SyntheticGLMEnv(3, 10, family, norm, seed=4)
    policy = RSGLinCB(n_features=3, family=family, horizon=T, radius=norm, seed=0,
                      warmup_constant=RSGLinCB.THEORY_WARMUP_CONSTANT)  # warm-up and switches
    result = simulate(policy, env, T, seed=4)
    budget = policy.refit_budget(T)
    assert policy.n_refits_ <= budget
    assert policy.n_refits_ == policy.n_warmup_ + policy.n_switches_
    assert policy.n_refits_ < T / 10  # rarely switching
    assert policy.warm_.n_fits_ + policy.all_.n_fits_ == policy.n_refits_
    assert budget < 10 * np.log(T) ** 2  # the O(log^2 T) budget of the issue
    assert result.cumulative_regret[-1] < 0.5 * T


def test_rs_glincb_frozen_between_switches():
    policy = RSGLinCB(n_features=2, horizon=500, warmup_constant=1e-6, seed=0)  # no warm-up
    _feed(policy, 200, d=2)
    assert policy.n_warmup_ == 0
    switches, theta = policy.n_switches_, policy.theta_.copy()
    det_tau = policy.logdet_H_tau_
    assert policy.logdet_H_ < np.log1p(policy.doubling) + det_tau  # no switch due now
    policy.select(np.eye(2) * 0.01)  # tiny x: adds almost nothing to det H
    assert policy.n_switches_ == switches
    np.testing.assert_array_equal(policy.theta_, theta)
    assert policy.n_switches_ <= 1 + 2 * np.log1p(200 * 0.25 / (2 * 0.5)) / np.log(1.5)


# -- GLM-UCB -----------------------------------------------------------------
def test_glm_ucb_projection_lands_in_ball_and_is_optimal():
    policy = GLMUCB(n_features=2, projection=True, radius=0.5, l2=1e-3, tau=0, seed=0)
    _feed(policy, 60, d=2)
    assert np.linalg.norm(policy.estimate_.theta) > 0.5
    projected = policy.projected_theta()
    assert np.linalg.norm(projected) <= 0.5 + 1e-9
    X, V_inv, fam = policy.estimate_.history.X, policy.estimate_.V_inv, policy.family
    target = X.T @ fam.mean(X @ policy.estimate_.theta)

    def gap(th):
        r = X.T @ fam.mean(X @ th) - target
        return r @ V_inv @ r

    naive = policy.estimate_.theta * 0.5 / np.linalg.norm(policy.estimate_.theta)
    assert gap(projected) <= gap(naive) + 1e-9
    for angle in np.linspace(0, 2 * np.pi, 64):
        assert gap(projected) <= gap(0.5 * np.array([np.cos(angle), np.sin(angle)])) + 1e-6


def test_glm_ucb_index_is_on_mean_scale():
    policy = _feed(GLMUCB(n_features=3, seed=0), 40)
    X = np.eye(3)
    policy.select(X)
    s = policy.last_scores_
    np.testing.assert_allclose(s.ucb, get_family("logistic").mean(s.mean) + s.width)
    assert policy.rho(np.e ** 4 - 1) == pytest.approx(2.0)


# -- GLM-TSL / LaplaceTS ------------------------------------------------------
def test_glm_tsl_draws_follow_laplace_posterior():
    policy = _feed(GLMTSL(n_features=3, a=0.7, seed=0), 80)
    H = policy.hessian()
    theta = policy.estimate_.theta
    X = np.eye(3)
    draws = []
    for _ in range(3000):
        policy.select(X)
        draws.append(policy.last_scores_.ucb)  # X = I: the scores are the draw itself
    draws = np.array(draws)
    np.testing.assert_allclose(draws.mean(axis=0), theta, atol=0.1)
    np.testing.assert_allclose(np.cov(draws.T), 0.49 * np.linalg.inv(H),
                               atol=0.15 * np.abs(0.49 * np.linalg.inv(H)).max())


def test_thompson_propensity_tracks_choice_frequency():
    policy = GLMTSL(n_features=2, tau=0, n_propensity_samples=400, seed=0)
    X = np.array([[0.3, 0.0], [0.0, 0.1]])
    picks = [policy.select(X) for _ in range(400)]
    freq0 = np.mean(np.array(picks) == 0)
    policy.select(X)
    p = policy.last_propensity_ if policy.select(X) == 0 else 1 - policy.last_propensity_
    assert abs(p - freq0) < 0.12


def test_laplace_ts_update_is_map_and_precision():
    policy = LaplaceTS(n_features=3, prior_precision=2.0)
    fam = get_family("logistic")
    x = np.array([0.5, -0.5, 0.2])
    policy.update(x, 0.0)

    def objective(w):
        return 0.5 * np.sum(2.0 * w * w) + float(fam.antiderivative(x @ w))

    expected = optimize.minimize(objective, np.zeros(3)).x
    np.testing.assert_allclose(policy.m_, expected, atol=1e-5)
    np.testing.assert_allclose(policy.q_, 2.0 + float(fam.dmean(x @ expected)) * x * x)


# -- epsilon-greedy --------------------------------------------------------------
def test_epsilon_greedy_exact_propensity_and_rate():
    policy = _feed(EpsilonGreedy(n_features=3, epsilon=0.3, seed=0), 30)
    X = np.random.default_rng(5).normal(size=(4, 3))
    greedy = int(np.argmax(X @ policy.estimate_.theta))
    picks = []
    for _ in range(2000):
        a = policy.select(X)
        expected = 0.3 / 4 + (0.7 if a == greedy else 0.0)
        assert policy.last_propensity_ == pytest.approx(expected)
        picks.append(a)
    assert abs(np.mean(np.array(picks) == greedy) - (0.7 + 0.3 / 4)) < 0.04


def test_epsilon_decay():
    policy = EpsilonGreedy(n_features=2, epsilon=1.0, decay=0.5, tau=0)
    assert policy.current_epsilon() == 1.0
    for _ in range(99):
        policy.update(np.array([0.1, 0.2]), 1.0)
    assert policy.current_epsilon() == pytest.approx(0.1)


# -- environment option ----------------------------------------------------------
def test_fixed_arm_set_environment():
    env = SyntheticGLMEnv(2, 5, seed=0, redraw_contexts=False)
    first = env.reset(seed=3).copy()
    for a in range(5):
        contexts, _, _ = env.step(a)
        np.testing.assert_array_equal(contexts, first)
    assert not np.array_equal(env.reset(seed=4), first)
    moving = SyntheticGLMEnv(2, 5, seed=0)
    start = moving.contexts.copy()
    assert not np.array_equal(moving.step(0)[0], start)
    with pytest.raises(TypeError, match="redraw_contexts"):
        SyntheticGLMEnv(2, 5, redraw_contexts="no")
