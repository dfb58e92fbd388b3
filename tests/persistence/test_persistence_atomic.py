"""Writes are atomic: a failed or killed save leaves the previous file intact and no temp file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import glmbandits
from persistence_play import assert_same_policies, play

SRC = Path(glmbandits.__file__).resolve().parent.parent


def _policy(rounds: int = 30) -> glmbandits.UCBGLM:
    policy = glmbandits.UCBGLM(n_features=3, seed=0)
    play(policy, rounds, seed=4)
    return policy


@pytest.mark.parametrize("target", ["replace", "fsync", "chmod"])
def test_a_failing_save_keeps_the_previous_file(tmp_path, monkeypatch, target):
    path = glmbandits.save(_policy(10), tmp_path / "model.glmb")
    before = path.read_bytes()

    def boom(*args, **kwargs):
        raise OSError(f"simulated {target} failure")

    monkeypatch.setattr(os, target, boom)
    with pytest.raises(OSError, match=f"simulated {target} failure"):
        glmbandits.save(_policy(30), path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.glmb"]
    assert_same_policies(glmbandits.load(path), _policy(10))


def test_an_unencodable_policy_writes_nothing(tmp_path):
    policy = _policy(5)
    policy.extra_ = object()  # not storable
    with pytest.raises(TypeError, match=r"policy(\.__getstate__\(\))?\['extra_'\] is a builtins.object"):
        glmbandits.save(policy, tmp_path / "model.glmb")
    assert list(tmp_path.iterdir()) == []


def test_a_replaced_file_keeps_its_permissions(tmp_path):
    path = glmbandits.save(_policy(3), tmp_path / "model.glmb")
    os.chmod(path, 0o640)
    glmbandits.save(_policy(4), path)
    assert path.stat().st_mode & 0o777 == 0o640


_WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    import glmbandits
    sys.path.insert(0, sys.argv[2])
    from persistence_play import play
    policy = glmbandits.UCBGLM(n_features=10, seed=0)
    play(policy, 3000, seed=1)
    rng = np.random.default_rng(0)
    glmbandits.save(policy, sys.argv[1])
    print("ready", flush=True)
    while True:
        x = rng.normal(size=10) / 4
        policy.update(x, 1.0)
        glmbandits.save(policy, sys.argv[1])
""")


@pytest.mark.slow
def test_a_save_killed_at_any_moment_leaves_a_loadable_file(tmp_path):
    path = tmp_path / "model.glmb"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(Path(__file__).parent.parent)])}
    delays = [0.0, 0.003, 0.011, 0.023, 0.037, 0.05, 0.071, 0.097]
    for delay in delays:
        process = subprocess.Popen([sys.executable, "-c", _WRITER, str(path),
                                    str(Path(__file__).parent)], stdout=subprocess.PIPE, env=env)
        assert process.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        policy = glmbandits.load(path)
        assert isinstance(policy, glmbandits.UCBGLM) and policy.n_updates_ >= 3000
        for leftover in tmp_path.glob(".model.glmb.*.tmp"):  # a killed save leaves its temp file
            leftover.unlink()
