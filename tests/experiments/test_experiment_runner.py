"""The runner: results, resume, retries and failures, local processes and a Dask LocalCluster."""

from __future__ import annotations

import numpy as np
import pytest

from glmbandits.experiments.config import parse_config
from glmbandits.experiments.runner import execute_task, plan_tasks, run_experiment
from glmbandits.experiments.store import ResultStore, StoredRun

SMALL = {"name": "small", "horizon": 60, "seeds": 2, "seed": 3,
         "environment": {"n_features": [2, 3], "n_actions": 4},
         "policies": [{"name": "ucb-glm", "params": {"alpha": [0.5, 2.0]}}, {"name": "random"}]}


def numbers(runs):
    return {(r.cell_key, r.replicate): (r.final_regret, tuple(r.curve)) for r in runs}


def test_runs_every_cell_and_replicate_and_stores_them(tmp_path):
    config = parse_config(SMALL)
    report = run_experiment(config, tmp_path / "s.sqlite", n_jobs=1, progress=False)
    assert (report.n_tasks, report.n_skipped, report.n_ok, report.failed) == (12, 0, 12, [])
    runs = report.runs()
    assert len(runs) == 12 and all(r.ok and r.horizon == 60 for r in runs)
    assert all(np.all(np.diff(r.curve) >= -1e-12) and r.rounds[-1] == 60 for r in runs)
    random_runs = [r for r in runs if r.policy == "random"]
    ucb_runs = [r for r in runs if r.policy == "ucb-glm"]
    assert np.mean([r.final_regret for r in ucb_runs]) < np.mean([r.final_regret
                                                                  for r in random_runs])
    with ResultStore(tmp_path / "s.sqlite") as store:
        assert store.experiments()[0]["config"]["seeds"] == 2


def test_a_run_is_reproducible_and_processes_match_the_serial_path(tmp_path):
    config = parse_config(SMALL)
    serial = run_experiment(config, tmp_path / "a.sqlite", n_jobs=1, progress=False).runs()
    again = run_experiment(config, tmp_path / "b.sqlite", n_jobs=1, progress=False).runs()
    pooled = run_experiment(config, tmp_path / "c.sqlite", n_jobs=2, progress=False).runs()
    assert numbers(serial) == numbers(again) == numbers(pooled)
    # the replicates of one cell differ
    first = [r.final_regret for r in serial if r.cell_key == serial[0].cell_key]
    assert len(set(first)) == 2


def test_resume_skips_finished_cells(tmp_path):
    store = tmp_path / "s.sqlite"
    config = parse_config({**SMALL, "seeds": 1})
    calls = []

    def counting(task):
        calls.append((task.cell.key, task.replicate))
        return execute_task(task)

    first = run_experiment(config, store, n_jobs=1, progress=False, task_function=counting)
    assert first.n_ok == 6 and len(calls) == 6
    before = numbers(first.runs())
    calls.clear()
    second = run_experiment(config, store, n_jobs=1, progress=False, task_function=counting)
    assert (second.n_skipped, second.n_ok, calls) == (6, 0, [])
    third = run_experiment(config.with_seeds(2), store, n_jobs=1, progress=False,
                           task_function=counting)
    assert (third.n_skipped, third.n_ok) == (6, 6)
    assert sorted(calls) == sorted((c.key, 1) for c in config.cells())
    after = numbers(third.runs())
    assert all(after[key] == value for key, value in before.items())


def test_failing_tasks_are_retried_then_reported_not_dropped(tmp_path):
    config = parse_config({**SMALL, "seeds": 2})
    attempts: dict = {}

    def flaky(task):
        key = (task.cell.key, task.replicate)
        attempts[key] = attempts.get(key, 0) + 1
        if task.cell.policy == "random" and task.replicate == 1:
            raise RuntimeError("worker lost")  # always fails
        if task.replicate == 0 and attempts[key] == 1:
            raise RuntimeError("transient")  # succeeds on the retry
        return execute_task(task)

    report = run_experiment(config, tmp_path / "s.sqlite", n_jobs=1, retries=2, progress=False,
                            task_function=flaky)
    assert report.n_ok == 10 and len(report.failed) == 2
    assert all("worker lost" in run.error and run.attempts == 3 for run in report.failed)
    runs = report.runs()
    assert len(runs) == 12
    assert sorted(r.attempts for r in runs if r.ok and r.replicate == 0) == [2] * 6
    # the failed cells are retried (and now succeed) on the next run
    again = run_experiment(config, tmp_path / "s.sqlite", n_jobs=1, progress=False)
    assert (again.n_skipped, again.n_ok, again.failed) == (10, 2, [])


def test_bad_arguments_are_rejected(tmp_path):
    with pytest.raises(TypeError, match="config must be an ExperimentConfig"):
        run_experiment({"name": "x"}, tmp_path / "s.sqlite")
    with pytest.raises(ValueError, match="n_jobs must be >= 1"):
        run_experiment(parse_config(SMALL), tmp_path / "s.sqlite", n_jobs=0)
    with pytest.raises(TypeError, match="replace must be a bool, got str"):
        run_experiment(parse_config(SMALL), tmp_path / "s.sqlite", replace="yes")
    assert not (tmp_path / "s.sqlite").exists()


def test_replace_drops_the_experiments_runs_and_makes_them_all_again(tmp_path):
    """What ``glmbandits run`` with flags asks for: the next run of a problem replaces its
    runs, including rows of another cell key (an older store's) and other replicates."""
    store = tmp_path / "s.sqlite"
    config = parse_config({**SMALL, "seeds": 1})
    first = run_experiment(config, store, n_jobs=1, progress=False)
    with ResultStore(store) as results:
        stale = first.runs()[0]
        results.add_run(StoredRun(**{**stale.__dict__, "cell_key": "random", "replicate": 4}))
        results.add_run(StoredRun("other", "random", 0, "random", "random", {}, {}, 60, {},
                                  "ok", 1.0, 0.1, np.array([1, 60]), np.array([0.0, 1.0])))
    calls = []

    def counting(task):
        calls.append((task.cell.key, task.replicate))
        return execute_task(task)

    again = run_experiment(config, store, n_jobs=1, progress=False, task_function=counting,
                           replace=True)
    assert (again.n_skipped, again.n_ok, again.n_stale, len(calls)) == (0, 6, 0, 6)
    assert numbers(again.runs()) == numbers(first.runs())
    with ResultStore(store) as results:
        assert len(results.runs("small")) == 6 and len(results.runs("other")) == 1


def test_runs_come_back_in_the_order_of_the_plan(tmp_path):
    store = tmp_path / "s.sqlite"
    config = parse_config({**SMALL, "seeds": 2})
    report = run_experiment(config, store, n_jobs=1, progress=False)
    planned = [(task.cell.key, task.replicate) for task in plan_tasks(config)]
    assert [(r.cell_key, r.replicate) for r in report.runs()] == planned
    with ResultStore(store) as results:  # a rewritten row moves to the end of the table
        results.add_run(report.runs()[0])
        assert results.runs("small")[-1].cell_key == planned[0][0]
    assert [(r.cell_key, r.replicate) for r in report.runs()] == planned


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_numbers_as_the_local_path(tmp_path):
    distributed = pytest.importorskip("distributed")
    config = parse_config({**SMALL, "environment": {"n_features": 2, "n_actions": 4}})
    local = run_experiment(config, tmp_path / "local.sqlite", n_jobs=1, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = run_experiment(config, tmp_path / "dask.sqlite",
                                scheduler=cluster.scheduler_address, progress=False)
        # the [dask] table of a config is honoured too
        via_config = parse_config({**SMALL, "environment": {"n_features": 2, "n_actions": 4},
                                   "dask": {"scheduler": cluster.scheduler_address}})
        from_table = run_experiment(via_config, tmp_path / "table.sqlite", progress=False)
    assert remote.n_ok == local.n_ok == from_table.n_ok == 6 and not remote.failed
    assert numbers(remote.runs()) == numbers(local.runs()) == numbers(from_table.runs())


def test_plan_tasks_seeds_match_the_stored_seed_records(tmp_path):
    config = parse_config({**SMALL, "seeds": 1})
    report = run_experiment(config, tmp_path / "s.sqlite", n_jobs=1, progress=False)
    stored = {(r.cell_key, r.replicate): r.seed for r in report.runs()}
    for task in plan_tasks(config):
        record = stored[(task.cell.key, task.replicate)]
        assert record["entropy"] == 3 and record["environment"] == [0, 0]
        assert record["policy"][:2] == [0, 1] and len(record["policy"]) == 3


def test_progress_bar_is_quiet_in_ci_and_off_a_terminal(monkeypatch):
    from glmbandits.experiments import runner

    class Terminal:
        def isatty(self):
            return True

    monkeypatch.setattr(runner.sys, "stderr", Terminal())
    monkeypatch.delenv("CI", raising=False)
    assert runner.progress_enabled() is True
    monkeypatch.setenv("CI", "true")
    assert runner.progress_enabled() is False
    monkeypatch.delenv("CI")
    monkeypatch.setattr(runner.sys, "stderr", object.__new__(type("Pipe", (), {
        "isatty": lambda self: False})))
    assert runner.progress_enabled() is False
