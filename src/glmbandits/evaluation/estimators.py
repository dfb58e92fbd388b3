"""Off-policy value estimators for logs with known propensities: IPS, SNIPS, DR.

The evaluated policy π is *frozen*: each round it is asked for its action
distribution π(·|x_t) (``policy.select``, then ``policy.last_probabilities_``)
and never updated. The estimators use that whole distribution (the *expected*
IPS/DR of Dudík, Langford & Li 2011), not one sampled action, so a randomised
policy (ties broken at random, Thompson sampling) adds no sampling noise of its
own. Train a policy on a log first with :func:`fit_on_log`.

With w_t = π(a_t|x_t) / p_t (p_t the logging propensity):

* IPS  (Horvitz & Thompson 1952):     V̂ = (1/T) Σ w_t r_t
* SNIPS (Swaminathan & Joachims 2015): V̂ = Σ w_t r_t / Σ w_t
* DR   (Dudík, Langford & Li 2011):   V̂ = (1/T) Σ [Σ_a π(a|x_t) r̂_t(a) + w_t (r_t − r̂_t(a_t))]

Passing ``actions`` (one sampled π_t per round, from :func:`target_actions`)
instead evaluates with the indicator π(a|x_t) = 1{a = π_t}, as before the
distribution was available; it is unbiased too, with more variance.

Every estimate carries :class:`~glmbandits.evaluation.intervals.OverlapDiagnostics`
(effective sample size, largest weight, share of deterministic logging rounds,
share of rounds where the target puts mass on actions the logger never tried),
and a :class:`~glmbandits.evaluation.intervals.PoorOverlapWarning` is issued when
overlap is too poor to trust the number or its interval (an effective sample size
below 30, below 1 % of the rounds, or mass on actions a deterministic logger never tried).

Every interval contains its point estimate. The point estimate is never clipped (IPS
and DR stay unbiased). When every reward and the estimate lie in [0, 1], the interval
is clipped to [0, 1], where the policy's value lies; an estimate outside [0, 1] (e.g.
IPS 5.0 from propensities that are too small) keeps its unclipped interval around it,
rather than a confident-looking [1, 1]
(:func:`~glmbandits.evaluation.intervals.clip_to_unit`), and an interval lying wholly
outside [0, 1], which surely misses the value, issues an
:class:`~glmbandits.evaluation.intervals.OffPolicyWarning`.

where the reward model r̂_t(a) = μ(x_{t,a}'θ̂) is a GLM fitted by
:func:`glmbandits.fit_glm` on the logged (x_{t,a_t}, r_t), with two-fold
cross-fitting (θ̂ for even rounds is fitted on odd rounds and vice versa), so
that the model never predicts a reward it was fitted on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_nonnegative
from ..estimation import fit_glm
from ..families import get_family
from .intervals import (OffPolicyEstimate, OverlapDiagnostics, clip_to_unit, normal_interval,
                        overlap_diagnostics, warn_if_outside_unit, warn_if_poor_overlap, z_value)
from ..data import LoggedBanditData
from .replay import check_policy_matches_log

__all__ = ["check_actions", "target_actions", "target_probabilities", "check_probabilities",
           "ips", "snips", "doubly_robust", "fit_on_log", "true_value",
           "cross_fitted_reward_model"]


def _require_propensities(log: LoggedBanditData, owner: str) -> np.ndarray:
    if log.propensities is None:
        raise ValueError(f"{owner}: the log must have propensities (the logging policy's "
                         "probability of each logged action), got a log without them")
    return log.propensities


def target_actions(policy: Any, log: LoggedBanditData) -> np.ndarray:
    """π_t for every round: the frozen policy's choice on x_{t,1..K_t} (no updates)."""
    check_policy_matches_log(policy, log, "target_actions")
    return np.fromiter((policy.select(log.contexts[t]) for t in range(log.n_rounds)),
                       dtype=np.int64, count=log.n_rounds)


def target_probabilities(policy: Any, log: LoggedBanditData) -> np.ndarray:
    """π(a|x_t) for every round and action: the frozen policy's distribution (no updates).

    Returns an array of shape (T, K_max), zero beyond each round's K_t. Each row
    is the policy's ``last_probabilities_`` after ``select`` on x_{t,1..K_t}
    (exact for UCB-style rules, Monte-Carlo for Thompson sampling, mixed with
    the policy's exploration floor); a policy without that attribute gives the
    one-hot of its chosen action.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import RandomPolicy
    >>> from glmbandits.evaluation import LoggedBanditData
    >>> log = LoggedBanditData(np.zeros((2, 4, 1)), [0, 1], [1.0, 0.0], [0.25, 0.25])
    >>> target_probabilities(RandomPolicy(1, seed=0), log)
    array([[0.25, 0.25, 0.25, 0.25],
           [0.25, 0.25, 0.25, 0.25]])
    """
    check_policy_matches_log(policy, log, "target_probabilities")
    K = log.n_actions
    probabilities = np.zeros((log.n_rounds, int(K.max())))
    for t in range(log.n_rounds):
        action = policy.select(log.contexts[t])
        row = getattr(policy, "last_probabilities_", None)
        if row is None:
            probabilities[t, action] = 1.0
        else:
            probabilities[t, : K[t]] = row
    return probabilities


def check_probabilities(probabilities: Any, log: LoggedBanditData, owner: str) -> np.ndarray:
    """``probabilities`` as a float copy after checking it is π(·|x_t) for every round.

    It must have shape (T, K_max), be finite and non-negative, sum to 1 over
    each round's K_t actions (within 1e-6) and be 0 beyond them.
    """
    array = np.array(probabilities, dtype=np.float64)
    shape = (log.n_rounds, int(log.n_actions.max()))
    if array.shape != shape:
        raise ValueError(f"{owner}: probabilities must have shape {shape} (one distribution "
                         f"per round of the log), got {array.shape}")
    if not np.all(np.isfinite(array)) or np.any(array < 0.0):
        raise ValueError(f"{owner}: probabilities must be finite and >= 0")
    outside = np.arange(shape[1])[None, :] >= log.n_actions[:, None]
    if np.any(array[outside] != 0.0):
        raise ValueError(f"{owner}: probabilities must be 0 beyond each round's K_t actions")
    sums = array.sum(axis=1)
    if not np.allclose(sums, 1.0, rtol=0.0, atol=1e-6):
        t = int(np.flatnonzero(~np.isclose(sums, 1.0, rtol=0.0, atol=1e-6))[0])
        raise ValueError(f"{owner}: probabilities must sum to 1 in every round; round {t} "
                         f"sums to {sums[t]!r}")
    return array


def check_actions(actions: Any, log: LoggedBanditData, owner: str) -> np.ndarray:
    """``actions`` as an int64 copy after checking it is π_t for every round of ``log``.

    It must be an integer array of shape (T,) with 0 <= π_t < K_t (negative
    indices are refused, never wrapped around).
    """
    array = np.asarray(actions)
    if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{owner}: actions must be an integer array (the policy's action "
                        f"index per round), got dtype {array.dtype}")
    if array.shape != (log.n_rounds,):
        raise ValueError(f"{owner}: actions must have shape ({log.n_rounds},) (one per round "
                         f"of the log), got {array.shape}")
    outside = (array < 0) | (array >= log.n_actions)
    if np.any(outside):
        t = int(np.flatnonzero(outside)[0])
        raise ValueError(f"{owner}: actions must lie in the round's action set [0, K_t - 1]; "
                         f"round {t} has K_t = {int(log.n_actions[t])}, got {int(array[t])}")
    return array.astype(np.int64)


class _Target:
    """The evaluated policy's distribution on a log: sampled actions or full distributions."""

    def __init__(self, actions: np.ndarray | None, probabilities: np.ndarray | None,
                 log: LoggedBanditData) -> None:
        self.actions = actions
        self.probabilities = probabilities
        rounds = np.arange(log.n_rounds)
        if probabilities is not None:
            self.at_logged = probabilities[rounds, log.actions]
        else:
            assert actions is not None  # _target gives one of the two
            self.at_logged = (actions == log.actions).astype(np.float64)


def _target(policy: Any, log: LoggedBanditData, owner: str, actions: np.ndarray | None,
            probabilities: np.ndarray | None) -> _Target:
    if actions is not None and probabilities is not None:
        raise ValueError(f"{owner}: pass actions or probabilities, not both")
    if actions is not None:
        return _Target(check_actions(actions, log, owner), None, log)
    if probabilities is not None:
        return _Target(None, check_probabilities(probabilities, log, owner), log)
    return _Target(None, target_probabilities(policy, log), log)


def _diagnose(weights: np.ndarray, log: LoggedBanditData, target: _Target,
              owner: str) -> OverlapDiagnostics:
    diagnostics = overlap_diagnostics(weights, _require_propensities(log, owner),
                                      target.at_logged)
    warn_if_poor_overlap(diagnostics, owner, stacklevel=4)  # the estimator's caller
    return diagnostics


def _weights(policy: Any, log: LoggedBanditData, owner: str, actions: np.ndarray | None,
             probabilities: np.ndarray | None = None) -> tuple[_Target, np.ndarray]:
    """(target, w_t) with w_t = π(a_t|x_t) / p_t; refuses a weight that is not finite."""
    check_policy_matches_log(policy, log, owner)
    propensities = _require_propensities(log, owner)
    target = _target(policy, log, owner, actions, probabilities)
    matched = target.at_logged > 0.0
    weights = np.zeros(log.n_rounds)
    with np.errstate(over="ignore", divide="ignore"):
        weights[matched] = target.at_logged[matched] / propensities[matched]
    infinite = ~np.isfinite(weights)
    if np.any(infinite):
        t = int(np.flatnonzero(infinite)[0])
        raise ValueError(f"{owner}: propensity must be at least {1.0 / np.finfo(float).max:.4g} "
                         f"(its importance weight 1/p must be finite), got "
                         f"{float(propensities[t])!r} in round {t} of log {log.name!r}")
    return target, weights


def _finite_terms(terms: np.ndarray, owner: str) -> np.ndarray:
    if not np.all(np.isfinite(terms)):
        t = int(np.flatnonzero(~np.isfinite(terms))[0])
        raise ValueError(f"{owner}: the importance-weighted reward of round {t} overflows "
                         "(a tiny propensity times a large reward); got a non-finite term")
    return terms


def ips(policy: Any, log: LoggedBanditData, *, confidence: float = 0.95,
        actions: np.ndarray | None = None,
        probabilities: np.ndarray | None = None) -> OffPolicyEstimate:
    """Inverse propensity scoring: V̂ = (1/T) Σ π(a_t|x_t) r_t / p_t, with a CLT interval.

    Parameters
    ----------
    policy : Policy
        The frozen policy to evaluate.
    log : LoggedBanditData
        Must carry propensities.
    confidence : float, default 0.95
    actions : ndarray of int, optional
        One sampled action π_t per round (from :func:`target_actions`): the
        estimate then uses π(a|x_t) = 1{a = π_t} instead of the distribution.
    probabilities : ndarray of shape (T, K_max), optional
        Precomputed π(·|x_t) (from :func:`target_probabilities`), to share one
        pass over the policy between estimators. Default: computed here.

    Warns
    -----
    PoorOverlapWarning
        When the estimate's :class:`OverlapDiagnostics` say overlap is poor.
    OffPolicyWarning
        When every reward lies in [0, 1] but the whole interval lies outside it, so
        that it surely misses the value (propensities that do not match the logger).

    References
    ----------
    Horvitz & Thompson (1952), JASA 47(260); Li, Chu, Langford & Wang (2011),
    WSDM, Section 3 (the estimator replay approximates).

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import RandomPolicy
    >>> from glmbandits.evaluation import LoggedBanditData, ips
    >>> log = LoggedBanditData(np.zeros((4, 2, 1)), [0, 1, 0, 1], [1.0, 0.0, 1.0, 0.0],
    ...                        [0.5, 0.5, 0.5, 0.5])
    >>> ips(RandomPolicy(1, seed=0), log, actions=np.array([0, 0, 0, 0])).value
    1.0
    >>> ips(RandomPolicy(1, seed=0), log).value  # expected IPS: π(a|x) = 1/2, w = 1
    0.5
    """
    owner = "ips"
    z = z_value(confidence, owner)
    target, w = _weights(policy, log, owner, actions, probabilities)
    diagnostics = _diagnose(w, log, target, owner)
    with np.errstate(over="ignore", invalid="ignore"):
        terms = _finite_terms(w * log.rewards, owner)
    value, low, high, se = normal_interval(terms, z, owner)
    low, high = clip_to_unit(low, high, log.rewards, value=value)
    warn_if_outside_unit(low, high, log.rewards, owner)
    return OffPolicyEstimate("ips", value, low, high, se, log.n_rounds,
                             int(np.count_nonzero(w)), float(confidence), diagnostics)


def snips(policy: Any, log: LoggedBanditData, *, confidence: float = 0.95,
          actions: np.ndarray | None = None,
          probabilities: np.ndarray | None = None) -> OffPolicyEstimate:
    """Self-normalised IPS: V̂ = Σ w_t r_t / Σ w_t, with a delta-method interval.

    The standard error is that of the ratio's linearisation
    ψ_t = w_t (r_t − V̂) / mean(w). SNIPS is biased by O(1/T) but its variance
    does not blow up with large weights, and V̂ stays inside the reward range.

    Parameters are those of :func:`ips`.

    Raises
    ------
    ValueError
        When no round matches (Σ w_t = 0: the ratio is undefined).

    Warns
    -----
    PoorOverlapWarning
        When overlap is poor: SNIPS then stays in the reward range and looks
        plausible while it only averages the few covered rounds.

    References
    ----------
    Swaminathan & Joachims (2015), "The self-normalized estimator for
    counterfactual learning", NeurIPS, eq. (3).
    """
    owner = "snips"
    z = z_value(confidence, owner)
    target, w = _weights(policy, log, owner, actions, probabilities)
    largest = float(w.max()) if w.size else 0.0
    if largest == 0.0:
        raise ValueError(f"{owner}: no logged action matches the policy's choice in "
                         f"{log.n_rounds} rounds; the self-normalised estimate is undefined")
    w_scaled = w / largest  # the ratio and its influence terms do not change with the scale
    total = float(w_scaled.sum())
    value = float(w_scaled @ log.rewards) / total
    influence = w_scaled * (log.rewards - value) / (total / log.n_rounds)
    _, _, _, se = normal_interval(influence, z, owner)
    low, high = clip_to_unit(value - z * se, value + z * se, log.rewards, value=value)
    diagnostics = _diagnose(w, log, target, owner)
    return OffPolicyEstimate("snips", value, low, high, se, log.n_rounds,
                             int(np.count_nonzero(w)), float(confidence), diagnostics)


def cross_fitted_reward_model(log: LoggedBanditData, family: Any = "logistic", *,
                              l2: float = 1.0, intercept: bool = True
                              ) -> tuple[np.ndarray, np.ndarray]:
    """Two GLM fits by :func:`glmbandits.fit_glm`: θ̂ for odd rounds and for even rounds.

    Returns ``(theta_for_round, fold)`` where ``theta_for_round`` has shape
    (2, d + 1) with ``intercept`` (last entry: the intercept, so that ridge
    shrinkage does not pull rare-click predictions towards μ(0)) or (2, d):
    row k is fitted on the rounds whose index parity is not k, and
    ``fold[t] = t % 2`` says which row predicts round t. With one round, both
    rows are fitted on it.
    """
    owner = "cross_fitted_reward_model"
    family = get_family(family, owner)
    l2 = check_nonnegative(l2, owner, "l2")
    X = _design(log.chosen_contexts(), intercept)
    fold = np.arange(log.n_rounds) % 2
    thetas = np.empty((2, X.shape[1]))
    for k in (0, 1):
        train = fold != k
        if not np.any(train):
            train = np.ones(log.n_rounds, dtype=bool)
        thetas[k] = fit_glm(X[train], log.rewards[train], family, l2=l2).theta
    return thetas, fold


def _design(X: np.ndarray, intercept: bool) -> np.ndarray:
    return np.hstack([X, np.ones((X.shape[0], 1))]) if intercept else X


def doubly_robust(policy: Any, log: LoggedBanditData, *, family: Any = "logistic",
                  l2: float = 1.0, intercept: bool = True, confidence: float = 0.95,
                  actions: np.ndarray | None = None,
                  probabilities: np.ndarray | None = None) -> OffPolicyEstimate:
    """Doubly robust estimate with a cross-fitted GLM reward model, and a CLT interval.

    V̂ = (1/T) Σ_t [Σ_a π(a|x_t) μ(x_{t,a}'θ̂) + π(a_t|x_t)/p_t · (r_t − μ(x_{t,a_t}'θ̂))]
    (with ``actions``: the direct term is μ(x_{t,π_t}'θ̂) of the sampled π_t).
    It is unbiased when the propensities are right, whatever the reward model,
    and has lower variance than IPS when the model is good.

    Parameters
    ----------
    family : str or GLMFamily, default "logistic"
        Link of the reward model; the rewards must lie in its domain.
    l2 : float, default 1.0
        Ridge strength of the reward-model fit (keeps the MLE finite on
        separable or sparse click data).
    intercept : bool, default True
        Give the reward model an (also ridge-penalised) intercept of its own.
    confidence, actions, probabilities
        As in :func:`ips`.

    Warns
    -----
    PoorOverlapWarning, OffPolicyWarning
        As :func:`ips`.

    References
    ----------
    Dudík, Langford & Li (2011), "Doubly robust policy evaluation and
    learning", ICML, eq. (3). Reward model: Li, Lu & Zhou (2017), eq. (3).
    """
    owner = "doubly_robust"
    z = z_value(confidence, owner)
    target, w = _weights(policy, log, owner, actions, probabilities)
    diagnostics = _diagnose(w, log, target, owner)
    family = get_family(family, owner)
    thetas, fold = cross_fitted_reward_model(log, family, l2=l2, intercept=intercept)
    theta_t = thetas[fold]
    if target.actions is not None:
        model_target = family.mean(np.einsum(
            "ij,ij->i", _design(log.contexts.chosen(target.actions), intercept), theta_t))
    else:  # Σ_a π(a|x_t) μ̂(x_{t,a}), round by round (K_t may vary)
        K = log.n_actions
        pi = target.probabilities
        assert pi is not None  # _target gives one of the two
        model_target = np.fromiter(
            (pi[t, : K[t]] @ family.mean(
                _design(log.contexts[t], intercept) @ theta_t[t])
             for t in range(log.n_rounds)), dtype=np.float64, count=log.n_rounds)
    model_logged = family.mean(np.einsum(
        "ij,ij->i", _design(log.chosen_contexts(), intercept), theta_t))
    with np.errstate(over="ignore", invalid="ignore"):
        terms = _finite_terms(model_target + w * (log.rewards - model_logged), owner)
    value, low, high, se = normal_interval(terms, z, owner)
    low, high = clip_to_unit(low, high, log.rewards, value=value)
    warn_if_outside_unit(low, high, log.rewards, owner)
    return OffPolicyEstimate("dr", value, low, high, se, log.n_rounds,
                             int(np.count_nonzero(w)), float(confidence), diagnostics)


def fit_on_log(policy: Any, log: LoggedBanditData) -> Any:
    """Update ``policy`` with every logged (x_{t,a_t}, r_t), in order; return it.

    This trains the policy's estimate on the logged data (the GLM MLE is
    consistent under any logging policy that does not look at the rewards).
    It is *not* an evaluation: evaluate the trained policy on other rounds.
    """
    check_policy_matches_log(policy, log, "fit_on_log")
    X = log.chosen_contexts()
    for t in range(log.n_rounds):
        policy.update(X[t], float(log.rewards[t]))
    return policy


def true_value(policy: Any, log: LoggedBanditData, *,
               actions: np.ndarray | None = None,
               probabilities: np.ndarray | None = None) -> float:
    """The frozen policy's exact average reward on a full-information log.

    Needs ``log.reward_table`` (every action's reward, e.g. classification as
    a bandit, or expected rewards of a synthetic log). By default the value of
    the policy's distribution, (1/T) Σ_t Σ_a π(a|x_t) R[t, a]; with
    ``actions``, that of the sampled actions, (1/T) Σ_t R[t, π_t].
    """
    owner = "true_value"
    check_policy_matches_log(policy, log, owner)
    if log.reward_table is None:
        raise ValueError(f"{owner}: the log must have a reward_table (full information), "
                         "got a log without one")
    target = _target(policy, log, owner, actions, probabilities)
    if target.actions is not None:
        return float(np.mean(log.reward_table[np.arange(log.n_rounds), target.actions]))
    pi = target.probabilities
    assert pi is not None  # _target gives one of the two
    table = log.reward_table[:, : pi.shape[1]]
    table = np.where(pi > 0.0, table, 0.0)  # padding may hold anything
    return float(np.mean(np.einsum("ta,ta->t", pi, table)))
