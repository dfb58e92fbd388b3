"""Issue 13, items 1-2: overlap diagnostics on every estimate, a warning when overlap is
too poor, and expected IPS/DR over the target's whole action distribution."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from glmbandits import RandomPolicy, SyntheticGLMEnv, UCBGLM
from glmbandits.evaluation import (LoggedBanditData, OffPolicyWarning, collect_log,
                                   doubly_robust, ips, snips, true_value)
from glmbandits.evaluation.intervals import OverlapDiagnostics, PoorOverlapWarning
from glmbandits.evaluation.report import evaluate_policies, format_rows


def _ucb_log(floor: float = 0.0, rounds: int = 1500, seed: int = 0) -> LoggedBanditData:
    env = SyntheticGLMEnv(n_features=5, n_actions=5, theta_norm=3.0, seed=seed)
    logger = UCBGLM(n_features=5, seed=seed, exploration_floor=floor)
    return collect_log(env, rounds, logger, seed=seed, name="ucb-log")


@pytest.fixture(scope="module")
def ucb_log() -> LoggedBanditData:
    return _ucb_log()


def test_collect_log_with_a_policy_logs_its_propensities(ucb_log):
    assert ucb_log.reward_table.shape == (1500, 5)
    assert np.mean(ucb_log.propensities >= 0.99) > 0.9  # UCB-GLM is deterministic but for ties


def test_issue_example_ucb_log_warns_and_diagnostics_show_why(ucb_log):
    """The issue's example: IPS and SNIPS disagree on a UCB-GLM log; now it is flagged."""
    target = RandomPolicy(5, seed=1)
    with pytest.warns(PoorOverlapWarning, match="deterministic"):
        by_ips = ips(target, ucb_log)
    with pytest.warns(PoorOverlapWarning):
        by_snips = snips(target, ucb_log)
    assert abs(by_ips.value - by_snips.value) > 0.1  # they do disagree...
    d = by_ips.diagnostics
    assert isinstance(d, OverlapDiagnostics)  # ...and the diagnostics say why
    assert d.deterministic_share > 0.9
    assert d.unsupported_share > 0.9
    assert d.poor
    assert by_snips.diagnostics.poor
    assert issubclass(PoorOverlapWarning, OffPolicyWarning)


def test_uniform_log_has_good_overlap_and_no_warning():
    log = collect_log(SyntheticGLMEnv(5, n_actions=5, seed=0), 800, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PoorOverlapWarning)
        estimate = ips(RandomPolicy(5, seed=0), log)
    d = estimate.diagnostics
    assert d.ess == pytest.approx(800.0)  # π = logger: every weight is 1
    assert d.max_weight == pytest.approx(1.0)
    assert d.deterministic_share == 0.0 and d.unsupported_share == 0.0
    assert not d.poor


def test_diagnostics_formulas():
    log = LoggedBanditData(np.zeros((4, 2, 1)), [0, 1, 0, 0], [1.0, 0.0, 1.0, 0.0],
                           [0.5, 0.5, 1.0, 0.25])
    target = RandomPolicy(1, seed=0)  # π(a|x) = 1/2 everywhere
    with pytest.warns(PoorOverlapWarning):
        d = ips(target, log).diagnostics
    w = np.array([1.0, 1.0, 0.5, 2.0])
    assert d.ess == pytest.approx(w.sum() ** 2 / (w ** 2).sum())
    assert d.ess_fraction == pytest.approx(d.ess / 4)
    assert d.max_weight == 2.0
    assert d.deterministic_share == 0.25
    assert d.unsupported_share == 0.25  # round 2: logger sure of action 0, target not


def test_every_estimator_attaches_diagnostics(ucb_log):
    target = RandomPolicy(5, seed=1)
    with pytest.warns(PoorOverlapWarning):
        estimate = doubly_robust(target, ucb_log)
    assert estimate.diagnostics.poor


def test_floor_log_is_usable():
    log = _ucb_log(floor=0.2, rounds=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PoorOverlapWarning)
        estimate = ips(RandomPolicy(5, seed=1), log)
    assert estimate.diagnostics.deterministic_share == 0.0
    assert not estimate.diagnostics.poor


def test_expected_ips_has_no_sampling_noise_for_a_stochastic_target():
    """A uniformly random target is evaluated by its distribution, not a sampled action."""
    log = collect_log(SyntheticGLMEnv(5, n_actions=5, seed=0), 500,
                      _softmax(), seed=0)
    values = {ips(RandomPolicy(5, seed=s), log).value for s in range(4)}
    assert len(values) == 1  # the target's seed does not matter
    w = 0.2 / log.propensities
    assert values.pop() == pytest.approx(float(np.mean(w * log.rewards)))
    dr = {doubly_robust(RandomPolicy(5, seed=s), log).value for s in range(3)}
    assert len(dr) == 1
    truth = true_value(RandomPolicy(5, seed=9), log)
    assert truth == pytest.approx(float(np.mean(log.reward_table.mean(axis=1))))


def _softmax():
    from glmbandits.evaluation import softmax_logging
    return softmax_logging(np.ones(5), temperature=2.0)


def test_report_marks_poor_overlap_rows(ucb_log):
    rows = evaluate_policies(lambda name, seed: RandomPolicy(5, seed=seed), ["random"], ucb_log,
                             estimators=("ips", "snips", "dr"))
    assert all(row.estimate.diagnostics.poor for row in rows)
    table = format_rows(rows)
    assert "ESS" in table
    body = table.splitlines()[2:]
    assert all("POOR OVERLAP" in line or "!" in line for line in body[:3])
