"""The numba backend of the single round (LinUCB, UCB-GLM ``backend="numba"``): what
docs/performance.md ("Backends and their guarantees") states, tested.

* the same actions (and so bit-identical regret) as the numpy policy on the benchmark
  problem (d=10, K=20, actions in the unit ball); V⁻¹ within 1e-12 relative;
* numpy stays the default; no numba -> ImportError naming the extra; a numba policy
  saves, loads and pickles; files written before the option load with numpy.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from glmbandits import LinUCB, SyntheticGLMEnv, UCBGLM, load, simulate
from glmbandits.estimation import compiled

needs_numba = pytest.mark.skipif(not compiled.numba_available(), reason="numba is not installed")
TOL = 1e-12  # the relative tolerance docs/performance.md states for the state

POLICIES = {
    "linucb": lambda s, backend: LinUCB(10, seed=s, backend=backend),
    "ucb-glm lazy": lambda s, backend: UCBGLM(10, seed=s, refit="lazy", backend=backend),
    "ucb-glm exact": lambda s, backend: UCBGLM(10, seed=s, backend=backend),
}


@needs_numba
@pytest.mark.parametrize("name", list(POLICIES))
def test_sequential_numba_plays_the_numpy_actions_on_the_benchmark_problem(name):
    factory = POLICIES[name]
    for seed in (0, 1):
        on_numpy = simulate(factory(seed, "numpy"), SyntheticGLMEnv(10, 20, seed=seed), 300,
                            seed=seed)
        policy = factory(seed, "numba")
        on_numba = simulate(policy, SyntheticGLMEnv(10, 20, seed=seed), 300, seed=seed)
        np.testing.assert_array_equal(on_numba.actions, on_numpy.actions)
        np.testing.assert_array_equal(on_numba.regret, on_numpy.regret)
        np.testing.assert_allclose(on_numba.propensities, on_numpy.propensities)
    reference = factory(1, "numpy")
    simulate(reference, SyntheticGLMEnv(10, 20, seed=1), 300, seed=1)
    np.testing.assert_allclose(policy.V_inv_, reference.V_inv_, rtol=TOL, atol=TOL)


def test_numpy_is_the_default_and_bad_backends_are_refused():
    assert LinUCB(2).backend == "numpy" and UCBGLM(2).backend == "numpy"
    with pytest.raises(ValueError, match=r"UCBGLM: backend must be one of \['numpy', 'numba'\], "
                                         r"got 'cuda'"):
        UCBGLM(2, backend="cuda")
    with pytest.raises(TypeError, match="LinUCB: backend must be a str, got int"):
        LinUCB(2, backend=1)


def test_without_numba_asking_for_it_names_the_extra(monkeypatch):
    monkeypatch.setattr(compiled, "_KERNELS", None)
    monkeypatch.setattr(compiled, "numba_available", lambda: False)
    with pytest.raises(ImportError, match=r"LinUCB: backend 'numba' needs numba.*"
                                          r"glmbandits\[compiled\]"):
        LinUCB(2, backend="numba")
    assert LinUCB(2).select(np.eye(2)) in (0, 1)  # numpy does not need it


@needs_numba
def test_a_numba_policy_round_trips_and_old_files_load_with_numpy(tmp_path):
    policy = UCBGLM(3, seed=0, refit="lazy", backend="numba")
    simulate(policy, SyntheticGLMEnv(3, 5, seed=0), 30, seed=0)
    restored = load(policy.save(tmp_path / "p.glmb"))
    assert restored.backend == "numba"
    contexts = np.random.default_rng(1).normal(size=(5, 3)) / 3
    assert restored.select(contexts) == pickle.loads(pickle.dumps(policy)).select(contexts)
    state = LinUCB(2).__getstate__()
    state.pop("backend")
    old = LinUCB.__new__(LinUCB)
    old.__setstate__(state)  # written before the option existed
    assert old.backend == "numpy"


@needs_numba
@pytest.mark.parametrize("name", ["linucb", "ucb-glm lazy"])
def test_the_update_takes_the_compiled_step_and_a_failing_one_changes_nothing(name, monkeypatch):
    kernels = compiled.kernels()
    policy = POLICIES[name](0, "numba")
    simulate(policy, SyntheticGLMEnv(10, 20, seed=0), 40, seed=0)
    contexts = np.random.default_rng(2).normal(size=(20, 10)) / 10
    calls = []

    def spy(V_inv, x):
        calls.append(x)
        return compiled_step(V_inv, x)

    compiled_step = kernels.sherman_morrison
    monkeypatch.setattr(kernels, "sherman_morrison", spy)
    a = policy.select(contexts)
    policy.update(contexts[a], 1.0)
    assert len(calls) == 1 and np.array_equal(calls[0], contexts[a])
    before = pickle.dumps(policy)

    def failing(V_inv, x):
        compiled_step(V_inv, x)  # the estimate's copy is changed, then the step fails
        raise FloatingPointError("injected")

    monkeypatch.setattr(kernels, "sherman_morrison", failing)
    a = policy.select(contexts)
    twin = pickle.loads(pickle.dumps(policy))
    with pytest.raises(FloatingPointError, match="injected"):
        policy.update(contexts[a], 0.0)
    assert policy.n_updates_ == twin.n_updates_ == pickle.loads(before).n_updates_
    estimate, reference = policy.estimate_, twin.estimate_
    for field in ("V_inv_", "theta_", "b_", "log_det_V_"):
        if hasattr(reference, field):
            assert np.array_equal(getattr(estimate, field), getattr(reference, field)), field
    if hasattr(reference, "history"):
        assert estimate.history.n == reference.history.n
