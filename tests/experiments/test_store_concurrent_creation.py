"""Issue 21, section 4 (results store): several processes creating one new store at once all
succeed (none is refused with "got an empty file" or a half-made schema), and every one of
their writes is in the store afterwards.

The processes are real (``subprocess``), and they start their ``ResultStore(path)`` at the
same moment: each says it is ready by creating a file, then waits for a ``go`` file that the
test creates once all of them are ready (a file flag, no sleeps).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from glmbandits.experiments.store import ResultStore

N_PROCESSES = 6
REPEATS = 4
DEADLINE_S = 120.0

_CHILD = r"""
import os, sys, time
from pathlib import Path

flags, index, store = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
from glmbandits.experiments.store import ResultStore  # imported before the start line

(flags / f"ready-{index}").touch()
deadline = time.monotonic() + 120.0
while not (flags / "go").exists():
    if time.monotonic() > deadline:
        sys.exit("no go flag within 120 s")
    time.sleep(0.001)
try:
    with ResultStore(store) as results:
        results.save_experiment(f"writer-{index}", {"name": f"writer-{index}"}, versions={})
except Exception as error:
    print(f"{type(error).__name__}: {error}")
    sys.exit(1)
print("ok")
"""


def _wait_for(condition, what: str, processes: list[subprocess.Popen]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if any(p.poll() not in (None, 0) for p in processes):
            outputs = [p.communicate()[0] for p in processes if p.poll() is not None]
            pytest.fail(f"a process ended while waiting for {what}: {outputs}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {DEADLINE_S:.0f} s")
        time.sleep(0.01)


def _start_together(folder: Path, store: Path) -> list[tuple[int, str]]:
    """Start N_PROCESSES writers on ``store`` at one moment; their exit codes and outputs."""
    flags = folder / "flags"
    flags.mkdir()
    processes = [subprocess.Popen([sys.executable, "-c", _CHILD, str(flags), str(i), str(store)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for i in range(N_PROCESSES)]
    try:
        _wait_for(lambda: len(list(flags.glob("ready-*"))) == N_PROCESSES, "every writer ready",
                  processes)
        (flags / "go").touch()
        results = []
        for process in processes:
            output, _ = process.communicate(timeout=DEADLINE_S)
            results.append((process.returncode, output.strip()))
        return results
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.mark.slow
@pytest.mark.parametrize("repeat", range(REPEATS))
def test_processes_creating_one_new_store_at_once_all_succeed(tmp_path, repeat):
    store = tmp_path / "results" / "fresh.sqlite"  # the folder does not exist either
    results = _start_together(tmp_path, store)
    assert results == [(0, "ok")] * N_PROCESSES, results
    with ResultStore(store) as opened:
        names = sorted(e["name"] for e in opened.experiments())
    assert names == sorted(f"writer-{i}" for i in range(N_PROCESSES))
    # nothing but the store is left beside it (no half-made temporary files)
    assert [p.name for p in store.parent.iterdir()] == ["fresh.sqlite"]

