"""Experiments: declarative sweeps (TOML configs, or the one problem of ``glmbandits run``'s
flags) run by one runner over seeds, a results store, plots, and ``glmbandits reproduce``."""

from .config import ConfigError, ExperimentConfig, load_config, parse_config
from .runner import ExperimentReport, run_experiment
from .store import ResultStore, StoredRun
from .summary import format_summary, summarise

__all__ = ["ConfigError",
           "ExperimentConfig", "load_config", "parse_config", "run_experiment",
           "ExperimentReport", "ResultStore", "StoredRun", "summarise", "format_summary"]
