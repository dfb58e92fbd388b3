"""The replay evaluator of Li, Chu, Langford & Wang (2011)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._validation import SeedLike, as_generator
from .intervals import (OffPolicyEstimate, OffPolicyWarning, clip_to_unit, normal_interval,
                        overlap_diagnostics, warn_if_poor_overlap, wilson_interval, z_value)
from ..data import LoggedBanditData

__all__ = ["OffPolicyWarning", "replay", "check_policy_matches_log"]




def check_policy_matches_log(policy: Any, log: Any, owner: str) -> LoggedBanditData:
    """Check that ``log`` is a log and that the policy's dimension is the log's."""
    if not isinstance(log, LoggedBanditData):
        raise TypeError(f"{owner}: log must be a LoggedBanditData, got {type(log).__name__}")
    if not callable(getattr(policy, "select", None)):
        raise TypeError(f"{owner}: policy must have select(contexts) and update(x, reward), "
                        f"got {type(policy).__name__}")
    d = getattr(policy, "n_features", log.n_features)
    if d != log.n_features:
        raise ValueError(f"{owner}: policy.n_features must equal the log's feature dimension "
                         f"{log.n_features}, got {d}")
    return log


def replay(policy: Any, log: LoggedBanditData, *, confidence: float = 0.95,
           seed: SeedLike = None, learn: bool = True) -> OffPolicyEstimate:
    """Estimate a (learning) policy's per-round reward by replaying a uniform log.

    Li et al. (2011), Algorithm 1 ("Policy_Evaluator"): for each logged round t,
    ask the policy for an action on x_{t,1..K_t}; if it equals the logged a_t,
    the event is *matched*: r_t is counted and the policy is updated with
    (x_{t,a_t}, r_t); otherwise the round is skipped and the policy learns
    nothing. Under uniform random logging the matched events are distributed
    exactly as rounds of an online run, so the mean matched reward is an
    unbiased estimate of the policy's online value (Li et al. 2011, Theorem 1),
    from about T/K matched events.

    When K_t changes over the log, a matched round is kept with probability
    K_t / max_s K_s (rejection sampling), so that every round is kept with the
    same probability 1/max K and short action sets are not over-represented.

    Parameters
    ----------
    policy : Policy
        Updated in place on the matched events (pass a fresh one).
    log : LoggedBanditData
        Logged under uniform random choice among the K_t actions. A log whose
        propensities are missing or not 1/K_t is evaluated anyway, with an
        :class:`OffPolicyWarning`: the estimate is then biased.
    confidence : float, default 0.95
        Level of the interval: Wilson's score interval when rewards are 0/1,
        the CLT interval of the matched rewards otherwise.
    seed : int, Generator, SeedSequence or None
        Randomness of the rejection step (used only when K_t varies).
    learn : bool, default True
        Whether the policy is updated on matched events (False evaluates a
        frozen policy).

    Returns
    -------
    OffPolicyEstimate
        ``estimator="replay"``; ``n_matched`` is the number of events used.
        Its diagnostics use the weights π_t(a_t|x_t)/p_t of the policy's
        distribution at each round (p_t = 1/K_t when the log has no
        propensities); a :class:`PoorOverlapWarning` says when they are poor.

    Raises
    ------
    ValueError
        When no event matches (the value is undefined), or on a bad log/policy.

    References
    ----------
    Li, Chu, Langford & Wang (2011), "Unbiased offline evaluation of
    contextual-bandit-based news article recommendation algorithms", WSDM,
    Algorithm 1 and Theorem 1; cited by Li, Lu & Zhou (2017) as [liunbiased].

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import RandomPolicy
    >>> from glmbandits.evaluation import LoggedBanditData, replay
    >>> rng = np.random.default_rng(0)
    >>> T, K = 2000, 4
    >>> actions = rng.integers(K, size=T)
    >>> log = LoggedBanditData(rng.random((T, K, 2)), actions, (actions == 0).astype(float),
    ...                        np.full(T, 1 / K))
    >>> estimate = replay(RandomPolicy(2, seed=1), log)
    >>> estimate.ci_low < 0.25 < estimate.ci_high
    True
    """
    owner = "replay"
    check_policy_matches_log(policy, log, owner)
    z = z_value(confidence, owner)
    rng = as_generator(seed, owner)
    if log.propensities is None:
        warnings.warn("replay: the log has no propensities, so uniform random logging cannot be "
                      "checked; the replay estimate is unbiased only under uniform logging",
                      OffPolicyWarning, stacklevel=2)
    elif not log.is_uniform():
        warnings.warn("replay: the log's propensities are not uniform (p_t != 1/K_t), so the "
                      "replay estimate is biased; use ips, snips or doubly_robust instead",
                      OffPolicyWarning, stacklevel=2)
    K = log.n_actions
    keep_probability = K / K.max()
    varying = bool(K.min() != K.max())
    matched_rewards = []
    target_logged = np.zeros(log.n_rounds)
    for t in range(log.n_rounds):
        X = log.contexts[t]
        chosen = policy.select(X)
        row = getattr(policy, "last_probabilities_", None)
        target_logged[t] = float(chosen == log.actions[t]) if row is None \
            else float(row[log.actions[t]])
        if chosen != log.actions[t]:
            continue
        if varying and rng.random() >= keep_probability[t]:
            continue
        reward = float(log.rewards[t])
        matched_rewards.append(reward)
        if learn:
            policy.update(X[log.actions[t]], reward)
    n = len(matched_rewards)
    if n == 0:
        raise ValueError(f"replay: no logged event matched the policy's choice in "
                         f"{log.n_rounds} rounds; the value is undefined (the log is too short)")
    rewards = np.asarray(matched_rewards)
    if np.all((rewards == 0.0) | (rewards == 1.0)):
        value, low, high, se = wilson_interval(float(rewards.sum()), n, z)
    else:
        value, low, high, se = normal_interval(rewards, z, owner)
        low, high = clip_to_unit(low, high, rewards, value=value)
    propensities = 1.0 / K if log.propensities is None else log.propensities
    with np.errstate(over="ignore"):  # 1/p of a subnormal p: reported as the largest float
        weights = np.minimum(target_logged / propensities, np.finfo(float).max)
    diagnostics = overlap_diagnostics(weights, propensities, target_logged)
    warn_if_poor_overlap(diagnostics, owner)
    return OffPolicyEstimate("replay", value, low, high, se, log.n_rounds, n, float(confidence),
                             diagnostics)
