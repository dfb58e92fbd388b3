"""Plots of experiment results (matplotlib, an optional extra: ``pip install glmbandits[plot]``).

:func:`plot_regret_curves` draws the runs of one problem (``glmbandits run`` with flags);
:func:`plot_store` draws the runs of one experiment of a results store: regret
curves, log-log regret against T with the fitted slope, regret against d at fixed T,
time per round, each as PNG and SVG. :func:`plot_experiments` (``glmbandits plot``)
draws each experiment of a store apart, in a folder of its own: unrelated experiments
are never mixed in one figure. Each plot has a ``*_figure`` function that builds
the matplotlib Figure (what the tests inspect) and a ``plot_*`` function that saves it.

Regret curves are drawn as two panels per problem: the cumulative regret R_t on a
linear axis and R_t/√t (flat for a √t rate), each with its 95% band clipped at 0.
Baselines (``random``) are left out of these panels by default, with their final
regret named in the panel title, because their linear regret flattens every other
curve; ``show_baselines=True`` draws them. Colours follow the policy name in every
figure (:mod:`.plot_style`). matplotlib is imported inside the functions, so this
module imports without it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Sequence, TypeVar

import numpy as np

from .plot_style import (BASELINES, draw_mean_band, label_log_axis, legend_outside,
                         line_styles, new_figure, save_figure, wrapped)

__all__ = ["CurveSeries", "regret_curves_figure", "plot_regret_curves", "plot_store",
           "plot_experiments", "experiment_folder",
           "store_curves_figure", "plot_store_curves", "loglog_figure", "plot_loglog",
           "regret_vs_d_figure", "plot_regret_vs_d", "time_per_round_figure",
           "plot_time_per_round", "fit_loglog_slope", "loglog_points", "FIGURE_FORMATS"]

#: Image formats written by :func:`plot_store` by default.
FIGURE_FORMATS = ("png", "svg")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def fit_loglog_slope(x: Any, y: Any) -> float:
    """Least-squares slope of log y against log x over the points with x, y > 0.

    Examples
    --------
    >>> round(fit_loglog_slope([1, 4, 16], [2, 4, 8]), 6)
    0.5
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
    if np.count_nonzero(keep) < 2 or np.ptp(np.log(x[keep])) == 0:
        return float("nan")
    return float(np.polyfit(np.log(x[keep]), np.log(y[keep]), 1)[0])


def _slope_text(x: Any, y: Any) -> str:
    """``slope 0.52``, or ``slope n/a`` when no slope can be fitted (one point, one x)."""
    slope = fit_loglog_slope(x, y)
    return "slope n/a" if np.isnan(slope) else f"slope {slope:.2f}"


_Key = TypeVar("_Key", bound=Hashable)


def _group(runs: Iterable[Any], key: Callable[[Any], _Key]) -> dict[_Key, list[Any]]:
    groups: dict[_Key, list[Any]] = {}
    for run in runs:
        groups.setdefault(key(run), []).append(run)
    return groups


def _env_key(run: Any) -> str:
    return json.dumps(run.environment, sort_keys=True)


def _env_texts(keys: Sequence[str]) -> tuple[str, list[str]]:
    """The settings shared by all environments, and what differs in each one."""
    envs = [json.loads(key) for key in keys]
    common = {k: v for k, v in envs[0].items() if all(e.get(k, object()) == v for e in envs)}
    text = lambda env: ", ".join(f"{k}={v}" for k, v in sorted(env.items()))  # noqa: E731
    return text(common), [text({k: v for k, v in e.items() if k not in common}) for e in envs]


# -- regret curves ---------------------------------------------------------------------
@dataclass(frozen=True)
class CurveSeries:
    """The regret curves of one label: ``curves`` has one row per run over ``rounds``."""

    label: str
    policy: str
    rounds: np.ndarray
    curves: np.ndarray


def _draw_regret_row(axes: Sequence[Any], series: Sequence[CurveSeries],
                     show_baselines: bool, regret: str = "regret") -> str:
    """R_t and R_t/√t panels; returns the note naming the baselines left out."""
    drawn = [s for s in series if show_baselines or s.policy not in BASELINES] or list(series)
    styles = line_styles((s.label, s.policy) for s in series)
    for s in drawn:
        draw_mean_band(axes[0], s.rounds, s.curves, label=s.label, **styles[s.label])
        draw_mean_band(axes[1], s.rounds, s.curves / np.sqrt(s.rounds), label=s.label,
                       **styles[s.label])
    axes[0].set_ylabel(f"cumulative {regret} $R_t$")
    axes[1].set_ylabel("$R_t/\\sqrt{t}$  (flat = $\\sqrt{t}$ rate)")
    for axis in axes[:2]:
        axis.set_xlabel("round t")
        axis.set_xlim(left=0)
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
    left_out = [s for s in series if s not in drawn]
    return "; ".join(f"{s.label} not drawn: $R_T$={s.curves[:, -1].mean():.3g}"
                     for s in left_out)


def _regret_name(runs: Iterable[Any]) -> str:
    """``dynamic regret`` when the runs' environment drifts (regret against each round's θ*),
    else ``regret``."""
    return "dynamic regret" if any(run.dynamic_regret for run in runs) else "regret"


def _drift_text(env: dict[str, Any]) -> str:
    keys = ("drift", "breakpoints", "jump", "path", "path_length")
    return "".join(f", {key}={env[key]}" for key in keys if key in env)


def _runs_text(series: Sequence[CurveSeries]) -> str:
    counts = sorted({s.curves.shape[0] for s in series})
    n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    return f"mean over {n} runs, 95% band"


def regret_curves_figure(runs: Sequence[Any], show_baselines: bool = False) -> Any:
    """The Figure of :func:`plot_regret_curves` (not saved): ``runs`` are the
    :class:`~glmbandits.experiments.store.StoredRun` rows of one problem (failed ones are
    ignored)."""
    ok = [run for run in runs if run.ok]
    series = [CurveSeries(label, group[0].policy, np.asarray(group[0].rounds, dtype=float),
                          np.vstack([run.curve for run in group]))
              for label, group in _group(ok, lambda run: run.label).items()]
    figure, axes = new_figure(1, 2)
    note = _draw_regret_row(axes[0], series, show_baselines, _regret_name(ok))
    env, horizon = ok[0].environment, ok[0].horizon
    figure.suptitle(wrapped(f"{env.get('family', 'logistic')}, d={env['n_features']}, "
                            f"K={env.get('n_actions', 20)}, ‖θ*‖={env.get('theta_norm', 3.0):g}"
                            f"{_drift_text(env)}, T={horizon}; {_runs_text(series)}", 90),
                    fontsize=10)
    if note:
        axes[0, 0].set_title(wrapped(note, 50), fontsize=8)
    legend_outside(figure)
    return figure


def plot_regret_curves(runs: Sequence[Any], path: str | os.PathLike,
                       show_baselines: bool = False) -> Path:
    """Mean cumulative regret per policy (and R_t/√t) with a 95% band over replicates.

    ``random`` is left out unless ``show_baselines`` (its final regret is in the title).
    """
    return save_figure(regret_curves_figure(runs, show_baselines), [path])[0]


def store_curves_figure(runs: Sequence[Any], show_baselines: bool = False) -> Any:
    """The Figure of :func:`plot_store_curves`: one row (R_t, R_t/√t) per environment."""
    ok = [run for run in runs if run.ok]
    envs = _group(ok, _env_key)
    common, varying = _env_texts(list(envs))
    figure, axes = new_figure(len(envs), 2)
    all_series = []
    for row, members, env_text in zip(axes, envs.values(), varying):
        horizon = max(run.horizon for run in members)
        series = [CurveSeries(label, group[0].policy, np.asarray(group[0].rounds, dtype=float),
                              np.vstack([run.curve for run in group]))
                  for label, group in _group([r for r in members if r.horizon == horizon],
                                             lambda r: r.label).items()]
        all_series += series
        note = _draw_regret_row(row, series, show_baselines, _regret_name(members))
        title = "; ".join(t for t in (env_text, f"T={horizon}", note) if t)
        row[0].set_title(wrapped(title, 55), fontsize=8)
    figure.suptitle(wrapped(f"{common}; {_runs_text(all_series)}", 100), fontsize=10)
    legend_outside(figure)
    return figure


def _save_store(figure: Any, out: str | os.PathLike, stem: str,
                formats: Sequence[str]) -> list[Path]:
    return save_figure(figure, [Path(out) / f"{stem}.{fmt}" for fmt in formats])


def plot_store_curves(runs: Sequence[Any], out: str | os.PathLike,
                      formats: Sequence[str] = FIGURE_FORMATS,
                      show_baselines: bool = False) -> list[Path]:
    """Mean cumulative regret (and R_t/√t) with a 95% band, one row per environment
    (largest T).

    ``runs`` are :class:`~glmbandits.experiments.store.StoredRun` rows (failed
    ones are ignored). Writes ``regret_curves.{png,svg}`` into ``out``.
    """
    return _save_store(store_curves_figure(runs, show_baselines), out, "regret_curves",
                       formats)


# -- log-log and scaling -------------------------------------------------------------------
def loglog_points(group: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(T, mean R_T) over horizons when a group has several, else the mean curve's tail.

    The tail is the part of the mean curve with t >= T/10, where the initial
    random rounds no longer dominate.
    """
    horizons = sorted({run.horizon for run in group})
    if len(horizons) > 1:
        means = [np.mean([run.final_regret for run in group if run.horizon == T])
                 for T in horizons]
        return np.asarray(horizons, dtype=float), np.asarray(means)
    mean = np.vstack([run.curve for run in group]).mean(axis=0)
    rounds = group[0].rounds.astype(float)
    keep = rounds >= rounds[-1] / 10.0
    return rounds[keep], mean[keep]


def _styled_groups(groups: dict[tuple[str, str], list[Any]],
                   env_of: Callable[[tuple[str, str]], str]
                   ) -> Iterable[tuple[tuple[str, str], list[Any], dict[str, str | None], str]]:
    """(key, runs, line style, name) per (label, environment) group: colour by policy,
    marker by environment, the environment named only when several are drawn."""
    envs = list(dict.fromkeys(env_of(key) for key in groups))
    styles = line_styles((key[0], group[0].policy) for key, group in groups.items())
    for key, group in groups.items():
        style: dict[str, str | None] = dict(
            styles[key[0]], marker=_MARKERS[envs.index(env_of(key)) % len(_MARKERS)])
        name = key[0] if len(envs) < 2 else f"{key[0]}, {env_of(key)}"
        yield key, group, style, name


def loglog_figure(runs: Sequence[Any]) -> Any:
    """The Figure of :func:`plot_loglog`."""
    ok = [run for run in runs if run.ok]
    groups = _group(ok, lambda r: (r.label, _env_key(r)))
    _, varying = _env_texts(list(dict.fromkeys(key[1] for key in groups)))
    env_names = dict(zip(dict.fromkeys(key[1] for key in groups), varying))
    figure, axes = new_figure(1, 1, panel=(5.6, 4.0), legend_width=3.6)
    axis = axes[0, 0]
    xs = []
    for key, group, style, name in _styled_groups(groups, lambda k: env_names[k[1]]):
        x, y = loglog_points(group)
        xs += list(x)
        if len(x) >= 20:
            style["marker"] = None
        axis.loglog(x, y, label=f"{name}: {_slope_text(x, y)}", **style)
    axis.set_xlabel("T (rounds)")
    axis.set_ylabel(f"cumulative {_regret_name(ok)} $R_T$")
    axis.set_title(f"{_regret_name(ok)} against T, log-log (slope 1/2 = $\\sqrt{{T}}$)",
                   fontsize=10)
    label_log_axis(axis, "x", xs if len(set(xs)) <= 8 else None)
    label_log_axis(axis, "y")
    legend_outside(figure)
    return figure


def plot_loglog(runs: Sequence[Any], out: str | os.PathLike,
                formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """log R_T against log T per policy and environment, the fitted slope in the legend."""
    return _save_store(loglog_figure(runs), out, "regret_loglog", formats)


def regret_vs_d_figure(runs: Sequence[Any]) -> Any | None:
    """The Figure of :func:`plot_regret_vs_d`, or None when d does not vary."""
    ok = [run for run in runs if run.ok]
    if len({run.environment["n_features"] for run in ok}) < 2:
        return None
    horizon = max(run.horizon for run in ok)
    ok = [run for run in ok if run.horizon == horizon]
    rest = lambda r: json.dumps({k: v for k, v in r.environment.items()  # noqa: E731
                                 if k != "n_features"}, sort_keys=True)
    groups = _group(ok, lambda r: (r.label, rest(r)))
    _, varying = _env_texts(list(dict.fromkeys(key[1] for key in groups)))
    env_names = dict(zip(dict.fromkeys(key[1] for key in groups), varying))
    figure, axes = new_figure(1, 1, panel=(5.6, 4.0), legend_width=3.2)
    axis = axes[0, 0]
    for key, group, style, name in _styled_groups(groups, lambda k: env_names[k[1]]):
        by_d = _group(group, lambda r: r.environment["n_features"])
        ds = np.array(sorted(by_d), dtype=float)
        finals = [np.array([r.final_regret for r in by_d[d]]) for d in sorted(by_d)]
        mean = np.array([f.mean() for f in finals])
        half = np.array([1.96 * f.std(ddof=1) / np.sqrt(len(f)) if len(f) > 1 else 0.0
                         for f in finals])
        low = np.minimum(half, mean * (1 - 1e-3))  # a log axis cannot show a band below 0
        axis.errorbar(ds, mean, yerr=[low, half], capsize=3,
                      label=f"{name}: {_slope_text(ds, mean)}", **style)
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("dimension d")
    axis.set_ylabel(f"{_regret_name(ok)} $R_T$ at T={horizon}")
    axis.set_title("regret against d, log-log (slope 1 = d, 1/2 = $\\sqrt{d}$)", fontsize=10)
    label_log_axis(axis, "x", sorted({run.environment["n_features"] for run in ok}))
    label_log_axis(axis, "y")
    legend_outside(figure)
    return figure


def plot_regret_vs_d(runs: Sequence[Any], out: str | os.PathLike,
                     formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """Final regret against d at the largest common T, mean ± 95% band, log-log slope.

    Returns no file when the runs hold a single ``n_features``.
    """
    figure = regret_vs_d_figure(runs)
    return [] if figure is None else _save_store(figure, out, "regret_vs_d", formats)


def time_per_round_figure(runs: Sequence[Any]) -> Any:
    """The Figure of :func:`plot_time_per_round`."""
    ok = [run for run in runs if run.ok]
    figure, axes = new_figure(1, 1, panel=(5.6, 4.0))
    axis = axes[0, 0]
    ds = sorted({run.environment["n_features"] for run in ok})
    labels = _group(ok, lambda r: r.label)
    styles = line_styles((label, group[0].policy) for label, group in labels.items())
    ms = lambda group: 1e3 * np.median([r.seconds_per_round for r in group])  # noqa: E731
    if len(ds) > 1:
        for label, group in labels.items():
            by_d = _group(group, lambda r: r.environment["n_features"])
            xs = sorted(by_d)
            axis.plot(xs, [ms(by_d[d]) for d in xs], marker="o", label=label, **styles[label])
        axis.set_xscale("log")
        axis.set_xlabel("dimension d")
        label_log_axis(axis, "x", ds)
        legend_outside(figure)
    else:
        names = list(labels)
        axis.bar(range(len(names)), [ms(labels[n]) for n in names],
                 color=[styles[n]["color"] for n in names])
        axis.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
        axis.set_xlabel("policy")
    axis.set_ylabel("ms per round (select + update)")
    axis.set_yscale("log")
    label_log_axis(axis, "y")
    axis.set_title("time per round (median over runs)", fontsize=10)
    return figure


def plot_time_per_round(runs: Sequence[Any], out: str | os.PathLike,
                        formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """Median milliseconds per round of each policy (against d when d varies)."""
    return _save_store(time_per_round_figure(runs), out, "time_per_round", formats)


def plot_store(runs: Sequence[Any], out: str | os.PathLike,
               formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """All the plots of one experiment: curves, log-log, regret against d (if d varies),
    time per round, written into ``out``.

    Runs of several experiments are refused (a ``ValueError`` naming them): unrelated
    problems would share one regret-against-d line; :func:`plot_experiments` draws
    each apart.
    """
    if not any(run.ok for run in runs):
        raise ValueError("plot_store: runs must hold at least one successful run, got none")
    experiments = list(dict.fromkeys(run.experiment for run in runs))
    if len(experiments) > 1:
        raise ValueError(f"plot_store: runs must come from one experiment, got "
                         f"{len(experiments)} ({', '.join(experiments)}); plot each apart "
                         "(plot_experiments, or glmbandits plot --experiment NAME)")
    for fmt in formats:
        if fmt not in ("png", "svg", "pdf"):
            raise ValueError(f"plot_store: formats must be among ['png', 'svg', 'pdf'], "
                             f"got {fmt!r}")
    paths = []
    for plot in (plot_store_curves, plot_loglog, plot_regret_vs_d, plot_time_per_round):
        paths += plot(runs, out, formats)
    return paths


def experiment_folder(experiment: str) -> str:
    """The folder name of an experiment's figures: its name, with every character other
    than letters, digits, ``.``, ``_`` and ``-`` replaced by ``_``.

    Examples
    --------
    >>> experiment_folder("run-logistic-d10-K20-norm3-T3000")
    'run-logistic-d10-K20-norm3-T3000'
    >>> experiment_folder("sweep/2024 v2")
    'sweep_2024_v2'
    """
    name = re.sub(r"[^A-Za-z0-9._-]", "_", experiment).strip(".")
    return name or "experiment"


def plot_experiments(runs: Sequence[Any], out: str | os.PathLike,
                     formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """The plots of every experiment among ``runs``, each apart: ``out/EXPERIMENT/*.png``.

    Experiments without a successful run are skipped; it is an error when none has one.
    """
    groups = _group(runs, lambda run: run.experiment)
    drawn = {name: members for name, members in groups.items()
             if any(run.ok for run in members)}
    if not drawn:
        raise ValueError("plot_experiments: runs must hold at least one successful run, "
                         "got none")
    folders = _group(drawn, experiment_folder)
    clashes = [names for names in folders.values() if len(names) > 1]
    if clashes:
        raise ValueError(f"plot_experiments: experiments {clashes[0]} would share the folder "
                         f"{experiment_folder(clashes[0][0])!r}; plot them one at a time "
                         "(--experiment NAME, --out FOLDER)")
    paths = []
    for name, members in drawn.items():
        paths += plot_store(members, Path(out) / experiment_folder(name), formats)
    return paths
