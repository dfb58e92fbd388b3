"""What the ``glmbandits reproduce`` figures show, and that the report's links resolve."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from glmbandits import theory
from glmbandits.experiments.plot_style import POLICY_COLOURS
from glmbandits.experiments.reproduce import _interpretation_text

DOCS = Path(__file__).resolve().parents[2] / "docs" / "reproduction"


def _coverage_rows():
    rows = []
    for family, base in (("logistic", 1.8e4), ("probit", 2e5)):
        for fraction in (1.0, 0.1, 0.01):
            rows.append({"family": family, "lambda_min": base * fraction, "coverage": 1.0,
                         "min_coverage": 1.0, "simultaneous": 1.0,
                         "ratio_quantile": 6.0 if family == "logistic" else 11.0})
    return rows


def test_coverage_points_at_one_are_all_visible(figure_checks):
    from glmbandits.experiments.reproduce_figures import coverage_figure

    figure = coverage_figure(_coverage_rows(), delta=0.05)
    figure_checks.assert_readable(figure)
    left, right = figure.axes
    markers = [line for line in left.lines if line.get_marker() not in (None, "None", "")]
    assert len(markers) == 6  # 2 families x (mean, worst direction, all at once)
    low, high = left.get_ylim()
    assert high > 1.0 + 0.005 and low < 0.85  # room above the points; the promise shown
    positions = [tuple(np.round(np.log10(line.get_xdata()), 6)) for line in markers]
    assert len(set(positions)) == len(positions)  # side by side, none hidden under another
    assert all(line.get_linestyle() in ("None", "", " ") for line in markers)  # no line over them
    labels = figure_checks.legend_labels(figure)
    assert any(label.startswith("promised 1 − 3δ") for label in labels)
    assert {"logistic: worst direction", "probit: all directions at once"} <= set(labels)
    for axis in (left, right):
        figure_checks.assert_limits_contain_data(axis)
    assert len(figure_checks.labelled_ticks(right, "y")) >= 3


def _theorem2(figure_checks):
    from glmbandits.families import get_family

    fam = get_family("logistic")
    row = {"d": 3, "K": 5, "theta_norm": 1.0, "tau": 6, "delta": 0.05,
           "kappa": fam.kappa(2.0), "sigma": fam.sub_gaussian_sigma(),
           "lipschitz": fam.lipschitz()}
    T = 300
    row["bound"] = theory.ucb_glm_regret_bound(3, T, 0.05, row["sigma"], row["kappa"],
                                               row["lipschitz"], row["tau"])
    env = {"family": "logistic", "n_features": 3, "n_actions": 5, "theta_norm": 1.0}
    runs = [figure_checks.stored_run(label, "ucb-glm", env, T, i, f)
            for label, factors in (("UCB-GLM (Theorem 2 α)", (0.8, 1.0, 1.2)),
                                   ("UCB-GLM (α=1)", (0.3, 0.4, 0.5)))
            for i, f in enumerate(factors)]
    return runs, row


def test_theorem2_draws_the_bound_it_tests(figure_checks):
    from glmbandits.experiments.reproduce_figures import theorem2_figure

    runs, row = _theorem2(figure_checks)
    figure = theorem2_figure(runs, [row])
    figure_checks.assert_readable(figure)
    axis = figure.axes[0]
    assert axis.get_yscale() == "log"
    bound = figure_checks.line(axis, "Theorem 2 bound")
    assert bound.get_ydata()[-1] == pytest.approx(row["bound"])
    assert np.all(np.asarray(bound.get_xdata()) > row["tau"])
    assert set(figure_checks.legend_labels(figure)) == {
        "UCB-GLM (Theorem 2 α)", "UCB-GLM (α=1)", "Theorem 2 bound", "$R_t = t$ (trivial)"}
    for label in ("UCB-GLM (Theorem 2 α)", "UCB-GLM (α=1)"):
        assert figure_checks.line(axis, label).get_color() == POLICY_COLOURS["ucb-glm"]
    figure_checks.assert_limits_contain_data(axis)
    assert len(figure_checks.labelled_ticks(axis, "y")) >= 3


def test_scaling_is_log_log_with_several_labelled_y_ticks(figure_checks):
    from glmbandits.experiments.reproduce_figures import scaling_figure

    env = {"family": "logistic", "n_actions": 5, "theta_norm": 3.0}
    # regret nearly flat in T (20 to 31): the old figure had a single y tick here
    runs_T = [figure_checks.stored_run(p, p, {**env, "n_features": 5}, T, i, f * level)
              for p, f in (("ucb-glm", 1.0), ("supcb-glm", 1.3))
              for T, level in ((250, 1.27), (1000, 0.66), (4000, 0.49)) for i in range(2)]
    runs_d = [figure_checks.stored_run(p, p, {**env, "n_features": d}, 2000, i, f * d)
              for p, f in (("ucb-glm", 0.1), ("supcb-glm", 0.3)) for d in (2, 4, 8)
              for i in range(2)]
    figure = scaling_figure(runs_T, runs_d)
    figure_checks.assert_readable(figure)
    by_T, by_d = figure.axes
    for axis, ticks in ((by_T, ["250", "1000", "4000"]), (by_d, ["2", "4", "8"])):
        assert axis.get_xscale() == axis.get_yscale() == "log"
        assert figure_checks.labelled_ticks(axis, "x") == ticks
        assert len(figure_checks.labelled_ticks(axis, "y")) >= 2
        figure_checks.assert_limits_contain_data(axis)
        assert sorted(line.get_color() for line in axis.lines) == \
            sorted([POLICY_COLOURS["ucb-glm"], POLICY_COLOURS["supcb-glm"]])
    labels = figure_checks.legend_labels(figure)
    assert len(labels) == 4 and all("slope" in label for label in labels)


def test_section51_shows_each_seed_and_the_mean(figure_checks):
    from glmbandits.experiments.reproduce_figures import section51_figure

    grid = np.linspace(30, 300, 10)
    ratios = np.vstack([4 - 1 / np.sqrt(grid) * k for k in (5, 8, 11)])
    figure = section51_figure({"grid": grid, "ratios": ratios, "problem": (3, 5, 1.0)})
    figure_checks.assert_readable(figure)
    axis = figure.axes[0]
    assert len(axis.lines) == 4
    np.testing.assert_allclose(figure_checks.line(axis, "mean over seeds").get_ydata(),
                               ratios.mean(axis=0))
    assert set(figure_checks.legend_labels(figure)) == {"each seed", "mean over seeds"}
    figure_checks.assert_limits_contain_data(axis)


def test_report_links_readme_only_when_it_is_there(tmp_path):
    assert "](" not in _interpretation_text(tmp_path)
    assert "docs/reproduction/README.md" in _interpretation_text(tmp_path)
    (tmp_path / "README.md").write_text("reading")
    assert "[README.md](README.md)" in _interpretation_text(tmp_path)


@pytest.mark.parametrize("name", ["REPORT.md", "README.md"])
def test_committed_reproduction_docs_link_only_to_files_that_exist(name):
    text = (DOCS / name).read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)", text)
    assert targets, f"{name} links to nothing"
    for target in targets:
        if "://" not in target:
            assert (DOCS / target).is_file(), f"{name} links to missing {target}"
