"""Progress bars of the long-running functions (tqdm, on stderr).

Every long function of :mod:`glmbandits.experiments` takes ``progress: bool``;
the command line decides it (on when stderr is a terminal and ``--quiet`` is not
given). Bars go to stderr, so tables printed on stdout stay clean.
"""

from __future__ import annotations

import shutil
import sys

from tqdm import tqdm

__all__ = ["progress_bar"]


def progress_bar(total: int, enabled: bool, description: str, unit: str = "run") -> tqdm:
    """A tqdm bar on stderr with an ETA, or a silent one when ``enabled`` is false.

    Parameters
    ----------
    total : int
        Number of steps.
    enabled : bool
        Draw the bar; when false the returned object accepts the same calls and
        prints nothing.
    description : str
        Text before the bar.
    unit : str, default "run"
        What one step is.

    Returns
    -------
    tqdm.tqdm
        Call ``update(1)`` after each step, ``set_postfix_str`` for detail and
        ``close()`` at the end (or use it as a context manager).

    Examples
    --------
    >>> with progress_bar(3, False, "demo") as bar:  # prints nothing
    ...     for _ in range(3):
    ...         _ = bar.update(1)
    >>> bar.disable
    True
    """
    # the terminal's size, or 80 x 24 where it reports 0 x 0 (tqdm would then draw nothing)
    size = shutil.get_terminal_size()
    return tqdm(total=total, desc=description, unit=unit, file=sys.stderr,
                disable=not enabled or total <= 0, ncols=size.columns or 80,
                nrows=size.lines or 24)
