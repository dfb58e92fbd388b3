"""Issue 12, item 8: the results store refuses an empty, corrupt or foreign file and leaves it
byte for byte untouched; a path that does not exist yet still becomes a new store."""

from __future__ import annotations

import sqlite3

import pytest

from glmbandits.cli.main import main
from glmbandits.experiments.store import ResultStore, StoreError


def _foreign(path):
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    connection.execute("INSERT INTO users VALUES (1, 'ada')")
    connection.commit()
    connection.close()


def _half_ours(path):  # a store that lost a table: not ours either
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE experiments (name TEXT)")
    connection.commit()
    connection.close()


MAKERS = {
    "empty": (lambda p: p.write_bytes(b""), "empty file"),
    "random bytes": (lambda p: p.write_bytes(bytes(range(256)) * 4), "not a SQLite database"),
    "truncated sqlite": (lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\x01" * 40),
                         "corrupt SQLite file"),
    "foreign database": (_foreign, "with users"),
    "wrong schema": (_half_ours, "with experiments"),
}


@pytest.mark.parametrize("kind", list(MAKERS))
def test_bad_file_is_refused_and_left_untouched(tmp_path, kind):
    path = tmp_path / "store.sqlite"
    make, text = MAKERS[kind]
    make(path)
    before = path.read_bytes()
    with pytest.raises(StoreError, match=text) as caught:
        ResultStore(path)
    assert "store.sqlite" in str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.sqlite"]  # no journal left


def test_directory_is_refused(tmp_path):
    with pytest.raises(StoreError, match="directory"):
        ResultStore(tmp_path)


def test_new_path_is_created_and_reopened(tmp_path):
    path = tmp_path / "sub" / "new.sqlite"
    with ResultStore(path) as store:
        store.save_experiment("e", {"name": "e"})
    with ResultStore(path) as store:
        assert [e["name"] for e in store.experiments()] == ["e"]


@pytest.mark.parametrize("command", ["results", "plot"])
def test_cli_reports_a_foreign_store_without_touching_it(tmp_path, capsys, command):
    path = tmp_path / "other.sqlite"
    _foreign(path)
    before = path.read_bytes()
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ResultStore(") and "Traceback" not in err
    assert path.read_bytes() == before
