"""What the regret-curve and store figures show: labelled axes, every series, limits
that contain the data, bands that stay above 0, one colour per policy, nothing cut off."""

from __future__ import annotations

import numpy as np
import pytest

from glmbandits.experiments.plot_style import (POLICY_COLOURS, line_styles, nice_log_ticks,
                                               policy_colour)
from glmbandits.experiments.store import StoredRun
from glmbandits.policies.registry import policy_names

ENV_2 = {"family": "logistic", "n_actions": 5, "n_features": 2, "theta_norm": 3.0,
         "contexts": "unit-ball", "noise": "bernoulli"}
ENV_4 = {**ENV_2, "n_features": 4}
#: factors of √t per replicate: the ucb-glm spread pulls its raw band below 0
FACTORS = {"ucb-glm": (0.0, 0.1, 3.0), "linucb": (1.0, 1.4, 1.8), "random": (0.60, 0.61, 0.62)}


def _result(policies=("ucb-glm", "linucb", "random"), horizon=400):
    """The stored runs of one problem, as ``glmbandits run`` with flags makes them."""
    rounds = np.unique(np.linspace(1, horizon, 80).round().astype(int))
    environment = {"family": "logistic", "n_features": 10, "n_actions": 20, "theta_norm": 3.0}
    runs = []
    for name in policies:
        for i, f in enumerate(FACTORS[name]):
            curve = f * (rounds if name == "random" else np.sqrt(rounds))
            runs.append(StoredRun("run", name, i, name, name, {}, environment, horizon, {},
                                  "ok", float(curve[-1]), 0.1, rounds, curve))
    return runs


def _bands(axis):
    from matplotlib.collections import PolyCollection

    return [c for c in axis.collections if isinstance(c, PolyCollection)]


def test_every_registered_policy_has_its_own_colour():
    assert set(policy_names()) <= set(POLICY_COLOURS)
    assert len(set(POLICY_COLOURS.values())) == len(POLICY_COLOURS)
    assert policy_colour("not-a-policy") == policy_colour("not-a-policy")
    styles = line_styles([("a", "ucb-glm"), ("b", "ucb-glm"), ("c", "linucb")])
    assert styles["a"]["color"] == styles["b"]["color"] == POLICY_COLOURS["ucb-glm"]
    assert styles["a"]["linestyle"] != styles["b"]["linestyle"]


def test_log_ticks_are_several_even_on_a_narrow_range():
    assert len(nice_log_ticks(20.0, 31.0, minimum=2)) >= 2
    assert nice_log_ticks(3.0, 300.0, minimum=3) == [5.0, 10.0, 20.0, 50.0, 100.0, 200.0]
    assert nice_log_ticks(0.3, 2e5, minimum=3) == [1.0, 10.0, 100.0, 1e3, 1e4, 1e5]  # sparse


def test_run_curves_leave_random_out_and_keep_bands_above_zero(figure_checks):
    from glmbandits.experiments.plots import regret_curves_figure

    runs = _result()
    figure = regret_curves_figure(runs)
    figure_checks.assert_readable(figure)
    assert sorted(figure_checks.legend_labels(figure)) == ["linucb", "ucb-glm"]
    left, right = figure.axes[:2]
    assert "random not drawn" in left.get_title()
    random_final = np.mean([r.final_regret for r in runs if r.policy == "random"])
    assert left.get_ylim()[1] < random_final / 2  # the learners fill the panel
    for axis in (left, right):
        figure_checks.assert_limits_contain_data(axis)
        assert axis.get_ylim()[0] == 0
        assert all(band.get_paths()[0].vertices[:, 1].min() >= 0 for band in _bands(axis))
    ucb = figure_checks.line(left, "ucb-glm")
    assert ucb.get_color() == POLICY_COLOURS["ucb-glm"]
    rounds = np.asarray(ucb.get_xdata())
    np.testing.assert_allclose(figure_checks.line(right, "ucb-glm").get_ydata(),
                               np.asarray(ucb.get_ydata()) / np.sqrt(rounds))
    curves = np.vstack([r.curve for r in runs if r.policy == "ucb-glm"])
    raw_lower = curves.mean(axis=0) - 1.96 * curves.std(axis=0, ddof=1) / np.sqrt(3)
    assert raw_lower.min() < 0  # the data would have pushed an unclipped band below 0


def test_run_curves_draw_baselines_on_request_or_when_alone(figure_checks):
    from glmbandits.experiments.plots import regret_curves_figure

    figure = regret_curves_figure(_result(), show_baselines=True)
    assert "random" in figure_checks.legend_labels(figure)
    figure_checks.assert_limits_contain_data(figure.axes[0])
    assert figure_checks.line(figure.axes[0], "random").get_color() == POLICY_COLOURS["random"]
    alone = regret_curves_figure(_result(policies=("random",)))
    assert figure_checks.legend_labels(alone) == ["random"]


def test_plot_regret_curves_writes_the_png(tmp_path, figure_checks):
    import matplotlib.image

    from glmbandits.experiments.plots import plot_regret_curves

    path = plot_regret_curves(_result(), tmp_path / "sub" / "regret.png")
    image = matplotlib.image.imread(path)
    assert image.shape[0] > 100 and np.ptp(image[..., :3]) > 0


@pytest.fixture
def store_runs(figure_checks):
    runs = []
    for env in (ENV_2, ENV_4):
        for horizon in (100, 200, 400):
            for policy, factors in FACTORS.items():
                scale = env["n_features"] / 2
                runs += [figure_checks.stored_run(policy, policy, env, horizon, i, f * scale)
                         for i, f in enumerate(factors)]
    return runs


def test_store_curves_one_row_per_environment_titles_not_cut_off(store_runs, figure_checks):
    from glmbandits.experiments.plots import store_curves_figure

    figure = store_curves_figure(store_runs)
    figure_checks.assert_readable(figure)
    assert len(figure.axes) == 4
    suptitle = figure.get_suptitle()
    assert "contexts=unit-ball" in suptitle and "n_features" not in suptitle
    titles = [figure.axes[0].get_title(), figure.axes[2].get_title()]
    assert "n_features=2" in titles[0] and "n_features=4" in titles[1]
    assert all("T=400" in t and "random not drawn" in t for t in titles)
    assert sorted(figure_checks.legend_labels(figure)) == ["linucb", "ucb-glm"]
    for axis in figure.axes:
        figure_checks.assert_limits_contain_data(axis)
        assert {line.get_label() for line in axis.lines} == {"ucb-glm", "linucb"}
        assert all(band.get_paths()[0].vertices[:, 1].min() >= 0 for band in _bands(axis))
        assert figure_checks.line(axis, "linucb").get_color() == POLICY_COLOURS["linucb"]


def test_loglog_shows_every_group_with_labelled_ticks(store_runs, figure_checks):
    from glmbandits.experiments.plots import loglog_figure

    figure = loglog_figure(store_runs)
    figure_checks.assert_readable(figure)
    axis = figure.axes[0]
    assert axis.get_xscale() == axis.get_yscale() == "log"
    labels = figure_checks.legend_labels(figure)
    assert len(labels) == 6 and all("slope" in label for label in labels)
    assert any(label.startswith("random, n_features=4") for label in labels)
    assert figure_checks.labelled_ticks(axis, "x") == ["100", "200", "400"]
    assert len(figure_checks.labelled_ticks(axis, "y")) >= 3
    figure_checks.assert_limits_contain_data(axis)


def test_regret_vs_d_and_time_per_round(store_runs, figure_checks):
    from glmbandits.experiments.plots import regret_vs_d_figure, time_per_round_figure

    assert regret_vs_d_figure([r for r in store_runs if r.environment["n_features"] == 2]) \
        is None
    figure = regret_vs_d_figure(store_runs)
    figure_checks.assert_readable(figure)
    axis = figure.axes[0]
    assert figure_checks.labelled_ticks(axis, "x") == ["2", "4"]
    assert len(figure_checks.labelled_ticks(axis, "y")) >= 2
    assert sorted(label.split(":")[0] for label in figure_checks.legend_labels(figure)) == \
        ["linucb", "random", "ucb-glm"]
    figure_checks.assert_limits_contain_data(axis)

    figure = time_per_round_figure(store_runs)
    figure_checks.assert_readable(figure)
    assert sorted(figure_checks.legend_labels(figure)) == ["linucb", "random", "ucb-glm"]
    figure_checks.assert_limits_contain_data(figure.axes[0])
    bars = time_per_round_figure([r for r in store_runs if r.environment["n_features"] == 2])
    figure_checks.assert_readable(bars)
    patches = bars.axes[0].patches
    assert [p.get_facecolor()[:3] for p in patches] == \
        [tuple(int(POLICY_COLOURS[n][i:i + 2], 16) / 255 for i in (1, 3, 5)) for n in FACTORS]
