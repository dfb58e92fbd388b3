"""The SQLite results store round-trips runs, configs and versions; summaries and formats."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from glmbandits.experiments.store import ResultStore, StoredRun, package_versions
from glmbandits.experiments.summary import format_summary, summarise


def make_run(replicate, final, status="ok", cell="c1", label="ucb-glm"):
    curve = None if status != "ok" else np.array([0.25, 1.5, final])
    rounds = None if status != "ok" else np.array([1, 50, 100])
    return StoredRun("exp", cell, replicate, label, "ucb-glm", {"alpha": 0.5},
                     {"n_features": 2, "family": "logistic"}, 100,
                     {"entropy": 3, "environment": [replicate, 0], "policy": [replicate, 1, 9]},
                     status, final if status == "ok" else None, 0.5 if status == "ok" else None,
                     rounds, curve, None if status == "ok" else "ValueError: boom", 2)


def test_store_round_trips_runs_config_and_versions(tmp_path):
    path = tmp_path / "results.sqlite"
    config = {"name": "exp", "horizon": 100, "policies": [{"name": "ucb-glm"}]}
    with ResultStore(path) as store:
        store.save_experiment("exp", config)
        written = [make_run(0, 3.0), make_run(1, 5.0), make_run(2, 0.0, status="failed")]
        for run in written:
            store.add_run(run)
    with ResultStore(path) as store:  # reopen from disk
        (experiment,) = store.experiments()
        runs = store.runs("exp")
        assert store.finished("exp") == {("c1", 0), ("c1", 1)}
        assert [r.replicate for r in store.runs(status="failed")] == [2]
    assert experiment["config"] == config
    assert experiment["versions"] == package_versions()
    assert set(experiment["versions"]) >= {"python", "glmbandits", "numpy", "scipy"}
    for original, loaded in zip(written, runs):
        for name in ("experiment", "cell_key", "replicate", "label", "policy", "params",
                     "environment", "horizon", "seed", "status", "final_regret", "seconds",
                     "error", "attempts"):
            assert getattr(loaded, name) == getattr(original, name), name
        if original.ok:
            np.testing.assert_array_equal(loaded.curve, original.curve)
            np.testing.assert_array_equal(loaded.rounds, original.rounds)
            assert loaded.curve.dtype == np.float64
        else:
            assert loaded.curve is None


def test_rewriting_a_run_replaces_it(tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as store:
        store.add_run(make_run(0, 0.0, status="failed"))
        store.add_run(make_run(0, 4.0))
        (run,) = store.runs()
    assert run.ok and run.final_regret == 4.0


def test_summary_is_mean_and_sd_per_cell_in_every_format():
    runs = [make_run(0, 3.0), make_run(1, 5.0), make_run(2, 0.0, status="failed"),
            make_run(0, 10.0, cell="c2", label="random")]
    rows = summarise(runs)
    assert [(r.label, r.n_ok, r.n_failed) for r in rows] == [("ucb-glm", 2, 1), ("random", 1, 0)]
    assert rows[0].regret_mean == pytest.approx(4.0)
    assert rows[0].regret_sd == pytest.approx(np.std([3.0, 5.0], ddof=1))
    assert rows[0].ms_per_round == pytest.approx(5.0)  # 0.5 s / 100 rounds
    markdown = format_summary(rows, "markdown")
    assert "| ucb-glm |" in markdown and "4.00 ± 1.41" in markdown
    parsed = list(csv.DictReader(io.StringIO(format_summary(rows, "csv"))))
    assert float(parsed[1]["regret_mean"]) == 10.0
    assert json.loads(format_summary(rows, "json"))[0]["n_failed"] == 1
    with pytest.raises(ValueError, match="fmt must be one of"):
        format_summary(rows, "xml")


def test_a_new_store_is_made_where_hard_links_are_not_supported(tmp_path, monkeypatch):
    import errno
    import os

    import glmbandits.experiments.store as store_module

    def no_links(source, target):
        raise OSError(errno.EPERM, "hard links not supported", str(target))

    monkeypatch.setattr(store_module.os, "link", no_links)
    path = tmp_path / "fallback.sqlite"
    with ResultStore(path) as store:
        store.add_run(make_run(0, 2.0))
    with ResultStore(path) as store:
        assert [run.final_regret for run in store.runs()] == [2.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fallback.sqlite"]
    assert os.path.getsize(path) > 0
