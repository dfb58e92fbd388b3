"""End to end: a policy explores with delayed, out-of-order rewards while logging to an
EventLog; from the log alone, DR estimates other policies' values within its interval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from glmbandits import EventLog, SyntheticGLMEnv, UCBGLM
from glmbandits.data import LoggedBanditData
from glmbandits.evaluation import OffPolicyEstimate, doubly_robust


class _Greedy:
    """A frozen greedy policy: argmax of x'θ (what a deployment would switch to)."""

    def __init__(self, theta: np.ndarray) -> None:
        self.theta = theta
        self.n_features = theta.shape[0]
        self.last_probabilities_: np.ndarray | None = None

    def select(self, contexts: np.ndarray) -> int:
        action = int(np.argmax(contexts @ self.theta))
        self.last_probabilities_ = np.eye(contexts.shape[0])[action]
        return action

    def update(self, x: Any, reward: float) -> None:  # never called: the policy is frozen
        raise AssertionError("a frozen target policy is never updated")


class _Uniform(_Greedy):
    def select(self, contexts: np.ndarray) -> int:
        self.last_probabilities_ = np.full(contexts.shape[0], 1.0 / contexts.shape[0])
        return 0


def _mu(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _true_value(target: _Greedy, data: LoggedBanditData, theta_star: np.ndarray) -> float:
    """Mean over the logged rounds of Σ_a π(a|x_t) μ(x_{t,a}'θ*)."""
    values = []
    for t in range(data.n_rounds):
        X = data.contexts[t]
        target.select(X)
        values.append(float(target.last_probabilities_ @ _mu(X @ theta_star)))
    return float(np.mean(values))


def run_and_evaluate(seed: int, folder: Path, rounds: int = 2500, max_delay: int = 50
                     ) -> tuple[OffPolicyEstimate, float, OffPolicyEstimate, float, dict]:
    rng = np.random.default_rng(seed + 1000)
    env = SyntheticGLMEnv(4, n_actions=5, theta_norm=3.0, seed=seed)
    policy = UCBGLM(4, seed=seed, exploration_floor=0.3, refit="lazy")
    path = folder / f"events-{seed}.sqlite"
    with EventLog(path, durability="normal") as log:
        policy.event_log = log
        waiting: list[tuple[int, str, float]] = []  # (deliver at, id, reward)
        contexts = env.contexts
        with log.batch():
            for t in range(rounds):
                decision = policy.decide(contexts, decision_id=f"s{seed}-{t}", now=float(t))
                contexts, reward, _ = env.step(decision.action)
                waiting.append((t + int(rng.integers(0, max_delay + 1)),
                                decision.decision_id, reward))
                due = [item for item in waiting if item[0] <= t]
                waiting = [item for item in waiting if item[0] > t]
                for index in rng.permutation(len(due)):  # out of order
                    _, decision_id, value = due[index]
                    assert policy.reward(decision_id, value, now=float(t)) == "learned"
        policy.event_log = None
    # from the log alone (the rewards still waiting at the end are pending: left out)
    data = LoggedBanditData.from_event_log(path)
    theta_target = env.theta_star + rng.normal(scale=1.0, size=4)
    greedy, uniform = _Greedy(theta_target), _Uniform(np.zeros(4))
    estimate = doubly_robust(greedy, data, confidence=0.99)
    uniform_estimate = doubly_robust(uniform, data, confidence=0.99)
    return (estimate, _true_value(greedy, data, env.theta_star), uniform_estimate,
            _true_value(uniform, data, env.theta_star), data.join_counts)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_dr_from_the_event_log_covers_other_policies_true_values(tmp_path, seed) -> None:
    estimate, truth, uniform_estimate, uniform_truth, counts = run_and_evaluate(seed, tmp_path)
    assert counts["decisions"] == 2500 and counts["learned"] == counts["with_reward"]
    assert 2440 <= counts["with_reward"] < 2500 and counts["pending"] > 0
    assert estimate.ci_low <= truth <= estimate.ci_high, (estimate, truth)
    assert uniform_estimate.ci_low <= uniform_truth <= uniform_estimate.ci_high
    assert estimate.half_width < 0.1  # an informative interval, not a vacuous one
    assert abs(truth - uniform_truth) > 2 * estimate.half_width  # and they tell them apart
