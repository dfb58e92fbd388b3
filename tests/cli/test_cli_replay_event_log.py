"""`glmbandits replay --event-log FILE` (and `--log FILE.sqlite`) evaluates from an EventLog."""

from __future__ import annotations

import numpy as np

from glmbandits import EventLog, RandomPolicy, SyntheticGLMEnv
from glmbandits.cli.main import main


def _write_log(path, rounds: int = 300) -> None:
    env = SyntheticGLMEnv(3, n_actions=4, seed=0)
    policy = RandomPolicy(3, seed=0).configure_decisions(default_reward=0.0)
    with EventLog(path, durability="normal") as log, log.batch():
        policy.event_log = log
        contexts = env.contexts
        for t in range(rounds):
            decision = policy.decide(contexts, decision_id=f"d{t}", now=float(t))
            contexts, reward, _ = env.step(decision.action)
            if t % 10 == 9:
                continue  # never rewarded: expired below with the default reward
            if t < rounds - 5:  # the last five stay pending
                policy.reward(decision.decision_id, reward, now=float(t))
        policy.expire(older_than=10.0, now=float(rounds))


def test_replay_reads_an_event_log(tmp_path, capsys) -> None:
    path = tmp_path / "events.sqlite"
    _write_log(path)
    code = main(["replay", "--event-log", str(path), "--algorithms", "random",
                 "--estimators", "replay,ips,dr"])
    out = capsys.readouterr().out
    assert code == 0, out
    # 300 decisions: 30 never rewarded (29 defaulted by expire, d299 pending), d295-d298
    # pending too; the other 266 learned
    assert "300 decisions, 295 with a reward (266 learned, 0 summed, 29 default)" in out
    assert "left out 0 dropped and 5 pending" in out
    assert "T=295, K=4, d=3" in out and "logging uniform" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("random")]
    assert [row[1] for row in rows] == ["replay", "ips", "dr"]
    # the .sqlite suffix given to --log is read as an event log too
    assert main(["replay", "--log", str(path), "--algorithms", "random",
                 "--estimators", "ips"]) == 0
    assert "T=295" in capsys.readouterr().out


def test_replay_refuses_a_file_that_is_not_an_event_log(tmp_path, capsys) -> None:
    path = tmp_path / "notes.db"
    path.write_text("hello" * 100)
    assert main(["replay", "--event-log", str(path)]) == 2
    assert "notes.db" in capsys.readouterr().err
    assert main(["replay", "--event-log", str(tmp_path / "missing.sqlite")]) == 2
    assert "missing.sqlite" in capsys.readouterr().err
