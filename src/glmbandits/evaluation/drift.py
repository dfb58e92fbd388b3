"""Drift monitoring in production: does the model still predict the rewards it gets?

A policy predicts the mean reward ``p̂ = μ(x'θ̂)`` of the action it plays, at decision
time. While the world does not change, the standardised residuals of the rewarded
decisions (Pearson residuals, the family's variance function
:meth:`glmbandits.families.GLMFamily.variance`)

    ``e_i = (y_i - p̂_i) / sqrt(max(V(p̂_i), v_min))``

keep one mean; when θ* moves, the model keeps predicting the old world and the mean
moves with it. :class:`DriftMonitor` watches that mean with a stated test.

The test: two adjacent windows, with α spent over the checks
---------------------------------------------------------------
The scored observations are cut into consecutive blocks of ``window`` (after
``warmup`` observations, which are not used). When block k is full (k = 1, 2, ...
counted since the start or the last alarm; block 0 is only a reference) it is
compared with block k − 1 by Welch's two-sample statistic

    ``z_k = (ē_k - ē_{k-1}) / sqrt(s_k²/W + s_{k-1}²/W)``

(ē, s²: the mean and sample variance of the e_i of a block, W = ``window``), and an
alarm is raised when ``|z_k| > Φ⁻¹(1 - α_k/2)`` with ``α_k = α/(k(k+1))``. As
``Σ_k α_k = α``, **the probability of at least one false alarm on a stationary stream,
however long, is at most α** (a union bound over the checks: Bonferroni with an
α-spending sequence), to the normal approximation of each ``z_k``. After an alarm
the monitor starts again (warm-up, reference block, k = 1), so the bound holds for
each stationary stretch. The thresholds grow like ``sqrt(2 log k²/α)``: 4.1 at k = 10,
5.3 at k = 1000 for α = 0.01.

Why adjacent windows and not a test against zero: a UCB policy plays the action
whose optimistic index is largest, so its predicted means of the chosen actions are
biased upward while it learns (the winner's curse), and the bias shrinks with t.
The mean residual of a stationary stream is then negative and drifting towards 0: a
test of ``ē = 0`` would alarm on a world that never changed. The difference between
two adjacent blocks cancels a bias that varies slowly from one block to the next, and
the variances are estimated within each block (Welch), so neither a wrong dispersion
(Gaussian ``noise_sd``, over-dispersed counts) nor a changing mix of actions is
mistaken for drift. What this test does not see: a drift so slow that two adjacent
blocks look alike (a smoothly drifting θ* of small speed); the drift-aware policies
(:class:`glmbandits.DLinUCB`, :class:`glmbandits.SWGLUCB`, ...) forget continuously
for that.

A change inside block k shows in ``z_k`` or ``z_{k+1}``: an abrupt change large
enough to be seen in one block is detected within ``2·window`` scored observations.

What an alarm does (``action``): ``"none"`` (count and report it) or ``"restart"``:
on a policy that carries the monitor (:meth:`glmbandits.Policy.monitor_drift`), the
learned state is replaced by that of a fresh policy with the same hyperparameters
(:func:`restart_policy`), as the change-detection bandits restart their estimates
(Cao et al. 2019; Besson et al. 2022).

References
----------
Welch, B. L. (1947), "The generalization of Student's problem when several different
population variances are involved", Biometrika 34 (the two-sample statistic).
Lan, K. K. G. & DeMets, D. L. (1983), "Discrete sequential boundaries for clinical
trials", Biometrika 70 (spending α over repeated looks; here ``α_k = α/(k(k+1))``).
Cao, Wen, Kveton & Xie (2019), "Nearly optimal adaptive procedure with change
detection for piecewise-stationary bandit", AISTATS (M-UCB: a two-window test, restart
on alarm). Besson, Kaufmann, Maillard & Seznec (2022), "Efficient change-point
detection for tackling piecewise-stationary bandits", JMLR (restart on detection).
McCullagh & Nelder (1989), *Generalized Linear Models*, §2.4 (Pearson residuals).

Examples
--------
>>> import numpy as np
>>> from glmbandits.evaluation import DriftMonitor
>>> rng = np.random.default_rng(0)
>>> monitor = DriftMonitor(window=200, alpha=0.01, family="logistic")
>>> for t in range(2000):
...     p = 0.8 if t < 1000 else 0.3              # the world flips at t = 1000 ...
...     _ = monitor.observe(0.8, float(rng.random() < p))  # ... the model does not
>>> status = monitor.status()
>>> status.alarms, status.last_alarm_at
(1, 1200)
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import special

from .._validation import check_int, check_positive, check_probability, check_real
from ..estimation.checkpoint import Checkpoint, checkpoint
from ..families import GLMFamily, get_family
from ..persistence.allowed import allow_library_class
from ..persistence.checks import _constructor_arguments

__all__ = ["DriftMonitor", "DriftStatus", "restart_policy", "DRIFT_ACTIONS"]

#: What an alarm does: nothing more than counting it, or restart the policy's estimate.
DRIFT_ACTIONS = ("none", "restart")
#: Completed blocks whose observed and predicted means are kept (for the dashboard).
HISTORY = 64
#: |z| is reported at most this large (two constant blocks that differ give an infinite z).
MAX_STATISTIC = 1e6
#: What a restart keeps of the policy: its generator, model version, decisions and monitor.
_KEPT = frozenset({"rng_", "n_updates_", "decisions_", "drift_monitor_", "last_scores_",
                   "last_probabilities_", "last_propensity_"})


@dataclass(frozen=True)
class DriftStatus:
    """What a :class:`DriftMonitor` has seen, and its latest check.

    Attributes
    ----------
    window, alpha, action
        The monitor's parameters.
    observed : int
        Scored observations (a reward with the prediction made for it).
    unscored : int
        Rewards that came without a prediction (e.g. decisions a learner registered
        from the log, whose scores were computed in another process): not tested.
    checks : int
        Checks since the start or the last alarm (k of the latest one).
    alarms : int
        Alarms so far.
    alarm : bool
        Whether the latest check raised an alarm.
    statistic, threshold : float or None
        The latest check's ``z_k`` and ``Φ⁻¹(1 - α_k/2)`` (None before the first).
    observed_mean, predicted_mean : float or None
        The mean reward and the mean prediction of the latest completed block.
    filling : int
        Scored observations in the block being filled (or of the warm-up).
    last_alarm_at : int or None
        ``observed`` when the latest alarm was raised.
    history_observed, history_predicted : tuple of float
        The observed and predicted means of the last (up to 64) completed blocks,
        oldest first.
    """

    window: int
    alpha: float
    action: str
    observed: int
    unscored: int
    checks: int
    alarms: int
    alarm: bool
    statistic: float | None
    threshold: float | None
    observed_mean: float | None
    predicted_mean: float | None
    filling: int
    last_alarm_at: int | None
    history_observed: tuple[float, ...]
    history_predicted: tuple[float, ...]

    def as_dict(self) -> dict[str, Any]:
        """The status as a JSON-ready dict (histories as lists)."""
        out = asdict(self)
        out["history_observed"] = list(self.history_observed)
        out["history_predicted"] = list(self.history_predicted)
        return out


class DriftMonitor:
    """A two-window test of the standardised residuals, with α spent over the checks.

    See the module docstring for the test and its false-alarm bound.

    Parameters
    ----------
    window : int, default 500
        W: scored observations per block (>= 10; a few hundred keep the normal
        approximation of ``z_k`` good for 0/1 rewards).
    alpha : float in (0, 1), default 0.01
        The bound on the probability of any false alarm on a stationary stretch.
    warmup : int or None, default None
        Scored observations ignored after the start and after each alarm (a fresh or
        restarted model's predictions are not yet worth testing); None: ``window``.
    family : str or GLMFamily or None, default None
        Whose variance function standardises the residuals; None: the family of the
        policy it is attached to (unit variance if that has none, e.g. LinUCB).
    min_variance : float, default 1e-3
        ``v_min``: the variance is floored there (a prediction at the edge of the
        range, e.g. p̂ = 1 for a click, would otherwise divide by zero).
    action : {"none", "restart"}, default "none"
        What an alarm does to the policy carrying the monitor.

    Examples
    --------
    >>> from glmbandits import UCBGLM
    >>> policy = UCBGLM(n_features=2, seed=0).monitor_drift(DriftMonitor(window=100))
    >>> _ = policy.select([[1.0, 0.0], [0.0, 1.0]])
    >>> policy.update([1.0, 0.0], 1.0)
    >>> policy.drift_.observed, policy.drift_.alarms
    (1, 0)
    """

    def __init__(self, window: int = 500, alpha: float = 0.01, *, warmup: int | None = None,
                 family: Any = None, min_variance: float = 1e-3, action: str = "none") -> None:
        owner = "DriftMonitor"
        self.window = check_int(window, owner, "window", minimum=10)
        self.alpha = check_probability(alpha, owner, "alpha")
        self.warmup = self.window if warmup is None else check_int(warmup, owner, "warmup",
                                                                    minimum=0)
        self.family: GLMFamily | None = None if family is None else get_family(family, owner)
        self.min_variance = check_positive(min_variance, owner, "min_variance")
        if not isinstance(action, str) or action not in DRIFT_ACTIONS:
            raise ValueError(f"{owner}: action must be one of {list(DRIFT_ACTIONS)}, "
                             f"got {action!r}")
        self.action = action
        self.observed_ = 0
        self.unscored_ = 0
        self.alarms_ = 0
        self.last_alarm_at_: int | None = None
        self.expected_: float | None = None  # the last select's prediction (update path)
        self.statistic_: float | None = None
        self.threshold_: float | None = None
        self.alarm_ = False
        self.history_observed_ = np.zeros(0)
        self.history_predicted_ = np.zeros(0)
        self._restart_test()

    def _restart_test(self) -> None:
        """Back to the warm-up: no reference block, k = 0 (at the start and after an alarm)."""
        self.to_skip_ = self.warmup
        self.checks_ = 0
        self.reference_: tuple[float, float] | None = None  # (mean, variance) of e
        self.block_n_ = 0
        self.block_mean_ = 0.0
        self.block_m2_ = 0.0
        self.block_reward_ = 0.0
        self.block_predicted_ = 0.0

    # -- observations ----------------------------------------------------------------
    def observe(self, predicted: Any, reward: Any) -> bool:
        """Add one rewarded decision; returns whether it completed a block that alarmed.

        Parameters
        ----------
        predicted : float or None
            The model's predicted mean reward of the played action, made before the
            reward was seen (None: no prediction; counted as unscored, not tested).
        reward : float
            The observed reward.
        """
        owner = "DriftMonitor.observe"
        reward = check_real(reward, owner, "reward")
        if predicted is None:
            self.unscored_ += 1
            return False
        predicted = check_real(predicted, owner, "predicted")
        return self._observe(predicted, reward)

    def _observe(self, predicted: float, reward: float) -> bool:
        self.observed_ += 1
        if self.to_skip_ > 0:
            self.to_skip_ -= 1
            return False
        variance = 1.0 if self.family is None else float(self.family.variance(predicted))
        e = (reward - predicted) / math.sqrt(max(variance, self.min_variance))
        n = self.block_n_ = self.block_n_ + 1  # Welford's running mean and sum of squares
        delta = e - self.block_mean_
        self.block_mean_ += delta / n
        self.block_m2_ += delta * (e - self.block_mean_)
        self.block_reward_ += reward
        self.block_predicted_ += predicted
        if n < self.window:
            return False
        return self._close_block()

    def _close_block(self) -> bool:
        W = self.window
        mean, variance = self.block_mean_, self.block_m2_ / (W - 1)
        self.history_observed_ = np.append(self.history_observed_, self.block_reward_ / W)[
            -HISTORY:]
        self.history_predicted_ = np.append(self.history_predicted_,
                                            self.block_predicted_ / W)[-HISTORY:]
        self.block_n_, self.block_mean_, self.block_m2_ = 0, 0.0, 0.0
        self.block_reward_ = self.block_predicted_ = 0.0
        reference, self.reference_ = self.reference_, (mean, variance)
        if reference is None:
            return False
        self.checks_ += 1
        k = self.checks_
        difference = mean - reference[0]
        se = math.sqrt((variance + reference[1]) / W)
        if se > 0.0:
            z = max(-MAX_STATISTIC, min(MAX_STATISTIC, difference / se))
        else:
            z = 0.0 if difference == 0.0 else math.copysign(MAX_STATISTIC, difference)
        threshold = float(-special.ndtri(self.alpha / (k * (k + 1)) / 2.0))
        self.statistic_, self.threshold_ = z, threshold
        self.alarm_ = abs(z) > threshold
        if self.alarm_:
            self.alarms_ += 1
            self.last_alarm_at_ = self.observed_
            self._restart_test()
        return self.alarm_

    # -- what a policy calls (Policy.monitor_drift) ------------------------------------
    def attach(self, policy: Any, owner: str) -> None:
        """Check that this monitor can watch ``policy`` (called by ``monitor_drift``).

        Takes the policy's family when the monitor has none; with ``action="restart"``
        the policy must keep its constructor parameters under their own names.
        """
        family = getattr(policy, "family", None)
        if self.family is not None and self.family != family:
            raise ValueError(f"{owner}: the monitor's family must be the policy's "
                             f"({family!r}), got {self.family!r}")
        if self.action == "restart" and _constructor_arguments(policy) is None:
            raise ValueError(f"{owner}: action='restart' needs a policy that keeps its "
                             f"constructor parameters under their own names, got "
                             f"{type(policy).__name__}")
        if self.family is None:
            self.family = family

    def expect(self, scores: Any, row: int) -> None:
        """Note the prediction of the row the policy just chose (its last ``select``)."""
        self.expected_ = _prediction(scores, row)

    def record(self, policy: Any, decision: Any, reward: float) -> None:
        """A reward the policy has learned: test it, and act on an alarm.

        ``decision`` is the :class:`~glmbandits.policies.decisions.Decision` the reward
        joins (its stored scores give the prediction), or None for ``update`` (the
        prediction noted by the last ``select``, used once).
        """
        if decision is None:
            predicted, self.expected_ = self.expected_, None
        else:
            rows = np.flatnonzero(decision.candidates == decision.action)
            predicted = _prediction(decision.scores, int(rows[0])) if rows.size else None
        if predicted is None:
            self.unscored_ += 1
            return
        if self._observe(predicted, reward) and self.action == "restart":
            restart_policy(policy)

    # -- reading -------------------------------------------------------------------
    def status(self) -> DriftStatus:
        """A snapshot of the counts and of the latest check (see :class:`DriftStatus`)."""
        has_block = self.history_observed_.size > 0
        return DriftStatus(
            window=self.window, alpha=self.alpha, action=self.action,
            observed=self.observed_, unscored=self.unscored_, checks=self.checks_,
            alarms=self.alarms_, alarm=self.alarm_, statistic=self.statistic_,
            threshold=self.threshold_,
            observed_mean=float(self.history_observed_[-1]) if has_block else None,
            predicted_mean=float(self.history_predicted_[-1]) if has_block else None,
            filling=self.block_n_ if self.to_skip_ == 0 else self.warmup - self.to_skip_,
            last_alarm_at=self.last_alarm_at_,
            history_observed=tuple(self.history_observed_.tolist()),
            history_predicted=tuple(self.history_predicted_.tolist()))

    def __setstate__(self, state: Any) -> None:
        """A monitor read from a model file or a pickle passes the constructor's checks, and
        its counts and windows are what a monitor can hold (else ``ValueError``, so that
        ``load`` refuses the file)."""
        owner = "DriftMonitor (loaded)"
        if type(state) is not dict:
            raise ValueError(f"{owner}: the state must be a dict, got {type(state).__name__}")
        parameters: dict[str, Any] = {name: state.get(name) for name in (
            "window", "alpha", "warmup", "family", "min_variance", "action")}
        fresh = DriftMonitor(**parameters)  # raises, naming the parameter
        if set(state) != set(vars(fresh)):
            raise ValueError(f"{owner}: attributes must be {sorted(vars(fresh))}, got "
                             f"{sorted(state)}")
        for name in ("observed_", "unscored_", "alarms_", "checks_", "block_n_", "to_skip_"):
            check_int(state[name], owner, name, minimum=0)
        observed, predicted = state["history_observed_"], state["history_predicted_"]
        if not all(type(a) is np.ndarray and a.dtype == np.float64 and a.ndim == 1
                   and a.size <= HISTORY for a in (observed, predicted)) \
                or observed.size != predicted.size or state["block_n_"] >= fresh.window:
            raise ValueError(f"{owner}: the windows' histories must be two float64 vectors "
                             f"of one length <= {HISTORY}, and block_n_ < window")
        self.__dict__.update(state)

    def _checkpoint(self) -> Checkpoint:
        """What a policy's transaction restores if it fails (every field is rebound or a
        small array)."""
        return checkpoint(self)

    def __repr__(self) -> str:
        return (f"DriftMonitor(window={self.window}, alpha={self.alpha}, warmup={self.warmup}, "
                f"action={self.action!r})")


allow_library_class(DriftMonitor)  # a monitor attached to a policy is saved with it


def _prediction(scores: Any, row: int) -> float | None:
    """μ(x'θ̂) of one row of an :class:`~glmbandits.policies.base.ActionScores` (None if
    unknown: the NaN scores of a decision registered from a log)."""
    value = float(scores.reward_mean[row])
    return value if math.isfinite(value) else None


def restart_policy(policy: Any) -> None:
    """Replace the learned state of ``policy`` by that of a fresh one (same hyperparameters).

    Kept: the generator, the model version (``n_updates_``: versions only grow), the
    pending decisions, the last round's scores and the attached monitor. A drift-aware
    policy (its window, its discounted sums) starts empty, like any other.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import UCBGLM
    >>> policy = UCBGLM(n_features=2, seed=0)
    >>> policy.update_batch(np.eye(2), [1.0, 0.0])
    >>> restart_policy(policy)
    >>> policy.n_updates_, policy.estimate_.history.y.size
    (2, 0)
    """
    arguments = _constructor_arguments(policy)
    if arguments is None:
        raise ValueError(f"restart_policy: policy must keep its constructor parameters under "
                         f"their own names, got {type(policy).__name__}")
    arguments = copy.deepcopy(arguments)
    if "seed" in arguments:
        arguments["seed"] = 0  # the fresh generator is not kept
    fresh = type(policy)(**arguments)
    state = policy.__dict__
    for name, value in vars(fresh).items():
        if name.endswith("_") and name not in _KEPT:
            state[name] = value
