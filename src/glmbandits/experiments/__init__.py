"""Experiments: comparisons of policies over seeds, plots (and, later, sweeps and stores)."""

from .compare import ComparisonResult, RunRecord, compare_policies

__all__ = ["compare_policies", "ComparisonResult", "RunRecord"]
