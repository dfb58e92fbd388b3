"""Worker processes that never outlive the process that started them.

Used as the ``initializer`` of every process pool of :mod:`glmbandits.experiments`
(the runner's local workers).
"""

from __future__ import annotations

import os
import sys
import threading
import time

__all__ = ["exit_with_parent"]

_PR_SET_PDEATHSIG = 1


def exit_with_parent(parent: int, poll_seconds: float = 0.5) -> None:
    """Pool initializer: end this worker when the process that started it dies.

    On Linux the kernel sends SIGKILL at the parent's death (``prctl
    PR_SET_PDEATHSIG``); everywhere a daemon thread also polls ``os.getppid()``,
    which changes when the worker is re-parented, and exits at once. So a
    ``kill -9`` of the runner leaves no orphaned workers behind.
    """
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the thread remains
            pass
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(poll_seconds)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="glmbandits-parent-watch", daemon=True).start()
