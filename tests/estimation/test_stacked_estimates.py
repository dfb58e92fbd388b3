"""The stacked (lockstep batch) forms of the estimates: ``stack`` and ``unstack``.

``unstack(stack(states))`` leaves every estimate and snapshot byte for byte as it
was (compared as pickles, which hold every array's bytes, dtype and layout), and
the stacked arrays hold each estimate's state in its row.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from glmbandits import SyntheticGLMEnv, UCBGLM, LinUCB, simulate, simulate_batch
from glmbandits.estimation import GLMEstimate, RidgeEstimate
from glmbandits.estimation.history import SampleHistory
from glmbandits.estimation.schedule import RarelySwitchingSnapshot
from glmbandits.families import get_family

D = 3


def _played(policies: list, rounds: list[int], seed: int = 0) -> list:
    """Each policy after its own number of rounds on a small logistic problem."""
    for policy, n in zip(policies, rounds):
        if n:
            simulate(policy, SyntheticGLMEnv(D, 4, seed=seed), n, seed=seed)
    return policies


def _ucb_glms() -> list[UCBGLM]:
    """Lazy and exact UCB-GLMs in varied states: fresh, stale, refitted, snapshot or none."""
    policies = _played([UCBGLM(D, seed=s, refit="lazy", refit_growth=1.5) for s in range(3)]
                       + [UCBGLM(D, seed=s) for s in range(3)],
                       [0, 5, 40, 0, 9, 30])
    policies[2].update(np.ones(D) / 2, 1.0)  # a lazy estimate with a sample not fitted yet
    policies[5].estimate_.add(np.ones(D) / 3, 0.0)  # an exact one, stale
    return policies


def test_glm_estimates_and_snapshots_round_trip_byte_for_byte():
    policies = _ucb_glms()
    estimates = [p.estimate_ for p in policies]
    snapshots = [p.snapshot_ for p in policies]
    assert any(e.stale_ for e in estimates) and any(not e.stale_ for e in estimates)
    assert any(s is not None and s.theta_ is not None for s in snapshots)
    before = [pickle.dumps(e) for e in estimates] + [pickle.dumps(s) for s in snapshots]

    stacked = GLMEstimate.stack(estimates)
    snaps = RarelySwitchingSnapshot.stack(snapshots, stacked)
    for r, estimate in enumerate(estimates):  # each row is its estimate
        n = estimate.n
        assert stacked.n[r] == n
        np.testing.assert_array_equal(stacked.X[r, :n], estimate.history.X)
        assert not stacked.X[r, n:].any() and not stacked.y[r, n:].any()
        np.testing.assert_array_equal(stacked.V_inv[r], estimate.V_inv_)
        np.testing.assert_array_equal(stacked.theta[r], estimate.theta_)
    assert snaps.lazy.tolist() == [True] * 3 + [False] * 3
    stacked.unstack()
    snaps.unstack()
    after = [pickle.dumps(e) for e in estimates] + [pickle.dumps(s) for s in snapshots]
    assert after == before


def test_ridge_estimates_round_trip_byte_for_byte():
    policies = _played([LinUCB(D, seed=s) for s in range(3)], [0, 7, 20])
    estimates = [p.estimate_ for p in policies]
    before = [pickle.dumps(e) for e in estimates]
    stacked = RidgeEstimate.stack(estimates)
    np.testing.assert_array_equal(stacked.b[2], estimates[2].b_)
    stacked.unstack()
    assert [pickle.dumps(e) for e in estimates] == before


def test_histories_round_trip_through_their_stacked_buffers():
    histories = [SampleHistory(D) for _ in range(3)]
    rng = np.random.default_rng(0)
    for history, n in zip(histories, [0, 3, 70]):
        for _ in range(n):
            history.append(rng.normal(size=D), float(rng.random()))
    X, y = SampleHistory.stack(histories, 80)
    assert X.shape == (3, 80, D) and y.shape == (3, 80)
    back = SampleHistory.unstack(X, y, np.array([h.n for h in histories]))
    assert [pickle.dumps(h) for h in back] == [pickle.dumps(h) for h in histories]


@pytest.mark.parametrize("mixed", ["l2", "refit"])
def test_a_batch_run_continued_sequentially_matches_a_sequential_run(mixed):
    """Policies that cannot share one solver call (another l2, or exact beside lazy)
    refit by their own estimates; their caches come back as they left them."""
    def make(seed):
        if seed % 2 == 0:
            return UCBGLM(D, seed=seed, refit="lazy", refit_growth=1.5)
        if mixed == "l2":
            return UCBGLM(D, seed=seed, refit="lazy", refit_growth=1.5, l2=2.0)
        return UCBGLM(D, seed=seed)

    env = lambda s: SyntheticGLMEnv(D, 4, seed=s)  # noqa: E731
    seeds = [0, 1, 2]
    made: list[UCBGLM] = []
    simulate_batch(lambda s: made.append(make(s)) or made[-1], env, 120, seeds)
    for policy, seed in zip(made, seeds):
        reference = make(seed)
        simulate(reference, env(seed), 120, seed=seed)
        # both go on for the same further rounds of the same problem
        go_on, go_on_reference = (simulate(p, env(seed + 100), 80, seed=seed + 100)
                                  for p in (policy, reference))
        np.testing.assert_array_equal(go_on.actions, go_on_reference.actions)
        np.testing.assert_array_equal(policy.theta_, reference.theta_)
        assert pickle.dumps(policy.estimate_.newton_) == pickle.dumps(reference.estimate_.newton_)
