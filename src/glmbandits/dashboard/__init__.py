"""The decision service's dashboard: static files only (HTML, JavaScript, CSS, a vendored uPlot).

The page (``index.html``) asks for an API key, keeps it only in a JavaScript variable
(never in storage or cookies) and polls ``GET /v1/model``, ``GET /v1/events?after=SEQ``
and ``GET /v1/evaluation`` with ``Authorization: Bearer KEY``; a 401 shows "wrong key"
and no data. The service serves these files (:data:`ASSET_FILES`, the page at ``/`` too)
without a key, since they hold no data, and nothing else of this folder (its
``__init__.py`` is a 404).

The JSON the page reads: ``/v1/model`` ``{"class", "params", "n_features", "max_actions",
"model_version", "counts": {"decisions", "rewards", "pending", "expired"}, "drift"}`` (the
drift monitor's status, ``DriftStatus.as_dict()``, or null);
``/v1/events`` one event a line with ``seq``, ``kind``, ``decision_id``, ``timestamp``
(decisions: ``action``, ``probabilities``, ``model_version``; rewards: ``reward``,
``status``); ``/v1/evaluation`` ``ShadowEvaluation.to_dict()``, or
``{"available": false, "reason": ...}`` with status 200 when there is nothing to
evaluate (a 404 would be logged as an error in the browser's console).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["asset_folder", "ASSET_FILES"]

#: The files the service serves, relative to :func:`asset_folder`: the only ones (a file the
#: page loads must be listed here; tests/service/test_service_doors.py checks it).
ASSET_FILES = ("index.html", "dashboard.js", "dashboard.css", "vendor/uplot/uPlot.iife.min.js",
               "vendor/uplot/uPlot.min.css", "vendor/uplot/LICENSE")


def asset_folder() -> Path:
    """The folder holding the dashboard's files (``index.html`` and what it loads).

    Examples
    --------
    >>> (asset_folder() / "index.html").is_file()
    True
    """
    return Path(__file__).resolve().parent
