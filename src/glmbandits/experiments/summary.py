"""Summaries of stored runs: mean ± sd of the final regret per cell, as Markdown, CSV or JSON.

They read :class:`~glmbandits.experiments.store.StoredRun` rows (``glmbandits results`` and
``glmbandits run`` print them). ``glmbandits run`` with flags (one problem) prints
:func:`format_comparison` and writes :func:`write_runs_csv`.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from .store import StoredRun

__all__ = ["CellSummary", "summarise", "format_summary", "SUMMARY_FORMATS",
           "format_comparison", "format_execution", "write_runs_csv"]

SUMMARY_FORMATS = ("markdown", "csv", "json")


@dataclass(frozen=True)
class CellSummary:
    """Mean ± sd of the final regret of one cell, and its time per round."""

    experiment: str
    label: str
    environment: str
    horizon: int
    n_ok: int
    n_failed: int
    regret_mean: float
    regret_sd: float
    ms_per_round: float


def _environment_text(environment: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(environment.items()))


def summarise(runs: Sequence[StoredRun]) -> list[CellSummary]:
    """One :class:`CellSummary` per (experiment, cell), in first-seen order."""
    groups: dict[tuple[str, str], list[StoredRun]] = {}
    for run in runs:
        groups.setdefault((run.experiment, run.cell_key), []).append(run)
    rows = []
    for (experiment, _), members in groups.items():
        ok = [run for run in members if run.ok]
        final = np.array([run.final_regret for run in ok], dtype=float)
        first = members[0]
        rows.append(CellSummary(
            experiment, first.label, _environment_text(first.environment), first.horizon,
            len(ok), len(members) - len(ok),
            float(final.mean()) if len(ok) else float("nan"),
            float(final.std(ddof=1)) if len(ok) > 1 else 0.0 if len(ok) else float("nan"),
            float(np.median([r.seconds_per_round for r in ok])) * 1e3 if ok else float("nan")))
    return rows


def format_summary(rows: Iterable[CellSummary], fmt: str = "markdown") -> str:
    """The summary as a Markdown table, CSV or JSON.

    Examples
    --------
    >>> row = CellSummary("demo", "random", "n_features=2", 10, 2, 0, 3.0, 0.5, 0.1)
    >>> print(format_summary([row]))
    | experiment | policy | environment | T | regret (mean ± sd) | runs ok | failed | ms/round |
    |---|---|---|---:|---:|---:|---:|---:|
    | demo | random | n_features=2 | 10 | 3.00 ± 0.50 | 2 | 0 | 0.100 |
    """
    rows = list(rows)
    if fmt == "json":
        return json.dumps([asdict(row) for row in rows], indent=2)
    if fmt == "csv":
        buffer = io.StringIO()
        names = list(CellSummary.__dataclass_fields__)
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(names)
        for row in rows:
            writer.writerow([getattr(row, name) for name in names])
        return buffer.getvalue().rstrip("\n")
    if fmt != "markdown":
        raise ValueError(f"format_summary: fmt must be one of {list(SUMMARY_FORMATS)}, "
                         f"got {fmt!r}")
    lines = ["| experiment | policy | environment | T | regret (mean ± sd) | runs ok | failed "
             "| ms/round |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row.experiment} | {row.label} | {row.environment} | {row.horizon} "
                     f"| {row.regret_mean:.2f} ± {row.regret_sd:.2f} | {row.n_ok} "
                     f"| {row.n_failed} | {row.ms_per_round:.3f} |")
    return "\n".join(lines)


def _by_label(runs: Sequence[StoredRun]) -> dict[str, list[StoredRun]]:
    groups: dict[str, list[StoredRun]] = {}
    for run in runs:
        groups.setdefault(run.label, []).append(run)
    return groups


def format_comparison(runs: Sequence[StoredRun]) -> str:
    """The table of ``glmbandits run`` with flags: per policy (in first-seen order), the
    regret at T (mean ± sample sd over its runs), the median rounds per second and the
    number of runs. ``runs`` are the successful runs of one problem (one horizon).

    Examples
    --------
    >>> import numpy as np
    >>> rows = [StoredRun("x", "c", r, "random", "random", {}, {}, 10, {}, "ok", value, 0.01,
    ...                   np.array([1, 10]), np.array([1.0, value])) for r, value in
    ...         enumerate([4.0, 6.0])]
    >>> print(format_comparison(rows))
    | policy | regret at T=10 (mean ± sd) | rounds/s | runs |
    |---|---:|---:|---:|
    | random | 5.0 ± 1.4 | 1,000 | 2 |
    """
    horizon = max((run.horizon for run in runs), default=0)
    lines = [f"| policy | regret at T={horizon} (mean ± sd) | rounds/s | runs |",
             "|---|---:|---:|---:|"]
    for label, members in _by_label(runs).items():
        final = np.array([run.final_regret for run in members], dtype=float)
        sd = float(final.std(ddof=1)) if len(members) > 1 else 0.0
        speed = float(np.median([_rounds_per_second(run) for run in members]))
        lines.append(f"| {label} | {final.mean():.1f} ± {sd:.1f} | {speed:,.0f} "
                     f"| {len(members)} |")
    return "\n".join(lines)


def format_execution(lockstep: Sequence[str], sequential: Sequence[str]) -> str:
    """The line of ``glmbandits run`` that says how the policies of this run were played:
    in lockstep (a batch kernel, the replicates together) or one replicate at a time.
    Empty when nothing ran.

    Examples
    --------
    >>> format_execution(["linucb", "ucb-glm"], ["random"])
    'lockstep (replicates together): linucb, ucb-glm; sequential: random'
    """
    parts = [f"{name}: {', '.join(labels)}" for name, labels in
             (("lockstep (replicates together)", lockstep), ("sequential", sequential)) if labels]
    return "; ".join(parts)


def _rounds_per_second(run: StoredRun) -> float:
    return run.horizon / run.seconds if run.seconds else float("inf")


def write_runs_csv(runs: Sequence[StoredRun], directory: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``runs.csv`` (policy, replicate, horizon, final_regret, seconds,
    rounds_per_second: one row per run) and ``curves.csv`` (policy, replicate, round,
    cumulative_regret: the down-sampled curves, long format) into ``directory``.

    Numbers are written with ``repr``, so they read back as the stored floats exactly.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    runs_path, curves_path = directory / "runs.csv", directory / "curves.csv"
    with runs_path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["policy", "replicate", "horizon", "final_regret", "seconds",
                         "rounds_per_second"])
        for run in runs:
            writer.writerow([run.label, run.replicate, run.horizon, repr(run.final_regret),
                             repr(run.seconds), repr(_rounds_per_second(run))])
    with curves_path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["policy", "replicate", "round", "cumulative_regret"])
        for run in runs:
            assert run.rounds is not None and run.curve is not None  # ok runs: a curve each
            for t, value in zip(run.rounds, run.curve):
                writer.writerow([run.label, run.replicate, int(t), repr(float(value))])
    return runs_path, curves_path
