"""The service config's ``[features]`` table (issue 24 item 2): a declared FeatureSchema,
checked at start with errors naming the key, in the fingerprint only when present, and
carried by every policy the config builds."""

from __future__ import annotations

import json

import numpy as np
import pytest

from glmbandits.features import (Boolean, Categorical, FeatureSchema, MultiCategorical, Numeric,
                                 Vector)
from glmbandits.persistence import load, save
from glmbandits.service.config import (CONFIG_FIELDS, ConfigError, example_config, load_config,
                                       parse_config, tomllib)
from glmbandits.service.config_features import features_table
from glmbandits.service.core import StoreMismatchError, check_store_config
from glmbandits.service.env_config import env_variable
from glmbandits.service.store import open_store

#: The example config's fingerprint before [features] existed (the string every store
#: written by an earlier version holds): it must not change.
EXAMPLE_FINGERPRINT = (
    '{"decisions": {"default_reward": null, "duplicate_rewards": "ignore", "max_pending": '
    '100000, "max_resolved": 100000, "reward_wait": 3600.0}, "policy": {"family": "logistic", '
    '"horizon": 1000000, "max_actions": 100, "n_features": 10, "name": "ucb-glm", "params": '
    '{}, "seed": 0}}')

USERS = [{"country": "DE", "age": 34, "segments": ["sports", "news"], "e": [0.5, -1.0]},
         {"country": "FR", "age": 51, "segments": [], "e": [1.5, 0.0]},
         {"country": "DE", "age": 22, "segments": ["news"], "e": [0.0, 2.0]}]
ITEMS = [{"topic": "news", "new": True, "url": "a.org/1"},
         {"topic": "sports", "new": False, "url": "b.org/2"}]


def offline_schema(**options) -> FeatureSchema:
    """A schema of every kind, fitted offline (vocabularies and a scale fitted)."""
    return FeatureSchema(
        context=[Categorical("country", vocabulary="fit", missing="other"),
                 Numeric("age", scale="fit", range=(0, 120)),
                 MultiCategorical("segments", vocabulary="fit", unseen="zero"),
                 Vector("e", length=2)],
        action=[Categorical("topic", vocabulary="fit", unseen="refuse"), Boolean("new"),
                Categorical("url", buckets=16)],
        interactions=[("context", "topic"), ("age", "new")], **options).fit(USERS, ITEMS)


def config_of(table: str, policy: str = 'name = "linucb"') -> dict:
    return tomllib.loads(f"[policy]\n{policy}\n\n{table}")


def small(**keys) -> dict:
    """A small [features] table (TOML values) with ``keys`` over its own."""
    section = {"unit_ball": True, "norm_bound": 2.0,
               "context": [{"kind": "numeric", "name": "age", "scale": [40.0, 10.0]}],
               "action": [{"kind": "categorical", "name": "topic",
                           "vocabulary": ["news", "sports"]}]}
    section.update(keys)
    return {"policy": {"name": "linucb"}, "features": section}


# -- refusals name the key ---------------------------------------------------------------
FIT_CONTEXT = [{"kind": "numeric", "name": "a"}, {"kind": "boolean", "name": "b"},
               {"kind": "categorical", "name": "c", "vocabulary": "fit"}]

REFUSALS = [
    (small(action=[{"kind": "boolean"}]), "[features] action[0] name: "),
    (small(action=[{"kind": "boolean", "name": "a=b"}]), "[features] action[0] name: "),
    (small(action=[{"kind": "boolean", "name": "age"}]), "[features] action[0] name: "),
    (small(interactions=[["age", "topic"], ["age", "price"]]), "[features] interactions[1]: "),
    (small(interactions=[["age", "topic"], ["age"]]), "[features] interactions[1]: "),
    (small(interactions="context*action"), "[features] interactions must be an array of pairs"),
    (small(unit_ball=False), "[features] norm_bound: FeatureSchema.fit: norm_bound is the "
                             "unit-ball factor; this schema has unit_ball=False"),
    ({"policy": {"name": "linucb"}, "features": {"context": [{"kind": "boolean", "name": "b"}]}},
     "[features] norm_bound is missing: with unit_ball = true (the default)"),
    (small(norm_bound=0), "[features] norm_bound must be a finite number > 0, got 0"),
    (small(norm_bound=float("inf")), "[features] norm_bound must be a finite number > 0"),
    (small(norm_bound=10**400), "[features] norm_bound must be a finite number > 0"),
    ({**small(), "decisions": {"reward_wait": 10**400}},  # (an int beyond float64)
     "[decisions] reward_wait must be a finite number of seconds >= 0"),
    (small(norm_bound=True), "[features] norm_bound must be a number > 0, got True (bool)"),
    (small(context=FIT_CONTEXT), '[features] context[2] vocabulary: "fit" cannot be served: a '
                                 "service fits nothing at start. Declare the values"),
    (small(context=[{"kind": "numeric", "name": "a", "scale": "fit"}]),
     '[features] context[0] scale: "fit" cannot be served'),
    (small(context=[{"kind": "numeric", "name": "a", "scale": [0, 0]}]),
     "[features] context[0] scale: FeatureSchema.from_declaration: context[0]: Numeric 'a': "
     "scale must be a finite (mean, sd) with sd > 0"),
    (small(context=[{"kind": "numeric", "name": "a", "scal": [0, 1]}]),
     "[features] context[0] scal: "),
    (small(context=[{"kind": "text", "name": "a"}]), "[features] context[0] kind: "),
    (small(context=[{"kind": "vector", "name": "e"}]), "[features] context[0] length: "),
    (small(context=[1]), "[features] context[0]: "),
    (small(context={"kind": "numeric"}), "[features] context must be an array of tables "
                                         "([[features.context]], each a field with kind and "
                                         "name), got {'kind': 'numeric'} (dict)"),
    (small(intercept="yes"), "[features] intercept must be true or false, got 'yes' (str)"),
    (small(unit_ball=1), "[features] unit_ball must be true or false, got 1 (int)"),
    (small(unknown="warn"), "[features] unknown must be 'refuse' or 'ignore', got 'warn'"),
    (small(format=2), "[features] format: "),
    (small(colour="red"), "unknown key(s) ['colour'] in [features]"),
    ({"policy": {"name": "linucb"}, "features": {"intercept": False, "unit_ball": False}},
     "[features]: FeatureSchema: no columns"),
    ({**small(), "policy": {"name": "linucb", "n_features": 3}},
     "[policy] n_features is 3, but the [features] schema makes 5 columns; give "
     "n_features = 5 or leave it out"),
    ({"policy": {"name": "linucb"}}, "[policy] n_features is missing"),
    ({"policy": {"name": "linucb"}, "features": []}, "[features] must be a table, got []"),
]


@pytest.mark.parametrize("data, message", REFUSALS)
def test_every_refusal_names_its_key(data, message):
    with pytest.raises(ConfigError) as error:
        parse_config(data)
    text = str(error.value)
    assert text.startswith("config '<config>': ")
    assert message in text, text


def test_a_fitted_key_tells_how_to_declare_it():
    with pytest.raises(ConfigError) as error:
        parse_config(small(context=FIT_CONTEXT))
    assert "fit the schema offline on your data, then copy the [features] table of " \
           "glmbandits.service.config_features.features_table(schema)" in str(error.value)


# -- the schema in the config ---------------------------------------------------------------
def test_a_schema_fitted_offline_round_trips_through_the_toml_text():
    schema = offline_schema()
    text = features_table(schema)
    config = parse_config(config_of(text))
    served = config.features
    assert served.declaration() == schema.declaration(fitted=True)
    assert served.declaration_fingerprint() == FeatureSchema.from_declaration(
        json.loads(json.dumps(schema.declaration(fitted=True)))).declaration_fingerprint()
    assert served.norm_bound_ == schema.norm_bound_
    assert served.feature_names_out_ == schema.feature_names_out_
    assert config.policy.n_features == schema.n_features_out_  # n_features left out
    for user in USERS + [{"country": "IT", "age": 90, "segments": ["x"], "e": [3.0, 3.0]}]:
        assert served.transform(user, ITEMS).tobytes() == schema.transform(user, ITEMS).tobytes()
    again = parse_config(config_of(features_table(served)))
    assert again.features.fingerprint_ == served.fingerprint_  # a fixed point


def test_strings_any_category_may_hold_survive_the_toml_text():
    words = ['say "hi"', "back\\slash", "tab\there", "new\nline", "del\x7f", "ünïcödé 🎲", ""]
    schema = FeatureSchema(action=[Categorical("w", vocabulary=words), Categorical("n",
                                   vocabulary=[3, -1, 2**62])], unit_ball=False).fit()
    served = parse_config(config_of(features_table(schema))).features
    assert served.action[0].vocabulary == words and served.action[1].vocabulary == [3, -1, 2**62]
    assert served.fingerprint_ == schema.fingerprint_  # nothing fitted: the same schema


def test_a_fitted_value_without_a_declared_form_has_no_table():
    schema = FeatureSchema(context=[Numeric("a"), Vector("e", length=2, scale="fit")],
                           unit_ball=False).fit([{"a": 1, "e": [0.0, 1.0]}])
    with pytest.raises(ValueError, match=r"^features_table: context\[1\] \('e'\) has "
                                         r"scale='fit' with no declared form"):
        features_table(schema)


def test_n_features_may_be_left_out_or_given_as_the_width():
    left_out = parse_config(small())
    assert left_out.policy.n_features == 5 == left_out.features.n_features_out_
    given = parse_config({**small(), "policy": {"name": "linucb", "n_features": 5}})
    assert given.policy.n_features == 5 and given.fingerprint() == left_out.fingerprint()
    assert left_out.features.norm_bound_ == 2.0
    X = left_out.features.transform({"age": 50}, [{"topic": "sports"}])
    np.testing.assert_array_equal(X, [[0.5, 0.0, 0.5, 0.0, 0.5]])  # age, topic, 1: / 2.0


def test_the_fingerprint_is_unchanged_without_features_and_holds_the_schema_with():
    config = parse_config(tomllib.loads(example_config()))
    assert config.features is None
    assert config.fingerprint() == EXAMPLE_FINGERPRINT
    with_features = parse_config(small())
    fingerprint = json.loads(with_features.fingerprint())
    assert fingerprint["features"] == with_features.features.fingerprint_
    other_bound = json.loads(parse_config(small(norm_bound=3.0)).fingerprint())
    assert other_bound["features"] != fingerprint["features"]
    assert {k: v for k, v in other_bound.items() if k != "features"} == \
        {k: v for k, v in fingerprint.items() if k != "features"}


def test_a_store_written_under_one_schema_refuses_another(tmp_path):
    url = f"sqlite:///{tmp_path / 'log.db'}"
    first = parse_config(small())
    vocabulary = [{"kind": "categorical", "name": "topic", "vocabulary": ["news", "sport"]}]
    second = parse_config(small(action=vocabulary))  # one vocabulary entry differs
    assert first.policy.n_features == second.policy.n_features
    store = open_store(url)
    try:
        check_store_config(first, store)
        check_store_config(parse_config(small()), store)  # the same schema: accepted
        with pytest.raises(StoreMismatchError, match="another policy config"):
            check_store_config(second, store)
    finally:
        store.close()


def test_every_policy_built_carries_the_schema_and_its_snapshot_too(tmp_path):
    config = parse_config(small())
    first, second = config.build_policy(), config.build_policy()
    assert first is not second
    for policy in (first, second):
        assert policy.feature_schema_.fingerprint_ == config.features.fingerprint_
    assert config.features.attached_  # frozen: it defines the model's columns
    with pytest.raises(ValueError, match="attached to a model"):
        config.features.fit(norm_bound=3.0)
    save(first, tmp_path / "model.glmb")
    restored = load(tmp_path / "model.glmb")
    assert restored.feature_schema_.fingerprint_ == config.features.fingerprint_
    plain = parse_config({"policy": {"name": "linucb", "n_features": 3}}).build_policy()
    assert getattr(plain, "feature_schema_", None) is None


def test_the_example_config_shows_a_features_table_that_parses_uncommented():
    text = example_config()
    assert parse_config(tomllib.loads(text)).features is None  # commented out, as shipped
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# [features]"))
    block = [line[2:] if line.startswith("# ") else line.lstrip("#") for line in lines[start:]]
    head = "\n".join(lines[:start]).replace("n_features = 10", "")
    config = parse_config(tomllib.loads(head + "\n" + "\n".join(block)))
    assert config.features.feature_names_out_[:5] == ["country=DE", "country=FR", "country=US",
                                                      "country=<other>", "age"]
    assert config.policy.n_features == config.features.n_features_out_ == 30
    assert config.features.norm_bound_ == 7.5
    X = config.features.transform({"country": "DE", "age": 100}, [{"topic": "news"}])
    assert np.linalg.norm(X) <= 1.0  # the example's norm_bound holds its largest row


# -- the environment ----------------------------------------------------------------------
#: a value for every [features] key: (the variable's text, its value in the declaration)
SAMPLES = {
    "format": ("1", 1),
    "context": ('[{kind = "numeric", name = "price", range = [0, 9]}]',
                [{"kind": "numeric", "name": "price", "missing": "refuse", "scale": None,
                  "range": [0.0, 9.0]}]),
    "action": ('[{kind = "boolean", name = "new"}]',
               [{"kind": "boolean", "name": "new", "missing": "refuse"}]),
    "interactions": ('[["context", "action"]]', [("context", "action")]),
    "intercept": ("false", False),
    "unit_ball": ("true", True),
    "unknown": ("ignore", "ignore"),
    "norm_bound": ("4.5", 4.5),
}
FILE = """[features]
unit_ball = false

[[features.context]]
kind = "numeric"
name = "age"

[[features.action]]
kind = "boolean"
name = "premium"
"""


def test_every_features_key_is_settable_from_the_environment(tmp_path):
    assert set(SAMPLES) == set(CONFIG_FIELDS["features"]), "give each key a sample here"
    path = tmp_path / "service.toml"
    path.write_text('[policy]\nname = "linucb"\n\n' + FILE)
    for key, (text, expected) in SAMPLES.items():
        environ = {env_variable("features", key): text}
        if key == "interactions":  # pairs of names the file declares
            environ[env_variable("features", "context")] = SAMPLES["context"][0]
            environ[env_variable("features", "action")] = SAMPLES["action"][0]
        if key in ("unit_ball", "norm_bound"):  # the one needs the other
            environ[env_variable("features", "norm_bound")] = SAMPLES["norm_bound"][0]
            environ[env_variable("features", "unit_ball")] = SAMPLES["unit_ball"][0]
        schema = load_config(path, environ).features
        held = schema.norm_bound_ if key == "norm_bound" else schema.declaration()[key]
        held = [tuple(pair) for pair in held] if key == "interactions" else held
        without = load_config(path, {}).features
        assert held == expected, key
        if key != "format":  # (1: the only format yet)
            assert held != (without.norm_bound_ if key == "norm_bound"
                            else without.declaration()[key]), key
    with pytest.raises(ConfigError, match=r"\[features\] norm_bound: FeatureSchema.fit: "
                                          r"norm_bound is the unit-ball factor"):
        load_config(path, {"GLMBANDITS_FEATURES_NORM_BOUND": "2.0"})  # unit_ball = false


def test_the_environment_makes_a_features_table_and_bad_variables_are_named(tmp_path):
    path = tmp_path / "service.toml"
    path.write_text('[policy]\nname = "linucb"\nn_features = 3\n')
    assert load_config(path, {}).features is None
    environ = {"GLMBANDITS_FEATURES_CONTEXT": '[{kind = "numeric", name = "age"}]',
               "GLMBANDITS_FEATURES_ACTION": '[{kind = "boolean", name = "new"}]',
               "GLMBANDITS_FEATURES_NORM_BOUND": "3"}
    config = load_config(path, environ)
    assert config.features.feature_names_out_ == ["age", "new", "intercept"]
    assert config.features.norm_bound_ == 3.0
    for variable, text, message in [
            ("GLMBANDITS_FEATURES_NORM_BOUND", "-1",
             r"\[features\] norm_bound must be a finite number > 0, got -1"),
            ("GLMBANDITS_FEATURES_INTERCEPT", "yes", r"\[features\] intercept must be true or "
                                                     r"false, got 'yes'"),
            ("GLMBANDITS_FEATURES_CONTEXT", "[{kind = ", r"\[features\] context must be an "
                                                        r"array of tables")]:
        with pytest.raises(ConfigError, match=f"^environment variable {variable}: {message}"):
            load_config(path, {**environ, variable: text})
    with pytest.raises(ConfigError, match=r"\[features\] context\[0\] kind: "):
        load_config(path, {**environ, "GLMBANDITS_FEATURES_CONTEXT": '[{kind = "text"}]'})


def test_the_config_reference_example_is_a_valid_config():
    """docs/service.md's [features] example parses as a service config (test_docs only
    parses its TOML)."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "service.md").read_text("utf-8")
    blocks = [block.split("```")[0] for block in page.split("```toml\n")[1:]]
    blocks = [block for block in blocks if "# n_features: the schema's width" in block]
    assert len(blocks) == 1
    config = parse_config(tomllib.loads(blocks[0]))
    assert config.policy.n_features == config.features.n_features_out_ == 25
    assert config.features.norm_bound_ == 3.0
