"""The GPU table's command (benchmarks/bench_gpu.py) runs: a tiny CPU smoke run, so that the
command docs/performance.md gives for a GPU machine is not broken when one is available.
It checks the table's shape only; timings are never tested."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_gpu_benchmark_prints_its_table_on_cpu():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--replicates", "4,9",
               "--problems", "3x4", "--steps", "2", "--repeats", "1", "--backends", "numpy",
               "--cpu-max-replicates", "5"]
    output = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300,
                            check=True).stdout
    rows = [line for line in output.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[0].startswith("| policy | d | K | R | backend | device")
    measured = [row for row in rows if "| 4 | numpy | cpu |" in row]
    skipped = [row for row in rows if "| 9 | numpy | cpu |" in row]
    assert len(measured) == 2 and len(skipped) == 2  # LinUCB and lazy UCB-GLM
    for row in measured:
        assert float(row.split("|")[7].replace(",", "")) > 0
    assert all("skipped: R > --cpu-max-replicates" in row for row in skipped)
