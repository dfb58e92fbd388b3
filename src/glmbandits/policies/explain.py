"""Explained decisions: what a decision's scores say about the chosen action and the runner-up.

One home for every policy. An explanation is computed from what the policy recorded at
``select`` (its :class:`~glmbandits.policies.scores.ActionScores`: ``mean`` = x'θ̂, ``width``,
the ranking index ``ucb``) and from the estimate θ̂ those scores were computed with; it
never scores again, draws nothing and changes nothing. The estimate is read, per policy
class, from the attribute the class scores with (:data:`EXPLAINERS`), and is checked
against the recorded means (``X @ θ̂`` must reproduce ``mean``): if the policy has learned
since the decision, or a subclass scores with something else, the explanation is refused
(``ValueError``), never given with wrong numbers.

For the chosen action and the runner-up (the best index among the other candidates) an
explanation gives the index, x'θ̂, the predicted reward μ(x'θ̂), an interval (what it is
depends on the policy: :attr:`Explanation.interval`), the exploration bonus and its share
of the index, and the contributions x_j θ̂_j grouped by the attached feature schema's
names (``policy.feature_schema_``: :meth:`~glmbandits.features.FeatureSchema.group_contributions`)
or by column (``x[j]``): the ``top`` largest by magnitude, the sum of the others
(``other``) and the intercept's, which add up to x'θ̂.

The intervals, per policy (m = x'θ̂, w = the recorded width, μ the family's mean):

* ``"confidence"`` (UCB-GLM, LinUCB, GLOC, DOMD-GLB, D-LinUCB, RS-GLinCB after its
  warm-up): ``[μ(m - w), μ(m + w)]``, the policy's own confidence set
  ``|x'(θ - θ̂)| <= w`` mapped through the increasing μ. Its level is the one the
  policy's α was set for (1 - δ with the theory's α, e.g. ``UCBGLM.from_theory``;
  none is claimed for a tuned α), so ``interval_level`` is None.
* ``"reward-confidence"`` (GLM-UCB, ECOLog, D-GLUCB, SW-GLUCB: the bonus is added on the
  reward scale): ``[μ(m) - w, μ(m) + w]`` clipped into the family's range of means.
* ``"posterior"`` (GLM-TSL, Laplace-TS): the central 95% interval of the Gaussian
  posterior the policy samples from, ``[μ(m - z s), μ(m + z s)]`` with z = 1.959964 and
  s² = a²·x'H⁻¹x (GLM-TSL) or exploration·Σ_j x_j²/q_j (Laplace-TS); ``interval_level``
  0.95. The bonus is the deciding draw's deviation ``x'θ̃ - x'θ̂`` (any sign), so no
  share is given.
* None (ε-greedy): no confidence set is kept; the bonus is 0.

A round the rule did not score (the uniform first ``tau`` rounds, the random policy,
RS-GLinCB's warm-up) is explained as ``kind="unscored"`` with the reason. SupCB-GLM
(staged elimination, not one index) and OFU-GLB (its estimate, a tilted minimiser, is not
kept after ``select``) are refused with a ``TypeError``, as is a class not listed here.

References
----------
Li, Lu & Zhou (2017), Algorithm 1 step 2 (the index x'θ̂ + α‖x‖_{V⁻¹}) and Theorem 1 (the
confidence bound |x'(θ̂ - θ*)| <= α‖x‖_{V⁻¹}); Filippi et al. (2010), GLM-UCB (the bonus on
the reward scale); Kveton et al. (2020), GLM-TSL (the Laplace posterior N(θ̂, a²H⁻¹)).

Examples
--------
>>> import numpy as np
>>> from glmbandits import LinUCB
>>> policy = LinUCB(n_features=2, seed=0)
>>> policy.update(np.array([1.0, 0.0]), 1.0)
>>> decision = policy.decide(np.eye(2), "d1", explain=True)
>>> e = decision.explanation
>>> e.chosen.action, e.runner_up.action, e.interval
(0, 1, 'confidence')
>>> round(e.chosen.linear_predictor, 3), [(n, round(v, 3)) for n, v in e.chosen.contributions]
(0.5, [('x[0]', 0.5), ('x[1]', 0.0)])
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np

from .decisions import Decision
from .scores import ActionScores

__all__ = ["ActionExplanation", "Explanation", "ExplainedDecision", "explain",
           "check_explainable", "EXPLAINERS", "POSTERIOR_LEVEL"]

#: The level of the ``"posterior"`` intervals, and its normal quantile.
POSTERIOR_LEVEL = 0.95
_Z = 1.959963984540054


@dataclass(frozen=True)
class ActionExplanation:
    """One action of an :class:`Explanation` (all numbers finite).

    Attributes
    ----------
    action : int
        The row of the request's contexts.
    index : float
        The score the policy ranks actions by (``ActionScores.ucb``).
    linear_predictor : float
        x'θ̂ as recorded at select (``ActionScores.mean``).
    predicted_reward : float
        μ(x'θ̂), the predicted reward on the reward scale.
    interval : (float, float) or None
        See :attr:`Explanation.interval` for what it is.
    bonus : float
        The exploration bonus (``ActionScores.width``).
    bonus_share : float or None
        ``bonus / (|base| + bonus)`` in [0, 1] for a UCB index ``base + bonus`` (base =
        x'θ̂, or μ(x'θ̂) on the reward scale; 0 when both are 0); None for Thompson draws.
    contributions : tuple of (str, float)
        The ``top`` largest contributions x_j θ̂_j by magnitude, summed by schema group
        (or one per column ``x[j]``), the intercept left out.
    other : float
        The sum of the contributions not in ``contributions``.
    intercept : float
        The intercept column's contribution (0.0 without one). ``sum(contributions) +
        other + intercept`` is x'θ̂ up to rounding.
    """

    action: int
    index: float
    linear_predictor: float
    predicted_reward: float
    interval: tuple[float, float] | None
    bonus: float
    bonus_share: float | None
    contributions: tuple[tuple[str, float], ...]
    other: float
    intercept: float


@dataclass(frozen=True)
class Explanation:
    """Why a decision chose its action (see the module docstring).

    Attributes
    ----------
    policy : str
        The policy's class name.
    kind : {"scored", "unscored"}
        ``"unscored"``: the rule did not score this round (``reason`` says why) and
        ``chosen``/``runner_up`` are None.
    reason : str or None
    interval : {"confidence", "reward-confidence", "posterior"} or None
        What the actions' ``interval`` is (None: none is given, ``reason`` says why).
    interval_level : float or None
        0.95 for ``"posterior"``; None for the confidence sets (their level is the one
        the policy's α was set for).
    chosen, runner_up : ActionExplanation or None
        The chosen action (the policy's own choice) and the best index among the other
        candidates (None with one candidate).
    chosen_is_best : bool
        Whether the chosen action has the largest index (False when the exploration
        floor or ε-greedy's exploration picked it).
    """

    policy: str
    kind: str
    reason: str | None
    interval: str | None
    interval_level: float | None
    chosen: ActionExplanation | None
    runner_up: ActionExplanation | None
    chosen_is_best: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON values (contributions as ``[{"name": ..., "value": ...}]``)."""
        body = asdict(self)
        for key in ("chosen", "runner_up"):
            part = body[key]
            if part is not None:
                part["contributions"] = [{"name": name, "value": value}
                                         for name, value in part["contributions"]]
                part["interval"] = None if part["interval"] is None else list(part["interval"])
        return body


@dataclass(frozen=True)
class ExplainedDecision(Decision):
    """A :class:`~glmbandits.policies.decisions.Decision` made with ``explain=True``."""

    explanation: Explanation = field(kw_only=True, compare=False, repr=False)


# -- per class: the estimate its scores use, and what its interval is ----------------
@dataclass(frozen=True)
class _Explainer:
    """``theta(policy)``: θ̂ of the last select, or a str (why the round is unscored)."""

    theta: Callable[[Any], np.ndarray | str]
    interval: str | None
    spread: Callable[[Any, np.ndarray], np.ndarray] | None = None  # posterior sd of x'θ
    refused: str | None = None  # why this class's decisions are not explained


_UNIFORM = "the first tau rounds are uniform at random: no estimate scored them"


def _after_tau(read: Callable[[Any], np.ndarray]) -> Callable[[Any], np.ndarray | str]:
    return lambda p: _UNIFORM if p.estimate_.n < p.tau else read(p)


def _ucb_glm_theta(p: Any) -> np.ndarray:
    theta: np.ndarray = p.snapshot_.theta_ if p.snapshot_ is not None else p.estimate_.theta_
    return theta


def _rs_glincb_theta(p: Any) -> np.ndarray | str:
    if p.last_warmup_:
        return ("a warm-up round: the action maximises ‖x‖_{V⁻¹} (pure exploration), "
                "its score holds no estimate")
    theta: np.ndarray = p.theta_
    return theta


def _glm_tsl_spread(p: Any, X: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        H = p.hessian()
    if not np.isfinite(H).all():
        return np.zeros(X.shape[0])  # collapsed posterior: every draw is θ̂ (as _choose)
    try:
        solved = np.linalg.solve(H, X.T)
    except np.linalg.LinAlgError:
        return np.zeros(X.shape[0])
    quadratic = np.einsum("ij,ji->i", X, solved)
    spread: np.ndarray = p.a * np.sqrt(np.maximum(quadratic, 0.0))
    return spread


def _laplace_spread(p: Any, X: np.ndarray) -> np.ndarray:
    spread: np.ndarray = np.sqrt(p.exploration * ((X * X) @ (1.0 / p.q_)))
    return spread


def _refuse(why: str) -> _Explainer:
    return _Explainer(lambda p: why, None, refused=why)


def _explainers() -> dict[str, _Explainer]:
    theta: Callable[[Any], np.ndarray] = lambda p: p.theta_  # noqa: E731
    return {
        "UCBGLM": _Explainer(_after_tau(_ucb_glm_theta), "confidence"),
        "LinUCB": _Explainer(theta, "confidence"),
        "GLOC": _Explainer(theta, "confidence"),
        "DOMDGLB": _Explainer(theta, "confidence"),
        "DLinUCB": _Explainer(theta, "confidence"),
        "RSGLinCB": _Explainer(_rs_glincb_theta, "confidence"),
        "GLMUCB": _Explainer(_after_tau(lambda p: p.projected_theta()), "reward-confidence"),
        "ECOLog": _Explainer(theta, "reward-confidence"),
        "DGLUCB": _Explainer(theta, "reward-confidence"),
        "SWGLUCB": _Explainer(theta, "reward-confidence"),
        "GLMTSL": _Explainer(_after_tau(theta), "posterior", _glm_tsl_spread),
        "LaplaceTS": _Explainer(lambda p: p.m_, "posterior", _laplace_spread),
        "EpsilonGreedy": _Explainer(_after_tau(theta), None),
        "RandomPolicy": _Explainer(lambda p: "the random policy draws every action "
                                   "uniformly: it has no estimate", None),
        "SupCBGLM": _refuse("SupCB-GLM chooses by staged elimination (Algorithm 2), not by "
                            "the largest of one index: its decisions are not explained"),
        "OFUGLB": _refuse("OFU-GLB's estimate (the tilted minimiser of its likelihood-ratio "
                          "potential) is not kept after select: its decisions are not "
                          "explained"),
    }


#: Policy class name -> how it is explained (a class of the library, by name, so that
#: this module does not import the algorithms).
EXPLAINERS: dict[str, _Explainer] = _explainers()

_NO_INTERVAL = {"EpsilonGreedy": "epsilon-greedy keeps no confidence set: no interval"}


def _explainer_of(policy: Any, owner: str) -> _Explainer:
    for cls in type(policy).__mro__:
        found = EXPLAINERS.get(cls.__name__)
        if found is not None and cls.__module__.startswith("glmbandits.policies."):
            if type(policy)._choose is not cls._choose:  # type: ignore[attr-defined]
                break  # a subclass with its own rule: its scores may mean something else
            return found
    raise TypeError(f"{owner}: explain is defined for the library's policies (with their own "
                    f"_choose), got {type(policy).__name__}")


def check_explainable(policy: Any, owner: str) -> _Explainer:
    """How ``policy`` is explained; ``TypeError`` (naming the policy and why) for a policy
    whose decisions cannot be explained, before it decides."""
    explainer = _explainer_of(policy, owner)
    if explainer.refused is not None:
        raise TypeError(f"{owner}: {explainer.refused}")
    return explainer


# -- the explanation --------------------------------------------------------------------
def _contributions(policy: Any, x: np.ndarray, theta: np.ndarray, top: int
                   ) -> tuple[tuple[tuple[str, float], ...], float, float]:
    schema = getattr(policy, "feature_schema_", None)
    if schema is not None:
        groups = schema.group_contributions(x, theta)
        intercept = float(groups.pop("intercept", 0.0))
        names, values = list(groups), np.array(list(groups.values()), dtype=np.float64)
    else:
        intercept = 0.0
        names, values = [f"x[{j}]" for j in range(x.shape[0])], x * theta
    order = np.argsort(-np.abs(values), kind="stable")
    kept, rest = order[:top], order[top:]
    pairs = tuple((names[j], float(values[j])) for j in kept)
    return pairs, float(values[rest].sum()), intercept


def _finite(value: float, owner: str, what: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{owner}: the explanation's {what} is not finite ({value!r}); "
                         "nothing is explained")
    return value


def _action(policy: Any, owner: str, X: np.ndarray, scores: ActionScores, theta: np.ndarray,
            explainer: _Explainer, i: int, row: int, spread: np.ndarray | None,
            top: int) -> ActionExplanation:
    family = scores.family
    mean = float(scores.mean[i])
    width = float(scores.width[i])
    mu: Callable[[float], float] = ((lambda z: z) if family is None
                                    else (lambda z: float(family.mean(z))))
    predicted = mu(mean)
    interval: tuple[float, float] | None = None
    share: float | None = None
    if explainer.interval == "confidence":
        interval = (mu(mean - width), mu(mean + width))
    elif explainer.interval == "reward-confidence":
        low, high = (-math.inf, math.inf) if family is None else family.mean_range
        interval = (min(max(predicted - width, low), high), min(max(predicted + width, low),
                                                                high))
    elif explainer.interval == "posterior" and spread is not None:
        interval = (mu(mean - _Z * float(spread[i])), mu(mean + _Z * float(spread[i])))
    if explainer.interval != "posterior":
        base = abs(predicted if scores.scale == "reward" else mean)
        share = 0.0 if base + width == 0.0 else width / (base + width)
    contributions, other, intercept = _contributions(policy, X[i], theta, top)
    numbers = [float(scores.ucb[i]), mean, predicted, width, other, intercept,
               *(v for _, v in contributions), *(interval or ()),
               *(() if share is None else (share,))]
    for value in numbers:
        _finite(value, owner, f"value for row {row}")
    return ActionExplanation(
        action=row, index=float(scores.ucb[i]), linear_predictor=mean,
        predicted_reward=predicted, interval=interval, bonus=width, bonus_share=share,
        contributions=contributions, other=other, intercept=intercept)


def explain(policy: Any, contexts: np.ndarray, chosen: int, scores: ActionScores | None = None,
            *, candidates: np.ndarray | None = None, top: int = 5) -> Explanation:
    """Explain the policy's last scored round: ``chosen`` among the rows of ``contexts``.

    Call it right after ``select`` (``scores`` defaults to ``policy.last_scores_``), or
    use ``policy.decide(..., explain=True)``. Reads only; the policy is unchanged.

    Parameters
    ----------
    policy : Policy
        The policy that scored the round, not updated since.
    contexts : ndarray of shape (K, d)
        The rows it scored (the candidate rows of a decide with exclusions).
    chosen : int
        The chosen row (an index into ``contexts``).
    scores : ActionScores, optional
        The round's scores (default: ``policy.last_scores_``).
    candidates : ndarray of int, optional
        The request rows the rows of ``contexts`` are (reported as ``action``).
    top : int, default 5
        How many contributions to list per action.

    Raises
    ------
    TypeError
        The policy's decisions cannot be explained (see the module docstring).
    ValueError
        The scores do not belong to these contexts and the policy's current estimate
        (it has learned since), or a value of the explanation is not finite.

    Examples
    --------
    >>> import numpy as np
    >>> from glmbandits import UCBGLM
    >>> policy = UCBGLM(n_features=2, tau=0, seed=0)
    >>> a = policy.select(np.eye(2))
    >>> e = explain(policy, np.eye(2), a)
    >>> e.kind, e.chosen.predicted_reward, e.chosen.bonus_share
    ('scored', 0.5, 1.0)
    """
    owner = f"{type(policy).__name__}.explain"
    explainer = check_explainable(policy, owner)
    scores = policy.last_scores_ if scores is None else scores
    if scores is None:
        raise ValueError(f"{owner}: the policy has not selected yet: nothing to explain")
    X = np.asarray(contexts, dtype=np.float64)
    K = scores.ucb.shape[0]
    if X.ndim != 2 or X.shape != (K, policy.n_features):
        raise ValueError(f"{owner}: contexts must have the scored shape ({K}, "
                         f"{policy.n_features}), got {X.shape}")
    if isinstance(chosen, bool) or not isinstance(chosen, (int, np.integer)) or \
            not 0 <= int(chosen) < K:
        raise ValueError(f"{owner}: chosen must be a row index in [0, {K - 1}], got {chosen!r}")
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 0:
        raise ValueError(f"{owner}: top must be an int >= 0, got {top!r}")
    rows = np.arange(K) if candidates is None else np.asarray(candidates)
    theta = explainer.theta(policy)
    chosen = int(chosen)
    best = bool(scores.ucb[chosen] == scores.ucb.max())
    if isinstance(theta, str):
        return Explanation(type(policy).__name__, "unscored", theta, None, None, None, None,
                           best)
    theta = np.asarray(theta, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        recomputed = X @ theta
        scale = np.abs(X) @ np.abs(theta)
    if not np.all(np.abs(recomputed - scores.mean) <= 1e-9 * scale + 1e-12):
        raise ValueError(f"{owner}: the policy's estimate does not reproduce the scores "
                         "recorded at select for these contexts (it has learned since, or "
                         "the contexts differ): nothing is explained")
    spread = None if explainer.spread is None else explainer.spread(policy, X)
    others = np.flatnonzero(np.arange(K) != chosen)
    runner = None if others.shape[0] == 0 else int(others[np.argmax(scores.ucb[others])])
    reason = _NO_INTERVAL.get(type(policy).__name__) if explainer.interval is None else None
    parts = [None if i is None else _action(policy, owner, X, scores, theta, explainer, i,
                                           int(rows[i]), spread, int(top))
             for i in (chosen, runner)]
    return Explanation(type(policy).__name__, "scored", reason, explainer.interval,
                       POSTERIOR_LEVEL if explainer.interval == "posterior" else None,
                       parts[0], parts[1], best)
