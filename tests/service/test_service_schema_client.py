"""Clients built from the OpenAPI document alone reach the core.

``test_service_fuzz.py`` sends anything (positive and negative data) and checks that
nothing is a 5xx. Here the bodies are valid by the schema (schemathesis' positive mode:
hypothesis strategies built from the document the server serves, nothing hand-written), so
they must be *accepted*: a schema that says less than the server enforces (row length, K,
the reward's domain, the id's alphabet) would make these requests 422 and the fuzzer would
never reach the policy. And a client generated from the document (schemathesis, which
builds each request from the document's path, method, media type and body schema, found by
``operationId``, and validates every answer against it) decides and rewards unedited.
"""

from __future__ import annotations

from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.generation.modes import GenerationMode

from servicekit import HEADERS

pytestmark = pytest.mark.slow

#: The fraction of valid bodies that must be answered 2xx (the rest: the one rule JSON
#: Schema cannot state, an excluded row at or above the request's K, or every row excluded).
MIN_ACCEPTED = 0.8
_SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                     phases=[Phase.explicit, Phase.generate],
                     suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def schema(server):
    return schemathesis.openapi.from_url(server.url + "/v1/openapi.json")


def _operation(schema, operation_id: str):
    operation = schema.find_operation_by_id(operation_id)
    assert operation is not None, operation_id
    return operation


def _json_cases(operation):
    """Positive cases with a JSON body (once test_service_fuzz.py has registered its .npy
    strategy, schemathesis also draws .npy bodies for the decide operation)."""
    return operation.as_strategy(generation_mode=GenerationMode.POSITIVE,
                                 media_type="application/json").filter(
        lambda case: isinstance(case.body, dict))


def test_valid_decide_bodies_are_accepted(schema, server):
    statuses: Counter = Counter()
    refusals: list[tuple] = []
    decide = _operation(schema, "decide")

    @given(case=_json_cases(decide))
    @_SETTINGS
    def run(case) -> None:
        if case.body.get("decision_id") is not None:  # hypothesis reuses values: a reused
            number = f"{sum(statuses.values())}:"    # id with other contexts is a 409
            case.body["decision_id"] = (number + case.body["decision_id"])[:256]
        response = case.call(base_url=server.url, headers=HEADERS, timeout=30)
        assert response.status_code < 500, (case.body, response.text)
        statuses[response.status_code] += 1
        if response.status_code >= 300:
            refusals.append((response.status_code, response.json()["field"], case.body))

    run()
    accepted = sum(n for status, n in statuses.items() if 200 <= status < 300)
    print("decide:", dict(statuses))
    assert accepted >= MIN_ACCEPTED * sum(statuses.values()), (statuses, refusals[:5])
    for status, field, body in refusals:  # only the rule the schema cannot say
        assert status == 422 and field.startswith("excluded"), (status, field, body)


def test_valid_reward_bodies_are_accepted(schema, server):
    statuses: Counter = Counter()
    reward = _operation(schema, "reward")

    @given(case=_json_cases(reward))
    @_SETTINGS
    def run(case) -> None:
        # the decision the reward names (a 409 if an earlier example made it: it exists)
        decided = server.client.post("/v1/decide", json={
            "decision_id": case.body["decision_id"], "contexts": [[0.1, 0.2, 0.3]]})
        assert decided.status_code in (200, 409), decided.text
        response = case.call(base_url=server.url, headers=HEADERS, timeout=30)
        assert response.status_code < 500, (case.body, response.text)
        statuses[response.status_code] += 1

    run()
    print("reward:", dict(statuses))
    assert statuses[200] >= MIN_ACCEPTED * sum(statuses.values()), statuses


def test_a_client_generated_from_the_schema_decides_and_rewards_unedited(schema, server):
    """Each request is built by schemathesis from the document (the user supplies only the
    arguments: contexts and an id drawn from the schema, the decision's id for the reward)
    and each answer is checked by every one of its response checks (status documented,
    content type, headers, body schema, valid data accepted)."""
    decide, reward = _operation(schema, "decide"), _operation(schema, "reward")
    decisions: list[str] = []

    @given(asked=_json_cases(decide).filter(  # no rule that JSON Schema cannot state
               lambda case: not case.body.get("excluded")),
           answered=_json_cases(reward))
    @settings(max_examples=25, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    def run(asked, answered) -> None:
        asked.body["decision_id"] = f"client-{len(decisions)}"  # a fresh id: never a 409
        response = asked.call_and_validate(base_url=server.url, headers=HEADERS, timeout=30)
        assert response.status_code == 200, response.text
        decision = response.json()
        assert 0 <= decision["action"] < len(asked.body["contexts"])
        answered.body["decision_id"] = decision["decision_id"]
        response = answered.call_and_validate(base_url=server.url, headers=HEADERS,
                                              timeout=30)
        assert response.status_code == 200 and response.json()["status"] == "learned"
        decisions.append(decision["decision_id"])

    run()
    assert len(decisions) >= 10
