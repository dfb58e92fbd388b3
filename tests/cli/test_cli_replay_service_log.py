"""Issue 21, section 5: ``glmbandits replay --event-log service.db`` on a decision service's
own log does not say "another application": it names ``glmbandits export`` with the exact
command, and that command followed by the ``replay --log`` it names works."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from glmbandits.cli.main import main

pytest.importorskip("pyarrow")
pytest.importorskip("starlette")


def _service_log(folder):
    """A real service log (the service core, no HTTP): 30 decisions, 24 rewarded."""
    from glmbandits.service.config import load_config
    from glmbandits.service.core import DecisionService
    from glmbandits.service.store import open_store

    config_path = folder / "service.toml"
    config_path.write_text('[policy]\nname = "linucb"\nn_features = 3\nseed = 7\n'
                           "[decisions]\nmax_actions = 4\n")
    db = folder / "service.db"
    service = DecisionService(load_config(config_path), open_store(f"sqlite:///{db}")).start()
    rng = np.random.default_rng(0)
    try:
        for i in range(30):
            service.decide(rng.uniform(-0.5, 0.5, size=(3, 3)), decision_id=f"d{i}")
            if i < 24:
                service.reward(f"d{i}", float(rng.random() < 0.5))
    finally:
        service.stop()
    return db


@pytest.mark.parametrize("flag", ["--event-log", "--log"])
def test_replay_on_a_service_log_points_to_export(tmp_path, capsys, flag):
    db = _service_log(tmp_path)
    files_before = sorted(p.name for p in tmp_path.iterdir())
    bytes_before = db.read_bytes()
    assert main(["replay", flag, str(db), "--algorithms", "random"]) == 2
    err = capsys.readouterr().err
    assert "another application" not in err and "Traceback" not in err
    assert err.startswith("error: ") and str(db) in err
    assert "decision service" in err
    command = f"glmbandits export --db sqlite:///{db} service.parquet"
    assert command in err, err
    assert "glmbandits replay --log service.parquet" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == files_before
    assert db.read_bytes() == bytes_before
    # the commands it names work as written
    out = tmp_path / "service.parquet"
    assert main(command.split()[1:-1] + [str(out)]) == 0
    assert main(["replay", "--log", str(out), "--algorithms", "random",
                 "--estimators", "ips"]) == 0
    assert "24 with a reward" in capsys.readouterr().out


def test_a_foreign_database_is_still_called_another_applications(tmp_path, capsys):
    path = tmp_path / "other.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE users (id INTEGER)")
    connection.commit()
    connection.close()
    assert main(["replay", "--event-log", str(path)]) == 2
    err = capsys.readouterr().err
    assert "another application" in err and "glmbandits export" not in err


def test_a_log_of_one_rewarded_round_is_a_clear_error(tmp_path, capsys):
    """One rewarded decision cannot be split into a training and an evaluation part: the
    message says so (it was a PaddedContexts shape error)."""
    from glmbandits.data import LoggedBanditData

    log = LoggedBanditData(contexts=[np.eye(3)], actions=[1], rewards=[1.0],
                           propensities=[1 / 3], name="one")
    path = tmp_path / "one.npz"
    log.save(path)
    assert main(["replay", "--log", str(path), "--algorithms", "random"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the log has 1 round(s) with a reward") and "at least 2" in err
