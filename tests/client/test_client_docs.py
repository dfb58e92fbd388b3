"""docs/service.md's named-features example runs as written: its config
(client-news.toml) starts a real ``glmbandits serve``, its client block runs against it and
prints the output the page shows (the page marks both blocks "not run": its own harness
points ``localhost:8000`` at the service the page started, with another config)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from clientkit import docs_block, named_config

from servicekit import ServerProcess, environment  # (put on the path by clientkit)

pytestmark = pytest.mark.slow

CLIENT_BLOCK = "# the client against client-news.toml's service (started with its key in " \
    "GLMBANDITS_API_KEYS)"


def _shown_output(block: str) -> str:
    """The ``text`` block the page shows right after ``block`` (what it printed)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "service.md").read_text()
    found = re.search(re.escape(block) + r"```\n\n<!--[^>]*-->\n```text\n(.*?)^```$", page,
                      re.M | re.S)
    assert found is not None, "docs/service.md shows no output after the client block"
    return found.group(1)


def test_the_named_features_example_runs_as_written(tmp_path) -> None:
    code = docs_block(CLIENT_BLOCK)
    server = ServerProcess(named_config(tmp_path), f"sqlite:///{tmp_path / 'news.db'}")
    try:
        assert "http://localhost:8000" in code
        result = subprocess.run([sys.executable, "-c", code.replace(
            "http://localhost:8000", server.url.rstrip("/"))], capture_output=True, text=True,
            env=environment(), timeout=120, cwd=tmp_path)
    finally:
        assert server.terminate() == 0, server.output()
    assert result.returncode == 0, result.stderr
    assert result.stdout == _shown_output(code)
