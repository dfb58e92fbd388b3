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
