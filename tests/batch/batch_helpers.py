"""Assertions shared by the lockstep batch-simulation tests."""

from __future__ import annotations

import numpy as np


def assert_same_trajectory(batch, replicate: int, sequential) -> None:
    """Replicate ``replicate`` of a batch run equals a sequential ``simulate`` run, bit for bit."""
    for name in ("actions", "rewards", "regret", "propensities"):
        np.testing.assert_array_equal(getattr(batch, name)[replicate], getattr(sequential, name),
                                      err_msg=name)
