"""Drifting environments in the experiment pipeline: config keys, cells, runs, store, plots."""

from __future__ import annotations

import numpy as np
import pytest

from glmbandits.environments import (PiecewiseStationaryGLMEnv, SmoothlyDriftingGLMEnv,
                                     SyntheticGLMEnv)
from glmbandits.experiments.config import ConfigError, parse_config
from glmbandits.experiments.runner import execute_task, plan_tasks, run_experiment
from glmbandits.experiments.store import ResultStore
from glmbandits.simulation import simulate


def config(environment, horizon=80, **top):
    return {"name": "drift", "horizon": horizon, "seeds": 2,
            "environment": {"n_features": 2, "n_actions": 4, **environment},
            "policies": [{"name": "ucb-glm"}, {"name": "random"}], **top}


def test_drift_keys_build_drifting_environments_over_the_cell_horizon():
    parsed = parse_config(config({"drift": ["piecewise", "smooth", None][:2],
                                  "theta_norm": 2.0}, horizon=[60, 90]))
    kinds = {(type(cell.make_environment(0)).__name__, cell.make_environment(0).horizon)
             for cell in parsed.cells()}
    assert kinds == {("PiecewiseStationaryGLMEnv", 60), ("PiecewiseStationaryGLMEnv", 90),
                     ("SmoothlyDriftingGLMEnv", 60), ("SmoothlyDriftingGLMEnv", 90)}
    cell = parse_config(config({"drift": "piecewise", "breakpoints": 3, "jump": "flip"},
                               horizon=400)).cells()[0]
    env = cell.make_environment(seed=1)
    assert isinstance(env, PiecewiseStationaryGLMEnv)
    assert env.breakpoints_.tolist() == [100, 200, 300] and env.jump == "flip"
    smooth = parse_config(config({"drift": "smooth", "path_length": 1.5, "path": "walk"},
                                 horizon=50)).cells()[0].make_environment(seed=2)
    assert isinstance(smooth, SmoothlyDriftingGLMEnv)
    assert smooth.variation(50) == pytest.approx(1.5)
    plain = parse_config(config({})).cells()[0].make_environment(seed=0)
    assert type(plain) is SyntheticGLMEnv


def test_literal_lists_are_one_grid_value():
    """A list value is a grid axis, so breakpoint rounds and θ*s are a list of one list."""
    thetas = [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]
    parsed = parse_config(config({"drift": "piecewise", "breakpoints": [[20, 50]],
                                  "thetas": [thetas]}))
    (cell,) = [c for c in parsed.cells() if c.policy == "random"]
    env = cell.make_environment(seed=0)
    assert env.breakpoints_.tolist() == [20, 50]
    np.testing.assert_array_equal(env.thetas_, thetas)
    assert len(parse_config(config({"drift": "piecewise", "breakpoints": [1, 2]})).cells()) == 4


@pytest.mark.parametrize("environment, horizon, message", [
    ({"drift": "sudden"}, 80, "environment.drift must be one of ['piecewise', 'smooth'], "
                              "got 'sudden'"),
    ({"drift": [["piecewise"]]}, 80, "environment.drift must be one of"),
    ({"breakpoints": 3}, 80, "environment.breakpoints is not a known key (expected one of "
                             "['n_features', "),
    ({"drift": "piecewise", "path_length": 1.0}, 80, "environment.path_length is not a known "
                                                     "key"),
    ({"drift": "smooth", "jump": "flip"}, 80, "environment.jump is not a known key"),
    ({"drift": "piecewise", "breakpoints": 100}, [200, 100],
     "breakpoints must be < horizon = 100"),
    ({"drift": "smooth", "path_length": 1e6}, 80, "path_length must be <= 2‖θ*‖(horizon - 1)"),
    ({"drift": "piecewise", "horizon": 10}, 80, "environment.horizon is not a known key"),
])
def test_bad_drift_keys_are_refused_naming_the_key(environment, horizon, message):
    with pytest.raises(ConfigError) as error:
        parse_config(config(environment, horizon=horizon))
    assert message in str(error.value)
    assert str(error.value).startswith("parse_config: ")


def test_a_task_on_a_drifting_cell_is_simulate_on_its_environment(tmp_path):
    parsed = parse_config(config({"drift": "piecewise", "breakpoints": 1, "jump": "flip"}))
    task = plan_tasks(parsed)[0]
    run = execute_task(task)
    assert run.dynamic_regret and run.environment["drift"] == "piecewise"
    env = task.cell.make_environment(seed=task.env_seed)
    policy = task.cell.make_policy(seed=np.random.default_rng(task.policy_seed))
    assert run.final_regret == simulate(policy, env, 80).cumulative_regret[-1]


def test_the_store_says_which_runs_have_a_dynamic_regret(tmp_path):
    path = tmp_path / "s.sqlite"
    run_experiment(parse_config(config({"drift": "smooth", "path_length": 2.0})), path,
                   n_jobs=1, progress=False)
    run_experiment(parse_config(config({}, name="still")), path, n_jobs=1, progress=False)
    with ResultStore(path) as store:
        dynamic = {run.experiment: run.dynamic_regret for run in store.runs()}
    assert dynamic == {"drift": True, "still": False}


def test_plots_say_dynamic_regret_when_the_environment_drifts(tmp_path):
    pytest.importorskip("matplotlib")
    from glmbandits.experiments.plots import (loglog_figure, regret_curves_figure,
                                              store_curves_figure)

    path = tmp_path / "s.sqlite"
    run_experiment(parse_config(config({"drift": "piecewise", "breakpoints": 2})), path,
                   n_jobs=1, progress=False)
    run_experiment(parse_config(config({}, name="still")), path, n_jobs=1, progress=False)
    with ResultStore(path) as store:
        drifting, still = store.runs("drift"), store.runs("still")
    for runs, expected in ((drifting, "dynamic regret"), (still, "regret")):
        labels = [regret_curves_figure(runs).axes[0].get_ylabel(),
                  store_curves_figure(runs).axes[0].get_ylabel(),
                  loglog_figure(runs).axes[0].get_ylabel()]
        assert labels[:2] == [f"cumulative {expected} $R_t$"] * 2
        assert labels[2] == f"cumulative {expected} $R_T$"
    title = regret_curves_figure(drifting)._suptitle.get_text()
    assert "drift=piecewise" in title and "breakpoints=2" in title


def test_the_shipped_russac2020_config_is_the_documented_setup():
    """experiments/russac2020-abrupt.toml: d = 2, K = 50, T = 6000, θ* jumps on the unit
    circle at t = 1000, 2000, 3000; τ and γ are the theory's for G = 3 (docs/drift.md)."""
    from pathlib import Path

    from glmbandits.experiments.config import load_config
    from glmbandits.policies.d_linucb import discount_for_budget
    from glmbandits.policies.sw_glucb import SWGLUCB

    root = Path(__file__).resolve().parents[2]
    parsed = load_config(root / "experiments" / "russac2020-abrupt.toml")
    assert parsed.horizon == (6000,) and parsed.seeds == 10
    cells = parsed.cells()
    env = cells[0].make_environment(seed=0)
    assert isinstance(env, PiecewiseStationaryGLMEnv) and env.family.name == "logistic"
    assert (env.n_features, env.n_actions, env.horizon) == (2, 50, 6000)
    assert env.breakpoints_.tolist() == [1000, 2000, 3000]
    np.testing.assert_array_equal(env.thetas_, [[1, 0], [-1, 0], [0, 1], [0, -1]])
    params = {cell.policy: cell.params for cell in cells}
    assert params["sw-glucb"]["window"] == SWGLUCB.theory_window(2, 6000, 3)
    gamma = discount_for_budget(6000, 2, 3)
    assert all(params[name]["gamma"] == pytest.approx(gamma, abs=1e-6)
               for name in params if "gamma" in params[name])
    for cell in cells:  # every policy builds with its parameters
        cell.make_policy(seed=0)
