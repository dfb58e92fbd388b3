"""Batched environments: every batched form plays its sequential class's rounds bit for bit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from glmbandits import LinUCB, SyntheticGLMEnv, UCBGLM, simulate, simulate_batch
from glmbandits.batch import environments as batch_environments
from glmbandits.batch.environments import (BatchFullInformationEnv, BatchSyntheticGLMEnv,
                                           SequentialEnvironments, make_batch_environment,
                                           register_batch_environment)
from glmbandits.environments.full_information import (ClassificationBanditEnv,
                                                      PerActionFeaturesEnv)

from batch_helpers import assert_same_trajectory

SETTINGS = [(family, contexts, n_actions, redraw)
            for family, contexts, n_actions, redraw in itertools.product(
                ["logistic", "probit", "linear", "poisson"], ["ball", "sphere", "gaussian"],
                [5, (2, 6)], [True, False])
            if family != "poisson" or contexts == "ball"]


def _synthetic(family, contexts, n_actions, redraw):
    def make(seed):
        return SyntheticGLMEnv(3, n_actions, family=family, contexts=contexts,
                               redraw_contexts=redraw,
                               theta_norm=1.0 if family == "poisson" else 3.0, seed=seed)
    return make


def _play_against_sequential(batch, sequential, steps, seed):
    """Step the batched form and the sequential envs with the same random actions, the
    replicates playing in random subsets (as when a kernel holds some back)."""
    rng = np.random.default_rng(seed)
    R = len(sequential)
    kept = []  # arrays handed out earlier must never change
    for step in range(steps):
        rows = np.arange(R) if step % 3 else np.flatnonzero(rng.random(R) < 0.5)
        if rows.shape[0] == 0:
            continue
        for r in range(R):
            K = sequential[r].contexts.shape[0]
            np.testing.assert_array_equal(batch.contexts[r, :K], sequential[r].contexts)
            assert batch.valid is None or batch.valid[r].sum() == K
        kept.append((batch.contexts, batch.contexts.copy()))
        actions = np.array([rng.integers(sequential[r].contexts.shape[0]) for r in rows])
        rewards, expected, regret = batch.step(rows, actions)
        for i, r in enumerate(rows):
            _, reward, info = sequential[r].step(int(actions[i]))
            assert rewards[i] == reward
            assert expected[i] == info["expected_reward"] and regret[i] == info["regret"]
    for array, copy in kept:
        np.testing.assert_array_equal(array, copy)


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: "-".join(map(str, s)))
def test_batched_synthetic_rounds_equal_the_sequential_ones(setting, monkeypatch):
    monkeypatch.setattr(batch_environments, "BLOCK_BYTES", 3 * 5 * 4 * 8 * 7)  # 7-round blocks
    make = _synthetic(*setting)
    seeds = [0, 3, 8, 13]
    envs = [make(s) for s in seeds]
    contexts = [env.reset(seed=s) for env, s in zip(envs, seeds)]
    batch = make_batch_environment(envs, contexts, 40)
    assert isinstance(batch, BatchSyntheticGLMEnv)
    sequential = [make(s) for s in seeds]
    for env, s in zip(sequential, seeds):
        env.reset(seed=s)
    _play_against_sequential(batch, sequential, 40, seed=1)


@pytest.mark.parametrize("setting", [("logistic", "ball", 6, True),
                                     ("probit", "sphere", (2, 7), True),
                                     ("linear", "gaussian", 6, False),
                                     ("poisson", "ball", 4, True)],
                         ids=lambda s: "-".join(map(str, s)))
@pytest.mark.parametrize("policy", ["linucb", "ucb-glm lazy"])
def test_simulate_batch_on_batched_synthetic_envs_equals_simulate(setting, policy):
    family = setting[0]
    if policy == "linucb":
        def factory(s):
            return LinUCB(3, alpha=0.8, seed=s)
    else:
        def factory(s):
            return UCBGLM(3, family=family, refit="lazy", refit_growth=1.5, seed=s)
    make = _synthetic(*setting)
    seeds = [0, 1, 5, 11]
    batch = simulate_batch(factory, make, 120, seeds)
    assert batch.environments == "BatchSyntheticGLMEnv"
    for r, seed in enumerate(seeds):
        sequential = simulate(factory(seed), make(seed), 120, seed=seed)
        assert_same_trajectory(batch, r, sequential)
        np.testing.assert_array_equal(batch.expected_rewards[r], sequential.expected_rewards)


def test_reset_without_seed_keeps_the_factory_streams():
    seeds = [np.random.SeedSequence(7, spawn_key=(r,)) for r in range(3)]
    factory = lambda i: LinUCB(3, seed=100 + i)  # noqa: E731
    make = lambda i: SyntheticGLMEnv(3, 4, seed=seeds[i])  # noqa: E731
    batch = simulate_batch(factory, make, 60, [0, 1, 2], reset_seed=False)
    for i in range(3):
        sequential = simulate(factory(i), make(i), 60)
        assert_same_trajectory(batch, i, sequential)
    with pytest.raises(TypeError, match="simulate_batch: reset_seed must be a bool, got str"):
        simulate_batch(factory, make, 5, [0], reset_seed="no")


def _full_information_envs():
    rng = np.random.default_rng(4)
    z = rng.normal(size=(7, 2)) / 3
    labels = np.array([0, 1, 2, 1, 0, 2, 2])
    features = rng.normal(size=(5, 3, 4)) / 4
    table = rng.random((5, 3))
    return {"classification": lambda s: ClassificationBanditEnv(z, labels, seed=s),
            "per-action": lambda s: PerActionFeaturesEnv(features, table, seed=s)}


@pytest.mark.parametrize("name", ["classification", "per-action"])
def test_batched_full_information_envs_equal_the_sequential_ones(name):
    make = _full_information_envs()[name]
    seeds = [0, 2, 9]
    envs = [make(s) for s in seeds]
    batch = make_batch_environment(envs, [e.reset(seed=s) for e, s in zip(envs, seeds)], 30)
    assert isinstance(batch, BatchFullInformationEnv)
    sequential = [make(s) for s in seeds]
    for env, s in zip(sequential, seeds):
        env.reset(seed=s)
    _play_against_sequential(batch, sequential, 30, seed=2)  # several epochs
    batch_run = simulate_batch(lambda s: LinUCB(sequential[0].n_features, seed=s), make, 25,
                               seeds)
    assert batch_run.environments == "BatchFullInformationEnv"
    for r, seed in enumerate(seeds):
        assert_same_trajectory(batch_run, r, simulate(LinUCB(sequential[0].n_features, seed=seed),
                                                      make(seed), 25, seed=seed))


class _Subclassed(SyntheticGLMEnv):
    """A class without a batched form of its own (a subclass is not its parent)."""


def test_environments_without_a_batched_form_are_stepped_one_by_one():
    seeds = [0, 1, 2]
    factory = lambda s: LinUCB(3, seed=s)  # noqa: E731
    cases = {"subclass": lambda s: _Subclassed(3, 4, seed=s),
             "mixed settings": lambda s: SyntheticGLMEnv(3, 4 + s, seed=s),
             "different samples": lambda s: ClassificationBanditEnv(
                 np.array([[0.5], [0.1 * s]]), np.array([0, 1]), seed=s)}
    for name, make in cases.items():
        batch = simulate_batch(factory if name != "different samples"
                               else (lambda s: LinUCB(2, seed=s)), make, 30, seeds)
        assert batch.environments == "SequentialEnvironments", name
        for r, seed in enumerate(seeds):
            policy = factory(seed) if name != "different samples" else LinUCB(2, seed=seed)
            assert_same_trajectory(batch, r, simulate(policy, make(seed), 30, seed=seed))


def test_a_registered_batched_form_is_used(monkeypatch):
    monkeypatch.setattr(batch_environments, "BATCH_ENVIRONMENTS",
                        dict(batch_environments.BATCH_ENVIRONMENTS))
    built = []

    def builder(envs, rounds):
        built.append(rounds)
        return SequentialEnvironments(envs, [env.contexts for env in envs])

    register_batch_environment(_Subclassed, builder, lambda envs: len(envs) > 1)
    envs = [_Subclassed(3, 4, seed=s) for s in range(2)]
    assert isinstance(make_batch_environment(envs, [e.contexts for e in envs], 17),
                      SequentialEnvironments) and built == [17]
    make_batch_environment(envs[:1], [envs[0].contexts], 5)  # declined: the fallback
    assert built == [17]


def test_drifting_environments_run_through_the_fallback():
    from glmbandits.environments import PiecewiseStationaryGLMEnv, SmoothlyDriftingGLMEnv

    makers = [lambda s: PiecewiseStationaryGLMEnv(3, 4, breakpoints=2, horizon=50, seed=s),
              lambda s: SmoothlyDriftingGLMEnv(3, 4, horizon=50, path_length=2.0, seed=s)]
    for make in makers:
        batch = simulate_batch(lambda s: LinUCB(3, seed=s), make, 50, [0, 1])
        assert batch.environments == "SequentialEnvironments"
        for r in (0, 1):
            assert_same_trajectory(batch, r, simulate(LinUCB(3, seed=r), make(r), 50, seed=r))
