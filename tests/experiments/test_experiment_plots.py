"""The store plots are written as non-empty PNG and SVG files that open as images."""

from __future__ import annotations

import numpy as np
import pytest

from glmbandits.experiments.config import parse_config
from glmbandits.experiments.plots import fit_loglog_slope, loglog_points, plot_store
from glmbandits.experiments.runner import run_experiment

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    config = parse_config({"name": "plots", "horizon": [40, 80], "seeds": 2,
                           "environment": {"n_features": [2, 3], "n_actions": 3},
                           "policies": [{"name": "ucb-glm"}, {"name": "random"}]})
    store = tmp_path_factory.mktemp("store") / "s.sqlite"
    return run_experiment(config, store, n_jobs=1, progress=False).runs()


@pytest.mark.slow
def test_all_plots_are_written_and_open_as_images(runs, tmp_path):
    import matplotlib.image

    paths = plot_store(runs, tmp_path)
    names = sorted(p.name for p in paths)
    assert names == sorted(f"{stem}.{ext}" for stem in ("regret_curves", "regret_loglog",
                                                         "regret_vs_d", "time_per_round")
                           for ext in ("png", "svg"))
    for path in paths:
        assert path.is_file() and path.stat().st_size > 1000
    image = matplotlib.image.imread(tmp_path / "regret_curves.png")
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    assert np.ptp(image[..., :3]) > 0  # not a blank canvas
    assert (tmp_path / "regret_loglog.svg").read_text().lstrip().startswith("<?xml")


def test_regret_vs_d_needs_several_dimensions(runs, tmp_path):
    one_d = [r for r in runs if r.environment["n_features"] == 2]
    paths = plot_store(one_d, tmp_path, formats=("png",))
    assert sorted(p.name for p in paths) == ["regret_curves.png", "regret_loglog.png",
                                             "time_per_round.png"]


def test_plot_store_rejects_empty_runs_and_unknown_formats(runs, tmp_path):
    with pytest.raises(ValueError, match="at least one successful run"):
        plot_store([], tmp_path)
    with pytest.raises(ValueError, match="formats must be among"):
        plot_store(runs, tmp_path, formats=("bmp",))


def test_loglog_slope_and_points(runs):
    assert fit_loglog_slope([10, 100, 1000], [3, 30, 300]) == pytest.approx(1.0)
    assert np.isnan(fit_loglog_slope([5, 5], [1, 2]))
    ucb_d2 = [r for r in runs if r.policy == "ucb-glm" and r.environment["n_features"] == 2]
    x, y = loglog_points(ucb_d2)  # two horizons: one point per T
    assert list(x) == [40, 80]
    expected = np.mean([r.final_regret for r in ucb_d2 if r.horizon == 80])
    assert y[1] == pytest.approx(expected)
