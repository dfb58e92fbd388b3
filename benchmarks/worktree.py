"""What the benchmarks that compare two commits share: a commit checked out into a
temporary ``git worktree``, and measurements run in subprocesses against one tree's ``src``.

A worker is the benchmark script itself, run with ``--worker`` and a JSON argument,
printing one JSON object; ``PYTHONPATH`` points at the tree being measured, and
BLAS runs on one thread so that CPU time is the work of one core.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def ensure_tree(path: Path, commit: str) -> None:
    """Check ``commit`` out into ``path`` (a detached worktree) unless one is there."""
    if (path / "src" / "glmbandits").is_dir():
        return
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), commit],
                   check=True, capture_output=True)


def remove_tree(path: Path) -> None:
    """Remove a worktree made by :func:`ensure_tree`."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
                   check=False, capture_output=True)


def short_hash(commit: str = "HEAD") -> str:
    """``git rev-parse --short`` of ``commit`` in the checkout."""
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", commit],
                          capture_output=True, text=True, check=True).stdout.strip()


def run_worker(script: str, src: Path, payload: dict[str, Any]) -> Any:
    """Run ``script --worker JSON`` with ``src`` first on the path; its printed JSON."""
    env = {**os.environ, "PYTHONPATH": str(src), "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, script, "--worker", json.dumps(payload)], env=env,
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])
