"""Issue 12, item 8: unreadable configs and logs are clear errors (file, column), never a
traceback and never numpy's advice to set ``allow_pickle``."""

from __future__ import annotations

import numpy as np
import pytest

from glmbandits.cli.main import main
from glmbandits.data import LoggedBanditData
from glmbandits.experiments.config import ConfigError, load_config

GOOD = 'name = "x"\nhorizon = 5\n[environment]\nn_features = 2\n[[policies]]\nname = "random"\n'


def _cli_error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err and "allow_pickle" not in err
    return err


@pytest.mark.parametrize("content, text", [
    (GOOD.encode() + b"# caf\xe9\n", "must be UTF-8 text (TOML), got byte 0xe9 on line 7"),
    (b"\xff\xfe" + GOOD.encode("utf-16-le"), "must be UTF-8 text"),
    (GOOD.encode()[:20], "not valid TOML (truncated or malformed)"),
])
def test_non_utf8_or_truncated_config(tmp_path, capsys, content, text):
    path = tmp_path / "exp.toml"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match="exp.toml"):
        load_config(path)
    err = _cli_error(capsys, ["run", str(path), "--store", str(tmp_path / "s.sqlite"),
                              "--no-plot"])
    assert text in err and "exp.toml" in err
    assert not (tmp_path / "s.sqlite").exists()


def test_directory_as_config(tmp_path, capsys):
    (tmp_path / "exp.toml").mkdir()
    err = _cli_error(capsys, ["run", str(tmp_path / "exp.toml"), "--no-plot"])
    assert "got a directory" in err and "exp.toml" in err


@pytest.fixture
def log_path(tmp_path):
    log = LoggedBanditData(np.zeros((6, 2, 3)), [0, 1, 0, 1, 0, 1], [1.0, 0, 1, 0, 1, 0],
                           [0.5] * 6)
    return log.save(tmp_path / "log.npz")


def _replay(capsys, path) -> str:
    return _cli_error(capsys, ["replay", "--log", str(path), "--algorithms", "random"])


@pytest.mark.parametrize("keep", [0, 4, 30, 200, -22])
def test_truncated_npz(tmp_path, capsys, log_path, keep):
    data = log_path.read_bytes()
    bad = tmp_path / "cut.npz"
    bad.write_bytes(data[:keep] if keep >= 0 else data[:len(data) + keep])
    with pytest.raises(ValueError, match=r"LoggedBanditData.load\(.*cut.npz"):
        LoggedBanditData.load(bad)
    assert "cut.npz" in _replay(capsys, bad)


def test_directory_and_missing_log(tmp_path, capsys):
    assert "got a directory" in _replay(capsys, tmp_path)
    assert "No such file" in _replay(capsys, tmp_path / "missing.npz")


@pytest.mark.parametrize("columns, text", [
    ({"action": np.array([0, 1, None, 0, 0, 0], dtype=object)}, "column 'action' must hold "
                                                                  "numbers"),
    ({"action": np.array(["a"] * 6)}, "action must be a numeric array"),
    ({"action": np.zeros(4, int)}, "action must have shape (6,)"),
    ({"propensity": np.full(6, 2.0)}, "propensity must lie in (0, 1]"),
    ({"reward": np.array([1.0, np.nan, 0, 0, 0, 0])}, "reward"),
    ({"contexts": np.zeros(6)}, "contexts must have shape"),
])
def test_malformed_log_names_the_file_and_the_column(tmp_path, capsys, columns, text):
    table = {"contexts": np.zeros((6, 2, 3)), "action": np.zeros(6, int), "reward": np.ones(6),
             "propensity": np.full(6, 0.5), **columns}
    path = tmp_path / "bad.npz"
    np.savez(path, **table)
    err = _replay(capsys, path)
    assert "bad.npz" in err and text in err


def test_missing_column_names_the_file(tmp_path, capsys):
    path = tmp_path / "nocol.npz"
    np.savez(path, contexts=np.zeros((6, 2, 3)), reward=np.ones(6))
    err = _replay(capsys, path)
    assert "nocol.npz" in err and "missing required column(s) ['action']" in err


def _tiny_log(tmp_path, tiny):
    rng = np.random.default_rng(0)
    T = 200
    propensities = np.full(T, 1 / 3)
    propensities[::7] = tiny
    log = LoggedBanditData(rng.random((T, 3, 2)) / 2, rng.integers(3, size=T),
                           (rng.random(T) < 0.3).astype(float), propensities, name="tiny")
    return log.save(tmp_path / "tiny.npz")


def test_replay_report_with_subnormal_propensities_is_a_clear_error(tmp_path, capsys):
    err = _replay(capsys, _tiny_log(tmp_path, 5e-324))
    assert "propensity must be at least" in err and "got 5e-324 in round" in err


def test_replay_report_with_1e_300_propensities_is_finite(tmp_path, capsys):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert main(["replay", "--log", str(_tiny_log(tmp_path, 1e-300)), "--algorithms",
                     "random"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith("random ")]
    assert {row[1] for row in rows} == {"replay", "ips", "snips", "dr"}
    for row in rows:
        if row[1] != "replay":
            assert np.isfinite(float(row[2])) and np.isfinite(float(row[3]))
    assert "inf" not in out and "nan" not in out
