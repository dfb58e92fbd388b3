"""Issue 12, item 8: resuming is keyed on everything that changes a result (the master seed and
the full cell definition); changing ``seed`` or ``seeds`` never reuses or mixes in old runs."""

from __future__ import annotations

import json

from glmbandits.cli.main import main
from glmbandits.experiments.config import parse_config
from glmbandits.experiments.runner import execute_task, run_experiment

BASE = {"name": "resume", "horizon": 15, "seeds": 2, "seed": 0,
        "environment": {"n_features": 2, "n_actions": 3},
        "policies": [{"name": "random"}, {"name": "linucb"}]}


def _run(store, calls=None, **changes):
    config = parse_config({**BASE, **changes})

    def counting(task):
        if calls is not None:
            calls.append((task.cell.key, task.replicate))
        return execute_task(task)

    return run_experiment(config, store, n_jobs=1, progress=False, task_function=counting)


def test_changing_the_master_seed_reruns_every_replicate(tmp_path):
    store = tmp_path / "s.sqlite"
    first = _run(store)
    old = {(r.cell_key, r.replicate): r.final_regret for r in first.runs()}
    calls = []
    second = _run(store, calls, seed=5)
    assert (second.n_skipped, second.n_ok, len(calls)) == (0, 4, 4)
    runs = second.runs()
    assert len(runs) == 4 and {r.seed["entropy"] for r in runs} == {5}
    assert [r.final_regret for r in runs] != [old[(r.cell_key, r.replicate)] for r in runs]
    # the same seed again is a plain resume
    calls.clear()
    assert _run(store, calls, seed=5).n_skipped == 4 and calls == []


def test_fewer_seeds_do_not_mix_in_the_old_replicates(tmp_path):
    store = tmp_path / "s.sqlite"
    _run(store, seeds=3)
    fewer = _run(store, seeds=1)
    assert (fewer.n_skipped, fewer.n_ok, fewer.n_stale) == (2, 0, 4)
    assert sorted(r.replicate for r in fewer.runs()) == [0, 0]


def test_a_changed_cell_definition_is_not_reused(tmp_path):
    store = tmp_path / "s.sqlite"
    _run(store)
    calls = []
    changed = _run(store, calls, horizon=16)
    assert changed.n_skipped == 0 and len(calls) == 4
    assert {r.horizon for r in changed.runs()} == {16}


def test_cli_summary_reflects_only_the_current_seed_and_seeds(tmp_path, capsys):
    config = tmp_path / "exp.toml"
    config.write_text('name = "resume"\nhorizon = 15\nseeds = 3\n[environment]\n'
                      'n_features = 2\nn_actions = 3\n[[policies]]\nname = "random"\n')
    store = tmp_path / "s.sqlite"
    argv = ["run", str(config), "--store", str(store), "--jobs", "1", "--no-plot"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main([*argv, "--seed", "4"]) == 0
    out = capsys.readouterr().out
    assert "3 runs done, 0 already in the store" in out
    assert main([*argv, "--seed", "4", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    assert "0 runs done, 1 already in the store" in out and "note: 2 stored runs" in out
    assert "| resume | random | n_actions=3, n_features=2 | 15 | " in out and "| 1 | 0 |" in out
    assert main(["results", str(store), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert [row["n_ok"] for row in json.loads(captured.out)] == [1]
    assert "note: 2 stored runs" in captured.err
