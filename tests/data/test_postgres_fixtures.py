"""PostgreSQL event logs written by older code still open, read and join as they did.

``fixtures/postgres_v2.sql`` is a schema written by the code before the logs were
consolidated (``fixtures/make_postgres_fixtures.py`` says how): a policy's
``PostgresEventLog`` (schema version 2) and a decision service's ``PostgresStore``
(version 1) side by side; ``fixtures/postgres_v2.json`` holds what that code read.
Each test restores it into the fresh schema of the ``postgres_url`` fixture.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")

from glmbandits.data import PostgresEventLog  # noqa: E402
from glmbandits.data.event_export import JoinedDecisions  # noqa: E402
from glmbandits.data.sqlite_log import ROW_COLUMNS  # noqa: E402
from glmbandits.service.events import Event  # noqa: E402
from glmbandits.service.export import joined_decisions  # noqa: E402
from glmbandits.service.postgres_store import PostgresStore  # noqa: E402
from test_event_log_fixtures import _as_expected  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = json.loads((FIXTURES / "postgres_v2.json").read_text())


def _restore(url: str) -> None:
    schema = url.rsplit("%3D", 1)[1]
    sql = ((FIXTURES / "postgres_v2.sql").read_text()
           .replace("CREATE SCHEMA __SCHEMA__;", "").replace("__SCHEMA__", schema))
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(sql)  # no parameters: the simple protocol runs every statement


def test_an_old_postgres_event_log_reads_joins_and_takes_writes(postgres_url) -> None:
    _restore(postgres_url)
    expected = EXPECTED["event_log"]
    with PostgresEventLog(postgres_url) as log:
        assert [[e.kind, e.sequence, e.decision_id, e.status] for e in log.events()] == \
            expected["events"]
        assert _as_expected(JoinedDecisions.from_log(log)) == expected["join"]
        assert log.counts() == expected["counts"]
        log.record_reward("p5", 20.0, 0.0, "learned")
        assert JoinedDecisions.from_log(log).reward_sources[5] == "learned"
        assert log.schema_version == 4
    PostgresStore(postgres_url).close()  # the service's table, migrated too
    # migrated in place to the one PostgreSQL log's shape, the service's table's
    with psycopg.connect(postgres_url) as connection:
        columns = [row[0] for row in connection.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND table_name = %s", ("glmbandits_events",))]
        service = [row[0] for row in connection.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND table_name = %s", ("glmbandits_service_events",))]
    assert sorted(columns) == sorted(service) == sorted(("seq",) + ROW_COLUMNS)


def test_an_old_postgres_service_store_reads_joins_and_takes_writes(postgres_url) -> None:
    _restore(postgres_url)
    expected = EXPECTED["service_store"]
    store = PostgresStore(postgres_url)
    try:
        assert [event.to_json() for event in store.events()] == expected["events"]
        assert store.totals() == expected["totals"]
        assert _as_expected(joined_decisions(store)) == expected["join"]
        seq, data = store.latest_snapshot()
        assert [seq, data.decode()] == expected["snapshot"]
        assert store.get_meta("fixture") == expected["meta"]
        store.append(Event("reward", "s1", 7.0, reward=1.0, status="late"))
        assert store.commit() > expected["events"][-1]["seq"]
        assert store.totals()["rewards_late"] == 1
    finally:
        store.close()
