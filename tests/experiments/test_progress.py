"""Progress bars of the library functions behind the long commands (issue 13, item 4):
drawn on stderr when ``progress=True``, nothing when ``progress=False``."""

from __future__ import annotations

import pytest

from glmbandits.experiments.benchmark import run_benchmark
from glmbandits.experiments.config import parse_config
from glmbandits.experiments.reproduce import ReproduceSettings, reproduce
from glmbandits.experiments.runner import run_experiment


def test_run_experiment_shows_cells_and_replicates(tmp_path, capsys):
    config = parse_config({"name": "demo", "horizon": 20, "seeds": 3,
                           "environment": {"n_features": 2, "n_actions": 3},
                           "policies": [{"name": "random"}, {"name": "linucb"}]})
    run_experiment(config, tmp_path / "s.sqlite", n_jobs=1, progress=True)
    err = capsys.readouterr().err
    assert "6/6" in err and "cells 2/2" in err and "3/3 replicates" in err
    run_experiment(config, tmp_path / "t.sqlite", n_jobs=1, progress=False)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("progress", [True, False])
def test_run_benchmark_progress(capsys, progress):
    table = run_benchmark(short_horizon=20, long_horizon=None, n_seeds=1, batch_replicates=0,
                          memory_horizon=None, labels=["linucb", "random"], progress=progress)
    assert "linucb" in table
    assert ("2/2" in capsys.readouterr().err) is progress


TINY = ReproduceSettings(
    coverage_families=("logistic",), coverage_replications=30, coverage_fractions=(1.0, 0.001),
    coverage_directions=4,
    theorem2_problems=((3, 5, 1.0),), theorem2_horizon=120, theorem2_seeds=2,
    scaling_horizons=(60, 120), scaling_d_for_T=2, scaling_dims=(2, 3), scaling_T_for_d=80,
    scaling_seeds=2, scaling_n_actions=5, section51_problem=(3, 5, 1.0), section51_horizon=150,
    section51_seeds=2)


@pytest.mark.slow
def test_reproduce_progress_names_each_check(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    reproduce(tmp_path / "a", settings=TINY, n_jobs=1, progress=True)
    err = capsys.readouterr().err
    assert "5/5" in err  # Theorem 1, one Theorem 2 problem, scaling in T and d, Section 5.1
    for step in ("Theorem 1", "Theorem 2", "Scaling", "Section 5.1"):
        assert step in err
    reproduce(tmp_path / "b", settings=TINY, n_jobs=1, progress=False)
    assert capsys.readouterr().err == ""
