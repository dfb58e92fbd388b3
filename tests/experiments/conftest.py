"""Helpers for the figure tests: synthetic runs, and checks of what a Figure shows."""

from __future__ import annotations

import types

import numpy as np
import pytest


def _stored_run(label, policy, environment, horizon, replicate, factor, seconds=0.5):
    from glmbandits.experiments.store import StoredRun

    rounds = np.unique(np.linspace(1, horizon, 60).round().astype(int))
    curve = factor * (rounds if policy == "random" else np.sqrt(rounds))
    return StoredRun(experiment="figures", cell_key=f"{label}-{environment}-{horizon}",
                     replicate=replicate, label=label, policy=policy, params={},
                     environment=dict(environment), horizon=horizon, seed={}, status="ok",
                     final_regret=float(curve[-1]), seconds=seconds * horizon / 1000,
                     rounds=rounds, curve=curve)


def _legend_labels(figure):
    legends = list(figure.legends) + [a.get_legend() for a in figure.axes if a.get_legend()]
    return [text.get_text() for legend in legends for text in legend.get_texts()]


def _inside(box, outer, tol=1.0):
    return (box.x0 >= outer.x0 - tol and box.x1 <= outer.x1 + tol
            and box.y0 >= outer.y0 - tol and box.y1 <= outer.y1 + tol)


def _assert_readable(figure):
    """Axes labelled; no title, label or legend cut off by the figure's edge; legends
    outside every panel's data area."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    texts = [t for t in (getattr(figure, "_suptitle", None),) if t is not None]
    axes = [a for a in figure.axes if a.get_visible()]
    assert axes, "the figure has no visible axes"
    for axis in axes:
        assert axis.get_xlabel().strip(), f"x axis of {axis.get_title()!r} has no label"
        assert axis.get_ylabel().strip(), f"y axis of {axis.get_title()!r} has no label"
        texts += [axis.title, axis.xaxis.label, axis.yaxis.label]
    legends = list(figure.legends) + [a.get_legend() for a in axes if a.get_legend()]
    for legend in legends:
        texts += list(legend.get_texts())
        for axis in axes:
            assert not legend.get_window_extent(renderer).overlaps(axis.bbox), \
                "a legend sits on a panel's data"
    for text in texts:
        if text.get_text().strip():
            assert _inside(text.get_window_extent(renderer), figure.bbox), \
                f"{text.get_text()!r} is cut off"


def _assert_limits_contain_data(axis):
    """Every drawn point of every line lies inside the axis limits (points a log
    axis cannot show, at or below 0, excepted)."""
    x0, x1 = sorted(axis.get_xlim())
    y0, y1 = sorted(axis.get_ylim())
    for line in axis.lines:
        x = np.asarray(line.get_xdata(), dtype=float)
        y = np.asarray(line.get_ydata(), dtype=float)
        keep = np.isfinite(x) & np.isfinite(y)
        if axis.get_yscale() == "log":
            keep &= y > 0
        if line.get_transform() == axis.transData:
            assert np.all((x[keep] >= x0 * (1 - 1e-9)) & (x[keep] <= x1 * (1 + 1e-9))), \
                f"{line.get_label()!r} leaves the x range"
        assert np.all((y[keep] >= y0 - 1e-9 * abs(y0)) & (y[keep] <= y1 + 1e-9 * abs(y1))), \
            f"{line.get_label()!r} leaves the y range {y0, y1}"


def _line(axis, label):
    lines = [line for line in axis.lines if line.get_label() == label]
    assert lines, f"no line {label!r} in {[l.get_label() for l in axis.lines]}"
    return lines[0]


def _labelled_ticks(axis, which):
    lo, hi = sorted(axis.get_ylim() if which == "y" else axis.get_xlim())
    part = axis.yaxis if which == "y" else axis.xaxis
    return [t.get_text() for t, v in zip(part.get_ticklabels(), part.get_ticklocs())
            if t.get_text() and lo <= v <= hi]


@pytest.fixture
def figure_checks():
    """``stored_run``, ``legend_labels``, ``assert_readable``, ``assert_limits_contain_data``,
    ``line`` and ``labelled_ticks`` (figures are closed at the end of the test)."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    yield types.SimpleNamespace(stored_run=_stored_run, legend_labels=_legend_labels,
                                assert_readable=_assert_readable,
                                assert_limits_contain_data=_assert_limits_contain_data,
                                line=_line, labelled_ticks=_labelled_ticks)
    plt.close("all")
