"""Reading an event log for evaluation: the decision–reward join and the Parquet export.

:class:`JoinedDecisions` is a whole log joined by the one join
(:mod:`.event_join`: which reward of a decision counts), for
:meth:`glmbandits.data.LoggedBanditData.from_event_log` and for :func:`export_parquet`. pyarrow is imported inside the Parquet functions only
(the ``data`` extra).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .event_join import REWARD_SOURCES, DecisionRewardJoin
from .event_log import EventLog
from .event_records import SCHEMA_VERSION, Event

__all__ = ["JoinedDecisions", "export_parquet", "write_joined_parquet", "read_parquet_columns"]


# -- joining ----------------------------------------------------------------------
@dataclass
class JoinedDecisions:
    """Every logged decision, in sequence order, with the reward the policy learned from it.

    Joined by :class:`~glmbandits.data.event_join.DecisionRewardJoin` (the joining
    rules: a ``"learned"`` reward, the ``"sum"`` or the ``"default"`` reward of an
    expiry; a default is kept only when ``include_defaults``); a dropped decision,
    or one still pending, has no reward (NaN, source None).

    Attributes
    ----------
    sequence, decision_ids, timestamps, contexts, probabilities, actions, propensities,
    model_versions, rewards, reward_sources, policy_actions, requests
        One entry per decision (``contexts``/``probabilities`` are lists of arrays).
        A shadow decision has propensity NaN (unknown: the caller chose ``action``)
        and its ``policy_actions`` entry is the policy's own choice (-1 for a live
        decision); ``requests`` holds a named decision's request as logged (JSON
        text), None for a dense one. The join reads decisions, rewards and expiries
        only (a service's ``retry``, ``expire`` and ``catalogue`` events are skipped).
    counts : dict
        ``decisions``, ``learned``, ``sum``, ``default`` (joined defaults, whether
        kept or not), ``dropped``, ``pending``, ``duplicate_rewards``,
        ``late_rewards``, ``orphan_rewards`` (rewards or expiries naming no logged
        decision), ``with_reward`` (rows that have a usable reward), ``shadow``
        (shadow decisions, whatever their reward).
    """

    sequence: np.ndarray
    decision_ids: list[str]
    timestamps: np.ndarray
    contexts: list[np.ndarray]
    probabilities: list[np.ndarray]
    actions: np.ndarray
    propensities: np.ndarray
    model_versions: np.ndarray
    rewards: np.ndarray
    reward_sources: list[str | None]
    counts: dict[str, int]
    source: str = "event log"
    policy_actions: np.ndarray | None = None
    requests: list[str | None] | None = None

    @classmethod
    def from_events(cls, events: Iterator[Event] | list[Event], *, include_defaults: bool = True,
                    source: str = "event log") -> "JoinedDecisions":
        if not isinstance(include_defaults, bool):
            raise TypeError(f"JoinedDecisions: include_defaults must be a bool, got "
                            f"{type(include_defaults).__name__}")
        join = DecisionRewardJoin().extend(events)
        decisions, rewards, sources = join.columns()
        counts = dict.fromkeys(("decisions", "learned", "sum", "default", "dropped", "pending",
                                "duplicate_rewards", "late_rewards", "orphan_rewards",
                                "with_reward", "shadow"), 0)
        counts.update(join.counts)
        for source_name in sources:
            counts["pending" if source_name is None else source_name] += 1
        counts["decisions"] = len(decisions)
        if not include_defaults:
            sources = [None if s == "default" else s for s in sources]
            rewards = [math.nan if s is None else r for s, r in zip(sources, rewards)]
        sources = [None if s == "dropped" else s for s in sources]
        counts["with_reward"] = sum(s is not None for s in sources)
        counts["shadow"] = sum(e.policy_action is not None for e in decisions)
        return cls(
            sequence=np.array([e.sequence for e in decisions], dtype=np.int64),
            # a decision event has its id and arrays (Event types them optional)
            decision_ids=[e.decision_id for e in decisions],  # type: ignore[misc]
            timestamps=np.array([e.timestamp for e in decisions], dtype=np.float64),
            contexts=[e.contexts for e in decisions],  # type: ignore[misc]
            probabilities=[e.probabilities for e in decisions],  # type: ignore[misc]
            actions=np.array([e.action for e in decisions], dtype=np.int64),
            propensities=np.array([math.nan if e.propensity is None else e.propensity
                                   for e in decisions], dtype=np.float64),
            model_versions=np.array([e.model_version for e in decisions], dtype=np.int64),
            rewards=np.array(rewards, dtype=np.float64),
            reward_sources=sources, counts=counts, source=source,
            policy_actions=np.array([-1 if e.policy_action is None else e.policy_action
                                     for e in decisions], dtype=np.int64),
            requests=[e.request for e in decisions])

    @classmethod
    def from_log(cls, log: Any, *, include_defaults: bool = True,
                 owner: str = "JoinedDecisions.from_log") -> "JoinedDecisions":
        """Join an open event log, or the SQLite one at a path (opened read-only, then closed).

        An open log is an :class:`EventLog` or any object with the same ``events()``
        reader (e.g. :class:`~glmbandits.data.postgres_event_log.PostgresEventLog`).
        """
        if isinstance(log, EventLog) or callable(getattr(log, "events", None)):
            return cls.from_events(log.events(), include_defaults=include_defaults,
                                   source=str(getattr(log, "path", type(log).__name__)))
        if isinstance(log, (str, Path)):
            with EventLog(log, readonly=True) as opened:
                return cls.from_events(opened.events(), include_defaults=include_defaults,
                                       source=str(opened.path))
        raise TypeError(f"{owner}: log must be an event log (EventLog, PostgresEventLog), str "
                        "or Path, got "
                        f"{type(log).__name__}")

    def __len__(self) -> int:
        return len(self.decision_ids)


# -- Parquet export ---------------------------------------------------------------------
def _require_pyarrow(owner: str) -> Any:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise ImportError(f"{owner}: Parquet needs pyarrow, which is not installed; install "
                          "the data extra: pip install 'glmbandits[data]' (or pip install "
                          "'pyarrow>=14')") from None
    return pyarrow


def export_parquet(log: EventLog | str | Path, path: str | Path, *,
                   include_defaults: bool = True) -> Path:
    """Write an event log as Parquet: one row per decision, with its joined reward.

    Columns: ``sequence``, ``decision_id``, ``timestamp``, ``n_actions``,
    ``n_features``, ``contexts`` (list<list<double>>, K × d), ``probabilities``
    (list<double>), ``action``, ``propensity``, ``policy_action``, ``model_version``,
    ``reward`` (null without one), ``reward_source`` ("learned", "sum", "default"
    or null) and ``request`` (a named decision's request as logged, JSON text; null
    for a dense one), joined as :class:`JoinedDecisions` says. The file's metadata holds
    the join counts. Needs pyarrow (the ``data`` extra), imported here only.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> from glmbandits.data import LoggedBanditData
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     folder = pathlib.Path(folder)
    ...     with EventLog(folder / "events.sqlite") as log:
    ...         log.record_decision("a", 0.0, np.eye(2), [0.5, 0.5], 1, 0.5, 0)
    ...         log.record_reward("a", 1.0, 1.0, "learned")
    ...         parquet = export_parquet(log, folder / "events.parquet")
    ...     LoggedBanditData.from_parquet(parquet).rewards.tolist()
    [1.0]
    """
    owner = "export_parquet"
    _require_pyarrow(owner)
    joined = JoinedDecisions.from_log(log, include_defaults=include_defaults,
                                      owner=owner)
    return write_joined_parquet(joined, path, include_defaults=include_defaults)


def write_joined_parquet(joined: JoinedDecisions, path: str | Path, *,
                         include_defaults: bool = True) -> Path:
    """Write joined decisions in :func:`export_parquet`'s format (one row per decision).

    The writer behind :func:`export_parquet`, for any source of joined decisions
    (the decision service's log, :mod:`glmbandits.service.export`, uses it too),
    so that :meth:`~glmbandits.data.LoggedBanditData.from_parquet` and
    ``glmbandits replay --log FILE.parquet`` read every export the same way.
    """
    pa = _require_pyarrow("write_joined_parquet")
    import pyarrow.parquet as pq

    n = len(joined)
    K = np.array([p.shape[0] for p in joined.probabilities], dtype=np.int64)
    d = np.array([X.shape[1] for X in joined.contexts], dtype=np.int64)
    outer = np.concatenate([[0], np.cumsum(K)]).astype(np.int32)
    inner = np.concatenate([[0], np.cumsum(np.repeat(d, K))]).astype(np.int32)
    values = (np.concatenate([X.ravel() for X in joined.contexts]) if n
              else np.zeros(0, np.float64))
    flat_p = np.concatenate(joined.probabilities) if n else np.zeros(0, np.float64)
    contexts = pa.ListArray.from_arrays(
        pa.array(outer), pa.ListArray.from_arrays(pa.array(inner), pa.array(values)))
    probabilities = pa.ListArray.from_arrays(pa.array(outer), pa.array(flat_p))
    has_reward = np.array([s is not None for s in joined.reward_sources], dtype=bool)
    policy_actions = (np.full(n, -1, dtype=np.int64) if joined.policy_actions is None
                      else joined.policy_actions)
    requests = [None] * n if joined.requests is None else joined.requests
    table = pa.table({
        "sequence": pa.array(joined.sequence, pa.int64()),
        "decision_id": pa.array(joined.decision_ids, pa.string()),
        "timestamp": pa.array(joined.timestamps, pa.float64()),
        "n_actions": pa.array(K, pa.int64()),
        "n_features": pa.array(d, pa.int64()),
        "contexts": contexts,
        "probabilities": probabilities,
        "action": pa.array(joined.actions, pa.int64()),
        "propensity": pa.array(joined.propensities, pa.float64(),
                               mask=np.isnan(joined.propensities)),  # null: shadow
        "policy_action": pa.array(policy_actions, pa.int64(),
                                  mask=policy_actions < 0),  # null: live
        "model_version": pa.array(joined.model_versions, pa.int64()),
        "reward": pa.array(joined.rewards, pa.float64(), mask=~has_reward),
        "reward_source": pa.array(joined.reward_sources, pa.string()),
        "request": pa.array(requests, pa.string()),  # null: a dense decision (version 3)
    })
    metadata = {b"glmbandits.event_log": json.dumps(
        {"schema_version": SCHEMA_VERSION, "source": joined.source,
         "include_defaults": include_defaults, "counts": joined.counts}).encode()}
    table = table.replace_schema_metadata(metadata)
    path = Path(path)
    pq.write_table(table, path)
    return path


#: The columns :func:`read_parquet_columns` needs (``policy_action`` too, when present:
#: version 2; ``request`` when present: version 3).
PARQUET_COLUMNS = ("sequence", "decision_id", "n_actions", "n_features", "contexts",
                   "probabilities", "action", "propensity", "reward", "reward_source")


def _export_info(table: Any, where: str) -> dict[str, Any]:
    """The checked ``glmbandits.event_log`` metadata of an export (schema version, counts)."""
    raw = (table.schema.metadata or {}).get(b"glmbandits.event_log")
    if raw is None:
        raise ValueError(f"{where}: the file was not written by "
                         "glmbandits.data.export_parquet (no glmbandits.event_log metadata)")
    try:
        info = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"{where}: the glmbandits.event_log metadata is not valid JSON "
                         f"({error})") from None
    if not isinstance(info, dict):
        raise ValueError(f"{where}: the glmbandits.event_log metadata must be a JSON object, "
                         f"got {type(info).__name__}")
    version = info.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or not (
            1 <= version <= SCHEMA_VERSION):
        raise ValueError(f"{where}: the export has schema version {version!r}; this "
                         f"glmbandits reads 1 to {SCHEMA_VERSION}")
    counts = info.get("counts", {})
    if not isinstance(counts, dict) or not all(
            isinstance(key, str) and isinstance(value, int) and not isinstance(value, bool)
            for key, value in counts.items()):
        raise ValueError(f"{where}: the glmbandits.event_log metadata 'counts' must map names "
                         f"to counts (integers), got {str(counts)[:80]}")
    return info


def _check_one_per_action(column: Any, name: str, unit: str, K: np.ndarray,
                          where: str) -> None:
    """Refuse a list column whose row i does not hold ``K[i]`` entries (one per action)."""
    import pyarrow.compute as pc

    lengths = np.asarray(pc.list_value_length(column), dtype=np.int64)
    if not np.array_equal(lengths, K):
        row = int(np.argmax(lengths != K))
        raise ValueError(f"{where}: row {row}: {name!r} has {lengths[row]} {unit} but "
                         f"'n_actions' is {K[row]}")


def _parquet_column(table: Any, name: str, kind: str, where: str, *,
                    nullable: bool = False) -> Any:
    """Column ``name`` as one array, of ``kind`` ("integers", "numbers", "strings", "a list
    of numbers", "a list of lists of numbers"), with nulls only where ``nullable``."""
    import pyarrow as pa

    types = pa.types

    def is_list(t: Any) -> bool:
        return bool(types.is_list(t) or types.is_large_list(t) or types.is_fixed_size_list(t))

    def is_number(t: Any) -> bool:
        return bool(types.is_integer(t) or types.is_floating(t))

    found = len(table.schema.get_all_field_indices(name))
    if found == 0:
        raise ValueError(f"{where}: column {name!r} is missing (an export of "
                         f"glmbandits.data.export_parquet has {list(PARQUET_COLUMNS)})")
    if found > 1:
        raise ValueError(f"{where}: column {name!r} appears {found} times")
    t = table.schema.field(name).type
    ok = {"integers": types.is_integer,
          "numbers": is_number,
          "strings": lambda t: types.is_string(t) or types.is_large_string(t),
          "a list of numbers": lambda t: is_list(t) and is_number(t.value_type),
          "a list of lists of numbers": lambda t: (is_list(t) and is_list(t.value_type)
                                                   and is_number(t.value_type.value_type)),
          }[kind](t)
    if not ok:
        verb = "be" if kind.startswith("a ") else "hold"
        raise ValueError(f"{where}: column {name!r} must {verb} {kind}, got {t}")
    array = table.column(name).combine_chunks()
    if not nullable and array.null_count:
        raise ValueError(f"{where}: column {name!r} must have no nulls, got {array.null_count}")
    return array


def _flat_numbers(array: Any) -> np.ndarray:
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=np.float64)


def read_parquet_columns(path: str | Path, owner: str) -> dict[str, Any]:
    """The columns of a file written by :func:`export_parquet`, decoded to numpy.

    Every column the reader uses is checked first (present once, of its type, nulls only
    where the export writes them, lists whose lengths agree with ``n_actions`` and
    ``n_features``); a file that fails is refused with a ValueError naming the file, the
    column and, where it applies, the row. ``request`` is a list of JSON texts or None
    (all None for a file of version 1 or 2, which has no such column).
    """
    pa = _require_pyarrow(owner)
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    path = Path(path)
    where = f"{owner}({str(path)!r})"
    if path.is_dir():
        raise ValueError(f"{where}: path must be a Parquet file, got a directory")
    if not path.exists():
        raise FileNotFoundError(f"{where}: no such file")
    try:  # one file (not a dataset: no folder scan, a repeated column name is read as such)
        with pq.ParquetFile(path) as parquet:
            table = parquet.read()
    except (OSError, ValueError, pa.ArrowException) as error:
        raise ValueError(f"{where}: cannot read the Parquet file: {error}") from None
    info = _export_info(table, where)
    n = table.num_rows

    def integers(name: str) -> np.ndarray:
        array = _parquet_column(table, name, "integers", where)
        return np.asarray(array.to_numpy(zero_copy_only=False), dtype=np.int64)

    sequence = integers("sequence")
    decision_ids = _parquet_column(table, "decision_id", "strings", where).to_pylist()
    K = integers("n_actions")
    d = integers("n_features")
    for name, values in (("n_actions", K), ("n_features", d)):
        if n and values.min() < 1:
            row = int(np.argmax(values < 1))
            raise ValueError(f"{where}: column {name!r} must be >= 1, got {values[row]} in "
                             f"row {row}")
    contexts_column = _parquet_column(table, "contexts", "a list of lists of numbers", where)
    rows = contexts_column.flatten()
    values = rows.flatten()
    if rows.null_count or values.null_count:
        raise ValueError(f"{where}: column 'contexts' must have no nulls, got "
                         f"{rows.null_count + values.null_count} inside its lists")
    _check_one_per_action(contexts_column, "contexts", "rows", K, where)
    widths = np.asarray(pc.list_value_length(rows), dtype=np.int64)
    if not np.array_equal(widths, np.repeat(d, K)):
        first = int(np.argmax(widths != np.repeat(d, K)))
        ends = np.cumsum(K)
        row = int(np.searchsorted(ends, first, side="right"))
        shown = widths[ends[row] - K[row]:ends[row]][:8].tolist()
        raise ValueError(f"{where}: row {row}: 'contexts' has rows of "
                         f"{', '.join(map(str, shown))} values but 'n_features' is {d[row]}")
    probabilities_column = _parquet_column(table, "probabilities", "a list of numbers", where)
    flat_probabilities = probabilities_column.flatten()
    if flat_probabilities.null_count:
        raise ValueError(f"{where}: column 'probabilities' must have no nulls, got "
                         f"{flat_probabilities.null_count} inside its lists")
    _check_one_per_action(probabilities_column, "probabilities", "values", K, where)
    action = integers("action")
    if "policy_action" in table.column_names:  # version 2: null for a live decision
        column = _parquet_column(table, "policy_action", "integers", where, nullable=True)
        live = np.asarray(column.is_null(), dtype=bool)
        policy_action = np.array(pc.fill_null(column, 0).to_numpy(zero_copy_only=False),
                                 dtype=np.int64)  # a copy: the nulls are set to -1 below
        outside = ~live & ((policy_action < 0) | (policy_action >= K))
        if np.any(outside):
            row = int(np.argmax(outside))
            raise ValueError(f"{where}: column 'policy_action' must lie in [0, {K[row] - 1}], "
                             f"got {policy_action[row]} in row {row}")
        policy_action[live] = -1
    else:
        policy_action = np.full(n, -1, dtype=np.int64)
    propensity = _flat_numbers(_parquet_column(table, "propensity", "numbers", where,
                                               nullable=True))
    live_without = np.isnan(propensity) & (policy_action < 0)
    if np.any(live_without):
        row = int(np.argmax(live_without))
        raise ValueError(f"{where}: row {row}: 'propensity' is null but 'policy_action' is null "
                         "too (a live decision has a propensity; a shadow one a policy_action)")
    reward = _flat_numbers(_parquet_column(table, "reward", "numbers", where, nullable=True))
    reward_source = _parquet_column(table, "reward_source", "strings", where,
                                    nullable=True).to_pylist()
    for row, source in enumerate(reward_source):
        if source is not None and source not in REWARD_SOURCES:
            raise ValueError(f"{where}: column 'reward_source' must hold 'learned', 'sum', "
                             f"'default' or null, got {source[:40]!r} in row {row}")
        if source is not None and np.isnan(reward[row]):
            raise ValueError(f"{where}: row {row}: 'reward' is null but 'reward_source' is "
                             f"{source!r}")
    request = (_parquet_column(table, "request", "strings", where, nullable=True).to_pylist()
               if "request" in table.column_names else [None] * n)  # version 3
    flat_values = _flat_numbers(values)
    flat_p = _flat_numbers(flat_probabilities)
    ends = np.cumsum(K * d)
    p_ends = np.cumsum(K)
    contexts = [flat_values[end - k * dd:end].reshape(k, dd).copy()
                for end, k, dd in zip(ends.tolist(), K.tolist(), d.tolist())]
    probabilities = [flat_p[end - k:end].copy() for end, k in zip(p_ends.tolist(), K.tolist())]
    return {"policy_action": policy_action, "contexts": contexts,
            "probabilities": probabilities, "action": action, "propensity": propensity,
            "reward": reward, "reward_source": reward_source, "sequence": sequence,
            "decision_id": decision_ids, "request": request, "info": info}
