"""Confidence intervals and overlap diagnostics for the offline estimators, and the
estimate they produce."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..exceptions import GLMBanditsWarning

__all__ = ["OffPolicyEstimate", "OverlapDiagnostics", "OffPolicyWarning", "PoorOverlapWarning",
           "overlap_diagnostics", "warn_if_poor_overlap", "warn_if_outside_unit",
           "normal_interval", "wilson_interval",
           "z_value", "clip_to_unit", "DETERMINISTIC_PROPENSITY", "MIN_ESS", "MIN_ESS_FRACTION",
           "MAX_UNSUPPORTED_SHARE"]


class OffPolicyWarning(GLMBanditsWarning):
    """An offline estimate rests on an assumption the log does not support.

    For example, replay on a log whose propensities are missing or not uniform.
    """


class PoorOverlapWarning(OffPolicyWarning):
    """The log barely covers the evaluated policy: the estimate and its interval should not
    be trusted.

    Issued by every estimator when :attr:`OverlapDiagnostics.poor` holds (see
    :data:`MIN_ESS`, :data:`MIN_ESS_FRACTION` and :data:`MAX_UNSUPPORTED_SHARE`).
    """


#: A logged propensity at or above this counts as a (nearly) deterministic logger.
DETERMINISTIC_PROPENSITY = 0.99
#: Overlap is poor when the effective sample size is below this many rounds (the normal
#: interval's coverage then falls well below nominal: 83-86 % for a 95 % interval of IPS
#: and SNIPS at ESS 5-25, benchmarks/ope_softmax_coverage.py) ...
MIN_ESS = 30.0
#: ... or below this share of the rounds ...
MIN_ESS_FRACTION = 0.01
#: ... or when the target puts mass on untried actions in more than this share of the rounds.
MAX_UNSUPPORTED_SHARE = 0.05


@dataclass(frozen=True)
class OverlapDiagnostics:
    """How well a log covers the evaluated policy, from the importance weights.

    With w_t = π(a_t | x_t) / p_t (π the target's whole action distribution at
    round t, a_t and p_t the logged action and propensity):

    Attributes
    ----------
    ess : float
        Kong's effective sample size (Σ w_t)² / Σ w_t² (0 when every weight is
        0): roughly how many uniformly weighted rounds the estimate is worth.
    ess_fraction : float
        ``ess / n_rounds``.
    max_weight : float
        The largest w_t.
    deterministic_share : float
        Share of rounds where the logger was (nearly) deterministic:
        p_t >= :data:`DETERMINISTIC_PROPENSITY` (0.99).
    unsupported_share : float
        Share of rounds where the target puts mass on actions the logger
        (nearly) never tries. Only the logged action's propensity is known, so
        this is measured where it can be: rounds with p_t >= 0.99 (the other
        actions together had at most 1% chance) in which the target's mass on
        the other actions, 1 − π(a_t | x_t), exceeds 1e-12. The estimators see
        nothing of that mass: IPS counts it as reward 0, SNIPS and DR
        extrapolate into it.
    n_rounds : int

    Overlap is :attr:`poor` when ``ess < MIN_ESS`` (30 rounds), ``ess_fraction <
    MIN_ESS_FRACTION`` (0.01) or ``unsupported_share > MAX_UNSUPPORTED_SHARE`` (0.05).
    The absolute floor is what the normal intervals need: with an ESS below 30 (a few
    large weights carry the estimate) the 95 % intervals of IPS and SNIPS covered only
    83-86 % of the time in simulation, and the point estimate rests on a handful of
    rounds; from an ESS of about 30 on they covered 91-97 %
    (``benchmarks/ope_softmax_coverage.py``, docs/offline-evaluation.md). A log shorter
    than 30 rounds is therefore always poor. A deterministic logger alone is not poor
    overlap: a log of the target itself (π = logger) has weights 1 and gives the right
    answer; it is the target's mass off the logged actions that no estimator can see.

    References
    ----------
    Kong (1992), "A note on importance sampling using standardized weights",
    Tech. Rep. 348, University of Chicago (the ESS); Owen (2013), "Monte Carlo
    theory, methods and examples", Section 9.3.
    """

    ess: float
    ess_fraction: float
    max_weight: float
    deterministic_share: float
    unsupported_share: float
    n_rounds: int

    @property
    def poor(self) -> bool:
        """Whether overlap is too poor to trust an importance-weighted estimate and its interval."""
        return self.ess < MIN_ESS or self.ess_fraction < MIN_ESS_FRACTION or \
            self.unsupported_share > MAX_UNSUPPORTED_SHARE

    def reasons(self) -> list[str]:
        """Why overlap is poor, in words (empty when it is not)."""
        reasons = []
        if self.unsupported_share > MAX_UNSUPPORTED_SHARE:
            reasons.append(
                f"in {100 * self.unsupported_share:.1f}% of the rounds the logger was "
                f"deterministic (p >= {DETERMINISTIC_PROPENSITY}) and the target puts mass on "
                "actions it never tried")
        if self.ess < MIN_ESS:
            reasons.append(f"the effective sample size is {self.ess:.1f} (< {MIN_ESS:g}): a few "
                           "large importance weights carry the estimate, and its normal interval "
                           "covers well below its nominal level")
        elif self.ess_fraction < MIN_ESS_FRACTION:
            reasons.append(f"the effective sample size is {self.ess:.1f} of {self.n_rounds} "
                           f"rounds ({100 * self.ess_fraction:.2f}% < "
                           f"{100 * MIN_ESS_FRACTION:g}%)")
        return reasons

    def __str__(self) -> str:
        return (f"ESS {self.ess:.1f}/{self.n_rounds}, max weight {self.max_weight:.3g}, "
                f"deterministic {100 * self.deterministic_share:.1f}%, "
                f"unsupported {100 * self.unsupported_share:.1f}%")


def overlap_diagnostics(weights: np.ndarray, propensities: np.ndarray,
                        target_logged: np.ndarray) -> OverlapDiagnostics:
    """:class:`OverlapDiagnostics` of weights w_t, logged propensities p_t and π(a_t | x_t).

    Examples
    --------
    >>> import numpy as np
    >>> d = overlap_diagnostics(np.array([2.0, 0.0]), np.array([0.5, 1.0]), np.array([1.0, 0.0]))
    >>> d.ess, d.max_weight, d.deterministic_share, d.unsupported_share, d.poor
    (1.0, 2.0, 0.5, 0.5, True)
    """
    n = int(weights.shape[0])
    if n == 0:
        return OverlapDiagnostics(0.0, 0.0, 0.0, 0.0, 0.0, 0)
    largest = float(np.max(weights))
    if largest > 0.0:
        scaled = weights / largest  # (Σw)²/Σw² does not change with the scale; no overflow
        ess = float(scaled.sum() ** 2 / np.dot(scaled, scaled))
    else:
        ess = 0.0
    deterministic = propensities >= DETERMINISTIC_PROPENSITY
    unsupported = deterministic & (1.0 - target_logged > 1e-12)
    return OverlapDiagnostics(ess, ess / n, largest, float(np.mean(deterministic)),
                              float(np.mean(unsupported)), n)


def warn_if_poor_overlap(diagnostics: OverlapDiagnostics, owner: str,
                         stacklevel: int = 3) -> None:
    """Issue a :class:`PoorOverlapWarning` naming the reasons when overlap is poor.

    ``stacklevel`` counts from this function (3: the caller of its caller).
    """
    if diagnostics.poor:
        warnings.warn(f"{owner}: overlap between the log and the evaluated policy is too poor "
                      f"to trust the estimate or its interval: "
                      f"{'; '.join(diagnostics.reasons())} ({diagnostics})", PoorOverlapWarning,
                      stacklevel=stacklevel)


def warn_if_outside_unit(low: float, high: float, rewards: np.ndarray, owner: str,
                         stacklevel: int = 3) -> None:
    """Issue an :class:`OffPolicyWarning` when every reward lies in [0, 1] but the whole
    interval [low, high] lies outside [0, 1].

    The policy's value then lies in [0, 1], so such an interval surely misses it: the
    propensities do not match the logger (e.g. IPS 5.0 from propensities 0.1 where the
    target's weights should average 1), or a few huge weights carry the estimate.
    ``stacklevel`` counts from this function (3: the caller of its caller).
    """
    if rewards.size and float(np.min(rewards)) >= 0.0 and float(np.max(rewards)) <= 1.0 \
            and (low > 1.0 or high < 0.0):
        warnings.warn(f"{owner}: the whole interval [{low:.4g}, {high:.4g}] lies outside [0, 1], "
                      "the range of every reward, so it cannot contain the policy's value: the "
                      "propensities do not match the logger (the importance weights should "
                      "average about 1), or a few huge weights carry the estimate",
                      OffPolicyWarning, stacklevel=stacklevel)


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
    return float(mean), float(low), float(high), float(se)


def clip_to_unit(low: float, high: float, rewards: np.ndarray, *, value: float
                 ) -> tuple[float, float]:
    """The interval clipped to [0, 1] when every reward and the point estimate lie in it.

    When every reward lies in [0, 1], so does the policy's value, and interval ends
    outside [0, 1] carry no information. The point estimate ``value`` itself is never
    clipped (IPS and DR stay unbiased), and the interval must contain it: so when the
    estimate lies outside [0, 1] (IPS 5.0 from propensities that are too small, DR
    slightly below 0 near a value of 0), the interval is returned unclipped, around the
    estimate, instead of collapsing to a confident-looking [1, 1]. An estimate outside
    the reward range is itself the sign that something is off. With rewards outside
    [0, 1], the interval is returned unchanged. Requires ``low <= value <= high``.

    Examples
    --------
    >>> import numpy as np
    >>> clip_to_unit(0.9, 1.2, np.ones(3), value=0.98)
    (0.9, 1.0)
    >>> clip_to_unit(4.0, 6.0, np.ones(3), value=5.0)  # IPS 5 on rewards in [0, 1]
    (4.0, 6.0)
    """
    if rewards.size and float(np.min(rewards)) >= 0.0 and float(np.max(rewards)) <= 1.0 \
            and 0.0 <= value <= 1.0:
        return float(min(max(low, 0.0), 1.0)), float(min(max(high, 0.0), 1.0))
    return float(low), float(high)


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
        Rounds where the evaluated policy puts mass on the logged action
        (π(a_t|x_t) > 0; with sampled ``actions``: chose it). For replay: the
        events it was evaluated and updated on.
    confidence : float
    diagnostics : OverlapDiagnostics or None
        The log's overlap with the evaluated policy (every estimator of this
        package fills it; ``None`` only for estimates built by hand).
    """

    estimator: str
    value: float
    ci_low: float
    ci_high: float
    std_error: float
    n_rounds: int
    n_matched: int
    confidence: float
    diagnostics: OverlapDiagnostics | None = None

    @property
    def half_width(self) -> float:
        return 0.5 * (self.ci_high - self.ci_low)

    @property
    def poor_overlap(self) -> bool:
        """Whether the diagnostics say the log barely covers the policy."""
        return self.diagnostics is not None and self.diagnostics.poor

    def __str__(self) -> str:
        text = (f"{self.estimator}: {self.value:.4f} [{self.ci_low:.4f}, {self.ci_high:.4f}] "
                f"({self.n_matched}/{self.n_rounds} matched)")
        if self.diagnostics is not None:
            text += f"; {self.diagnostics}"
            if self.diagnostics.poor:
                text += " POOR OVERLAP"
        return text
