"""Shared fixtures of the test suite."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True)
def _cli_tests_run_in_a_temporary_folder(request, tmp_path_factory, monkeypatch):
    """Every command-line test (tests/cli/) runs in its own empty folder: `glmbandits run`
    writes its runs to ./glmbandits-results.sqlite, which must not land in the checkout."""
    if "cli" in request.node.path.parent.parts[-1:]:
        monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


# Real PostgreSQL and Chromium, for any test that asks (tests/fixtures_system.py).
from fixtures_system import chromium_driver, postgres_server, postgres_url  # noqa: E402,F401


_MAIN_JOB_OUTPUTS = ("glmbandits-results.sqlite", "glmbandits-results", "glmbandits-plots")


@pytest.fixture(scope="session", autouse=True)
def _the_suite_writes_nothing_into_the_checkout():
    """No test may leave the main job's outputs in the checkout (a test that runs
    `glmbandits run` or `plot` must run in a temporary folder: they write to ./)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    before = {name for name in _MAIN_JOB_OUTPUTS if (root / name).exists()}
    yield
    appeared = sorted(name for name in _MAIN_JOB_OUTPUTS
                      if (root / name).exists() and name not in before)
    assert not appeared, f"a test wrote {appeared} into the checkout {root}"
