"""Issue 21, section 5: the store plots never mix unrelated experiments in one figure, and no
legend says ``slope nan``.

A newcomer runs ``glmbandits run`` twice (two problems: two experiments in the default
store), then ``glmbandits plot``. Each experiment gets its own folder of figures; the
library's :func:`plot_store` refuses runs of several experiments, naming them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from glmbandits.cli.main import main
from glmbandits.experiments.plots import (experiment_folder, loglog_figure, plot_experiments,
                                          plot_store, regret_vs_d_figure)

pytest.importorskip("matplotlib")

STEMS = ("regret_curves", "regret_loglog", "time_per_round")


def _two_runs(stored_run, experiment, d, horizon):
    env = {"n_features": d, "n_actions": 3, "family": "logistic"}
    return [stored_run("ucb-glm", "ucb-glm", env, horizon, r, 1.0 + d) for r in range(2)] + \
        [stored_run("random", "random", env, horizon, r, 0.3) for r in range(2)]


def _as(experiment, runs):
    import dataclasses

    return [dataclasses.replace(run, experiment=experiment) for run in runs]


def test_plot_store_refuses_runs_of_several_experiments(figure_checks, tmp_path):
    runs = _as("a", _two_runs(figure_checks.stored_run, "a", 2, 100)) + \
        _as("b", _two_runs(figure_checks.stored_run, "b", 5, 200))
    with pytest.raises(ValueError, match=r"runs must come from one experiment, got 2 \(a, b\)"):
        plot_store(runs, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_plot_experiments_writes_one_folder_per_experiment(figure_checks, tmp_path):
    runs = _as("run-logistic-d2", _two_runs(figure_checks.stored_run, "", 2, 100)) + \
        _as("sweep/with odd:name", _two_runs(figure_checks.stored_run, "", 5, 200))
    paths = plot_experiments(runs, tmp_path, formats=("png",))
    folders = {path.parent.name for path in paths}
    assert folders == {"run-logistic-d2", "sweep_with_odd_name"}
    for folder in folders:
        assert sorted(p.name for p in (tmp_path / folder).iterdir()) == \
            sorted(f"{stem}.png" for stem in STEMS)  # one d each: no regret-vs-d figure
    assert experiment_folder("sweep/with odd:name") == "sweep_with_odd_name"


def test_no_legend_says_slope_nan(figure_checks):
    """Within one experiment, a policy run at a single d (or a single point) gets
    ``slope n/a`` in the legend, never ``slope nan``."""
    stored_run = figure_checks.stored_run
    runs = [stored_run("ucb-glm", "ucb-glm", {"n_features": d, "n_actions": 3}, 100, r, 2.0)
            for d in (2, 4) for r in range(2)]
    runs += [stored_run("linucb", "linucb", {"n_features": 2, "n_actions": 3}, 100, r, 3.0)
             for r in range(2)]
    labels = figure_checks.legend_labels(regret_vs_d_figure(runs))
    assert any(label.startswith("ucb-glm: slope ") and "n/a" not in label for label in labels)
    assert "linucb: slope n/a" in labels, labels
    assert not any("nan" in label for label in labels), labels
    one_point = [stored_run("random", "random", {"n_features": 2, "n_actions": 3}, 1, 0, 1.0)]
    labels = figure_checks.legend_labels(loglog_figure(one_point))
    assert not any("nan" in label for label in labels), labels


@pytest.mark.slow
def test_two_runs_then_plot_draw_each_experiment_apart(tmp_path, capsys, monkeypatch):
    """What a newcomer does: two `glmbandits run` (two problems), then `glmbandits plot`."""
    monkeypatch.chdir(tmp_path)  # the default store and plots go to ./, not the checkout
    quick = ["run", "--seeds", "2", "-K", "3", "--algorithms", "linucb,random", "--jobs", "1",
             "--no-plot", "--quiet", "--out", str(tmp_path / "out")]
    assert main([*quick, "-d", "2", "-T", "40"]) == 0
    assert main([*quick, "-d", "3", "-T", "60"]) == 0
    capsys.readouterr()
    assert main(["plot", "--formats", "png,svg"]) == 0
    written = [Path(line.split(" ", 1)[1]) for line in capsys.readouterr().out.splitlines()
               if line.startswith("wrote ")]
    experiments = {"run-logistic-d2-K3-norm3-T40", "run-logistic-d3-K3-norm3-T60"}
    assert {path.parent.name for path in written} == experiments
    assert {path.parent.parent for path in written} == {Path("glmbandits-plots")}
    for experiment in experiments:
        names = sorted(p.name for p in (Path("glmbandits-plots") / experiment).iterdir())
        assert names == sorted(f"{stem}.{ext}" for stem in STEMS for ext in ("png", "svg"))
    assert not (Path("glmbandits-plots") / "regret_vs_d.png").exists()
