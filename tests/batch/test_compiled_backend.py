"""The numba backend of the lockstep kernels: what docs/performance.md ("Backends and their
guarantees") states, tested.

* compiled kernels = the numpy formulas to rounding (scores within 1e-12 relative, the
  same argmax and ties, V⁻¹ exactly symmetric);
* lockstep on numba: the same actions (and so bit-identical regret) as batched numpy and
  as the sequential numpy runs, on the benchmark problem (d=10, K=20) and with varying K;
  torch on CPU: the same too, where torch is installed;
* no numba -> ImportError naming the extra.
"""

from __future__ import annotations

import importlib.util
import numpy as np
import pytest

from glmbandits import LinUCB, SyntheticGLMEnv, UCBGLM, simulate, simulate_batch
from glmbandits.batch.backend import get_backend
from glmbandits.estimation import compiled, sherman_morrison_update
from glmbandits.policies.scores import ucb_scores

needs_numba = pytest.mark.skipif(not compiled.numba_available(), reason="numba is not installed")
TOL = 1e-12  # the relative tolerance docs/performance.md states for scores and state

POLICIES = {
    "linucb": lambda s: LinUCB(10, seed=s),
    "ucb-glm lazy": lambda s: UCBGLM(10, seed=s, refit="lazy"),
    "ucb-glm exact": lambda s: UCBGLM(10, seed=s),
}


def _problem(seed: int, K: int = 20, d: int = 10):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(K, d))
    X *= rng.random((K, 1)) ** (1 / d) / np.linalg.norm(X, axis=1, keepdims=True)
    A = rng.normal(size=(d, d))
    V_inv = np.linalg.inv(np.eye(d) + A @ A.T)
    return X, rng.normal(size=d), (V_inv + V_inv.T) / 2


@needs_numba
@pytest.mark.parametrize("K, d", [(20, 10), (7, 3), (1, 2)])
def test_compiled_scores_equal_numpy_to_rounding(K, d):
    kernels = compiled.kernels()
    X, theta, V_inv = _problem(K + d, K, d)
    reference = ucb_scores(X, theta, V_inv, 0.7)
    values, action, count = kernels.ucb_one(X, theta, V_inv, 0.7)
    for row, expected in zip(values, (reference.ucb, reference.mean, reference.width)):
        np.testing.assert_allclose(row, expected, rtol=TOL, atol=TOL)
    assert action == int(np.argmax(reference.ucb)) and count == 1
    # stacked forms: three replicates, the middle one skipped
    R = 3
    Xs, thetas = np.stack([X] * R), np.stack([theta] * R)
    Vs, alpha = np.stack([V_inv] * R), np.full(R, 0.7)
    rows = np.array([0, 2])
    actions, counts = np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)
    M = np.concatenate([Vs, thetas[:, :, None]], axis=2)
    out = [np.zeros((2, K)) for _ in range(3)]
    kernels.augmented_ucb_rows(Xs, M, alpha, rows, *out, actions, counts)
    for i in range(2):
        for row, expected in zip(out, (reference.ucb, reference.mean, reference.width)):
            np.testing.assert_allclose(row[i], expected, rtol=TOL, atol=TOL)
    assert actions.tolist() == [action] * 2 and counts.tolist() == [1, 1]


@needs_numba
def test_compiled_ties_and_nan_are_reported_for_numpy_to_decide():
    kernels = compiled.kernels()
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.0]])
    _, action, count = kernels.ucb_one(X, np.zeros(2), np.eye(2), 1.0)
    assert (action, count) == (0, 2)  # numpy's first maximum, two tied
    _, _, count = kernels.ucb_one(X, np.array([np.nan, 0.0]), np.eye(2), 1.0)
    assert count == 0


@needs_numba
def test_compiled_rank_one_steps_equal_numpy_and_keep_v_inv_symmetric():
    kernels = compiled.kernels()
    X, _, V_inv = _problem(3)
    ours, theirs = V_inv.copy(), V_inv.copy()
    for x in X:
        q_ours, q_theirs = kernels.sherman_morrison(ours, x), sherman_morrison_update(theirs, x)
        assert q_ours == pytest.approx(q_theirs, rel=TOL)
    np.testing.assert_allclose(ours, theirs, rtol=TOL, atol=TOL)
    assert np.array_equal(ours, ours.T)
    # the ridge step of LinUCB on replicate 1 of 2: V⁻¹, b and θ̂ = V⁻¹b; replicate 0 untouched
    V_ridge, b, theta = np.stack([np.eye(10)] * 2), np.zeros((2, 10)), np.zeros((2, 10))
    kernels.ridge_rows(V_ridge, b, theta, X[:1], np.array([0.5]), np.array([1]))
    A = np.eye(10) + np.outer(X[0], X[0])
    np.testing.assert_allclose(V_ridge[1], np.linalg.inv(A), rtol=TOL, atol=TOL)
    np.testing.assert_allclose(theta[1], np.linalg.solve(A, 0.5 * X[0]), rtol=TOL, atol=TOL)
    assert np.array_equal(b[1], 0.5 * X[0])
    assert np.array_equal(V_ridge[0], np.eye(10)) and not b[0].any() and not theta[0].any()


@needs_numba
@pytest.mark.parametrize("name", list(POLICIES))
@pytest.mark.parametrize("n_actions", [20, (2, 7)])
def test_lockstep_numba_plays_the_sequential_numpy_actions(name, n_actions):
    factory = POLICIES[name]
    env_factory = lambda s: SyntheticGLMEnv(10, n_actions, seed=s)  # noqa: E731
    seeds = [0, 3, 7]
    made = []

    def keep(seed):
        made.append(factory(seed))
        return made[-1]

    on_numpy = simulate_batch(factory, env_factory, 150, seeds)
    on_numba = simulate_batch(keep, env_factory, 150, seeds, backend="numba")
    assert on_numba.backend == "numba" and on_numba.kernel == on_numpy.kernel
    for field in ("actions", "regret", "rewards", "propensities"):
        np.testing.assert_array_equal(getattr(on_numba, field), getattr(on_numpy, field))
    for r, seed in enumerate(seeds):
        sequential = factory(seed)
        run = simulate(sequential, env_factory(seed), 150, seed=seed)
        np.testing.assert_array_equal(on_numba.actions[r], run.actions)
        np.testing.assert_array_equal(on_numba.regret[r], run.regret)
        np.testing.assert_allclose(made[r].V_inv_, sequential.V_inv_, rtol=TOL, atol=TOL)
        # refits run on numpy; their certificate reads a V⁻¹ a few ulps apart
        np.testing.assert_allclose(made[r].theta_, sequential.theta_, rtol=1e-9, atol=1e-9)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
@needs_numba
def test_torch_cpu_numba_and_numpy_lockstep_runs_agree():
    factory = POLICIES["ucb-glm lazy"]
    env_factory = lambda s: SyntheticGLMEnv(10, 20, seed=s)  # noqa: E731
    runs = [simulate_batch(factory, env_factory, 100, [0, 1],
                           backend=backend) for backend in ("numpy", "numba", "torch")]
    for run in runs[1:]:
        np.testing.assert_array_equal(run.actions, runs[0].actions)
        np.testing.assert_array_equal(run.regret, runs[0].regret)


def test_without_numba_the_backend_names_the_extra(monkeypatch):
    monkeypatch.setattr(compiled, "_KERNELS", None)
    monkeypatch.setattr(compiled, "numba_available", lambda: False)
    with pytest.raises(ImportError, match=r"get_backend: backend 'numba' needs numba.*"
                                          r"glmbandits\[compiled\]"):
        get_backend("numba")
    assert get_backend("numpy").compiled is None  # numpy does not need it
