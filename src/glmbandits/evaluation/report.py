"""Evaluate several policies on one logged dataset and format the table.

This is the library side of ``glmbandits replay``. Two protocols, both on one
log:

* **replay** (Li et al. 2011) on the whole log: a fresh policy learns on the
  matched events as it is evaluated. Only for uniformly logged data; on any
  other log the row is left out (the estimate would be biased).
* **ips / snips / dr** (train/test): a fresh policy is trained on the first
  ``train_fraction`` of the rounds (:func:`fit_on_log`, every logged event),
  then frozen and evaluated on the remaining rounds; the three estimators
  share one pass of the policy over the test rounds (its whole action
  distribution per round: expected IPS/DR). On a full-information log the
  frozen policy's exact value on the test rounds is reported as ``true``.

Every row shows the overlap diagnostics (effective sample size, largest
importance weight); a row whose overlap is too poor to trust the estimate or its
interval is marked ``POOR!`` (see
:class:`~glmbandits.evaluation.intervals.OverlapDiagnostics`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .._validation import SeedLike
from .estimators import doubly_robust, fit_on_log, ips, snips, target_probabilities, true_value
from .intervals import MAX_UNSUPPORTED_SHARE, MIN_ESS, MIN_ESS_FRACTION, OffPolicyEstimate
from ..data import LoggedBanditData
from .replay import OffPolicyWarning, replay

__all__ = ["ESTIMATORS", "EvaluationRow", "evaluate_policies", "format_rows",
           "LOGGED_DATASETS", "load_logged_dataset"]

ESTIMATORS = ("replay", "ips", "snips", "dr")


@dataclass(frozen=True)
class EvaluationRow:
    """One (policy, estimator) result; ``estimate`` is None when it is undefined."""

    policy: str
    estimator: str
    estimate: OffPolicyEstimate | None
    true: float | None
    note: str = ""


def evaluate_policies(
    make: Callable[[str, SeedLike], Any],
    names: Sequence[str],
    log: LoggedBanditData,
    *,
    estimators: Sequence[str] = ESTIMATORS,
    train_fraction: float = 0.5,
    family: Any = "logistic",
    confidence: float = 0.95,
    seed: int = 0,
) -> list[EvaluationRow]:
    """Evaluate each named policy with each estimator; see the module docstring.

    Parameters
    ----------
    make : callable
        ``make(name, seed) -> policy`` building a fresh policy for the log's
        dimension (the CLI passes the policy registry).
    names : sequence of str
    log : LoggedBanditData
    estimators : subset of ("replay", "ips", "snips", "dr")
    train_fraction : float in (0, 1)
        Share of the rounds used to train the policy for ips/snips/dr.
    family : str or GLMFamily
        Link of the DR reward model.
    seed : int
        Master seed; each policy and protocol gets its own child seed.
    """
    owner = "evaluate_policies"
    unknown = [name for name in estimators if name not in ESTIMATORS]
    if unknown or not estimators:
        raise ValueError(f"{owner}: estimators must be a non-empty subset of {list(ESTIMATORS)}, "
                         f"got {list(estimators)}")
    train, test = log.split(train_fraction)
    uniform = log.is_uniform()
    rows: list[EvaluationRow] = []
    seeds = np.random.SeedSequence(seed).spawn(len(names))
    for name, child in zip(names, seeds):
        replay_seed, policy_seed, rejection_seed = child.spawn(3)
        if "replay" in estimators:
            if not uniform:
                rows.append(EvaluationRow(name, "replay", None, None,
                                          "log not uniformly random"))
            else:
                rows.append(_safe(name, "replay", None, lambda: replay(
                    make(name, replay_seed), log, confidence=confidence, seed=rejection_seed)))
        chosen = [e for e in ("ips", "snips", "dr") if e in estimators]
        if not chosen:
            continue
        policy = fit_on_log(make(name, policy_seed), train)
        probabilities = target_probabilities(policy, test)
        truth = true_value(policy, test, probabilities=probabilities) \
            if test.reward_table is not None else None
        for estimator in chosen:
            if estimator == "ips":
                rows.append(_safe(name, "ips", truth, lambda: ips(
                    policy, test, confidence=confidence, probabilities=probabilities)))
            elif estimator == "snips":
                rows.append(_safe(name, "snips", truth, lambda: snips(
                    policy, test, confidence=confidence, probabilities=probabilities)))
            else:
                rows.append(_safe(name, "dr", truth, lambda: doubly_robust(
                    policy, test, family=family, confidence=confidence,
                    probabilities=probabilities)))
    return rows


def _safe(name: str, estimator: str, truth: float | None,
          compute: Callable[[], OffPolicyEstimate]) -> EvaluationRow:
    """Run one estimator; an undefined value (no matched event) becomes a note.

    Off-policy warnings (poor overlap included) are not repeated here: the
    table marks those rows.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OffPolicyWarning)
            return EvaluationRow(name, estimator, compute(), truth)
    except ValueError as error:
        if "matched" not in str(error) and "matches" not in str(error):
            raise
        return EvaluationRow(name, estimator, None, truth, "undefined: no matched event")


#: The mark of a row whose overlap diagnostics are poor.
POOR_MARK = "POOR!"


def format_rows(rows: Sequence[EvaluationRow], confidence: float = 0.95) -> str:
    """A plain-text table: policy, estimator, value ± half-width, interval, matched,
    effective sample size, largest weight, overlap (``ok`` or ``POOR!``), true.

    A footnote under the table explains ``POOR!`` when some row has it.
    """
    level = f"{100 * confidence:g}% CI"
    header = f"{'policy':<12} {'estimator':<9} {'value':>8} {'± half':>8}  {level:<19} " \
             f"{'matched':>11} {'ESS':>8} {'max w':>8} {'overlap':>7} {'true':>7}"
    lines = [header, "-" * len(header)]
    poor = False
    for row in rows:
        true = f"{row.true:7.4f}" if row.true is not None else f"{'-':>7}"
        if row.estimate is None:
            lines.append(f"{row.policy:<12} {row.estimator:<9} {'n/a':>8} {'':>8}  "
                         f"{row.note:<58} {true}")
            continue
        e = row.estimate
        interval = f"[{e.ci_low:.4f}, {e.ci_high:.4f}]"
        matched = f"{e.n_matched}/{e.n_rounds}"
        d = e.diagnostics
        if d is None:
            ess, largest, overlap = f"{'-':>8}", f"{'-':>8}", f"{'-':>7}"
        else:
            ess, largest = f"{d.ess:8.1f}", _number(d.max_weight)
            overlap = f"{POOR_MARK if d.poor else 'ok':>7}"
            poor = poor or d.poor
        lines.append(f"{row.policy:<12} {row.estimator:<9} {_number(e.value)} "
                     f"{_number(e.half_width)}  "
                     f"{interval:<19} {matched:>11} {ess} {largest} {overlap} {true}")
    if poor:
        lines.append(f"{POOR_MARK} overlap too poor to trust the estimate or its interval: "
                     f"effective sample size below {MIN_ESS:g} or below "
                     f"{100 * MIN_ESS_FRACTION:g}% of the rounds, or the target puts mass on "
                     f"actions a (nearly) deterministic logger never tried in more than "
                     f"{100 * MAX_UNSUPPORTED_SHARE:g}% of them")
    return "\n".join(lines)


def _number(value: float) -> str:
    """Eight characters: fixed point, or scientific for huge values (IPS with tiny propensities)."""
    return f"{value:8.4f}" if abs(value) < 1e4 else f"{value:8.2g}"


def _classification(name: str) -> Callable[[int | None, int], LoggedBanditData]:
    def load(rounds: int | None, seed: int) -> LoggedBanditData:
        from ..environments.datasets import load_classification_bandit
        from .collect import collect_log

        env = load_classification_bandit(name, n_components=10 if name == "digits" else None)
        return collect_log(env, rounds or env.n_samples, seed=seed, name=name)
    return load


def _modechoice(rounds: int | None, seed: int) -> LoggedBanditData:
    from ..environments.datasets import load_modechoice_bandit
    from .collect import collect_log

    env = load_modechoice_bandit()
    return collect_log(env, rounds or env.n_samples, seed=seed, name="modechoice")


def _obd(campaign: str) -> Callable[[int | None, int], LoggedBanditData]:
    def load(rounds: int | None, seed: int) -> LoggedBanditData:
        from ..environments.open_bandit import load_open_bandit

        return load_open_bandit(campaign, max_rounds=rounds)
    return load


def _synthetic(rounds: int | None, seed: int) -> LoggedBanditData:
    from ..environments.synthetic import SyntheticGLMEnv
    from .collect import collect_log

    env = SyntheticGLMEnv(n_features=5, n_actions=5, theta_norm=3.0)
    return collect_log(env, rounds or 5000, seed=seed, name="synthetic")


#: Logged datasets by name: ``loader(rounds, seed) -> LoggedBanditData``. The
#: full-information ones are logged uniformly at random by :func:`collect_log`
#: (one pass over the samples unless ``rounds`` is given; digits reduced to 10
#: principal components).
LOGGED_DATASETS: dict[str, Callable[[int | None, int], LoggedBanditData]] = {
    "obd-random": _obd("random"),
    "obd-bts": _obd("bts"),
    "iris": _classification("iris"),
    "wine": _classification("wine"),
    "breast-cancer": _classification("breast-cancer"),
    "digits": _classification("digits"),
    "modechoice": _modechoice,
    "synthetic": _synthetic,
}


def load_logged_dataset(name: str, *, rounds: int | None = None, seed: int = 0
                        ) -> LoggedBanditData:
    """Load (or, for full-information data, log uniformly) the dataset ``name``."""
    if name not in LOGGED_DATASETS:
        raise ValueError(f"load_logged_dataset: name must be one of {list(LOGGED_DATASETS)}, "
                         f"got {name!r}")
    return LOGGED_DATASETS[name](rounds, seed)
