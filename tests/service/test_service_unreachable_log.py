"""A log that cannot be reached or opened stops ``glmbandits serve`` with one line naming it
(no traceback, no password), for every role."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from servicekit import environment, write_config


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serve(config, db: str, role: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "glmbandits", "serve", str(config), "--db", db, "--role", role,
         "--port", "0", "--host", "127.0.0.1"],
        capture_output=True, text=True, timeout=120, env=environment())


@pytest.mark.parametrize("role", ["all", "api", "learner"])
def test_an_unreachable_postgresql_log_is_one_line_naming_it(tmp_path, role):
    config = write_config(tmp_path, n_features=3, max_actions=5)
    db = f"postgresql://app:s3cret@127.0.0.1:{_closed_port()}/bandits?connect_timeout=5"
    done = _serve(config, db, role)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "s3cret" not in done.stderr, done.stderr
    assert "cannot be reached" in done.stderr and "127.0.0.1" in done.stderr, done.stderr
    assert done.stderr.strip().startswith("error: glmbandits serve:"), done.stderr


def test_a_sqlite_log_that_cannot_be_created_is_one_line_naming_it(tmp_path):
    config = write_config(tmp_path, n_features=3, max_actions=5)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the log's folder should be")
    done = _serve(config, f"sqlite:///{blocker}/log.db", "all")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "cannot be opened" in done.stderr and str(blocker) in done.stderr, done.stderr
