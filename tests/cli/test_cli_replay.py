"""`glmbandits replay`: a table per policy and estimator; bad logs exit with a clear error."""

from __future__ import annotations

import numpy as np

from glmbandits import SyntheticGLMEnv
from glmbandits.cli.main import main
from glmbandits.evaluation import collect_log, softmax_logging


def test_replay_command_prints_value_and_interval_per_policy(capsys) -> None:
    code = main(["replay", "--dataset", "synthetic", "--rounds", "800",
                 "--algorithms", "linucb,random", "--seed", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "synthetic, T=800, K=5, d=5" in out and "logging uniform" in out
    rows = [line.split() for line in out.splitlines() if line.startswith(("linucb", "random"))]
    assert [(r[0], r[1]) for r in rows] == [(p, e) for p in ("linucb", "random")
                                            for e in ("replay", "ips", "snips", "dr")]
    for row in rows:
        value, low, high = float(row[2]), float(row[4].strip("[,")), float(row[5].rstrip("]"))
        assert low <= value <= high
    true = {r[0]: float(r[-1]) for r in rows if r[1] == "dr"}
    assert true["linucb"] > true["random"] + 0.1


def test_replay_command_on_a_saved_non_uniform_log(tmp_path, capsys) -> None:
    env = SyntheticGLMEnv(3, n_actions=4, seed=0)
    log = collect_log(env, 400, softmax_logging(np.ones(3)), seed=0)
    path = log.save(tmp_path / "mylog.npz")
    code = main(["replay", "--log", str(path), "--algorithms", "random",
                 "--estimators", "replay,ips"])
    out = capsys.readouterr().out
    assert code == 0
    assert "logging non-uniform" in out
    assert "log not uniformly random" in out  # replay is refused, not silently biased
    assert any(line.startswith("random") and " ips " in line for line in out.splitlines())


def test_replay_command_rejects_a_malformed_log(tmp_path, capsys) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, contexts=np.zeros((3, 2, 2)), action=np.array([0, 1, 0]),
             propensity=np.array([0.5, 0.5, 0.5]))
    assert main(["replay", "--log", str(path)]) == 2
    assert "missing required column(s) ['reward']" in capsys.readouterr().err
    np.savez(path, contexts=np.zeros((3, 2, 2)), action=np.array([0, 1, 0]),
             reward=np.array([1.0, 0.0, 1.0]), propensity=np.array([0.5, 0.0, 0.5]))
    assert main(["replay", "--log", str(path)]) == 2
    assert "propensity must lie in (0, 1]" in capsys.readouterr().err
    assert main(["replay", "--dataset", "synthetic", "--rounds", "50",
                 "--algorithms", "nope"]) == 2
    assert "name must be one of" in capsys.readouterr().err
