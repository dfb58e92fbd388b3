"""simulate_batch: the same trajectories and final states as sequential simulate runs."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from glmbandits import (GLOC, LinUCB, RandomPolicy, SyntheticGLMEnv, UCBGLM, simulate,
                        simulate_batch)
from glmbandits.batch import SequentialKernel, make_batch_kernel
from glmbandits.batch.backend import get_backend

from batch_helpers import assert_same_trajectory

FACTORIES = {
    "linucb": (lambda s: LinUCB(4, alpha=0.8, seed=s), "LinUCBKernel"),
    "ucb-glm exact": (lambda s: UCBGLM(4, seed=s), "UCBGLMKernel"),
    "ucb-glm lazy": (lambda s: UCBGLM(4, seed=s, refit="lazy", refit_growth=1.5), "UCBGLMKernel"),
    "random (fallback)": (lambda s: RandomPolicy(4, seed=s), "SequentialKernel"),
    "gloc (fallback)": (lambda s: GLOC(4, seed=s), "SequentialKernel"),
}


@pytest.mark.parametrize("name", list(FACTORIES))
@pytest.mark.parametrize("n_actions", [6, (2, 7)])
def test_batch_trajectories_equal_sequential_runs(name, n_actions):
    factory, kernel = FACTORIES[name]
    env_factory = lambda s: SyntheticGLMEnv(4, n_actions, seed=s)  # noqa: E731
    seeds = [0, 1, 5, 11]
    horizon = 150
    batch = simulate_batch(factory, env_factory, horizon, seeds)
    assert batch.kernel == kernel and batch.regret.shape == (4, horizon)
    if "lazy" in name:  # replicates may wait for a refit wave: a few extra steps
        assert horizon <= batch.n_steps < 2 * horizon
    else:
        assert batch.n_steps == horizon
    for r, seed in enumerate(seeds):
        sequential = simulate(factory(seed), env_factory(seed), horizon, seed=seed)
        assert_same_trajectory(batch, r, sequential)
    np.testing.assert_allclose(batch.cumulative_regret[:, -1],
                               batch.regret.sum(axis=1))


@pytest.mark.parametrize("name", ["linucb", "ucb-glm lazy", "ucb-glm exact"])
def test_policies_end_in_the_sequential_state(name):
    factory, _ = FACTORIES[name]
    made = []

    def keep(seed):
        made.append(factory(seed))
        return made[-1]

    simulate_batch(keep, lambda s: SyntheticGLMEnv(4, 5, seed=s), 120, [3, 4])
    for policy, seed in zip(made, [3, 4]):
        reference = factory(seed)
        simulate(reference, SyntheticGLMEnv(4, 5, seed=seed), 120, seed=seed)
        assert policy.n_updates_ == reference.n_updates_ == 120
        # lazy refits are batched Newton solves: the same eq. (3) root to the solver tolerance
        atol = 1e-6 if name == "ucb-glm lazy" else 1e-10
        np.testing.assert_allclose(policy.theta_, reference.theta_, atol=atol)
        np.testing.assert_allclose(policy.V_inv_, reference.V_inv_, atol=1e-12)
        np.testing.assert_allclose(policy.last_scores_.ucb, reference.last_scores_.ucb, atol=atol)
        assert policy.last_propensity_ == reference.last_propensity_
        if name.startswith("ucb-glm"):
            np.testing.assert_array_equal(policy.estimate_.history.X,
                                          reference.estimate_.history.X)
            assert policy.estimate_.log_det_V == pytest.approx(reference.estimate_.log_det_V)
            assert policy.estimate_.n_fits_ == reference.estimate_.n_fits_
        if name == "ucb-glm lazy":
            assert policy.snapshot_.n_refits_ == reference.snapshot_.n_refits_
            # and both keep playing identically
            contexts = np.random.default_rng(0).normal(size=(5, 4)) / 3
            assert policy.select(contexts) == reference.select(contexts)


def test_mixed_or_unbatchable_policies_use_the_sequential_kernel():
    backend = get_backend("numpy")
    assert isinstance(make_batch_kernel([LinUCB(2), UCBGLM(2)], backend), SequentialKernel)
    assert isinstance(make_batch_kernel([UCBGLM(2, l2=0.0)], backend), SequentialKernel)


def test_bad_inputs_raise():
    env = lambda s: SyntheticGLMEnv(2, 3, seed=s)  # noqa: E731
    with pytest.raises(TypeError, match="simulate_batch: policy_factory must be callable"):
        simulate_batch(LinUCB(2), env, 10, [0])
    with pytest.raises(ValueError, match="simulate_batch: seeds must be a non-empty sequence"):
        simulate_batch(lambda s: LinUCB(2), env, 10, [])
    with pytest.raises(ValueError, match="simulate_batch: horizon"):
        simulate_batch(lambda s: LinUCB(2), env, 0, [0])
    with pytest.raises(ValueError, match="get_backend: backend must be one of"):
        simulate_batch(lambda s: LinUCB(2), env, 10, [0], backend="jax")


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_missing_cupy_is_a_clear_import_error():
    with pytest.raises(ImportError, match="backend 'cupy' needs CuPy"):
        get_backend("cupy")


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
@pytest.mark.parametrize("name", ["linucb", "ucb-glm exact", "ucb-glm lazy"])
def test_torch_backend_gives_the_numpy_trajectories(name):
    factory, kernel = FACTORIES[name]
    env_factory = lambda s: SyntheticGLMEnv(4, (2, 7), seed=s)  # noqa: E731
    seeds = [0, 1, 5, 11]
    on_numpy = simulate_batch(factory, env_factory, 200, seeds)
    on_torch = simulate_batch(factory, env_factory, 200, seeds, backend="torch")
    assert on_torch.backend == "torch" and on_torch.kernel == kernel
    np.testing.assert_array_equal(on_torch.actions, on_numpy.actions)
    np.testing.assert_array_equal(on_torch.regret, on_numpy.regret)


@pytest.mark.parametrize("refit", ["lazy", "every_round"])
def test_replicates_may_start_from_different_histories(refit):
    """Per-replicate sample counts: policies warmed up on their own data, then batched."""

    def warmed_up(seed):
        policy = UCBGLM(4, seed=seed, refit=refit, refit_growth=1.5)
        rng = np.random.default_rng(100 + seed)
        for _ in range(5 + 17 * seed):  # 5 to 56 samples: some past tau, some not
            x = rng.normal(size=4) / 3
            policy.select(np.vstack([x, -x]))
            policy.update(x, float(rng.random() < 0.5))
        return policy

    made = []

    def keep(seed):
        made.append(warmed_up(seed))
        return made[-1]

    env_factory = lambda s: SyntheticGLMEnv(4, 6, seed=s)  # noqa: E731
    seeds = [0, 1, 2, 3]
    batch = simulate_batch(keep, env_factory, 120, seeds)
    assert batch.kernel == "UCBGLMKernel"
    for r, seed in enumerate(seeds):
        reference = warmed_up(seed)
        sequential = simulate(reference, env_factory(seed), 120, seed=seed)
        assert_same_trajectory(batch, r, sequential)
        assert made[r].n_updates_ == reference.n_updates_ == 5 + 17 * seed + 120
        assert made[r].estimate_.n_fits_ == reference.estimate_.n_fits_
        np.testing.assert_allclose(made[r].theta_, reference.theta_, atol=1e-12)


def test_lazy_and_exact_replicates_mixed_in_one_kernel():
    factory = lambda s: UCBGLM(4, seed=s, refit="lazy" if s % 2 else "every_round",  # noqa: E731
                               refit_growth=1.5)
    env_factory = lambda s: SyntheticGLMEnv(4, 5, seed=s)  # noqa: E731
    seeds = [0, 1, 2, 3, 4]
    batch = simulate_batch(factory, env_factory, 150, seeds)
    assert batch.kernel == "UCBGLMKernel" and batch.n_steps >= 150
    for r, seed in enumerate(seeds):
        sequential = simulate(factory(seed), env_factory(seed), 150, seed=seed)
        assert_same_trajectory(batch, r, sequential)
