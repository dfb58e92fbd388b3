"""Prometheus text-format metrics of the service: counters, gauges and latency histograms.

Small and lock-protected (the routes run on one event loop, the renderer may
not); the counts of decisions and rewards come from the log's totals, so they
survive restarts. With a ``[drift]`` table the served policy carries a drift monitor
(:class:`glmbandits.evaluation.DriftMonitor`), whose state is part of the model: its
counts survive restarts too, and :func:`drift_body` is what ``/metrics`` and
``GET /v1/model`` report of it.
"""

from __future__ import annotations

import bisect
import threading

from typing import Any

from ..data.vocabulary import EXPIRY_OUTCOMES, REWARD_STATUSES

__all__ = ["Metrics", "LATENCY_BUCKETS", "drift_body"]

#: Upper bounds (seconds) of the latency histogram buckets.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


def drift_body(policy: Any) -> dict[str, Any] | None:
    """The drift monitor's status as JSON (``GET /v1/model``'s ``drift``), None without one.

    Examples
    --------
    >>> from glmbandits import UCBGLM
    >>> from glmbandits.evaluation import DriftMonitor
    >>> drift_body(UCBGLM(2, seed=0)) is None
    True
    >>> drift_body(UCBGLM(2, seed=0).monitor_drift(DriftMonitor(window=100)))["alarms"]
    0
    """
    status = None if policy is None else policy.drift_
    return None if status is None else dict(status.as_dict())


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
    >>> drift = {"observed": 900, "unscored": 0, "alarms": 1, "alarm": False,
    ...          "statistic": -0.4, "threshold": 3.2, "observed_mean": 0.31,
    ...          "predicted_mean": 0.30}
    >>> for line in metrics.render({}, 0, drift=drift).splitlines():
    ...     if line.startswith("glmbandits_drift_window_mean"):
    ...         print(line)
    glmbandits_drift_window_mean{kind="observed"} 0.31
    glmbandits_drift_window_mean{kind="predicted"} 0.3
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
               commits: tuple[int, int] | None = None,
               drift: dict[str, Any] | None = None) -> str:
        """The Prometheus exposition text; ``commits`` is (commits, requests they covered),
        ``drift`` the monitor's :func:`drift_body` (None: no drift metrics)."""
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
        if drift is not None:
            _drift_lines(drift, metric, lines)
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


def _drift_lines(drift: dict[str, Any], metric: Any, lines: list[str]) -> None:
    """The drift monitor's counters and gauges (a gauge of a check not yet made is left out)."""
    metric("glmbandits_drift_observations_total", "counter",
           "Rewards the drift monitor tested (scored: with the prediction the decision was "
           "made with) or could not (unscored).")
    lines.append(f'glmbandits_drift_observations_total{{scored="true"}} {drift["observed"]}')
    lines.append(f'glmbandits_drift_observations_total{{scored="false"}} {drift["unscored"]}')
    metric("glmbandits_drift_alarms_total", "counter", "Drift alarms raised (all time).")
    lines.append(f"glmbandits_drift_alarms_total {drift['alarms']}")
    metric("glmbandits_drift_alarm", "gauge", "1 if the latest check raised an alarm.")
    lines.append(f"glmbandits_drift_alarm {int(drift['alarm'])}")
    if drift["statistic"] is not None:
        metric("glmbandits_drift_statistic", "gauge",
               "The latest check's z (latest window against the one before it) and the "
               "threshold |z| had to pass.")
        lines.append(f'glmbandits_drift_statistic{{value="z"}} {drift["statistic"]!r}')
        lines.append(f'glmbandits_drift_statistic{{value="threshold"}} {drift["threshold"]!r}')
    if drift["observed_mean"] is not None:
        metric("glmbandits_drift_window_mean", "gauge",
               "The latest complete window's mean reward and mean predicted reward.")
        lines.append(f'glmbandits_drift_window_mean{{kind="observed"}} '
                     f'{drift["observed_mean"]!r}')
        lines.append(f'glmbandits_drift_window_mean{{kind="predicted"}} '
                     f'{drift["predicted_mean"]!r}')
