"""The shared look of every glmbandits figure: colours, layout, legends, log ticks, bands.

Every figure (``glmbandits run``, ``glmbandits plot``, ``glmbandits reproduce``) takes
its colours, legend placement, log-axis ticks and confidence bands from here, so one
algorithm has the same colour in every plot. matplotlib is imported inside the
functions that need it, so this module imports without it.

Examples
--------
>>> policy_colour("ucb-glm") == POLICY_COLOURS["ucb-glm"]
True
>>> policy_colour("my-custom-policy") == policy_colour("my-custom-policy")
True
>>> nice_log_ticks(18.0, 40.0)
[20.0, 30.0]
>>> nice_log_ticks(3.0, 300.0, minimum=3)
[5.0, 10.0, 20.0, 50.0, 100.0, 200.0]
>>> nice_log_ticks(0.3, 1e5, minimum=3)
[1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0]
"""

from __future__ import annotations

import math
import os
import textwrap
import zlib
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

__all__ = ["POLICY_COLOURS", "BASELINES", "policy_colour", "distinct_colours", "line_styles", "pyplot",
           "new_figure", "wrapped", "legend_outside", "nice_log_ticks", "label_log_axis",
           "mean_band", "draw_mean_band", "save_figure"]

#: One colour per registered policy name, used by every figure (``random`` is grey:
#: it is a baseline, not a competitor).
POLICY_COLOURS: dict[str, str] = {
    "ucb-glm": "#1f77b4", "supcb-glm": "#ff7f0e", "linucb": "#2ca02c", "random": "#7f7f7f",
    "glm-ucb": "#d62728", "glm-tsl": "#9467bd", "laplace-ts": "#8c564b", "gloc": "#e377c2",
    "ecolog": "#bcbd22", "rs-glincb": "#17becf", "epsilon-greedy": "#393b79",
    "ofuglb": "#843c39", "d-glucb": "#00a087", "sw-glucb": "#e6550d", "d-linucb": "#8c6d31",
    "domd-glb": "#a55194",
}
#: Colours for names outside :data:`POLICY_COLOURS` (picked by a stable hash of the name).
_OTHER_COLOURS = ("#7b4173", "#8c6d31", "#637939", "#3182bd", "#e6550d", "#31a354",
                  "#756bb1", "#636363")
#: Policies that are reference points, left out of linear regret curves by default.
BASELINES: tuple[str, ...] = ("random",)
_DASHES = ("-", "--", "-.", ":")
_DPI = 120


def policy_colour(name: str) -> str:
    """The colour of a policy (or any named series), the same in every figure."""
    if name in POLICY_COLOURS:
        return POLICY_COLOURS[name]
    return _OTHER_COLOURS[zlib.crc32(name.encode("utf-8")) % len(_OTHER_COLOURS)]


def distinct_colours(names: Iterable[str]) -> dict[str, str]:
    """A colour per name: a policy's own colour, other names (families, say) take
    the unused extra colours in order, so two of them never share one."""
    out: dict[str, str] = {}
    extra = iter(_OTHER_COLOURS * 4)
    for name in dict.fromkeys(names):
        out[name] = POLICY_COLOURS.get(name) or next(extra)
    return out


def line_styles(series: Iterable[tuple[str, str]]) -> dict[str, dict[str, str]]:
    """``{label: {"color", "linestyle"}}`` for (label, policy) pairs.

    The colour follows the policy; labels that share a policy (two settings of
    UCB-GLM, say) get different dash patterns.
    """
    styles: dict[str, dict[str, str]] = {}
    seen: dict[str, int] = {}
    for label, policy in series:
        if label in styles:
            continue
        k = seen.get(policy, 0)
        seen[policy] = k + 1
        styles[label] = {"color": policy_colour(policy), "linestyle": _DASHES[k % len(_DASHES)]}
    return styles


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def new_figure(rows: int, columns: int, panel: tuple[float, float] = (4.6, 3.4),
               legend_width: float = 2.2) -> tuple[Any, np.ndarray]:
    """A constrained-layout figure of ``rows × columns`` panels (axes always 2-D),
    with room on the right for a legend outside the data."""
    plt = pyplot()
    figure, axes = plt.subplots(rows, columns, squeeze=False, layout="constrained",
                                figsize=(panel[0] * columns + legend_width, panel[1] * rows))
    return figure, axes


def wrapped(text: str, width: int) -> str:
    """``text`` broken into lines of at most ``width`` characters (titles never cut off)."""
    return "\n".join(textwrap.wrap(text, width=max(width, 10))) or text


def legend_outside(figure: Any, fontsize: float = 8) -> Any:
    """One legend for the whole figure, to the right of the panels, without duplicates."""
    handles: dict[str, Any] = {}
    for axis in figure.axes:
        for handle, label in zip(*axis.get_legend_handles_labels()):
            if not label.startswith("_"):
                handles.setdefault(label, handle)
    if not handles:
        return None
    return figure.legend(list(handles.values()), list(handles), loc="outside right upper",
                         fontsize=fontsize, frameon=False)


def nice_log_ticks(low: float, high: float, minimum: int = 2) -> list[float]:
    """Round tick values inside [low, high]: the sparsest of decades, 1-2-5, 1-2-3-5-7
    and 1–9 per decade that gives at least ``minimum`` ticks; else the two ends."""
    if not (0 < low < high and math.isfinite(high)):
        return [low] if low > 0 and math.isfinite(low) else []
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    for subs in ((1,), (1, 2, 5), (1, 2, 3, 5, 7), tuple(range(1, 10))):
        ticks = [float(m * 10.0 ** e) for e in range(first, last + 1) for m in subs
                 if low <= m * 10.0 ** e <= high]
        if len(ticks) >= minimum:
            return ticks
    return [float(low), float(high)]


def _tick_text(value: float) -> str:
    if 1 <= value < 1e6 and value == round(value):
        return f"{value:.0f}"
    return f"{value:.3g}"


def label_log_axis(axis: Any, which: str, values: Sequence[float] | None = None) -> None:
    """Labelled ticks on a log axis: at ``values`` (the data's x, when few), else round
    numbers inside the current limits; minor ticks off. Call after drawing the data."""
    from matplotlib.ticker import NullLocator

    part = axis.xaxis if which == "x" else axis.yaxis
    low, high = sorted(axis.get_xlim() if which == "x" else axis.get_ylim())
    if values is not None and 2 <= len(set(values)) <= 8:
        ticks = sorted({float(v) for v in values})
    else:
        ticks = nice_log_ticks(low, high, minimum=3)
    part.set_ticks(ticks, [_tick_text(t) for t in ticks])
    part.set_minor_locator(NullLocator())
    (axis.set_xlim if which == "x" else axis.set_ylim)(low, high)


def mean_band(curves: np.ndarray, floor: float | None = 0.0
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over the rows of ``curves`` and its 95% normal band (mean ± 1.96 s/√n),
    the lower edge clipped at ``floor`` (regret is never negative)."""
    curves = np.atleast_2d(np.asarray(curves, dtype=float))
    mean = curves.mean(axis=0)
    if curves.shape[0] < 2:
        half = np.zeros_like(mean)
    else:
        half = 1.96 * curves.std(axis=0, ddof=1) / np.sqrt(curves.shape[0])
    lower = mean - half if floor is None else np.maximum(mean - half, floor)
    return mean, lower, mean + half


def draw_mean_band(axis: Any, x: np.ndarray, curves: np.ndarray, *, label: str,
                   color: str, linestyle: str = "-") -> Any:
    """The mean of ``curves`` as a line and its 95% band (clipped at 0) as a shade."""
    mean, lower, upper = mean_band(curves)
    (line,) = axis.plot(x, mean, color=color, linestyle=linestyle, label=label, lw=1.6)
    if np.any(upper > lower):
        axis.fill_between(x, lower, upper, color=color, alpha=0.15, lw=0)
    return line


def save_figure(figure: Any, paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Write ``figure`` to every path (the format from the suffix), then close it."""
    written = []
    try:
        for path in map(Path, paths):
            path.parent.mkdir(parents=True, exist_ok=True)
            figure.savefig(path, dpi=_DPI)
            written.append(path)
    finally:
        pyplot().close(figure)
    return written
