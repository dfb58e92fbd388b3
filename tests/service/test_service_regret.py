"""A served policy reaches the same regret as the same policy in-process, with the same delays."""

from __future__ import annotations

from collections import deque

import pytest

from glmbandits import SyntheticGLMEnv
from glmbandits.service.config import load_config
from servicekit import ServerProcess, write_config

pytestmark = pytest.mark.slow

T, DELAY, K, D = 150, 3, 10, 4


def play(decide, reward, seed: int) -> list[float]:
    """T rounds against a synthetic logistic bandit; each reward arrives DELAY rounds later."""
    env = SyntheticGLMEnv(n_features=D, n_actions=K, seed=seed)
    contexts = env.contexts
    waiting: deque = deque()
    regret = []
    for t in range(T):
        action = decide(contexts, f"r{t}")
        contexts, value, info = env.step(action)
        regret.append(info["regret"])
        waiting.append((f"r{t}", value))
        if len(waiting) > DELAY:
            reward(*waiting.popleft())
    while waiting:
        reward(*waiting.popleft())
    return regret


@pytest.mark.parametrize("policy", ["ucb-glm", "glm-tsl"])
def test_served_and_in_process_regret_are_equal(tmp_path, policy):
    config_path = write_config(tmp_path, name=policy, n_features=D, max_actions=K)
    in_process = load_config(config_path).build_policy()
    expected = play(lambda X, i: in_process.decide(X, i).action,
                    lambda i, r: in_process.reward(i, r), seed=11)
    server = ServerProcess(config_path, f"sqlite:///{tmp_path / 'log.db'}")
    try:
        client = server.client

        def decide(X, decision_id):
            answer = client.post("/v1/decide", json={"decision_id": decision_id,
                                                     "contexts": X.tolist()})
            assert answer.status_code == 200, answer.text
            return answer.json()["action"]

        def reward(decision_id, value):
            answer = client.post("/v1/reward", json={"decision_id": decision_id,
                                                     "reward": value})
            assert answer.json()["status"] == "learned"

        served = play(decide, reward, seed=11)
        assert client.get("/v1/model").json()["model_version"] == in_process.model_version == T
    finally:
        assert server.terminate() == 0
    assert served == expected  # the same actions, so the same regret, round by round
    assert sum(served) > 0
