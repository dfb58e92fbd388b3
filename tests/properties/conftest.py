"""Hypothesis profiles of the property suite (see docs/testing.md).

* ``ci`` (the default): few examples, derandomised, so CI runs are fast and
  repeatable: the same examples every run, no flakes.
* ``long``: many random examples, to hunt for new counterexamples by hand:
  ``GLMBANDITS_HYPOTHESIS_PROFILE=long python -m pytest tests/properties``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=25, deadline=None, derandomize=True, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "long", max_examples=600, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("GLMBANDITS_HYPOTHESIS_PROFILE", "ci"))
