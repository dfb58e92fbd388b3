"""Write a service's event log as a Parquet file (``glmbandits export``)."""

from __future__ import annotations

from typing import Any

from .store import open_store

__all__ = ["export_parquet", "events_table"]

_BATCH = 10_000


def events_table(events: Any) -> Any:
    """A pyarrow Table of events: one row an event, the columns of :class:`Event`."""
    import pyarrow as pa

    schema = pa.schema([
        ("seq", pa.int64()), ("kind", pa.string()), ("decision_id", pa.string()),
        ("timestamp", pa.float64()), ("contexts", pa.list_(pa.list_(pa.float64()))),
        ("excluded", pa.list_(pa.int64())), ("action", pa.int64()),
        ("probabilities", pa.list_(pa.float64())), ("propensity", pa.float64()),
        ("model_version", pa.int64()), ("reward", pa.float64()), ("status", pa.string()),
        ("older_than", pa.float64()),
        ("policy_action", pa.int64()),  # shadow decisions (their propensity is null)
        ("tag", pa.int64())])
    columns: dict[str, list] = {name: [] for name in schema.names}
    for event in events:
        for name in schema.names:
            value = getattr(event, name)
            if name in ("contexts", "probabilities") and value is not None:
                value = value.tolist()
            elif name == "excluded" and value is not None:
                value = list(value)
            columns[name].append(value)
    return pa.table(columns, schema=schema)


def export_parquet(db: str, path: str, *, after: int = 0) -> int:
    """Write the events of the store at ``db`` (seq > ``after``) to ``path``; returns the count.

    Examples
    --------
    >>> import os, tempfile
    >>> from glmbandits.service.events import Event
    >>> folder = tempfile.mkdtemp()
    >>> store = open_store("sqlite:///" + os.path.join(folder, "log.db"))
    >>> store.append(Event("reward", "a", 1.0, reward=1.0, status="late")); _ = store.commit()
    >>> store.close()
    >>> export_parquet("sqlite:///" + os.path.join(folder, "log.db"),
    ...                os.path.join(folder, "log.parquet"))
    1
    """
    import pyarrow.parquet as pq

    store = open_store(db)
    try:
        writer = None
        count = 0
        batch: list = []
        try:
            for event in store.events(after=after):
                batch.append(event)
                if len(batch) >= _BATCH:
                    table = events_table(batch)
                    writer = writer or pq.ParquetWriter(path, table.schema)
                    writer.write_table(table)
                    count += len(batch)
                    batch = []
            table = events_table(batch)
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
            count += len(batch)
        finally:
            if writer is not None:
                writer.close()
        return count
    finally:
        store.close()
