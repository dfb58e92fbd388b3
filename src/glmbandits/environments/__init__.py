"""Bandit environments: synthetic GLM problems (and, later, real-data ones)."""

from .synthetic import SyntheticGLMEnv

__all__ = ["SyntheticGLMEnv"]
