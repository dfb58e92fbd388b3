"""Issue 21, section 4 (results store): a store with a damaged page is refused by every
command that reads or writes it (`results`, `plot`, `run` with and without a CONFIG) with one
line that names the file and says what to do; no traceback, a non-zero exit, the file left
as it was."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from glmbandits.cli.main import main
from glmbandits.experiments.store import ResultStore, StoredRun, StoreError

PAGE = 4096
CONFIG = textwrap.dedent("""
    name = "corrupt-demo"
    horizon = 30
    seeds = 1
    [environment]
    n_features = 2
    n_actions = 3
    [[policies]]
    name = "random"
""")


def _store_with_a_damaged_page(path):
    """A real results store of many pages, with one page in the middle overwritten."""
    with ResultStore(path) as store:
        store.save_experiment("exp", {"name": "exp", "seeds": 80}, versions={})
        for i in range(80):
            rounds = np.arange(1, 201)
            store.add_run(StoredRun("exp", f"cell-{i % 4}", i, "random", "random", {},
                                    {"n_features": 2}, 200, {"entropy": 0}, "ok", float(i),
                                    0.1, rounds, np.linspace(0.0, float(i), rounds.size)))
    size = path.stat().st_size
    assert size >= 20 * PAGE, size  # enough pages for a middle one beyond the header
    with path.open("r+b") as handle:
        handle.seek((size // 2) // PAGE * PAGE)
        handle.write(b"\xff" * 256)
    return path.read_bytes()


@pytest.fixture
def damaged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where `glmbandits run` without a CONFIG writes its store
    path = tmp_path / "glmbandits-results.sqlite"
    return path, _store_with_a_damaged_page(path)


def _assert_one_clear_line(err: str, path) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    (line,) = lines
    assert line.startswith("error: "), line
    assert path.name in line and "damaged" in line, line
    assert "move it aside" in line, line  # what to do
    assert "Traceback" not in err


@pytest.mark.parametrize("command", [
    ["results", "{store}"],
    ["results", "{store}", "--format", "json"],
    ["plot", "{store}", "--out", "plots", "--formats", "png"],
    ["run", "exp.toml", "--store", "{store}", "--jobs", "1", "--no-plot"],
    ["run", "-T", "20", "--seeds", "1", "-d", "2", "-K", "3", "--algorithms", "random",
     "--jobs", "1", "--no-plot", "--quiet"],
])
def test_cli_refuses_a_damaged_store_in_one_line(damaged, capsys, command):
    path, before = damaged
    if command[0] == "plot":
        pytest.importorskip("matplotlib")
    (path.parent / "exp.toml").write_text(CONFIG)
    code = main([part.replace("{store}", str(path)) for part in command])
    assert code != 0
    _assert_one_clear_line(capsys.readouterr().err, path)
    assert path.read_bytes() == before


def test_library_refuses_a_damaged_store_with_store_error(tmp_path):
    path = tmp_path / "r.sqlite"
    before = _store_with_a_damaged_page(path)
    with pytest.raises(StoreError, match="damaged") as caught:
        with ResultStore(path) as store:
            store.runs()
    assert str(path) in str(caught.value)
    assert path.read_bytes() == before
