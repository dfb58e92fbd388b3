"""Experiment configs: parsing, grids, validation errors that name the key, seeds."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from glmbandits.experiments.config import ConfigError, load_config, parse_config
from glmbandits.experiments.runner import plan_tasks

GOOD = textwrap.dedent("""
    name = "faury2022-fig1"
    horizon = 300
    seeds = 3
    seed = 7
    [environment]
    family = "logistic"
    n_features = [2, 3]
    n_actions = 5
    theta_norm = 3.0
    [[policies]]
    name = "ucb-glm"
    [policies.params]
    alpha = [0.5, 1.0]
    [[policies]]
    name = "random"
    [dask]
    scheduler = "tcp://127.0.0.1:8786"
""")


def write(tmp_path, text):
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


def base(**changes):
    data = {"name": "x", "horizon": 50, "environment": {"n_features": 2},
            "policies": [{"name": "ucb-glm"}]}
    data.update(changes)
    return data


def test_a_config_parses_into_the_product_of_its_grids(tmp_path):
    config = load_config(write(tmp_path, GOOD))
    assert (config.name, config.horizon, config.seeds, config.seed) == ("faury2022-fig1",
                                                                        (300,), 3, 7)
    assert config.dask == {"scheduler": "tcp://127.0.0.1:8786"}
    cells = config.cells()
    # 2 environments x (2 ucb-glm alphas + 1 random)
    assert len(cells) == 6
    assert [c.name for c in cells[:3]] == ["ucb-glm(alpha=0.5)", "ucb-glm(alpha=1.0)", "random"]
    assert {c.environment["n_features"] for c in cells} == {2, 3}
    assert len({c.key for c in cells}) == 6
    assert cells[0].problem.n_actions == 5 and cells[0].problem.horizon == 300
    assert config.with_seeds(9).seeds == 9 and config.with_seeds(9).cells()[0].key == cells[0].key


@pytest.mark.parametrize("data, key", [
    (base(policies=[{"name": "no-such-policy"}]), "policies[0].name"),
    (base(environment={"n_features": 2, "family": "gamma"}), "environment.family"),
    (base(horizon=-3), "horizon"),
    (base(horizon=0), "horizon"),
    (base(horizon=2.5), "horizon"),
    (base(seeds=0), "seeds"),
    ({"horizon": 50, "environment": {"n_features": 2}, "policies": [{"name": "random"}]}, "name"),
    ({"name": "x", "environment": {"n_features": 2}, "policies": [{"name": "random"}]},
     "horizon"),
    ({"name": "x", "horizon": 5, "policies": [{"name": "random"}]}, "environment"),
    ({"name": "x", "horizon": 5, "environment": {"n_features": 2}}, "policies"),
    (base(environment={"n_actions": 3}), "environment.n_features"),
    (base(environment={"n_features": 2, "colour": "red"}), "environment.colour"),
    (base(policies=[{"params": {}}]), "policies[0].name"),
    (base(policies=[{"name": "ucb-glm", "parms": {}}]), "policies[0].parms"),
    (base(policies=[{"name": "ucb-glm", "params": {"alpha": []}}]), "policies[0].params.alpha"),
    (base(policies=[{"name": "ucb-glm", "params": {"alpha": -1.0}}]), "policies[0].params"),
    (base(policies=[{"name": "ucb-glm", "params": {"gamma": 1.0}}]), "policies[0].params"),
    (base(environment={"n_features": [2, -1]}), "environment"),
    (base(typo=1), "typo"),
    (base(dask={"schedular": "tcp://x:1"}), "dask.schedular"),
])
def test_bad_configs_raise_errors_that_name_the_key(data, key):
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    assert key in str(info.value)


def test_bad_toml_and_missing_file_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "name = \n"))
    with pytest.raises(ConfigError, match="existing TOML file"):
        load_config(tmp_path / "missing.toml")


def test_replicate_seeds_differ_within_a_cell_and_are_stable_across_runs(tmp_path):
    config = load_config(write(tmp_path, GOOD))
    first, again = plan_tasks(config), plan_tasks(load_config(write(tmp_path, GOOD)))
    assert [t.seed_record() for t in first] == [t.seed_record() for t in again]
    cell = first[0].cell.key
    mine = [t for t in first if t.cell.key == cell]
    assert len(mine) == 3
    states = [tuple(t.policy_seed.generate_state(4)) for t in mine]
    envs = [tuple(t.env_seed.generate_state(4)) for t in mine]
    assert len(set(states)) == 3 and len(set(envs)) == 3
    # every (cell, replicate) has its own policy stream ...
    assert len({tuple(t.policy_seed.generate_state(4)) for t in first}) == len(first)
    # ... while replicate r of every cell sees the same environment seed (common random numbers)
    for r in range(3):
        assert len({tuple(t.env_seed.generate_state(4)) for t in first if t.replicate == r}) == 1
    # adding seeds or reordering policies does not change the existing seeds
    more = {(t.cell.key, t.replicate): t.seed_record() for t in plan_tasks(config.with_seeds(5))}
    assert all(more[(t.cell.key, t.replicate)] == t.seed_record() for t in first)
    swapped = GOOD.replace('name = "random"', 'name = "linucb"')
    other = {(t.cell.key, t.replicate): t
             for t in plan_tasks(load_config(write(tmp_path, swapped)))}
    assert other[(cell, 0)].seed_record() == first[0].seed_record()
    assert np.array_equal(other[(cell, 0)].policy_seed.generate_state(2),
                          first[0].policy_seed.generate_state(2))
