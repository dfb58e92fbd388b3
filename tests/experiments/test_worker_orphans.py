"""Issue 12, item 8: the runner's worker processes exit when their parent is killed (kill -9),
instead of running on as orphans."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import glmbandits

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="reads the process table from /proc (Linux)")

CONFIG = """
name = "orphans"
horizon = 400000
seeds = 4
[environment]
n_features = 2
n_actions = 3
[[policies]]
name = "random"
"""


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


def _wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.mark.slow
@pytest.mark.parametrize("with_config", [True, False], ids=["config", "flags"])
def test_workers_exit_when_the_parent_is_killed(tmp_path, with_config):
    config = tmp_path / "exp.toml"
    config.write_text(CONFIG)
    env = dict(os.environ)
    source = str(Path(glmbandits.__file__).resolve().parents[1])
    env["PYTHONPATH"] = source + os.pathsep + env.get("PYTHONPATH", "")
    problem = ([str(config), "--store", str(tmp_path / "s.sqlite")] if with_config else
               ["-T", "400000", "-d", "2", "-K", "3", "--algorithms", "random", "--seeds", "4"])
    parent = subprocess.Popen(
        [sys.executable, "-m", "glmbandits", "run", *problem, "--jobs", "2", "--no-plot",
         "--out", str(tmp_path)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        cwd=tmp_path)  # the flags' default store goes to ./, not the checkout
    workers: set[int] = set()
    try:
        assert _wait_for(lambda: len(_children(parent.pid)) >= 2, 60), "no workers started"
        workers = _children(parent.pid)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=60)
        assert _wait_for(lambda: not any(_alive(pid) for pid in workers), 10), \
            f"orphaned workers still running: {[p for p in workers if _alive(p)]}"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(timeout=60)
        for pid in workers:  # clean up whatever the fix did not
            if _alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


@pytest.mark.slow
def test_the_portable_fallback_alone_ends_an_orphan(tmp_path):
    """Without prctl (as on macOS), the getppid() watch thread ends the worker."""
    code = (
        "import os, sys, time\n"
        "from glmbandits.experiments import workers\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    sys.platform = 'darwin'\n"
        "    workers.exit_with_parent(os.getppid(), poll_seconds=0.05)\n"
        "    print(os.getpid(), flush=True)\n"
        "    time.sleep(60)\n"
        "    os._exit(0)\n"
        "time.sleep(60)\n")
    env = dict(os.environ)
    source = str(Path(glmbandits.__file__).resolve().parents[1])
    env["PYTHONPATH"] = source + os.pathsep + env.get("PYTHONPATH", "")
    middle = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              text=True)
    child = None
    try:
        line = middle.stdout.readline()  # printed by the child once the watch is armed
        assert line.strip().isdigit(), f"the child did not start: {line!r}"
        child = int(line)
        assert _alive(child)
        os.kill(middle.pid, signal.SIGKILL)
        middle.wait(timeout=60)
        assert _wait_for(lambda: not _alive(child), 10), "the orphan kept running"
    finally:
        if middle.poll() is None:
            middle.kill()
            middle.wait(timeout=60)
        middle.stdout.close()
        if child is not None and _alive(child):
            os.kill(child, signal.SIGKILL)
