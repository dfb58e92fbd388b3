"""Shadow-mode evaluation: what a policy would have earned, from a log where the client chose.

In shadow mode (Azure Personalizer's *apprentice mode*) the client sends its own
choice, the *default action* a_t, the service answers with it and logs the policy's
full distribution π_t(·) over the K_t actions next to it; the reward r_t is that of
a_t. The question is whether going live would help: V(π) against V(default).

**What the log can and cannot tell.** The default's value is the plain mean of r_t
(no model, no weights; exact up to sampling noise). The policy's value
V(π) = (1/T) Σ_t Σ_a π_t(a) μ_t(a), with μ_t(a) the expected reward of action a in
round t, splits into

* the *agreement part* (1/T) Σ_t π_t(a_t) μ_t(a_t), estimated without bias by
  (1/T) Σ_t π_t(a_t) r_t;
* the *off-default part* (1/T) Σ_t Σ_{a≠a_t} π_t(a) μ_t(a): rewards of actions the
  client never showed in that round.

Off-policy estimators reach the second part through the *logging* propensity p_t
of a_t. From the service's point of view the client's rule is deterministic (p_t = 1,
or unknown), so no importance weight ever reaches an action the client did not
show: there is no overlap off the default's own actions, and no estimator can
learn the off-default part from the log without an assumption. Hence:

* **DR** (Dudík, Langford & Li 2011) with p_t = 1 becomes
  π_t(a_t) r_t + Σ_{a≠a_t} π_t(a) r̂_t(a): the agreement part observed, the
  off-default part *predicted* by a GLM reward model r̂ fitted (two-fold
  cross-fitted, :func:`~glmbandits.evaluation.cross_fitted_reward_model`) on the
  logged (x_{t,a_t}, r_t). This is legitimate exactly when the model of this
  library holds (one θ* shared by all actions, E[r] = μ(x'θ*)) and the default's
  chosen contexts identify θ* (the MLE is consistent under any logger that does not
  look at the reward): it is a *model-based* estimate, and ``model_share`` says how
  much of it rests on the model alone. Its interval covers the rewards' noise and
  the reward model's estimation error (delta method, sandwich covariance of each
  cross-fitted θ̂), not misspecification.
* **SNIPS** (Swaminathan & Joachims 2015) with p_t = 1 is
  Σ π_t(a_t) r_t / Σ π_t(a_t): the default's mean reward on the rounds where the
  policy agrees with it. It is *not* an estimate of V(π) unless the policy puts
  (nearly) all its mass on a_t; it is reported because it is what a naive pipeline
  would print, with ``snips_unbiased = False`` and the overlap diagnostics
  (``deterministic_share`` 1, ``unsupported_share`` the share of rounds with mass
  off a_t) flagging it as poor overlap.
* **Model-free bounds** (Manski 1990): with rewards known to lie in [lo, hi], V(π)
  lies in [agreement part + lo · off-default mass, agreement part + hi · off-default
  mass] whatever the unseen rewards are. They are wide unless the policy mostly
  agrees, and they are the only statement about V(π) that needs no model.
* **Lift** V(π) − V(default): DR's per-round terms minus r_t, paired, with a CLT
  interval (model-based, as DR), and its model-free bounds.

When the client *does* randomise and reports its propensities
(``default_propensities``), the usual guarantees return: DR is unbiased whatever the
reward model, and SNIPS is consistent, on the actions the client tries with
positive probability (:class:`OverlapDiagnostics` measures how well it covers π).

π_t is the distribution the shadow policy had at round t, as it learned from the
default's rewards; live, it would learn from its own choices, so V(π) is what the
policy's recorded behaviour would have earned, not a forecast of a live run.

This function does not warn on poor overlap: a deterministic logger is its normal
input; the result says what can and cannot be trusted (``notes``).

References
----------
Dudík, Langford & Li (2011), "Doubly robust policy evaluation and learning", ICML,
eq. (3). Swaminathan & Joachims (2015), "The self-normalized estimator for
counterfactual learning", NeurIPS. Manski (1990), "Nonparametric bounds on
treatment effects", American Economic Review 80(2). Microsoft, "Apprentice mode",
Azure AI Personalizer documentation (learn.microsoft.com/azure/ai-services/
personalizer/concept-apprentice-mode). Li, Lu & Zhou (2017), eq. (3) (the reward
model's MLE).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import as_float_array, check_nonnegative, format_value
from ..data import LoggedBanditData
from ..families import get_family
from .estimators import check_probabilities, cross_fitted_reward_model
from .intervals import (OffPolicyEstimate, OverlapDiagnostics, clip_to_unit, normal_interval,
                        overlap_diagnostics, z_value)

__all__ = ["ShadowEvaluation", "ValueEstimate", "evaluate_shadow"]


@dataclass(frozen=True)
class ValueEstimate:
    """A mean with a CLT interval: ``value`` in [``ci_low``, ``ci_high``], its standard error."""

    value: float
    ci_low: float
    ci_high: float
    std_error: float


@dataclass(frozen=True)
class ShadowEvaluation:
    """The policy against the logged default (see the module docstring).

    Attributes
    ----------
    n_rounds : int
    confidence : float
    logging : {"deterministic", "randomized"}
        Whether the default's propensities were taken as 1 or given by the client.
    default : ValueEstimate
        The default's value: the mean logged reward.
    policy_dr : OffPolicyEstimate
        DR estimate of V(π) (``estimator="dr"``), with the overlap diagnostics.
    policy_snips : OffPolicyEstimate or None
        SNIPS estimate; ``None`` when the policy never puts mass on a_t.
    lift_dr : ValueEstimate
        V(π) − V(default) from DR's per-round terms, paired (interval widened by the
        reward model's estimation error, as DR's).
    agreement : float
        Mean π_t(a_t): how often the policy would have chosen the default.
    model_share : float
        Mean off-default mass 1 − π_t(a_t): the part of V(π) that, with a
        deterministic logger, only the reward model speaks for.
    value_bounds, lift_bounds : tuple of float, or None
        Model-free bounds on V(π) and on the lift, for rewards in ``reward_range``,
        sampling noise not included; ``None`` when the range is unknown, or when
        the logging was randomized (the estimates then need no model to lean on).
    reward_range : tuple of float, or None
    dr_unbiased, snips_unbiased : bool
        Whether the estimate is unbiased (DR) or consistent (SNIPS) without a model
        assumption: only with randomized logging.
    notes : tuple of str
        What the numbers mean and where they cannot be trusted, in words.
    """

    n_rounds: int
    confidence: float
    logging: str
    default: ValueEstimate
    policy_dr: OffPolicyEstimate
    policy_snips: OffPolicyEstimate | None
    lift_dr: ValueEstimate
    agreement: float
    model_share: float
    value_bounds: tuple[float, float] | None
    lift_bounds: tuple[float, float] | None
    reward_range: tuple[float, float] | None
    dr_unbiased: bool
    snips_unbiased: bool
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``GET /v1/evaluation``): plain numbers and lists, ``None``
        for anything not finite, and the overlap verdict (``poor``, ``reasons``)."""
        data: dict[str, Any] = _json_ready(dataclasses.asdict(self))
        for name, estimate in (("policy_dr", self.policy_dr), ("policy_snips", self.policy_snips)):
            if estimate is not None and estimate.diagnostics is not None:
                data[name]["diagnostics"]["poor"] = estimate.diagnostics.poor
                data[name]["diagnostics"]["reasons"] = estimate.diagnostics.reasons()
        return data


def _json_ready(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def _mean_interval(terms: np.ndarray, z: float, owner: str) -> ValueEstimate:
    value, low, high, se = normal_interval(terms, z, owner)
    return ValueEstimate(value, low, high, se)


def _check_propensities(default_propensities: Any, log: LoggedBanditData, owner: str
                        ) -> np.ndarray | None:
    if default_propensities is None:
        return None
    p = as_float_array(default_propensities, "default_propensities", owner, allow_bool=False)
    if p.shape != (log.n_rounds,):
        raise ValueError(f"{owner}: default_propensities must have shape ({log.n_rounds},) "
                         f"(one per round), got {p.shape}")
    bad = ~np.isfinite(p) | (p <= 0.0) | (p > 1.0)
    if np.any(bad):
        t = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{owner}: default_propensities must lie in (0, 1], got "
                         f"{format_value(p[t])} in round {t}")
    return p


def _check_range(reward_range: Any, family: Any, rewards: np.ndarray, owner: str
                 ) -> tuple[float, float] | None:
    if reward_range is None:
        return (0.0, 1.0) if family.reward_domain == "[0, 1]" else None
    try:
        low, high = (float(v) for v in reward_range)
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: reward_range must be a pair of numbers (low, high) or None, "
                        f"got {reward_range!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"{owner}: reward_range must be finite with low < high, got "
                         f"({format_value(low)}, {format_value(high)})")
    if rewards.size and (rewards.min() < low or rewards.max() > high):
        raise ValueError(f"{owner}: every reward must lie in reward_range [{format_value(low)}, "
                         f"{format_value(high)}], got rewards in [{format_value(rewards.min())}, "
                         f"{format_value(rewards.max())}]")
    return low, high


def evaluate_shadow(log: LoggedBanditData, policy_probabilities: Any, *,
                    family: Any = "logistic", default_propensities: Any = None,
                    reward_range: Any = None, confidence: float = 0.95, l2: float = 1.0,
                    intercept: bool = True) -> ShadowEvaluation:
    """Estimate the shadow policy's value against the client's default, from the log.

    Parameters
    ----------
    log : LoggedBanditData
        The shadow rounds with a known reward: contexts, ``actions`` = the default
        actions a_t, ``rewards`` = r_t. Its own ``propensities`` are ignored (use
        ``default_propensities``).
    policy_probabilities : array of shape (T, K_max)
        π_t(·): the policy's logged distribution in every round (0 beyond K_t).
    family : str or GLMFamily, default "logistic"
        The reward model's link (the rewards must lie in its domain).
    default_propensities : array of shape (T,), optional
        The client's probability of a_t, when it randomises and says so. Default:
        the client is taken as deterministic (p_t = 1).
    reward_range : (low, high), optional
        The range every reward lies in, for the model-free bounds. Default: [0, 1]
        for the logistic and probit families, none (no bounds) otherwise.
    confidence : float, default 0.95
    l2 : float, default 1.0
        Ridge strength of the reward model's fit.
    intercept : bool, default True
        Give the reward model an intercept.

    Returns
    -------
    ShadowEvaluation

    Examples
    --------
    A policy that always agrees with the default earns what the default earned:

    >>> import numpy as np
    >>> from glmbandits.data import LoggedBanditData
    >>> X = np.random.default_rng(0).normal(size=(40, 3, 2)) / 2
    >>> actions = np.zeros(40, dtype=int)
    >>> rewards = (np.arange(40) % 3 == 0).astype(float)
    >>> pi = np.zeros((40, 3)); pi[:, 0] = 1.0
    >>> result = evaluate_shadow(LoggedBanditData(X, actions, rewards), pi)
    >>> round(result.default.value, 4), round(result.policy_dr.value, 4), result.model_share
    (0.35, 0.35, 0.0)
    """
    owner = "evaluate_shadow"
    if not isinstance(log, LoggedBanditData):
        raise TypeError(f"{owner}: log must be a LoggedBanditData, got {type(log).__name__}")
    if not isinstance(intercept, bool):
        raise TypeError(f"{owner}: intercept must be a bool, got {type(intercept).__name__}")
    z = z_value(confidence, owner)
    family = get_family(family, owner)
    l2 = check_nonnegative(l2, owner, "l2")
    pi = check_probabilities(policy_probabilities, log, owner)
    given = _check_propensities(default_propensities, log, owner)
    rewards = log.rewards
    bounds_range = _check_range(reward_range, family, rewards, owner)
    T, rounds = log.n_rounds, np.arange(log.n_rounds)
    propensities = np.ones(T) if given is None else given
    at_default = pi[rounds, log.actions]
    weights = at_default / propensities
    diagnostics = overlap_diagnostics(weights, propensities, at_default)
    matched = int(np.count_nonzero(weights))

    default = _mean_interval(rewards, z, f"{owner} (default)")
    low, high = clip_to_unit(default.ci_low, default.ci_high, rewards, value=default.value)
    default = dataclasses.replace(default, ci_low=low, ci_high=high)

    # DR: Σ_a π_t(a) r̂_t(a) + w_t (r_t − r̂_t(a_t)), the reward model cross-fitted
    log_for_model = LoggedBanditData(log.contexts, log.actions, rewards, name=log.name)
    thetas, fold = cross_fitted_reward_model(log_for_model, family, l2=l2, intercept=intercept)
    K = log.n_actions
    model_target = np.empty(T)
    model_logged = np.empty(T)
    gradients = np.zeros((2, thetas.shape[1]))  # ∂(DR value)/∂θ_k through the model terms
    for t in range(T):
        X = _design(log.contexts[t], intercept)
        eta = X @ thetas[fold[t]]
        predicted = family.mean(eta)
        model_target[t] = pi[t, : K[t]] @ predicted
        model_logged[t] = predicted[log.actions[t]]
        coefficients = pi[t, : K[t]].copy()  # DR weighs r̂_t(a) by π_t(a) − w_t·1{a = a_t}
        coefficients[log.actions[t]] -= weights[t]
        gradients[fold[t]] += (coefficients * family.dmean(eta)) @ X / T
    dr_terms = model_target + weights * (rewards - model_logged)
    model_variance = _model_variance(log, thetas, fold, gradients, family, l2, intercept)
    value, low, high, se = _widened(dr_terms, model_variance, z, f"{owner} (dr)")
    low, high = clip_to_unit(low, high, rewards, value=value)
    policy_dr = OffPolicyEstimate("dr", value, low, high, se, T, matched, float(confidence),
                                  diagnostics)
    lift = ValueEstimate(*_widened(dr_terms - rewards, model_variance, z, f"{owner} (lift)"))

    policy_snips = _snips(weights, rewards, z, diagnostics, matched, float(confidence), owner)

    agreement = float(np.mean(at_default))
    model_share = float(np.mean(1.0 - at_default))
    value_bounds = lift_bounds = None
    if bounds_range is not None and given is None:
        lo, hi = bounds_range
        observed = float(np.mean(at_default * rewards))
        value_bounds = (observed + lo * model_share, observed + hi * model_share)
        off = 1.0 - at_default
        lift_bounds = (float(np.mean(off * (lo - rewards))), float(np.mean(off * (hi - rewards))))
    return ShadowEvaluation(
        n_rounds=T, confidence=float(confidence),
        logging="deterministic" if given is None else "randomized", default=default,
        policy_dr=policy_dr, policy_snips=policy_snips, lift_dr=lift, agreement=agreement,
        model_share=model_share, value_bounds=value_bounds, lift_bounds=lift_bounds,
        reward_range=bounds_range, dr_unbiased=given is not None,
        snips_unbiased=given is not None,
        notes=_notes(given is not None, model_share, diagnostics, value_bounds))


def _design(X: np.ndarray, intercept: bool) -> np.ndarray:
    return np.hstack([X, np.ones((X.shape[0], 1))]) if intercept else X


def _model_variance(log: LoggedBanditData, thetas: np.ndarray, fold: np.ndarray,
                    gradients: np.ndarray, family: Any, l2: float, intercept: bool) -> float:
    """Variance the reward model's estimation error adds to DR (delta method).

    Fold k's θ̂_k solves Σ_{i∉k} (r_i − μ(x_i'θ)) x_i − l2 θ = 0; its sandwich
    covariance is J⁻¹ M J⁻¹ with J = Σ μ'(x_i'θ̂) x_i x_i' + l2 I and
    M = Σ (r_i − μ(x_i'θ̂))² x_i x_i' (robust to a wrong variance function). The two
    folds' fits use disjoint rounds, so their contributions g_k' Σ_k g_k add up.
    """
    X = _design(log.chosen_contexts(), intercept)
    total = 0.0
    for k in (0, 1):
        train = fold != k
        if not np.any(train):
            train = np.ones(log.n_rounds, dtype=bool)
        Xk, eta = X[train], X[train] @ thetas[k]
        J = (Xk * family.dmean(eta)[:, None]).T @ Xk + l2 * np.eye(X.shape[1])
        residual = log.rewards[train] - family.mean(eta)
        M = (Xk * (residual ** 2)[:, None]).T @ Xk
        try:
            u = np.linalg.solve(J, gradients[k])
        except np.linalg.LinAlgError:
            u = np.linalg.lstsq(J, gradients[k], rcond=None)[0]
        with np.errstate(over="ignore", invalid="ignore"):  # huge weights: inf, refused later
            total += float(u @ M @ u)
    return total


def _widened(terms: np.ndarray, model_variance: float, z: float, owner: str
             ) -> tuple[float, float, float, float]:
    """Mean of the terms with a CLT interval widened by the reward model's variance."""
    value, _, _, se = normal_interval(terms, z, owner)
    se = math.sqrt(se * se + model_variance) if math.isfinite(model_variance) else math.inf
    if not (math.isfinite(se) and math.isfinite(value - z * se) and math.isfinite(value + z * se)):
        raise ValueError(f"{owner}: the interval overflows (importance weights 1/p of tiny "
                         "default_propensities); got a non-finite standard error")
    return value, value - z * se, value + z * se, se


def _snips(weights: np.ndarray, rewards: np.ndarray, z: float, diagnostics: OverlapDiagnostics,
           matched: int, confidence: float, owner: str) -> OffPolicyEstimate | None:
    largest = float(weights.max()) if weights.size else 0.0
    if largest == 0.0:
        return None
    scaled = weights / largest
    total = float(scaled.sum())
    value = float(scaled @ rewards) / total
    influence = scaled * (rewards - value) / (total / weights.size)
    _, _, _, se = normal_interval(influence, z, f"{owner} (snips)")
    low, high = clip_to_unit(value - z * se, value + z * se, rewards, value=value)
    return OffPolicyEstimate("snips", value, low, high, se, int(weights.size), matched,
                             confidence, diagnostics)


def _notes(randomized: bool, model_share: float, diagnostics: OverlapDiagnostics,
           value_bounds: tuple[float, float] | None) -> tuple[str, ...]:
    notes = []
    if not randomized:
        notes.append(
            f"The client chose every action (deterministic logging): {100 * model_share:.1f}% "
            "of the policy's probability mass is on actions the client did not show, whose "
            "rewards no log-based estimator can see. DR predicts them with the GLM reward "
            "model fitted on the log: trust it as far as the model holds; its interval "
            "covers noise and the model's estimation error, not a wrong model.")
        notes.append("SNIPS here is the default's mean reward on the rounds where the policy "
                     "agrees with it, not the policy's value (biased unless the policy agrees "
                     "almost always).")
        if value_bounds is not None:
            notes.append(f"Without any model, the policy's value lies in "
                         f"[{value_bounds[0]:.4f}, {value_bounds[1]:.4f}] (plus sampling noise).")
    else:
        notes.append("The client randomised and reported its propensities: DR is unbiased and "
                     "SNIPS consistent on the actions the client tries.")
    if diagnostics.poor:
        notes.append("Overlap is poor: " + "; ".join(diagnostics.reasons()) + ".")
    return tuple(notes)
