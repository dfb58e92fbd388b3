"""Bias and interval coverage of the off-policy estimators over many logging seeds.

One log gives one estimate; whether an estimator is unbiased and its interval
covers at the nominal rate is a statement about the distribution over logs.
:func:`estimator_calibration` repeats the train/test protocol of
``glmbandits replay`` (:func:`glmbandits.evaluation.report.evaluate_policies`)
on a full-information dataset for many seeds. Each seed draws a fresh log
(for the bundled full-information datasets: a new visiting order and new
uniformly random logged actions), trains each policy on the first part,
freezes it and estimates its value on the rest, where its true value is known.

For an unbiased estimator the mean error (estimate − true) is 0 up to its
standard error; for a calibrated interval the share of seeds whose interval
contains the true value is close to the confidence level.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..data import LoggedBanditData
from .report import evaluate_policies

__all__ = ["CalibrationRow", "estimator_calibration"]


@dataclass(frozen=True)
class CalibrationRow:
    """Summary over seeds of one (policy, estimator) pair.

    Attributes
    ----------
    policy, estimator : str
    n : int
        Seeds where the estimate was defined.
    mean_error : float
        Mean of (estimate − true value) over the seeds.
    std_error : float
        Standard error of ``mean_error`` (sample sd / √n).
    coverage : float
        Share of seeds whose interval contains the true value.
    mean_half_width : float
        Mean half-width of the intervals.
    """

    policy: str
    estimator: str
    n: int
    mean_error: float
    std_error: float
    coverage: float
    mean_half_width: float


def estimator_calibration(
    load: Callable[[int], LoggedBanditData],
    make: Callable[[str, Any], Any],
    names: Sequence[str],
    seeds: Iterable[int],
    *,
    estimators: Sequence[str] = ("ips", "snips", "dr"),
    train_fraction: float = 0.5,
    confidence: float = 0.95,
) -> list[CalibrationRow]:
    """Mean error, its standard error and interval coverage of each (policy, estimator).

    Parameters
    ----------
    load : callable
        ``load(seed) -> LoggedBanditData`` with a ``reward_table`` (e.g.
        ``lambda s: load_logged_dataset("modechoice", seed=s)``).
    make : callable
        ``make(name, seed) -> policy``, as for :func:`evaluate_policies`.
    names : sequence of str
        Policies to evaluate.
    seeds : iterable of int
        Each seed is both the log's seed and :func:`evaluate_policies`' seed.
    estimators : subset of ("ips", "snips", "dr")
    train_fraction, confidence : float
        As in :func:`evaluate_policies`.

    Returns
    -------
    list of CalibrationRow
        In the order (policy, estimator) pairs first appear.
    """
    owner = "estimator_calibration"
    if "replay" in estimators:
        raise ValueError(f"{owner}: estimators must be a subset of ('ips', 'snips', 'dr') "
                         f"(replay has no true value to compare with), got {list(estimators)}")
    errors: dict[tuple[str, str], list[float]] = {}
    covered: dict[tuple[str, str], list[bool]] = {}
    halves: dict[tuple[str, str], list[float]] = {}
    for seed in seeds:
        log = load(seed)
        if log.reward_table is None:
            raise ValueError(f"{owner}: load must return full-information logs (with a "
                             f"reward_table), got one without for seed {seed}")
        for row in evaluate_policies(make, names, log, estimators=estimators,
                                     train_fraction=train_fraction, confidence=confidence,
                                     seed=seed):
            if row.estimate is None or row.true is None:
                continue
            key = (row.policy, row.estimator)
            errors.setdefault(key, []).append(row.estimate.value - row.true)
            covered.setdefault(key, []).append(
                row.estimate.ci_low <= row.true <= row.estimate.ci_high)
            halves.setdefault(key, []).append(row.estimate.half_width)
    rows = []
    for key, values in errors.items():
        e = np.asarray(values)
        se = float(e.std(ddof=1) / np.sqrt(e.size)) if e.size > 1 else float("inf")
        rows.append(CalibrationRow(key[0], key[1], int(e.size), float(e.mean()), se,
                                   float(np.mean(covered[key])), float(np.mean(halves[key]))))
    return rows
