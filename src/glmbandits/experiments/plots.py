"""Plots of experiment results (matplotlib, an optional extra: ``pip install glmbandits[plot]``).

:func:`plot_regret_curves` draws a :class:`ComparisonResult`; :func:`plot_store`
draws the runs of a results store (regret curves with a confidence band,
log-log regret against T with the fitted slope, regret against d at fixed T,
time per round), each as PNG and SVG. matplotlib is imported inside the
functions, so this module imports without it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Sequence

import numpy as np

from .compare import ComparisonResult

__all__ = ["plot_regret_curves", "plot_store", "plot_store_curves", "plot_loglog",
           "plot_regret_vs_d", "plot_time_per_round", "fit_loglog_slope", "loglog_points",
           "FIGURE_FORMATS"]


def plot_regret_curves(result: ComparisonResult, path: str | os.PathLike) -> Path:
    """Mean cumulative regret per policy with a 95% normal band over replicates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.4, 4.2))
    for name in result.policies():
        runs = [run for run in result.runs if run.policy == name]
        curves = np.vstack([run.cumulative_regret for run in runs])
        mean = curves.mean(axis=0)
        half = 1.96 * curves.std(axis=0, ddof=1) / np.sqrt(len(runs)) if len(runs) > 1 else 0 * mean
        axis.plot(runs[0].rounds, mean, label=name)
        axis.fill_between(runs[0].rounds, mean - half, mean + half, alpha=0.2)
    p = result.problem
    axis.set_xlabel("round t")
    axis.set_ylabel("cumulative regret $R_t$")
    axis.set_title(f"{p.family}, d={p.n_features}, K={p.n_actions}, ‖θ*‖={p.theta_norm:g}")
    axis.legend()
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


# -- plots of a results store ------------------------------------------------------
#: Image formats written by :func:`plot_store` by default.
FIGURE_FORMATS = ("png", "svg")


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


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(figure: Any, out: Path, stem: str, formats: Sequence[str]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    figure.tight_layout()
    for fmt in formats:
        path = out / f"{stem}.{fmt}"
        figure.savefig(path, dpi=120)
        paths.append(path)
    _pyplot().close(figure)
    return paths


def _env_text(environment: dict[str, Any], skip: Sequence[str] = ()) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(environment.items()) if k not in skip)


def _group(runs: Iterable[Any], key: Callable[[Any], Hashable]) -> dict[Hashable, list[Any]]:
    groups: dict[Hashable, list[Any]] = {}
    for run in runs:
        groups.setdefault(key(run), []).append(run)
    return groups


def _mean_band(curves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = curves.mean(axis=0)
    if curves.shape[0] < 2:
        return mean, np.zeros_like(mean)
    return mean, 1.96 * curves.std(axis=0, ddof=1) / np.sqrt(curves.shape[0])


def plot_store_curves(runs: Sequence[Any], out: str | os.PathLike,
                      formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """Mean cumulative regret with a 95% band, one panel per environment (largest T).

    ``runs`` are :class:`~glmbandits.experiments.store.StoredRun` rows (failed
    ones are ignored). Writes ``regret_curves.{png,svg}`` into ``out``.
    """
    plt = _pyplot()
    ok = [run for run in runs if run.ok]
    envs = _group(ok, lambda r: json.dumps(r.environment, sort_keys=True))
    n = len(envs)
    columns = min(3, n)
    rows = -(-n // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 3.8 * rows),
                                squeeze=False)
    for axis, (env_key, members) in zip(axes.flat, envs.items()):
        horizon = max(run.horizon for run in members)
        for label, group in _group([r for r in members if r.horizon == horizon],
                                   lambda r: r.label).items():
            mean, half = _mean_band(np.vstack([run.curve for run in group]))
            axis.plot(group[0].rounds, mean, label=f"{label} (n={len(group)})")
            axis.fill_between(group[0].rounds, mean - half, mean + half, alpha=0.2)
        axis.set_title(_env_text(json.loads(env_key)), fontsize=8)
        axis.set_xlabel("round t")
        axis.set_ylabel("cumulative regret $R_t$")
        axis.legend(fontsize=7)
    for axis in list(axes.flat)[n:]:
        axis.set_visible(False)
    return _save(figure, Path(out), "regret_curves", formats)


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


def plot_loglog(runs: Sequence[Any], out: str | os.PathLike,
                formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """log R_T against log T per policy and environment, the fitted slope in the legend."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6.4, 4.4))
    ok = [run for run in runs if run.ok]
    groups = _group(ok, lambda r: (r.label, json.dumps(r.environment, sort_keys=True)))
    several_envs = len({g[1] for g in groups}) > 1
    for (label, env_key), group in groups.items():
        x, y = loglog_points(group)
        name = label if not several_envs else f"{label}, {_env_text(json.loads(env_key))}"
        axis.loglog(x, y, marker="o" if len(x) < 20 else None,
                    label=f"{name}: slope {fit_loglog_slope(x, y):.2f}")
    axis.set_xlabel("T (rounds)")
    axis.set_ylabel("cumulative regret $R_T$")
    axis.set_title("log-log regret against T (slope 1/2 = $\\sqrt{T}$)")
    axis.legend(fontsize=7)
    return _save(figure, Path(out), "regret_loglog", formats)


def plot_regret_vs_d(runs: Sequence[Any], out: str | os.PathLike,
                     formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """Final regret against d at the largest common T, mean ± 95% band, log-log slope.

    Returns no file when the runs hold a single ``n_features``.
    """
    ok = [run for run in runs if run.ok]
    if len({run.environment["n_features"] for run in ok}) < 2:
        return []
    horizon = max(run.horizon for run in ok)
    ok = [run for run in ok if run.horizon == horizon]
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6.4, 4.4))
    groups = _group(ok, lambda r: (r.label, _env_text(r.environment, skip=("n_features",))))
    for (label, rest), group in groups.items():
        by_d = _group(group, lambda r: r.environment["n_features"])
        ds = np.array(sorted(by_d), dtype=float)
        finals = [np.array([r.final_regret for r in by_d[d]]) for d in sorted(by_d)]
        mean = np.array([f.mean() for f in finals])
        half = np.array([1.96 * f.std(ddof=1) / np.sqrt(len(f)) if len(f) > 1 else 0.0
                         for f in finals])
        axis.errorbar(ds, mean, yerr=half, marker="o", capsize=3,
                      label=f"{label}: slope {fit_loglog_slope(ds, mean):.2f}")
    axis.set_xscale("log")
    axis.set_yscale("log")
    all_d = sorted({run.environment["n_features"] for run in ok})
    axis.set_xticks(all_d, [str(d) for d in all_d])
    axis.minorticks_off()
    axis.set_xlabel("dimension d")
    axis.set_ylabel(f"regret $R_T$ at T={horizon}")
    axis.set_title("regret against d (slope 1 = d, 1/2 = $\\sqrt{d}$)")
    axis.legend(fontsize=7)
    return _save(figure, Path(out), "regret_vs_d", formats)


def plot_time_per_round(runs: Sequence[Any], out: str | os.PathLike,
                        formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """Median milliseconds per round of each policy (against d when d varies)."""
    plt = _pyplot()
    ok = [run for run in runs if run.ok]
    figure, axis = plt.subplots(figsize=(6.4, 4.2))
    ds = sorted({run.environment["n_features"] for run in ok})
    labels = _group(ok, lambda r: r.label)
    if len(ds) > 1:
        for label, group in labels.items():
            by_d = _group(group, lambda r: r.environment["n_features"])
            xs = sorted(by_d)
            axis.plot(xs, [1e3 * np.median([r.seconds_per_round for r in by_d[d]]) for d in xs],
                      marker="o", label=label)
        axis.set_xlabel("dimension d")
        axis.legend(fontsize=7)
    else:
        names = list(labels)
        axis.bar(range(len(names)),
                 [1e3 * np.median([r.seconds_per_round for r in labels[n]]) for n in names])
        axis.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=7)
    axis.set_ylabel("ms per round (select + update)")
    axis.set_yscale("log")
    axis.set_title("time per round")
    return _save(figure, Path(out), "time_per_round", formats)


def plot_store(runs: Sequence[Any], out: str | os.PathLike,
               formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """All the store plots: curves, log-log, regret against d (if d varies), time per round."""
    if not any(run.ok for run in runs):
        raise ValueError("plot_store: runs must hold at least one successful run, got none")
    for fmt in formats:
        if fmt not in ("png", "svg", "pdf"):
            raise ValueError(f"plot_store: formats must be among ['png', 'svg', 'pdf'], "
                             f"got {fmt!r}")
    paths = []
    for plot in (plot_store_curves, plot_loglog, plot_regret_vs_d, plot_time_per_round):
        paths += plot(runs, out, formats)
    return paths
