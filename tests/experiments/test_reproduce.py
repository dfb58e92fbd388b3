"""`glmbandits reproduce` on tiny settings: every check runs and the report is written."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from glmbandits.experiments.reproduce import (
    ReproduceSettings,
    reproduce,
    section51_condition,
    theorem1_coverage,
)

TINY = ReproduceSettings(
    coverage_families=("logistic",), coverage_replications=30, coverage_fractions=(1.0, 0.001),
    coverage_directions=4,
    theorem2_problems=((3, 5, 1.0),), theorem2_horizon=120, theorem2_seeds=2,
    scaling_horizons=(60, 120), scaling_d_for_T=2, scaling_dims=(2, 3), scaling_T_for_d=80,
    scaling_seeds=2, scaling_n_actions=5, section51_problem=(3, 5, 1.0), section51_horizon=150,
    section51_seeds=2)


@pytest.mark.slow
def test_theorem1_coverage_meets_the_promise_at_condition_4():
    rows = theorem1_coverage("logistic", TINY, seed=0)
    at_condition = rows[0]
    assert at_condition["lambda_min"] >= at_condition["lambda_required"]
    assert at_condition["coverage"] >= 1 - 3 * TINY.coverage_delta
    assert at_condition["ratio_quantile"] > 1  # the width is conservative
    small = rows[1]
    assert small["lambda_min"] < at_condition["lambda_min"] / 100
    assert small["n"] < at_condition["n"]


def test_section51_ratios_are_finite_and_grow_sublinearly():
    result = section51_condition(TINY, seed=0)
    assert result["ratios"].shape == (2, len(result["grid"]))
    assert np.all(np.isfinite(result["ratios"])) and np.all(result["ratios"] > 0)
    assert np.all(result["slopes"] < 1.0)


@pytest.mark.slow
def test_reproduce_writes_a_report_with_figures(tmp_path):
    pytest.importorskip("matplotlib")
    # smaller designs than condition (4) keep the Theorem 1 part quick here
    settings = replace(TINY, coverage_fractions=(0.01, 0.001), coverage_replications=10)
    path = reproduce(tmp_path, settings=settings, n_jobs=1,
                     command="glmbandits reproduce --test")
    text = path.read_text()
    for heading in ("## 1. Theorem 1", "## 2. Theorem 2", "## 3. Scaling", "## 4. Section 5.1"):
        assert heading in text
    assert "`glmbandits reproduce --test`" in text
    for figure in ("theorem1_coverage.png", "theorem2_regret.png", "scaling.png",
                   "section51_condition.png"):
        assert f"]({figure})" in text and (tmp_path / figure).stat().st_size > 1000
    # a second call resumes the sweeps from the store instead of rerunning them
    from glmbandits.experiments.store import ResultStore
    with ResultStore(tmp_path / "reproduce.sqlite") as store:
        count = len(store.runs())
    reproduce(tmp_path, settings=settings, n_jobs=1)
    with ResultStore(tmp_path / "reproduce.sqlite") as store:
        assert len(store.runs()) == count
