"""SupCB-GLM (Algorithm 3): stage bookkeeping, screening steps 2a-2d, regret."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from glmbandits import RandomPolicy, SupCBGLM, SyntheticGLMEnv, simulate, theory
from glmbandits.families import get_family
from glmbandits.policies.supcb_glm import INITIAL


def _run(policy: SupCBGLM, rounds: int, seed: int, k: int = 8, record=None):
    env = SyntheticGLMEnv(policy.n_features, k, theta_norm=2.0, seed=seed)
    contexts = env.contexts
    for t in range(rounds):
        sizes_before = [len(psi) for psi in policy.psi_]
        a = policy.select(contexts)
        if record is not None:
            record(t, policy, contexts, a, sizes_before)
        contexts_next, reward, _ = env.step(a)
        policy.update(contexts[a], reward)
        if record is not None:
            record(t, policy, None, a, sizes_before)
        contexts = contexts_next


def test_number_of_stages_is_floor_log2_T():
    assert SupCBGLM(2, horizon=1000).n_stages == 9
    assert SupCBGLM(2, horizon=1024).n_stages == 10
    assert len(SupCBGLM(2, horizon=1000).psi_) == 10  # Ψ_0 ... Ψ_S


def test_every_round_after_tau_lands_in_exactly_one_psi():
    policy = SupCBGLM(n_features=3, horizon=500, alpha=0.5, tau=10, seed=0)
    _run(policy, 300, seed=1)
    assert policy.initial_rounds_ == list(range(10))
    later = sorted(t for psi in policy.psi_ for t in psi)
    assert later == list(range(10, 300))  # each round once: no duplicates, none missing
    assert sum(len(psi) for psi in policy.psi_[1:]) > 0 and len(policy.psi_[0]) >= 0


def test_psi_s_grows_only_at_stage_s_and_stage_estimates_see_psi_s_and_F():
    policy = SupCBGLM(n_features=3, horizon=2000, alpha=0.3, tau=12, seed=2)
    seen_stages = set()

    def record(t, policy, contexts, a, sizes_before):
        if contexts is not None:
            return
        sizes_after = [len(psi) for psi in policy.psi_]
        grown = [s for s, (b, c) in enumerate(zip(sizes_before, sizes_after)) if c != b]
        if t < 12:
            assert grown == [] and policy.last_stage_ == INITIAL
        else:
            assert grown == [policy.last_stage_]
            assert sizes_after[policy.last_stage_] == sizes_before[policy.last_stage_] + 1
            seen_stages.add(policy.last_stage_)
        for s in range(1, policy.n_stages + 1):
            estimate = policy.stage_estimates_[s]
            if estimate is not None:  # CB-GLM's data are exactly Ψ_s ∪ 𝓕
                assert estimate.n == 12 + len(policy.psi_[s])

    _run(policy, 400, seed=3, record=record)
    assert len(seen_stages) >= 2


def test_screening_steps_follow_algorithm_3():
    policy = SupCBGLM(n_features=3, horizon=400, alpha=0.4, tau=10, seed=4)
    exploit_width = 1 / math.sqrt(400)

    def record(t, policy, contexts, a, sizes_before):
        if contexts is None or t < 10:
            return
        s, candidates, scores = policy.last_stage_, policy.last_candidates_, policy.last_scores_
        assert candidates[a]
        if s >= 1:  # step 2b: the chosen width exceeds 2^-s and is the widest candidate
            assert scores.width[a] > 2.0 ** -s
            assert scores.width[a] == scores.width[candidates].max()
        else:  # step 2c: every candidate is resolved to 1/sqrt(T); play the best mean
            assert np.all(scores.width[candidates] <= exploit_width)
            assert scores.mean[a] == scores.mean[candidates].max()

    _run(policy, 400, seed=5, record=record)
    assert len(policy.psi_[0]) > 0  # step 2c did happen


def test_elimination_step_2d_keeps_actions_within_two_times_2_to_minus_s():
    """A hand-built state where stage 1 ends in step 2d and stage 2 explores (step 2b)."""
    policy = SupCBGLM(n_features=2, horizon=64, alpha=0.3, tau=0, l2=1.0, seed=0)
    contexts = np.array([[1.0, 0.0], [0.2, 0.0], [-1.0, 0.0]])
    for s in range(1, policy.n_stages + 1):  # no data yet: V_s = I, set θ̂^(s) by hand
        policy._stage_estimate(s).theta_ = np.array([1.5, 0.0])
    a = policy.select(contexts)
    # stage 1: widths (0.3, 0.06, 0.3) are <= 1/2 but not all <= 1/sqrt(64) = 1/8, so
    # step 2d keeps means >= 1.5 - 2 * 1/2 = 0.5: only action 0 (means 1.5, 0.3, -1.5).
    # stage 2: its width 0.3 > 1/4, so step 2b plays it and the round joins Psi_2.
    assert a == 0
    assert list(policy.last_candidates_) == [True, False, False]
    assert policy.last_stage_ == 2
    policy.update(contexts[0], 1.0)
    assert policy.psi_[2] == [0]


def test_update_must_follow_select_with_the_chosen_row():
    policy = SupCBGLM(n_features=2, horizon=100, tau=1, seed=0)
    with pytest.raises(ValueError, match="no pending select"):
        policy.update([1.0, 0.0], 1.0)
    contexts = np.array([[1.0, 0.0], [0.0, 1.0]])
    a = policy.select(contexts)
    before = pickle.dumps(policy)
    with pytest.raises(ValueError, match="must be the row chosen by the preceding select"):
        policy.update(contexts[1 - a], 1.0)
    assert pickle.dumps(policy) == before
    policy.update(contexts[a], 1.0)


def test_from_theory_uses_theorem_3_parameters():
    policy = SupCBGLM.from_theory(4, 900, 10, theta_norm=1.0, delta=0.1)
    kappa = get_family("logistic").kappa(2.0)
    assert policy.tau == theory.supcb_glm_tau(4, 900) == 60
    assert policy.alpha == pytest.approx(theory.supcb_glm_alpha(900, 10, 0.1, 0.5, kappa))


def test_bad_horizon_is_rejected():
    with pytest.raises(ValueError, match="SupCBGLM: horizon must be >= 2, got 1"):
        SupCBGLM(2, horizon=1)
    with pytest.raises(TypeError, match="horizon must be an int"):
        SupCBGLM(2, horizon=10.0)


@pytest.mark.slow
def test_supcb_glm_regret_far_below_random_for_seeds_0_to_9():
    d, k, horizon = 5, 10, 800
    for seed in range(10):
        env = SyntheticGLMEnv(d, k, theta_norm=3.0, seed=seed)
        sup = simulate(SupCBGLM(d, horizon=horizon, seed=seed), env, horizon,
                       seed=seed).cumulative_regret[-1]
        rand = simulate(RandomPolicy(d, seed=seed), env, horizon, seed=seed).cumulative_regret[-1]
        # measured: SupCB-GLM is at most 0.29 x Random's regret on these seeds
        assert sup < 0.55 * rand, (seed, sup, rand)
