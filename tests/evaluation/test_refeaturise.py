"""Feature evaluation offline: a service's exported requests featurised again by a schema
(``glmbandits.evaluation.refeaturise``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from glmbandits.data import LoggedBanditData
from glmbandits.data.event_export import JoinedDecisions, write_joined_parquet
from glmbandits.evaluation.refeaturise import logged_from_requests
from glmbandits.features import FeatureSchema
from glmbandits.service.config import load_config
from glmbandits.service.export import export_parquet
from glmbandits.service.store import open_store
from named_log_kit import named_service_log


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, FeatureSchema, Path]:
    folder = tmp_path_factory.mktemp("named")
    config_path, db, _ = named_service_log(folder / "serve", rounds=30, dense=False)
    export_parquet(db, folder / "decisions.parquet")
    return folder / "decisions.parquet", load_config(config_path).features, folder


def _declared(schema: FeatureSchema, **changes) -> FeatureSchema:
    return FeatureSchema.from_declaration({**schema.declaration(), **changes})


def test_the_service_schema_gives_the_logged_contexts_bit_for_bit(exported) -> None:
    path, service_schema, _ = exported
    logged = LoggedBanditData.from_parquet(path)
    # the service's own (fitted) schema, and the same declaration fitted on the log
    for schema, norm_bound in ((service_schema, None),
                               (_declared(service_schema), service_schema.norm_bound_)):
        again = logged_from_requests(path, schema, norm_bound=norm_bound)
        assert schema.fingerprint_ == service_schema.fingerprint_
        assert again.n_rounds == logged.n_rounds == 30
        for t in range(logged.n_rounds):
            np.testing.assert_array_equal(again.contexts[t], logged.contexts[t])
        np.testing.assert_array_equal(again.actions, logged.actions)
        np.testing.assert_array_equal(again.rewards, logged.rewards)
        np.testing.assert_array_equal(again.propensities, logged.propensities)
        assert again.join_counts == logged.join_counts and again.name == logged.name


def test_another_schema_changes_d_and_keeps_the_rounds(exported) -> None:
    path, service_schema, _ = exported
    logged = LoggedBanditData.from_parquet(path)
    declaration = service_schema.declaration()
    # one field dropped: segments and its interactions leave
    smaller = _declared(service_schema, context=declaration["context"][:1], unknown="ignore")
    # and one more interaction than the service had (fitted scale and unit ball on the log)
    larger = _declared(service_schema,
                       interactions=[["context", "action"], ["topic", "words"]])
    sizes = {}
    for label, schema in (("smaller", smaller), ("larger", larger)):
        data = logged_from_requests(path, schema, norm_bound=None)
        sizes[label] = data.n_features
        assert data.n_features == schema.n_features_out_
        np.testing.assert_array_equal(data.actions, logged.actions)
        np.testing.assert_array_equal(data.rewards, logged.rewards)
        np.testing.assert_array_equal(data.n_actions, logged.n_actions)
        norms = np.concatenate([np.linalg.norm(data.contexts[t], axis=1)
                                for t in range(data.n_rounds)])
        assert norms.max() <= 1.0 + 1e-12  # the unit-ball factor fitted on the log
    assert sizes["smaller"] < service_schema.n_features_out_ < sizes["larger"]
    assert "topic=news*words" in larger.feature_names_out_
    assert not any(name.startswith("segments") for name in smaller.feature_names_out_)


def test_an_unfitted_schema_is_fitted_on_the_log_and_a_refusal_changes_nothing(
        exported) -> None:
    path, service_schema, folder = exported
    fitting = _declared(service_schema, action=[
        {**service_schema.declaration()["action"][0], "vocabulary": "fit"},
        service_schema.declaration()["action"][1]])
    data = logged_from_requests(path, fitting, norm_bound=3.0)
    assert fitting.norm_bound_ == 3.0
    assert [n for n in fitting.feature_names_out_ if n.startswith("topic=")] == [
        "topic=news", "topic=sport", "topic=tech", "topic=<other>"]
    assert data.n_features == fitting.n_features_out_
    # a schema that refuses a logged request: named, and the schema is left unfitted
    strict = _declared(service_schema, context=service_schema.declaration()["context"][1:])
    with pytest.raises(ValueError, match=r"row 0 \(decision 'd0'\).*unknown feature 'country'"):
        logged_from_requests(path, strict, norm_bound=3.0)
    assert not hasattr(strict, "fingerprint_")
    fitted = _declared(service_schema, context=service_schema.declaration()["context"][1:])
    fitted.fit(norm_bound=3.0)  # every value declared: fitted on nothing, then refused
    before = fitted.fingerprint_
    with pytest.raises(ValueError, match=r"row 0 \(decision 'd0'\): FeatureSchema.transform: "
                                         r".*unknown feature 'country'"):
        logged_from_requests(path, fitted)
    assert fitted.fingerprint_ == before
    with pytest.raises(ValueError, match="norm_bound declares the unit-ball factor"):
        logged_from_requests(path, service_schema, norm_bound=3.0)
    with pytest.raises(TypeError, match="schema must be a glmbandits.features.FeatureSchema"):
        logged_from_requests(path, service_schema.declaration())  # type: ignore[arg-type]


def test_a_dense_log_is_refused(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'log.db'}")
    from glmbandits.data.event_records import Event

    for t in range(3):
        store.append(Event("decision", f"d{t}", float(t), contexts=np.eye(2), action=0,
                           probabilities=np.array([0.5, 0.5]), propensity=0.5,
                           model_version=0))
        store.append(Event("reward", f"d{t}", t + 0.5, reward=1.0, status="learned"))
    store.commit()
    store.close()
    export_parquet(f"sqlite:///{tmp_path / 'log.db'}", tmp_path / "dense.parquet")
    schema = FeatureSchema.from_declaration({"context": [{"kind": "numeric", "name": "x"}]})
    with pytest.raises(ValueError, match="the log's decisions are dense.*only their logged "
                                         "contexts can be replayed"):
        logged_from_requests(tmp_path / "dense.parquet", schema)


def test_unresolved_catalogue_ids_are_refused(exported, tmp_path: Path) -> None:
    _, service_schema, folder = exported
    store = open_store(f"sqlite:///{folder / 'serve' / 'log.db'}")
    try:  # the joined decisions as logged, without the export's resolution of ids
        joined = JoinedDecisions.from_events(store.events())
    finally:
        store.close()
    path = write_joined_parquet(joined, tmp_path / "raw.parquet")
    assert "action_ids" in json.loads(joined.requests[0])
    with pytest.raises(ValueError, match=r"row 0 \(decision 'd0'\).*catalogue id.*glmbandits "
                                         "export"):
        logged_from_requests(path, service_schema)
