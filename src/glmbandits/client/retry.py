"""When the client retries, and how long it waits: one policy for the sync and async client.

A request is retried, with the same body (so the same ``decision_id``: decide and reward
are idempotent on the server, a retry is answered as the first request was), after a
connection error or timeout (no answer), a ``503`` or a ``429``; never after another
status. At most ``max_retries`` retries, and none that would start after ``deadline``
seconds from the first attempt. The wait before retry n (n = 0, 1, ...) is
``backoff * 2**n`` capped at ``max_backoff``, of which a random half is drawn
(equal jitter: uniform in [cap / 2, cap]) from the policy's own ``random.Random(seed)``;
a ``Retry-After`` header of the answer, when present, is waited at least.
"""

from __future__ import annotations

import dataclasses
import email.utils
import math
import random
import time
from typing import Callable

__all__ = ["RetryPolicy", "RETRY_STATUSES", "parse_retry_after"]

#: the statuses after which a request is retried (nothing was done by the server)
RETRY_STATUSES = frozenset({429, 503})


@dataclasses.dataclass
class RetryPolicy:
    """Bounded retries with exponential backoff and jitter.

    Parameters
    ----------
    max_retries : int
        Retries after the first attempt (0: none).
    backoff : float
        The first wait's cap, in seconds; doubled on each retry.
    max_backoff : float
        The cap of one wait.
    deadline : float
        No retry starts later than this many seconds after the first attempt.
    seed : int or None
        Seed of the jitter's own ``random.Random`` (no global random state).

    Examples
    --------
    >>> policy = RetryPolicy(max_retries=3, backoff=0.5, max_backoff=1.0, seed=0)
    >>> [0.25 <= policy.delay(0) <= 0.5, 0.5 <= policy.delay(1) <= 1.0,
    ...  0.5 <= policy.delay(5) <= 1.0, policy.delay(0, retry_after=2.0) >= 2.0]
    [True, True, True, True]
    """

    max_retries: int = 3
    backoff: float = 0.1
    max_backoff: float = 5.0
    deadline: float = 30.0
    seed: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) \
                or self.max_retries < 0:
            raise ValueError("RetryPolicy: max_retries must be an int >= 0, got "
                             f"{self.max_retries!r}")
        for name in ("backoff", "max_backoff", "deadline"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value < 0:
                raise ValueError(f"RetryPolicy: {name} must be a finite number >= 0, got "
                                 f"{value!r}")
        self._random = random.Random(self.seed)

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """The wait in seconds before retry number ``retry`` (0 for the first)."""
        cap = min(self.max_backoff, self.backoff * 2.0 ** min(retry, 60))
        wait = cap / 2 + self._random.uniform(0.0, cap / 2)
        return max(wait, retry_after) if retry_after is not None else wait

    def next_wait(self, retry: int, started: float, retry_after: float | None,
                  clock: Callable[[], float] = time.monotonic) -> float | None:
        """The wait before retry ``retry`` of a request first sent at ``started`` (by
        ``clock``), or None when the policy allows no more retry."""
        if retry >= self.max_retries:
            return None
        wait = self.delay(retry, retry_after)
        if clock() + wait - started > self.deadline:
            return None
        return wait


def parse_retry_after(value: str | None, now: Callable[[], float] = time.time
                      ) -> float | None:
    """Seconds from a ``Retry-After`` header (a number of seconds or an HTTP date);
    None when absent or unreadable.

    Examples
    --------
    >>> parse_retry_after("2"), parse_retry_after(None), parse_retry_after("soon")
    (2.0, None, None)
    """
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = moment.timestamp() - now()
    return max(0.0, seconds) if math.isfinite(seconds) else None
