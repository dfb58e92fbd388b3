"""Confidence intervals for the offline estimators, and the estimate they produce."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["OffPolicyEstimate", "normal_interval", "wilson_interval", "z_value",
           "clip_to_unit"]


def z_value(confidence: float, owner: str) -> float:
    """The two-sided standard normal quantile z_{(1+c)/2}; checks 0 < c < 1."""
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.floating)) \
            or not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"{owner}: confidence must lie in (0, 1), got {confidence!r}")
    return float(stats.norm.ppf(0.5 + 0.5 * float(confidence)))


def normal_interval(terms: np.ndarray, z: float, owner: str = "normal_interval"
                    ) -> tuple[float, float, float, float]:
    """Mean of i.i.d.-like terms with a CLT interval: (mean, low, high, standard error).

    The standard error is the sample standard deviation (ddof=1) over √n; with
    one term it is 0. The terms are scaled by their largest magnitude first, so
    huge terms (importance weights 1/p of tiny propensities) do not overflow
    in the squares; a result that still is not finite raises a ValueError.
    """
    n = terms.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        scale = float(np.max(np.abs(terms))) if n else 0.0
        if not np.isfinite(scale):
            raise ValueError(f"{owner}: the estimator's terms must be finite, got "
                             f"{scale:g} (importance weights 1/p overflow; check the "
                             "propensities)")
        scaled = terms / scale if scale > 0.0 else terms
        mean = scale * float(np.mean(scaled)) if scale > 0.0 else float(np.mean(terms))
        se = (scale if scale > 0.0 else 1.0) * float(np.std(scaled, ddof=1)) / np.sqrt(n) \
            if n > 1 else 0.0
        low, high = mean - z * se, mean + z * se
    if not all(np.isfinite(v) for v in (mean, se, low, high)):
        raise ValueError(f"{owner}: the estimate overflows (terms up to {scale:g}: importance "
                         "weights 1/p of tiny propensities); got a non-finite mean or interval")
    return mean, low, high, se


def clip_to_unit(low: float, high: float, rewards: np.ndarray) -> tuple[float, float]:
    """The interval clipped to [0, 1] when every reward lies in [0, 1] (else unchanged).

    A policy's value is then a probability-like quantity in [0, 1], so interval
    ends outside it carry no information.
    """
    if rewards.size and float(np.min(rewards)) >= 0.0 and float(np.max(rewards)) <= 1.0:
        return min(max(low, 0.0), 1.0), min(max(high, 0.0), 1.0)
    return low, high


def wilson_interval(successes: float, n: int, z: float) -> tuple[float, float, float, float]:
    """Wilson score interval for a proportion: (p̂, low, high, standard error of p̂).

    Unlike the CLT interval it does not collapse to a point when all n
    outcomes are 0 (or all 1), which matters for click logs with few matches.
    Wilson (1927), JASA 22(158).
    """
    p = successes / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if successes <= 0 else float(max(0.0, centre - half))
    high = 1.0 if successes >= n else float(min(1.0, centre + half))
    return p, low, high, float(np.sqrt(p * (1 - p) / n))


@dataclass(frozen=True)
class OffPolicyEstimate:
    """The value of a policy estimated from a log, with a confidence interval.

    Attributes
    ----------
    estimator : str
        ``"replay"``, ``"ips"``, ``"snips"`` or ``"dr"``.
    value : float
        Estimated expected reward per round of the evaluated policy.
    ci_low, ci_high : float
        The ``confidence`` interval.
    std_error : float
        The estimate's standard error.
    n_rounds : int
        Rounds in the log.
    n_matched : int
        Rounds where the evaluated policy chose the logged action (for replay:
        the events it was evaluated and updated on).
    confidence : float
    """

    estimator: str
    value: float
    ci_low: float
    ci_high: float
    std_error: float
    n_rounds: int
    n_matched: int
    confidence: float

    @property
    def half_width(self) -> float:
        return 0.5 * (self.ci_high - self.ci_low)

    def __str__(self) -> str:
        return (f"{self.estimator}: {self.value:.4f} "
                f"[{self.ci_low:.4f}, {self.ci_high:.4f}] ({self.n_matched}/{self.n_rounds} matched)")
