"""Every concrete policy class exported by ``glmbandits``, for tests run over all of them.

Importable from any test module: pytest puts this folder (the one of the root
``conftest.py``) on ``sys.path``.
"""

from __future__ import annotations

import inspect

import numpy as np

import glmbandits
from glmbandits.policies.base import Policy

POLICY_CLASSES: list[type] = sorted(
    (obj for name in glmbandits.__all__
     if inspect.isclass(obj := getattr(glmbandits, name))
     and issubclass(obj, Policy) and not inspect.isabstract(obj)),
    key=lambda cls: cls.__name__,
)
POLICY_IDS = [cls.__name__ for cls in POLICY_CLASSES]


def unit_ball_contexts(rng: np.random.Generator, k: int, d: int) -> np.ndarray:
    """k Gaussian rows of dimension d, shrunk into the unit ball where longer than 1."""
    X = rng.normal(size=(k, d))
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
