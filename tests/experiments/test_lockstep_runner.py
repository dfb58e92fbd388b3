"""Sweeps run the replicates of policies with a batch kernel in lockstep, with the same results."""

from __future__ import annotations

import pytest

from glmbandits.cli.main import main
from glmbandits.experiments.config import parse_config
from glmbandits.experiments.runner import (_lockstep_cells, _units, execute_lockstep,
                                           execute_task, plan_tasks, run_experiment)

SWEEP = {"name": "lockstep", "horizon": 80, "seeds": 3, "seed": 4,
         "environment": {"n_features": 3, "n_actions": [4, 6]},
         "policies": [{"name": "linucb"}, {"name": "ucb-glm", "params": {"refit": "lazy"}},
                      {"name": "random"}]}


def numbers(runs):
    return {(r.cell_key, r.replicate): (r.final_regret, tuple(r.rounds), tuple(r.curve))
            for r in runs}


def test_lockstep_sweeps_store_the_sequential_runs_bit_for_bit(tmp_path):
    config = parse_config(SWEEP)
    together = run_experiment(config, tmp_path / "a.sqlite", n_jobs=1, progress=False)
    alone = run_experiment(config, tmp_path / "b.sqlite", n_jobs=1, progress=False,
                           lockstep=False)
    pooled = run_experiment(config, tmp_path / "c.sqlite", n_jobs=2, progress=False)
    assert together.n_ok == alone.n_ok == pooled.n_ok == 18
    assert numbers(together.runs()) == numbers(alone.runs()) == numbers(pooled.runs())
    assert together.lockstep == ("linucb", "ucb-glm(refit=lazy)")
    assert together.sequential == ("random",)
    assert alone.lockstep == () and len(alone.sequential) == 3
    for task in plan_tasks(config)[:3]:  # one lockstep chunk against execute_task
        assert numbers([execute_task(task)]) == numbers(execute_lockstep([task]))


def test_lockstep_chunks_keep_the_processes_busy():
    tasks = plan_tasks(parse_config({**SWEEP, "seeds": 5}))
    together = _lockstep_cells(tasks)
    assert len(together) == 4  # linucb and lazy ucb-glm on two problems; random is not
    units = _units(tasks, together, n_jobs=1)
    assert sorted(len(unit) for unit in units) == [1] * 10 + [5] * 4
    units = _units(tasks, together, n_jobs=8)  # 2 chunks per lockstep cell
    assert sorted(len(unit) for unit in units) == [1] * 10 + [2, 2, 2, 2, 3, 3, 3, 3]
    assert sorted((t.cell.key, t.replicate) for unit in units for t in unit) == \
        sorted((t.cell.key, t.replicate) for t in tasks)
    assert all(len({t.cell.key for t in unit}) == 1 for unit in units)


def test_a_custom_task_function_runs_every_task_alone(tmp_path):
    config = parse_config({**SWEEP, "seeds": 1})
    calls = []

    def counting(task):
        calls.append(task.cell.key)
        return execute_task(task)

    report = run_experiment(config, tmp_path / "s.sqlite", n_jobs=1, progress=False,
                            task_function=counting)
    assert len(calls) == 6 and report.lockstep == ()
    with pytest.raises(TypeError, match="run_experiment: lockstep must be a bool, got int"):
        run_experiment(config, tmp_path / "t.sqlite", n_jobs=1, progress=False, lockstep=1)


def test_glmbandits_run_says_which_policies_ran_lockstep(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "sweep.toml"
    path.write_text('name = "lockstep-cli"\nhorizon = 40\nseeds = 2\n'
                    '[environment]\nn_features = 2\nn_actions = 3\n'
                    '[[policies]]\nname = "linucb"\n[[policies]]\nname = "random"\n')
    assert main(["run", str(path), "--store", str(tmp_path / "r.sqlite"), "--jobs", "1",
                 "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "lockstep (replicates together): linucb; sequential: random" in out
