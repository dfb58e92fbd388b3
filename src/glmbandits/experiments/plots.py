"""Plots of experiment results (matplotlib, an optional extra: ``pip install glmbandits[plot]``)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .compare import ComparisonResult

__all__ = ["plot_regret_curves"]


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
