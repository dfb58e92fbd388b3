"""The figures of the ``glmbandits reproduce`` report (matplotlib, imported only here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .plots import fit_loglog_slope, loglog_points
from .store import StoredRun, select_runs

__all__ = ["figure_coverage", "figure_scaling", "figure_theorem2", "figure_section51"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure_coverage(rows: list[dict], path: Path, delta: float) -> None:
    plt = _pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for family in dict.fromkeys(r["family"] for r in rows):
        mine = [r for r in rows if r["family"] == family]
        lam = [r["lambda_min"] for r in mine]
        axes[0].semilogx(lam, [r["coverage"] for r in mine], marker="o", label=f"{family}")
        axes[0].semilogx(lam, [r["min_coverage"] for r in mine], marker="x", ls=":",
                         label=f"{family} (worst direction)")
        axes[1].loglog(lam, [r["ratio_quantile"] for r in mine], marker="o", label=family)
    axes[0].axhline(1 - 3 * delta, color="grey", ls="--", label="promised 1 - 3δ")
    axes[0].set_xlabel("λ_min(V)  (largest = condition (4))")
    axes[0].set_ylabel("coverage of the Theorem 1 width")
    axes[0].legend(fontsize=7)
    axes[1].axhline(1, color="grey", ls="--")
    axes[1].set_xlabel("λ_min(V)")
    axes[1].set_ylabel("width / empirical (1-3δ)-quantile of error")
    axes[1].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def figure_scaling(runs_T: list[StoredRun], runs_d: list[StoredRun], path: Path) -> None:
    plt = _pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for policy in ("ucb-glm", "supcb-glm"):
        x, y = loglog_points(select_runs(runs_T, policy=policy))
        axes[0].loglog(x, y, marker="o", label=f"{policy}: slope {fit_loglog_slope(x, y):.2f}")
        group = select_runs(runs_d, policy=policy)
        ds = sorted({r.environment["n_features"] for r in group})
        means = [np.mean([r.final_regret for r in select_runs(group, n_features=d)]) for d in ds]
        axes[1].loglog(ds, means, marker="o",
                       label=f"{policy}: slope {fit_loglog_slope(ds, means):.2f}")
    axes[0].set_xlabel("T")
    axes[0].set_ylabel("mean regret R_T")
    axes[0].set_title("regret against T (log-log)")
    axes[1].set_xlabel("d")
    axes[1].set_ylabel("mean regret R_T")
    axes[1].set_title("regret against d at fixed T (log-log)")
    for axis, runs in zip(axes, (runs_T, runs_d)):
        ticks = sorted({r.horizon for r in runs}) if axis is axes[0] else \
            sorted({r.environment["n_features"] for r in runs})
        axis.set_xticks(ticks, [str(t) for t in ticks])
        axis.minorticks_off()
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def figure_theorem2(runs: list[StoredRun], rows: list[dict], path: Path) -> None:
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(rows), figsize=(5 * len(rows), 3.8), squeeze=False)
    for axis, row in zip(axes[0], rows):
        for label, group in _group_label(select_runs(runs, n_features=row["d"],
                                              theta_norm=row["theta_norm"])).items():
            curves = np.vstack([r.curve for r in group])
            axis.plot(group[0].rounds, curves.mean(axis=0), label=label)
        rounds = group[0].rounds
        axis.plot(rounds, rounds, color="grey", ls=":", label="R_t = t (trivial)")
        axis.set_title(f"d={row['d']}, K={row['K']}, ‖θ*‖={row['theta_norm']:g}; "
                       f"bound at T: {row['bound']:.3g}", fontsize=8)
        axis.set_xlabel("round t")
        axis.set_ylabel("mean cumulative regret")
        axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _group_label(runs: Sequence[StoredRun]) -> dict[str, list[StoredRun]]:
    out: dict[str, list[StoredRun]] = {}
    for run in runs:
        out.setdefault(run.label, []).append(run)
    return out


def figure_section51(result: dict[str, Any], path: Path) -> None:
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6.4, 4.0))
    for i, ratios in enumerate(result["ratios"]):
        axis.plot(result["grid"], ratios, color="C0", alpha=0.6,
                  label="seeds" if i == 0 else None)
    axis.set_xlabel("t")
    axis.set_ylabel("Σ_{τ<s<=t} λ_min(V_s)^{-1/2} / √t")
    d, K, norm = result["problem"]
    axis.set_title(f"Section 5.1 condition, UCB-GLM, logistic d={d}, K={K}, ‖θ*‖={norm:g}",
                   fontsize=9)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
