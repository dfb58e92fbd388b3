"""docs/service.md's "Walkthrough: a news catalogue end to end" runs as written.

The section's blocks are taken from the page (not copied here) and run by tests/test_docs.py's
``PageRunner``: its ``glmbandits serve news.toml --port 8001 ...`` line starts a real server
(``servicekit.ServerProcess``) and ``localhost:8001`` in the commands after it becomes that
server's address; ``curl`` fails on an HTTP error status; every ``<!-- output of the block
above -->`` block is compared with what the block above it printed. So a command of the
walkthrough that breaks, or prints something else than the page shows, fails here. The
whole page also runs in tests/test_docs.py (with the Start section's server beside it);
this test runs the walkthrough alone, in a few seconds beyond the server's start.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from test_docs import Block, PageRunner, parse_blocks

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "service.md"
HEADING = "## Walkthrough: a news catalogue end to end"


def walkthrough_blocks() -> list[Block]:
    """The fenced blocks between the walkthrough's heading and the next ``## `` heading."""
    lines = PAGE.read_text(encoding="utf-8").split("\n")
    start = lines.index(HEADING) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")),
               len(lines))
    blocks, problems = parse_blocks(PAGE)
    assert not problems, "\n".join(problems)
    return [block for block in blocks if start < block.line <= end]


def test_the_walkthrough_holds_what_the_issue_asks_for():
    """The section is there and does each step (so the run below cannot pass on an emptied
    section): a config with a [features] table, the server, the catalogue's routes, a
    decide by ids with excluded ids, a reward, an explanation, the export and a replay
    with another schema; outputs shown and none of its blocks marked as not run."""
    blocks = walkthrough_blocks()
    text = "\n".join(block.text for block in blocks)
    for needle in ("[features]", "[[features.context]]", "[[features.action]]",
                   'kind = "multi_categorical"', "interactions =",
                   "glmbandits serve news.toml --port 8001", "-X PUT",
                   "localhost:8001/v1/actions/$id", '"action_ids":', '"excluded_ids":',
                   "/v1/reward", '"explain":true', "-X DELETE", "localhost:8001/v1/actions ",
                   "glmbandits export --db sqlite:///news.db news.parquet",
                   "glmbandits replay --log news.parquet --features"):
        assert needle in text, needle
    assert [b for b in blocks if b.marker == "not run"] == []
    assert sum(b.marker == "output" for b in blocks) >= 5


@pytest.mark.slow
def test_the_walkthrough_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.setenv("GLMBANDITS_API_KEYS", "walkthrough-test-key-0123456789")
    monkeypatch.chdir(tmp_path)
    runner = PageRunner(PAGE, tmp_path)
    try:
        runner.run(walkthrough_blocks())
        assert list(runner.addresses) == ["8001"]  # the page's server, its port replaced
        (server,) = runner.servers
        assert server.process.poll() is None, server.output()
    finally:
        runner.close()
    assert (tmp_path / "news.parquet").stat().st_size > 0
