"""Issue 12, item 8: problem flags given with a CONFIG override it, and say so; flags that do not
apply are refused. Nothing is silently ignored."""

from __future__ import annotations

import textwrap

import pytest

from glmbandits.cli.main import main
from glmbandits.experiments.store import ResultStore

CONFIG = textwrap.dedent("""
    name = "flags"
    horizon = 20
    seeds = 1
    [environment]
    n_features = 2
    n_actions = 3
    [[policies]]
    name = "ucb-glm"
    [policies.params]
    alpha = 0.5
    [[policies]]
    name = "random"
""")


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(CONFIG)
    return path


def _run(config, store, *flags):
    return main(["run", str(config), "--store", str(store), "--jobs", "1", "--no-plot", *flags])


def test_problem_flags_override_the_config_and_are_printed(tmp_path, config, capsys):
    store = tmp_path / "s.sqlite"
    assert _run(config, store, "--seed", "7", "--horizon", "30", "-d", "3", "-K", "4",
                "--family", "probit", "--theta-norm", "1.5",
                "--algorithms", "ucb-glm,linucb") == 0
    out = capsys.readouterr().out
    for line in ("override: seed = 7 (config: 0)", "override: horizon = 30 (config: 20)",
                 "override: environment.n_features = 3 (config: 2)",
                 "override: environment.n_actions = 4 (config: 3)",
                 "override: environment.family = 'probit' (config: default)",
                 "override: environment.theta_norm = 1.5 (config: default)",
                 "override: policies = ucb-glm, linucb (config: ucb-glm, random)"):
        assert line in out
    with ResultStore(store) as results:
        runs = results.runs("flags")
        config_stored = results.experiments()[0]["config"]
    assert config_stored["seed"] == 7
    assert sorted(r.label for r in runs) == ["linucb", "ucb-glm(alpha=0.5)"]  # params kept
    for run in runs:
        assert run.horizon == 30 and run.seed["entropy"] == 7
        assert run.environment == {"n_features": 3, "n_actions": 4, "family": "probit",
                                   "theta_norm": 1.5}


def test_without_flags_the_config_is_used_as_is(tmp_path, config, capsys):
    assert _run(config, tmp_path / "s.sqlite") == 0
    assert "override" not in capsys.readouterr().out


def test_an_override_the_config_rejects_is_an_error(tmp_path, config, capsys):
    assert _run(config, tmp_path / "s.sqlite", "--algorithms", "nope") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "command-line overrides" in err and "'nope'" in err


@pytest.mark.parametrize("flag", [["--store", "x.sqlite"], ["--scheduler", "tcp://h:1"]])
def test_config_only_flags_without_a_config_are_refused(tmp_path, capsys, flag):
    assert main(["run", *flag, "--no-plot", "--out", str(tmp_path)]) == 2
    assert f"error: {flag[0]} applies only with a CONFIG" in capsys.readouterr().err
