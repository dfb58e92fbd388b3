"""Experiments: comparisons over seeds, declarative sweeps (TOML configs), a results store,
plots, and ``glmbandits reproduce``."""

from .compare import ComparisonResult, RunRecord, compare_policies
from .config import ConfigError, ExperimentConfig, load_config, parse_config
from .runner import ExperimentReport, run_experiment
from .store import ResultStore, StoredRun
from .summary import format_summary, summarise

__all__ = ["compare_policies", "ComparisonResult", "RunRecord", "ConfigError",
           "ExperimentConfig", "load_config", "parse_config", "run_experiment",
           "ExperimentReport", "ResultStore", "StoredRun", "summarise", "format_summary"]
