"""The source trees a benchmark measures: this checkout, and a commit to compare it with.

``measured_trees(commit)`` yields ``{label: src folder}``: the checkout first, then (when
``commit`` is given) that commit checked out into a temporary ``git worktree``
(:func:`bench_select_update_overhead.ensure_tree`), removed on exit. A benchmark runs
its measurements in subprocesses with ``PYTHONPATH`` set to each folder, alternating
between the trees.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_select_update_overhead import ensure_tree  # noqa: E402 (the worktree helper)

ROOT = Path(__file__).resolve().parents[1]


def short_hash(commit: str = "HEAD") -> str:
    """``git rev-parse --short commit`` in this checkout."""
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", commit],
                          capture_output=True, text=True, check=True).stdout.strip()


def _dirty() -> bool:
    status = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"],
                            capture_output=True, text=True, check=True).stdout
    return bool(status.strip())


@contextmanager
def measured_trees(commit: str | None, prefix: str = "bench-") -> Iterator[dict[str, Path]]:
    """``{"current (<hash>[+])": src, "<commit> (<hash>)": src of commit}``; '+': uncommitted src."""
    trees = {f"current ({short_hash()}{'+' if _dirty() else ''})": ROOT / "src"}
    scratch = None
    try:
        if commit:
            scratch = Path(tempfile.mkdtemp(prefix=prefix)) / "tree"
            ensure_tree(scratch, commit)
            trees[f"{commit} ({short_hash(commit)})"] = scratch / "src"
        yield trees
    finally:
        if scratch is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(scratch)], capture_output=True)
