"""``glmbandits serve`` and ``glmbandits export`` from the command line; the config's checks."""

from __future__ import annotations

import subprocess
import sys

import pyarrow.parquet as pq
import numpy as np
import pytest

from glmbandits.cli.main import main
from glmbandits.service.config import ConfigError, load_config, parse_config, tomllib
from glmbandits.service.store import parse_db_url
from servicekit import ServerProcess, environment, write_config


def test_the_example_config_starts_with_the_operators_key(tmp_path, capsys):
    """The example holds no key (test_service_doors.py): it starts as it is once the operator
    gives one, and only that key opens it."""
    assert main(["serve", "--example-config"]) == 0
    text = capsys.readouterr().out
    (tmp_path / "example.toml").write_text(text)
    config = load_config(tmp_path / "example.toml")
    assert config.policy.name == "ucb-glm"
    assert config.db == "sqlite:///" + str((tmp_path / "example.db").resolve())
    server = ServerProcess(tmp_path / "example.toml", f"sqlite:///{tmp_path / 'e.db'}",
                           env=environment(GLMBANDITS_API_KEYS="operator-chose-this-0123"))
    try:
        import httpx

        for key, status in (("operator-chose-this-0123", 200), ("change-me", 401)):
            headers = {"Authorization": f"Bearer {key}"}
            assert httpx.get(server.url + "/v1/model", headers=headers).status_code == status
    finally:
        assert server.terminate() == 0


@pytest.mark.parametrize("text,message", [
    ('[policy]\nname = "ucb-glm"\nn_features = 3\nbogus = 1\n', "unknown key(s) ['bogus']"),
    ('[policy]\nname = "ucb-glm"\nn_features = 3\n[extra]\n', "unknown table(s)"),
    ('[policy]\nname = "ucb-glm"\nn_features = "3"\n', "[policy] n_features must be"),
    ('[policy]\nname = "ucb-glm"\nn_features = 0\n', "n_features must be an integer >= 1"),
    ('[policy]\nname = "nope"\nn_features = 3\n', "cannot build the policy"),
    ('[policy]\nname = "ucb-glm"\nn_features = 3\n[policy.params]\nalphaa = 1\n',
     "cannot build the policy"),
    ('[policy]\nn_features = 3\n', "[policy] name is missing"),
    ('[decisions]\nmax_actions = 3\n', "[policy] table is missing"),
    ('[policy]\nname = "ucb-glm"\nn_features = 3\n[decisions]\nmissing_reward = "x"\n',
     "missing_reward"),
    ('[policy]\nname = "ucb-glm"\nn_features = 3\n[decisions]\nreward_wait = -1\n',
     "reward_wait"),
    ('[policy]\nname = "ucb-glm"\nn_features = 3\n[service]\ndb = "mysql://x"\n', "db"),
    ('[policy]\nname = "ucb-glm"\nn_features = 3\n[auth]\napi_key_sha256 = ["plain"]\n',
     "api_key_sha256[0]"),
])
def test_every_config_mistake_is_a_clear_error(text, message):
    with pytest.raises(ConfigError) as error:
        parse_config(tomllib.loads(text), source="c.toml")
    assert message in str(error.value)
    assert "plain" not in str(error.value) or "api_key" not in message


def test_db_urls_follow_the_usual_convention():
    assert parse_db_url("sqlite:///rel/x.db") == ("sqlite", "rel/x.db")
    assert parse_db_url("sqlite:////abs/x.db") == ("sqlite", "/abs/x.db")
    with pytest.raises(ValueError, match="sqlite:///"):
        parse_db_url("sqlite://x.db")


def test_serve_refuses_a_bad_config_and_no_keys(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[policy]\nname = "ucb-glm"\nn_features = 3\ntypo = 1\n')
    assert main(["serve", str(bad)]) == 2
    assert "unknown key(s) ['typo']" in capsys.readouterr().err
    assert main(["serve"]) == 2
    good = write_config(tmp_path)
    result = subprocess.run([sys.executable, "-m", "glmbandits", "serve", str(good), "--port",
                             "0", "--db", f"sqlite:///{tmp_path / 'n.db'}"],
                            env=environment(GLMBANDITS_API_KEYS=""), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "at least one API key is needed" in result.stderr


@pytest.mark.slow
def test_export_writes_the_log_as_parquet(tmp_path, capsys):
    config = write_config(tmp_path)
    db = f"sqlite:///{tmp_path / 'log.db'}"
    server = ServerProcess(config, db)
    try:
        for i in range(5):
            server.client.post("/v1/decide", json={"decision_id": f"e{i}",
                                                   "contexts": [[0.1, 0.2, 0.3]] * 2})
            server.client.post("/v1/reward", json={"decision_id": f"e{i}", "reward": 1})
        lines = server.client.get("/v1/events").text.splitlines()
    finally:
        assert server.terminate() == 0
    out = tmp_path / "log.parquet"
    assert main(["export", "--db", db, "--events", str(out)]) == 0
    assert "wrote 10 events" in capsys.readouterr().out
    table = pq.read_table(out)
    assert table.num_rows == len(lines) == 10
    assert table.column("kind").to_pylist() == ["decision", "reward"] * 5
    assert table.column("contexts").to_pylist()[0] == [[0.1, 0.2, 0.3]] * 2
    assert main(["export", "--db", f"sqlite:///{tmp_path / 'none.db'}", str(out)]) == 2
    assert main(["export", "--db", db, "--after", "3", str(out)]) == 2
    assert "--after needs --events" in capsys.readouterr().err


@pytest.mark.slow
def test_the_default_export_is_what_replay_and_the_estimators_read(tmp_path, capsys):
    """One row per decision with the reward learned: duplicate rewards are not rows, a
    decision still pending has no reward, and ``glmbandits replay --log`` runs on it."""
    from glmbandits.data import LoggedBanditData

    config = write_config(tmp_path)
    db = f"sqlite:///{tmp_path / 'log.db'}"
    server = ServerProcess(config, db)
    rng = np.random.default_rng(3)
    sent = {}
    try:
        for i in range(40):
            contexts = rng.uniform(-0.5, 0.5, size=(3, 3))
            answer = server.client.post("/v1/decide", json={"decision_id": f"e{i}",
                                                            "contexts": contexts.tolist()})
            assert answer.status_code == 200
            if i < 36:
                reward = float(rng.random() < 0.5)
                server.client.post("/v1/reward", json={"decision_id": f"e{i}",
                                                       "reward": reward})
                server.client.post("/v1/reward", json={"decision_id": f"e{i}",
                                                       "reward": 1 - reward})  # duplicate
                sent[f"e{i}"] = (contexts, answer.json(), reward)
    finally:
        assert server.terminate() == 0
    out = tmp_path / "decisions.parquet"
    assert main(["export", "--db", db, str(out)]) == 0
    assert "wrote 40 decisions" in capsys.readouterr().out
    log = LoggedBanditData.from_parquet(out)
    assert log.n_rounds == 36
    assert log.join_counts["pending"] == 4 and log.join_counts["duplicate_rewards"] == 36
    for t, (contexts, answer, reward) in enumerate(sent.values()):
        assert np.array_equal(log.contexts[t], contexts)
        assert log.actions[t] == answer["action"]
        assert log.propensities[t] == answer["propensity"]
        assert log.rewards[t] == reward
    assert main(["replay", "--log", str(out), "--algorithms", "linucb,random",
                 "--estimators", "ips,snips", "--family", "logistic"]) == 0
    printed = capsys.readouterr().out
    assert "36 with a reward" in printed and "linucb" in printed
