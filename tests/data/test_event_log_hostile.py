"""EventLog and its Parquet export against hostile files and values: a foreign SQLite file
with a pending WAL is refused byte for byte unchanged; a missing folder is created (or
refused naming the path); crafted Parquet files are refused with a ValueError naming the
file and the column; a write the reader would refuse is refused before it is written."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from glmbandits import EventLog
from glmbandits.data import LoggedBanditData, export_parquet


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def _foreign_with_pending_wal(folder: Path, application_id: int) -> Path:
    """A foreign WAL-mode database whose schema and rows are only in its -wal file (copied
    while the writer was still open, so nothing was checkpointed into the main file)."""
    source = folder / "source.db"
    writer = sqlite3.connect(source, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("PRAGMA synchronous=OFF")  # a fixture: no fsync per row
    if application_id:
        writer.execute(f"PRAGMA application_id={application_id}")
    writer.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance REAL)")
    writer.executemany("INSERT INTO accounts (balance) VALUES (?)",
                       [(i * 1.5,) for i in range(200)])
    target = folder / "foreign.db"
    shutil.copyfile(source, target)
    shutil.copyfile(f"{source}-wal", f"{target}-wal")
    writer.close()
    assert Path(f"{target}-wal").stat().st_size > 0
    return target


@pytest.mark.parametrize("application_id", [0, 0x12345678])
@pytest.mark.parametrize("readonly", [False, True])
def test_a_foreign_database_with_a_pending_wal_is_refused_and_left_unchanged(
        tmp_path, application_id, readonly) -> None:
    path = _foreign_with_pending_wal(tmp_path, application_id)
    wal = Path(f"{path}-wal")
    before = (_digest(path), _digest(wal))
    with pytest.raises(ValueError, match=r"foreign\.db.*another application.*not modified"):
        EventLog(path, readonly=readonly)
    assert (_digest(path), _digest(wal)) == before
    check = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:  # the foreign application's rows are still there, in its WAL
        assert check.execute("SELECT count(*) FROM accounts").fetchone() == (200,)
    finally:
        check.close()
    assert (_digest(path), _digest(wal)) == before


def test_an_event_log_with_a_pending_wal_still_opens_for_writing(tmp_path) -> None:
    path = tmp_path / "events.sqlite"
    first = EventLog(path)
    first.record_decision("a", 0.0, np.eye(2), [0.5, 0.5], 0, 0.5, 0)
    with EventLog(path) as second:  # the first connection holds the WAL open
        second.record_reward("a", 1.0, 1.0, "learned")
        assert len(second) == 2
    first.close()
    with EventLog(path, readonly=True) as reader:
        assert [event.kind for event in reader.events()] == ["decision", "reward"]


def test_an_event_log_in_a_missing_folder_is_created_with_it(tmp_path) -> None:
    path = tmp_path / "not" / "yet" / "there" / "events.sqlite"
    with EventLog(path) as log:
        log.record_decision("a", 0.0, np.eye(2), [0.5, 0.5], 0, 0.5, 0)
    with EventLog(path, readonly=True) as log:
        assert len(log) == 1
    with pytest.raises(FileNotFoundError, match=r"nowhere.*no such file"):
        EventLog(tmp_path / "nowhere" / "events.sqlite", readonly=True)
    assert not (tmp_path / "nowhere").exists()


def test_a_folder_that_cannot_be_made_is_refused_naming_the_path(tmp_path) -> None:
    (tmp_path / "plain-file").write_text("not a folder")
    with pytest.raises(OSError, match=r"plain-file.*cannot create the folder"):
        EventLog(tmp_path / "plain-file" / "events.sqlite")
    assert (tmp_path / "plain-file").read_text() == "not a folder"


# -- writes the reader would refuse --------------------------------------------------------
@pytest.mark.parametrize("contexts, match", [
    (np.array([[1e300, 0.0], [0.0, 1.0]]), r"contexts must have entries of magnitude <= 1e\+50"),
    (np.array([[1.0, -1e51], [0.0, 1.0]]), r"contexts must have entries of magnitude <= 1e\+50"),
    (np.array([[np.nan, 0.0], [0.0, 1.0]]), r"contexts must be finite"),
])
def test_a_decision_the_reader_would_refuse_is_refused_before_writing(tmp_path, contexts,
                                                                      match) -> None:
    path = tmp_path / "events.sqlite"
    with EventLog(path) as log:
        log.record_decision("ok", 0.0, np.eye(2), [0.5, 0.5], 1, 0.5, 0)
        log.record_reward("ok", 1.0, 1.0, "learned")
        last = log.last_sequence
        with pytest.raises(ValueError, match=r"EventLog.record_decision: " + match):
            log.record_decision("bad", 2.0, contexts, [0.5, 0.5], 1, 0.5, 0)
        with pytest.raises(ValueError, match=r"EventLog.record_reward: reward must be 0 or "
                                             r"have magnitude between"):
            log.record_reward("ok", 3.0, 1e300, "duplicate")
        assert log.last_sequence == last and len(log) == 2
    data = LoggedBanditData.from_event_log(path)  # the log stays readable
    assert data.n_rounds == 1 and data.rewards.tolist() == [1.0]


def test_the_largest_accepted_context_is_read_back(tmp_path) -> None:
    path = tmp_path / "events.sqlite"
    X = np.array([[1e50, -1e50], [0.0, 1.0]])
    with EventLog(path) as log:
        log.record_decision("edge", 0.0, X, [0.5, 0.5], 0, 0.5, 0)
        log.record_reward("edge", 1.0, 1e50, "learned")
    data = LoggedBanditData.from_event_log(path)
    assert data.contexts[0].tobytes() == X.tobytes() and data.rewards.tolist() == [1e50]


# -- crafted Parquet files -----------------------------------------------------------------
@pytest.fixture
def exported(tmp_path) -> Path:
    pytest.importorskip("pyarrow")
    with EventLog(tmp_path / "events.sqlite", durability="normal") as log:
        log.record_decision("a", 0.0, np.eye(2), [0.5, 0.5], 1, 0.5, 0)
        log.record_reward("a", 1.0, 1.0, "learned")
        log.record_decision("b", 1.0, np.ones((3, 2)), [0.2, 0.3, 0.5], 2, 0.5, 0)
        log.record_reward("b", 2.0, 0.0, "learned")
        log.record_decision("c", 2.0, np.eye(2), [0.5, 0.5], 0, None, 0, policy_action=1)
        log.record_reward("c", 3.0, 1.0, "learned")
        return export_parquet(log, tmp_path / "events.parquet")


def _craft(exported: Path, name: str, change) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(exported)
    table = change(table, pa)
    path = exported.parent / f"{name}.parquet"
    pq.write_table(table, path)
    return path


def _replace(column: str, values):
    def change(table, pa):
        array = values(pa) if callable(values) else values
        return table.set_column(table.column_names.index(column), column, array)
    return change


def _with_metadata(payload: bytes):
    def change(table, pa):
        return table.replace_schema_metadata({b"glmbandits.event_log": payload})
    return change


REQUIRED = ["sequence", "decision_id", "n_actions", "n_features", "contexts", "probabilities",
            "action", "propensity", "reward", "reward_source"]
CRAFTED = {
    **{f"no-{column}": (lambda t, pa, c=column: t.drop([c]), rf"column {column!r} is missing")
       for column in REQUIRED},
    "metadata-not-json": (_with_metadata(b"{not json"), r"metadata .*not valid JSON"),
    "metadata-a-list": (_with_metadata(b"[1, 2]"), r"metadata .*must be a JSON object"),
    "metadata-no-version": (_with_metadata(b"{}"), r"schema version None"),
    "metadata-counts-a-string": (
        _with_metadata(json.dumps({"schema_version": 2, "counts": "x"}).encode()),
        r"metadata 'counts' must map names to counts"),
    "no-metadata": (lambda t, pa: t.replace_schema_metadata({}),
                    r"no glmbandits.event_log metadata"),
    "n_actions-strings": (_replace("n_actions", lambda pa: pa.array(["2", "3", "2"])),
                          r"column 'n_actions' must hold integers, got string"),
    "n_actions-wrong": (_replace("n_actions", lambda pa: pa.array([5, 3, 2], pa.int64())),
                        r"row 0: 'contexts' has 2 rows but 'n_actions' is 5"),
    "n_actions-negative": (_replace("n_actions", lambda pa: pa.array([-1, 3, 2], pa.int64())),
                           r"column 'n_actions' must be >= 1, got -1 in row 0"),
    "n_actions-null": (_replace("n_actions", lambda pa: pa.array([None, 3, 2], pa.int64())),
                       r"column 'n_actions' must have no nulls, got 1"),
    "n_features-wrong": (_replace("n_features", lambda pa: pa.array([2, 3, 2], pa.int64())),
                         r"row 1: 'contexts' has rows of 2, 2, 2 values but 'n_features' is 3"),
    "contexts-flat": (_replace("contexts", lambda pa: pa.array([[1.0, 2.0], [1.0], [0.0]])),
                      r"column 'contexts' must be a list of lists of numbers"),
    "contexts-doubles": (_replace("contexts", lambda pa: pa.array([1.0, 2.0, 3.0])),
                         r"column 'contexts' must be a list of lists of numbers, got double"),
    "contexts-strings": (_replace("contexts", lambda pa: pa.array([[["a"]], [["b"]], [["c"]]])),
                         r"column 'contexts' must be a list of lists of numbers"),
    "contexts-null": (_replace("contexts", lambda pa: pa.array(
        [None, [[1.0, 1.0]] * 3, [[1.0, 0.0], [0.0, 1.0]]], pa.list_(pa.list_(pa.float64())))),
        r"column 'contexts' must have no nulls"),
    "contexts-null-value": (_replace("contexts", lambda pa: pa.array(
        [[[1.0, None], [0.0, 1.0]], [[1.0, 1.0]] * 3, [[1.0, 0.0], [0.0, 1.0]]],
        pa.list_(pa.list_(pa.float64())))), r"column 'contexts' must have no nulls"),
    "contexts-ragged": (_replace("contexts", lambda pa: pa.array(
        [[[1.0, 0.0], [0.0]], [[1.0, 1.0]] * 3, [[1.0, 0.0], [0.0, 1.0]]])),
        r"row 0: 'contexts' has rows of 2, 1 values but 'n_features' is 2"),
    "probabilities-strings": (_replace("probabilities", lambda pa: pa.array([["a"], ["b"], ["c"]])),
                              r"column 'probabilities' must be a list of numbers, got "
                              r"list<\w+: string>"),
    "probabilities-doubles": (_replace("probabilities", lambda pa: pa.array([0.5, 0.5, 0.5])),
                              r"column 'probabilities' must be a list of numbers, got double"),
    "probabilities-short": (_replace("probabilities", lambda pa: pa.array(
        [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]])),
        r"row 1: 'probabilities' has 2 values but 'n_actions' is 3"),
    "action-strings": (_replace("action", lambda pa: pa.array(["1", "2", "0"])),
                       r"column 'action' must hold integers, got string"),
    "action-null": (_replace("action", lambda pa: pa.array([None, 2, 0], pa.int64())),
                    r"column 'action' must have no nulls, got 1"),
    "action-float": (_replace("action", lambda pa: pa.array([1.5, 2.0, 0.0])),
                     r"column 'action' must hold integers, got double"),
    "action-outside": (_replace("action", lambda pa: pa.array([7, 2, 0], pa.int64())),
                       r"action must lie in the round's action set"),
    "propensity-strings": (_replace("propensity", lambda pa: pa.array(["x", "y", None])),
                           r"column 'propensity' must hold numbers, got string"),
    "propensity-null-live": (_replace("propensity", lambda pa: pa.array([None, 0.5, None],
                                                                        pa.float64())),
                             r"row 0: 'propensity' is null but 'policy_action' is null too"),
    "reward-strings": (_replace("reward", lambda pa: pa.array(["x", "y", "z"])),
                       r"column 'reward' must hold numbers, got string"),
    "reward-lists": (_replace("reward", lambda pa: pa.array([[1.0], [2.0], [3.0]])),
                     r"column 'reward' must hold numbers, got list<\w+: double>"),
    "reward-null-with-source": (_replace("reward", lambda pa: pa.array([None, 0.0, 1.0],
                                                                       pa.float64())),
                                r"row 0: 'reward' is null but 'reward_source' is 'learned'"),
    "reward-source-ints": (_replace("reward_source", lambda pa: pa.array([1, 2, 3])),
                           r"column 'reward_source' must hold strings, got int64"),
    "reward-source-unknown": (_replace("reward_source", lambda pa: pa.array(
        ["zzz", "learned", "learned"])), r"column 'reward_source' must hold 'learned', 'sum', "
                                         r"'default' or null, got 'zzz' in row 0"),
    "policy_action-strings": (_replace("policy_action", lambda pa: pa.array(["x", "y", "z"])),
                              r"column 'policy_action' must hold integers, got string"),
    "policy_action-outside": (_replace("policy_action", lambda pa: pa.array(
        [None, None, 5], pa.int64())), r"column 'policy_action' must lie in \[0, 1\], got 5 "
                                       r"in row 2"),
    "sequence-strings": (_replace("sequence", lambda pa: pa.array(["x", "y", "z"])),
                         r"column 'sequence' must hold integers, got string"),
    "decision_id-ints": (_replace("decision_id", lambda pa: pa.array([1, 2, 3])),
                         r"column 'decision_id' must hold strings, got int64"),
    "duplicate-column": (lambda t, pa: t.append_column("action", pa.array([0, 0, 0])),
                         r"column 'action' appears 2 times"),
}


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_a_crafted_parquet_file_is_refused_naming_the_file_and_the_column(exported,
                                                                         name) -> None:
    change, match = CRAFTED[name]
    path = _craft(exported, name, change)
    with pytest.raises(ValueError, match=rf"LoggedBanditData.from_parquet\('.*{name}\.parquet'\)"
                                         rf".*{match}"):
        LoggedBanditData.from_parquet(path)


def test_the_untouched_export_reads_back(exported) -> None:
    data = LoggedBanditData.from_parquet(exported)
    assert data.n_rounds == 2 and data.actions.tolist() == [1, 2]  # the shadow row left out
    assert data.join_counts["shadow"] == 1


@pytest.mark.parametrize("content", [b"", b"hello world" * 10, b"PAR1" + b"\0" * 100])
def test_a_file_that_is_not_parquet_is_refused_naming_it(tmp_path, content) -> None:
    pytest.importorskip("pyarrow")
    path = tmp_path / "bogus.parquet"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"from_parquet\('.*bogus\.parquet'\): cannot read the "
                                         r"Parquet file"):
        LoggedBanditData.from_parquet(path)


def test_a_directory_or_a_missing_file_is_refused_naming_it(tmp_path) -> None:
    pytest.importorskip("pyarrow")
    (tmp_path / "folder.parquet").mkdir()
    with pytest.raises(ValueError, match=r"folder\.parquet'\): path must be a Parquet file, got "
                                         r"a directory"):
        LoggedBanditData.from_parquet(tmp_path / "folder.parquet")
    with pytest.raises(FileNotFoundError, match=r"missing\.parquet'\): no such file"):
        LoggedBanditData.from_parquet(tmp_path / "missing.parquet")
