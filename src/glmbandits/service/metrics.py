"""Prometheus text-format metrics of the service: counters, gauges and latency histograms.

Small and lock-protected (the routes run on one event loop, the renderer may
not); the counts of decisions and rewards come from the log's totals, so they
survive restarts.
"""

from __future__ import annotations

import bisect
import threading

from ..data.vocabulary import EXPIRY_OUTCOMES, REWARD_STATUSES

__all__ = ["Metrics", "LATENCY_BUCKETS"]

#: Upper bounds (seconds) of the latency histogram buckets.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class _Histogram:
    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BUCKETS) + 1)
        self.total = 0.0
        self.n = 0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.total += seconds
        self.n += 1


class Metrics:
    """What ``GET /metrics`` reports, besides the log's totals.

    Examples
    --------
    >>> metrics = Metrics()
    >>> metrics.observe("decide", 200, 0.002)
    >>> metrics.observe("decide", 422, 0.001)
    >>> text = metrics.render({"decisions": 1}, pending=1)
    >>> 'glmbandits_rejected_requests_total{endpoint="decide",status="422"} 1' in text
    True
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latency: dict[str, _Histogram] = {}
        self._responses: dict[tuple[str, int], int] = {}

    def observe(self, endpoint: str, status: int, seconds: float) -> None:
        """Count one answered request and, for a success, its latency."""
        with self._lock:
            key = (endpoint, status)
            self._responses[key] = self._responses.get(key, 0) + 1
            if status < 400:
                self._latency.setdefault(endpoint, _Histogram()).observe(seconds)

    def render(self, totals: dict[str, int], pending: int,
               commits: tuple[int, int] | None = None) -> str:
        """The Prometheus exposition text; ``commits`` is (commits, requests they covered)."""
        lines = []

        def metric(name: str, kind: str, help_text: str) -> None:
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")

        metric("glmbandits_decisions_total", "counter", "Decisions logged (all time).")
        lines.append(f"glmbandits_decisions_total {totals.get('decisions', 0)}")
        metric("glmbandits_rewards_total", "counter",
               "Rewards logged, by what was done with them (all time).")
        for outcome in REWARD_STATUSES:
            lines.append(f'glmbandits_rewards_total{{status="{outcome}"}} '
                         f"{totals.get(f'rewards_{outcome}', 0)}")
        metric("glmbandits_expired_total", "counter",
               "Decisions closed without a learned reward, by outcome (all time).")
        for outcome in EXPIRY_OUTCOMES:
            lines.append(f'glmbandits_expired_total{{outcome="{outcome}"}} '
                         f"{totals.get(f'expiries_{outcome}', 0)}")
        metric("glmbandits_pending_decisions", "gauge", "Decisions waiting for a reward.")
        lines.append(f"glmbandits_pending_decisions {pending}")
        if commits is not None:
            metric("glmbandits_commits_total", "counter",
                   "Log commits of request batches that logged an event (one fsync each) "
                   "since the process started; reads (GET /v1/model) are not commits.")
            lines.append(f"glmbandits_commits_total {commits[0]}")
            metric("glmbandits_committed_requests_total", "counter",
                   "Requests whose events those commits wrote (their ratio is the group "
                   "size).")
            lines.append(f"glmbandits_committed_requests_total {commits[1]}")
        with self._lock:
            responses = dict(self._responses)
            latency = {k: (list(h.counts), h.total, h.n) for k, h in self._latency.items()}
        metric("glmbandits_rejected_requests_total", "counter",
               "Requests refused (4xx) or failed (5xx) since the process started.")
        for (endpoint, status), count in sorted(responses.items()):
            if status >= 400:
                lines.append(f'glmbandits_rejected_requests_total{{endpoint="{endpoint}",'
                             f'status="{status}"}} {count}')
        metric("glmbandits_request_seconds", "histogram",
               "Latency of successful requests, from the route's start to its answer.")
        for endpoint, (counts, total, n) in sorted(latency.items()):
            running = 0
            for bound, count in zip(LATENCY_BUCKETS, counts):
                running += count
                lines.append(f'glmbandits_request_seconds_bucket{{endpoint="{endpoint}",'
                             f'le="{bound}"}} {running}')
            lines.append(f'glmbandits_request_seconds_bucket{{endpoint="{endpoint}",'
                         f'le="+Inf"}} {n}')
            lines.append(f'glmbandits_request_seconds_sum{{endpoint="{endpoint}"}} {total!r}')
            lines.append(f'glmbandits_request_seconds_count{{endpoint="{endpoint}"}} {n}')
        return "\n".join(lines) + "\n"
