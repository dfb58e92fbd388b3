"""Fixtures of the service tests: a real ``glmbandits serve`` process on loopback."""

from __future__ import annotations

import pytest

from servicekit import ServerProcess, write_config


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for a module's contract tests (reward_wait 2 s, so a test can be late)."""
    folder = tmp_path_factory.mktemp("serve")
    config = write_config(folder, decisions="reward_wait = 2.0\nexpire_every = 0.2\n")
    process = ServerProcess(config, f"sqlite:///{folder / 'log.db'}")
    yield process
    code = process.terminate()
    assert code == 0, process.output()
