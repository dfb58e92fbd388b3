"""Write a service's event log as a Parquet file (``glmbandits export``).

Two layouts:

* **decisions** (the default): one row per decision with the reward the
  policy learned from it, the format of :func:`glmbandits.data.export_parquet`
  (the same joining rules, :class:`~glmbandits.data.event_export.JoinedDecisions`),
  which :meth:`LoggedBanditData.from_parquet`, ``glmbandits replay --log
  FILE.parquet`` and the offline estimators read; a named decision's ``request``
  has its catalogue ids resolved to the features of that point of the log
  (:func:`resolved_requests`), so ``glmbandits replay --features SCHEMA``
  featurises it again;
* **events** (``events=True``, ``glmbandits export --events``): one row per
  event, every column of :class:`~glmbandits.service.events.Event`, for analysts
  who want the raw log (retries, duplicate and late rewards, expiry sweeps,
  catalogue changes; ``request`` as the JSON text logged).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..data.event_export import JoinedDecisions, write_joined_parquet
from ..data.vocabulary import CATALOGUE, DECISION
from .catalogue import ActionCatalogue, UnknownActionError
from .events import Event
from .store import open_store

__all__ = ["export_parquet", "events_table", "joined_decisions", "resolved_requests"]

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
        ("tag", pa.int64()),
        ("request", pa.string())])  # named decides and catalogue changes: JSON text
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


def resolved_requests(events: Iterable[Event]) -> Iterator[Event]:
    """The events of a log, each named decision's request made self-contained.

    Walks the log in order keeping the action catalogue (each ``catalogue`` event
    applied, :class:`~glmbandits.service.catalogue.ActionCatalogue`), and gives every
    decision whose request names its actions by catalogue id (``action_ids``) the
    request ``{"context", "actions": [{"id", "features"}, ...], ...}`` with the features
    those actions had at that point of the log (its other keys, ``excluded_ids`` and
    ``default_action_id``, kept). Inline requests, dense decisions and every other event
    pass unchanged. So a joined export alone is enough to featurise every decision again
    (:func:`glmbandits.evaluation.refeaturise.logged_from_requests`).

    Raises
    ------
    ValueError
        A decision naming an id the catalogue does not hold at that point (a damaged
        log: the service refuses such a decide), naming the decision and its ``seq``.

    Examples
    --------
    >>> put = Event("catalogue", None, 0.0, seq=1, status="put",
    ...             request='{"features":{"topic":"news"},"id":"a1"}')
    >>> decision = Event("decision", "r1", 1.0, seq=2,
    ...                  request='{"action_ids":["a1"],"context":{"age":30}}')
    >>> [e.request for e in resolved_requests([put, decision])][1]
    '{"actions":[{"features":{"topic":"news"},"id":"a1"}],"context":{"age":30}}'
    """
    catalogue = ActionCatalogue()
    for event in events:
        if event.kind == CATALOGUE:
            catalogue.apply(event)
        elif event.kind == DECISION and event.request is not None:
            body = json.loads(event.request)
            ids = body.pop("action_ids", None) if isinstance(body, dict) else None
            if ids is not None:
                try:
                    features = catalogue.features(ids)
                except UnknownActionError as error:
                    raise ValueError(f"export: decision {event.decision_id!r} (seq "
                                     f"{event.seq}) names {error}") from None
                body["actions"] = [{"id": i, "features": f} for i, f in zip(ids, features)]
                event = dataclasses.replace(event, request=json.dumps(
                    body, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
        yield event


def joined_decisions(store: Any, *, include_defaults: bool = True) -> JoinedDecisions:
    """Every decision of a service store joined with the reward the policy learned from it;
    a named decision's request with its catalogue ids resolved (:func:`resolved_requests`)."""
    return JoinedDecisions.from_events(resolved_requests(store.events()),
                                       include_defaults=include_defaults, source=store.url)


def export_parquet(db: str, path: str | Path, *, events: bool = False, after: int = 0,
                   include_defaults: bool = True) -> int:
    """Write the log of the store at ``db`` to ``path``; returns the rows written.

    Parameters
    ----------
    db : str
        The service's database URL (``sqlite:///service.db``).
    path : str or Path
        The Parquet file to write.
    events : bool, default False
        False: one row per decision with its joined reward (for ``glmbandits
        replay`` and :meth:`LoggedBanditData.from_parquet`). True: one row per
        event with ``seq > after``.
    after : int, default 0
        With ``events=True`` only: skip the events up to this sequence number.
    include_defaults : bool, default True
        Decisions layout: keep the default rewards of expired decisions.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from glmbandits.data import LoggedBanditData
    >>> folder = tempfile.mkdtemp()
    >>> store = open_store("sqlite:///" + os.path.join(folder, "log.db"))
    >>> store.append(Event("decision", "a", 1.0, contexts=np.eye(2), action=1,
    ...                    probabilities=np.array([0.5, 0.5]), propensity=0.5, model_version=0))
    >>> store.append(Event("reward", "a", 2.0, reward=1.0, status="learned"))
    >>> store.append(Event("reward", "a", 3.0, reward=0.0, status="duplicate"))
    >>> _ = store.commit(); store.close()
    >>> db = "sqlite:///" + os.path.join(folder, "log.db")
    >>> export_parquet(db, os.path.join(folder, "decisions.parquet"))
    1
    >>> LoggedBanditData.from_parquet(os.path.join(folder, "decisions.parquet")).rewards.tolist()
    [1.0]
    >>> export_parquet(db, os.path.join(folder, "events.parquet"), events=True)
    3
    """
    if not events and after:
        raise ValueError(f"export_parquet: after applies to events=True only (a decision "
                         f"joins rewards logged later), got after={after!r}")
    if not events:
        store = open_store(db)
        try:
            joined = joined_decisions(store, include_defaults=include_defaults)
        finally:
            store.close()
        write_joined_parquet(joined, path, include_defaults=include_defaults)
        return len(joined)
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
