"""The named-feature benchmark's command (benchmarks/bench_service_named.py, the table of
docs/service.md "Performance") runs: a short smoke run against real servers, checking the
table's shape and that every kind of body was served. Timings are never tested."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_named_feature_benchmark_prints_its_table():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, str(ROOT / "benchmarks" / "bench_service_named.py"),
               "--seconds", "0.5", "--repeat", "1", "--clients", "1"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    output = done.stdout
    assert "schema: 30 context features, 4 action features" in output
    d = int(output.split(", d = ")[1].split()[0])
    rows = [line for line in output.splitlines() if line.startswith("| 1 | linucb |")]
    labels = [row.split("|")[5].strip() for row in rows]
    assert labels == ["dense json", "named, action_ids", "named, inline"], output
    for row in rows:
        cells = [cell.strip() for cell in row.split("|")]
        assert cells[3:5] == ["100", str(d)]
        assert float(cells[7]) > 0, row  # pairs/s: every body was answered (200s only)
