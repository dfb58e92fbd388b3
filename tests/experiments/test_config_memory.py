"""Issue 12, item 8: absurd sizes are refused before anything is built or allocated, with an
error that states the estimated memory (never an out-of-memory kill)."""

from __future__ import annotations

import pytest

from glmbandits.cli.main import main
from glmbandits.experiments import config as config_module
from glmbandits.experiments.config import ConfigError, estimate_run_memory, load_config, \
    parse_config

BASE = {"name": "big", "horizon": 100, "environment": {"n_features": 10},
        "policies": [{"name": "ucb-glm"}]}


@pytest.fixture
def nothing_is_built(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("an environment was built before the memory check")
    # drawing a round's K x d contexts is the environment's allocation
    monkeypatch.setattr(config_module.SyntheticGLMEnv, "_new_round", refuse)


@pytest.mark.parametrize("change, text", [
    ({"environment": {"n_features": 10, "n_actions": 10**13}}, "n_actions = 10000000000000"),
    ({"environment": {"n_features": 10**7}}, "n_features = 10000000"),
    ({"horizon": 10**15}, "horizon = 1000000000000000"),
    ({"horizon": [100, 10**15]}, "horizon = 1000000000000000"),
])
def test_absurd_sizes_state_the_estimated_memory(nothing_is_built, change, text):
    with pytest.raises(ConfigError, match=r"needs an estimated [\d,.]+ GiB of memory") as caught:
        parse_config({**BASE, **change})
    assert text in str(caught.value) and "more than this machine's" in str(caught.value)


def test_absurd_number_of_runs_is_refused_before_planning(nothing_is_built):
    with pytest.raises(ConfigError, match=r"runs \(cells x seeds\) need an estimated"):
        parse_config({**BASE, "seeds": 10**12})


def test_toml_float_1e9_actions_states_the_memory(tmp_path, capsys):
    path = tmp_path / "big.toml"
    path.write_text('name = "big"\nhorizon = 100\n[environment]\nn_features = 10\n'
                    'n_actions = 1e13\n[[policies]]\nname = "random"\n')
    with pytest.raises(ConfigError, match="needs an estimated .* GiB"):
        load_config(path)
    assert main(["run", str(path), "--store", str(tmp_path / "s.sqlite"), "--no-plot"]) == 2
    assert "GiB of memory" in capsys.readouterr().err
    assert not (tmp_path / "s.sqlite").exists()


def test_the_limit_is_the_machine_memory(monkeypatch, nothing_is_built):
    need = estimate_run_memory(10, 1000, 100)
    monkeypatch.setattr(config_module, "memory_limit", lambda: need - 1)
    with pytest.raises(ConfigError, match="needs an estimated"):
        parse_config({**BASE, "environment": {"n_features": 10, "n_actions": 1000}})


def test_ordinary_configs_pass():
    assert len(parse_config({**BASE, "environment": {"n_features": 10, "n_actions": 10**4}})
               .cells()) == 1


def test_cli_without_config_checks_the_flags(tmp_path, capsys):
    assert main(["run", "-K", str(10**13), "--no-plot", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: glmbandits run: ") and "GiB of memory" in err
