"""The shipped reproduction configs of issue 5 parse and run (on a short horizon)."""

from pathlib import Path

import pytest

from glmbandits.experiments.config import load_config, parse_config
from glmbandits.experiments.runner import execute_task, plan_tasks

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ["faury2022-fig1", "sawarni2024-logistic", "sawarni2024-probit"]


@pytest.mark.parametrize("name", CONFIGS)
def test_reproduction_config_runs(name):
    config = load_config(ROOT / "experiments" / f"{name}.toml")
    assert config.name == name
    policies = {cell.policy for cell in config.cells()}
    assert {"gloc", "ecolog", "glm-ucb", "ucb-glm", "rs-glincb", "random"} <= policies
    short = parse_config({**config.to_dict(), "horizon": 30, "seeds": 1})
    runs = [execute_task(task) for task in plan_tasks(short)]
    assert all(run.status == "ok" and run.horizon == 30 for run in runs)
