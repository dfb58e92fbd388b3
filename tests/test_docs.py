"""The runnable examples of the user guides in ``docs/`` (run as doctests)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
GUIDES = ["production.md"]


@pytest.mark.parametrize("name", GUIDES)
def test_guide_examples_run(name: str) -> None:
    results = doctest.testfile(str(DOCS / name), module_relative=False,
                               optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert results.attempted > 0, f"{name} has no examples"
    assert results.failed == 0, f"{results.failed} of {results.attempted} examples in {name} failed"
