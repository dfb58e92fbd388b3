"""Input checks shared by every public object.

Every function here *checks and converts*; none mutates anything. Messages
follow the convention of ``DESIGN.md``: they name the owner (``"UCBGLM.select"``),
the parameter, the expected value and the one given.
"""

from __future__ import annotations

import numbers
from typing import Any, Union

import numpy as np

#: What every ``seed`` parameter accepts.
SeedLike = Union[int, np.random.Generator, np.random.SeedSequence, None]


def as_generator(seed: Any, owner: str) -> np.random.Generator:
    """Turn ``seed`` (int, Generator, SeedSequence or None) into a Generator.

    A Generator is used as is (shared, not copied), so that a caller who passes
    one controls the stream; an int or SeedSequence seeds a fresh PCG64.
    """
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise TypeError(
            f"{owner}: seed must be an int, a numpy.random.Generator, a SeedSequence or None, "
            f"got {type(seed).__name__}"
        )
    if int(seed) < 0:
        raise ValueError(f"{owner}: seed must be a non-negative int, got {seed}")
    return np.random.default_rng(int(seed))


def as_float_array(value: Any, name: str, owner: str) -> np.ndarray:
    """Convert to a float64 array, turning non-numeric input into a TypeError."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{owner}: {name} must be a numeric array, got {type(value).__name__}")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"{owner}: {name} must be a numeric array, got {type(value).__name__} ({error})"
        ) from None
    return array


def _check_finite(array: np.ndarray, name: str, owner: str) -> None:
    if not np.isfinite(array).all():  # the method: much cheaper than np.all per round
        bad = int(np.size(array) - np.count_nonzero(np.isfinite(array)))
        raise ValueError(f"{owner}: {name} must be finite, got {bad} NaN or inf value(s)")


def check_contexts(value: Any, n_features: int, owner: str, name: str = "contexts") -> np.ndarray:
    """Check a (K, d) matrix of per-action features with K >= 1 and return it as float64."""
    array = as_float_array(value, name, owner)
    if array.ndim != 2 or array.shape[1] != n_features:
        raise ValueError(f"{owner}: {name} must have shape (K, {n_features}), got {array.shape}")
    if array.shape[0] == 0:
        raise ValueError(f"{owner}: {name} must hold at least one action (K >= 1), got K = 0")
    _check_finite(array, name, owner)
    return array


def check_design(value: Any, owner: str, name: str = "X") -> np.ndarray:
    """Check an (n, d) design matrix with n >= 1, d >= 1 and return it as float64."""
    array = as_float_array(value, name, owner)
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"{owner}: {name} must have shape (n, d) with n, d >= 1, got {array.shape}")
    _check_finite(array, name, owner)
    return array


def check_vector(value: Any, size: int, owner: str, name: str) -> np.ndarray:
    """Check a finite vector of shape (size,) and return it as float64."""
    array = as_float_array(value, name, owner)
    if array.shape != (size,):
        raise ValueError(f"{owner}: {name} must have shape ({size},), got {array.shape}")
    _check_finite(array, name, owner)
    return array


def check_real(value: Any, owner: str, name: str) -> float:
    """Check a finite real scalar."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be a real number, got {type(value).__name__}")
    result = float(value)
    if not np.isfinite(result):
        raise ValueError(f"{owner}: {name} must be finite, got {result}")
    return result


def check_positive(value: Any, owner: str, name: str) -> float:
    """Check a finite real scalar > 0."""
    result = check_real(value, owner, name)
    if result <= 0:
        raise ValueError(f"{owner}: {name} must be > 0, got {result}")
    return result


def check_nonnegative(value: Any, owner: str, name: str) -> float:
    """Check a finite real scalar >= 0."""
    result = check_real(value, owner, name)
    if result < 0:
        raise ValueError(f"{owner}: {name} must be >= 0, got {result}")
    return result


def check_probability(value: Any, owner: str, name: str) -> float:
    """Check a real scalar in the open interval (0, 1)."""
    result = check_real(value, owner, name)
    if not 0.0 < result < 1.0:
        raise ValueError(f"{owner}: {name} must lie in (0, 1), got {result}")
    return result


def check_int(value: Any, owner: str, name: str, minimum: int | None = None) -> int:
    """Check an integer (not a bool) with an optional lower bound."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be an int, got {type(value).__name__}")
    result = int(value)
    if minimum is not None and result < minimum:
        raise ValueError(f"{owner}: {name} must be >= {minimum}, got {result}")
    return result
