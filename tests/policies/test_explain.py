"""Explained decisions (glmbandits.policies.explain): the numbers add up, explaining changes
nothing, and what cannot be explained is refused."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from glmbandits import LinUCB, SupCBGLM, UCBGLM
from glmbandits.features import Categorical, FeatureSchema, Numeric, attach_schema
from glmbandits.policies.decisions import Decision
from glmbandits.policies.explain import EXPLAINERS, ExplainedDecision, explain
from glmbandits.policies.registry import ProblemSpec, make_policy, policy_classes

SPEC = ProblemSpec(4, 6, "logistic", 200)
REFUSED = {"supcb-glm", "ofuglb"}
EXPLAINED = [name for name in policy_classes() if name not in REFUSED]


def _rows(rng: np.random.Generator, K: int = 6, d: int = 4) -> np.ndarray:
    X = rng.normal(size=(K, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _play(name: str, rounds: int, explain_on: bool, seed: int = 0, **params):
    """A seeded decide/reward run; returns the policy, the decisions and the contexts."""
    policy = make_policy(name, SPEC, seed=seed, **params)
    rng = np.random.default_rng(seed + 100)
    made, contexts = [], []
    for t in range(rounds):
        X = _rows(rng)
        decision = policy.decide(X, f"d{t}", explain=explain_on, now=float(t))
        made.append(decision)
        contexts.append(X)
        if t < rounds - 1:
            policy.reward(f"d{t}", float(rng.random() < 0.5), now=float(t))
    return policy, made, contexts


def test_every_registered_class_is_listed():
    assert {cls.__name__ for cls in policy_classes().values()} <= set(EXPLAINERS)


@pytest.mark.parametrize("name", EXPLAINED)
def test_the_numbers_add_up(name):
    policy, made, contexts = _play(name, 25, True)
    e = made[-1].explanation
    if e.kind == "unscored":
        assert name == "random" and e.chosen is None and e.reason
        return
    scores, X = made[-1].scores, contexts[-1]
    for part in (e.chosen, e.runner_up):
        total = sum(v for _, v in part.contributions) + part.other + part.intercept
        row = X[part.action] * np.asarray(EXPLAINERS[type(policy).__name__].theta(policy))
        assert abs(total - part.linear_predictor) <= 1e-12 * max(np.abs(row).sum(), 1e-300)
        assert part.linear_predictor == scores.mean[part.action]
        assert part.index == scores.ucb[part.action]
        assert part.predicted_reward == pytest.approx(scores.reward_mean[part.action], rel=1e-15)
        if part.interval is not None:
            low, high = part.interval
            assert low <= part.predicted_reward <= high
        if e.interval in ("confidence", "reward-confidence") or e.interval is None:
            assert 0.0 <= part.bonus_share <= 1.0
        else:
            assert part.bonus_share is None and e.interval_level == 0.95
    # the runner-up is the best index among the other actions
    others = np.delete(np.arange(6), e.chosen.action)
    assert scores.ucb[e.runner_up.action] == scores.ucb[others].max()
    if e.chosen_is_best:
        assert e.runner_up.index <= e.chosen.index
    json.dumps(e.to_dict(), allow_nan=False)  # JSON with finite numbers only


@pytest.mark.parametrize("name", EXPLAINED)
def test_explaining_changes_nothing(name):
    plain, made_plain, _ = _play(name, 20, False)
    explained, made_explained, _ = _play(name, 20, True)
    assert [d.action for d in made_plain] == [d.action for d in made_explained]
    for a, b in zip(made_plain, made_explained):
        assert np.array_equal(a.probabilities, b.probabilities)
        assert isinstance(b, ExplainedDecision) and type(a) is Decision
    assert plain.rng_.bit_generator.state == explained.rng_.bit_generator.state
    assert pickle.dumps(plain) == pickle.dumps(explained)


def test_ucb_glm_interval_is_the_width_through_the_link():
    policy, made, contexts = _play("ucb-glm", 20, True)
    e, scores = made[-1].explanation, made[-1].scores
    a = e.chosen.action
    mu = policy.family.mean
    assert e.interval == "confidence" and e.interval_level is None
    assert e.chosen.interval == (float(mu(scores.mean[a] - scores.width[a])),
                                 float(mu(scores.mean[a] + scores.width[a])))
    assert e.chosen.bonus == scores.width[a]
    assert e.chosen.bonus_share == pytest.approx(
        scores.width[a] / (abs(scores.mean[a]) + scores.width[a]))
    lazy, made_lazy, _ = _play("ucb-glm", 30, True, refit="lazy")
    assert made_lazy[-1].explanation.kind == "scored"  # the snapshot's θ̂ is the one used


def test_first_rounds_are_unscored_and_excluded_rows_keep_request_numbers():
    policy = UCBGLM(n_features=2, seed=0)  # tau = 4
    first = policy.decide(np.eye(2), "u", explain=True, now=0.0)
    assert first.explanation.kind == "unscored" and "tau" in first.explanation.reason
    learned = LinUCB(n_features=3, seed=0)
    learned.update(np.array([0.0, 0.0, 1.0]), 1.0)
    X = np.vstack([np.eye(3), [[0.0, 0.6, 0.8]]])
    decision = learned.decide(X, "x", excluded=[0], explain=True, now=0.0)
    e = decision.explanation
    assert e.chosen.action == decision.action and e.chosen.action != 0
    assert e.runner_up.action in (1, 2, 3) and e.runner_up.action != e.chosen.action


def test_schema_names_and_the_intercept():
    schema = FeatureSchema(context=[Numeric("age", scale=(40.0, 10.0))],
                           action=[Categorical("topic", vocabulary=["news", "sport"])],
                           interactions=[("context", "action")], unit_ball=False).fit()
    policy = attach_schema(LinUCB(n_features=schema.n_features_out_, seed=0), schema)
    rng = np.random.default_rng(3)
    for _ in range(30):
        X = schema.transform({"age": float(rng.uniform(20, 60))},
                             [{"topic": "news"}, {"topic": "sport"}]).copy()
        a = policy.select(X)
        policy.update(X[a], float(rng.random() < (0.8 if a == 0 else 0.3)))
    X = schema.transform({"age": 55.0}, [{"topic": "news"}, {"topic": "sport"}]).copy()
    decision = policy.decide(X, "named", explain=True, now=0.0)
    e = decision.explanation
    names = {name for name, _ in e.chosen.contributions}
    assert names <= {"age", "topic", "age*topic"} and "topic" in names
    groups = schema.group_contributions(X[e.chosen.action], policy.theta_)
    assert e.chosen.intercept == groups["intercept"]
    total = sum(v for _, v in e.chosen.contributions) + e.chosen.other + e.chosen.intercept
    assert total == pytest.approx(e.chosen.linear_predictor, rel=1e-12, abs=1e-15)
    top1 = policy.decide(X, "named-1", explain=True, now=0.0)  # a retry-free second decision
    assert len(explain(policy, X, top1.action, top1.scores, top=1).chosen.contributions) == 1


def test_retry_returns_the_decision_as_first_made():
    policy = LinUCB(n_features=2, seed=0)
    first = policy.decide(np.eye(2), "r", explain=True, now=0.0)
    assert policy.decide(np.eye(2), "r", now=1.0) is first


@pytest.mark.parametrize("make", [lambda: SupCBGLM(3, "logistic", 100, seed=0),
                                  lambda: make_policy("ofuglb", ProblemSpec(3, 3, "logistic",
                                                                            100), seed=0)])
def test_policies_that_cannot_explain_refuse_before_deciding(make):
    policy = make()
    state = policy.rng_.bit_generator.state
    with pytest.raises(TypeError, match="not explained") as caught:
        policy.decide(np.eye(3), "s", explain=True, now=0.0)
    assert caught.value.field == "explain"
    assert policy.rng_.bit_generator.state == state
    assert policy.decision_statistics["decided"] == 0 and policy.last_scores_ is None


def test_bad_explain_and_stale_scores_are_refused():
    policy = LinUCB(n_features=2, seed=0)
    with pytest.raises(TypeError, match="explain must be a bool, got int") as caught:
        policy.decide(np.eye(2), "b", explain=1, now=0.0)
    assert caught.value.field == "explain"
    a = policy.select(np.eye(2))
    policy.update(np.eye(2)[a], 1.0)  # the estimate moved: the old scores are not its own
    with pytest.raises(ValueError, match="does not reproduce"):
        explain(policy, np.eye(2), a)
    with pytest.raises(ValueError, match="shape"):
        explain(policy, np.eye(3)[:, :2], 0)

    class OwnRule(LinUCB):
        def _choose(self, X):
            return super()._choose(X)

    with pytest.raises(TypeError, match="OwnRule"):
        OwnRule(n_features=2).decide(np.eye(2), explain=True)
