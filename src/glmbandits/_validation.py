"""Input checks shared by every public object.

Every function here *checks and converts*; none mutates anything. Messages
follow the convention of ``DESIGN.md``: they name the owner (``"UCBGLM.select"``),
the parameter, the expected value and the one given, printed as plain numbers
(:func:`format_value`: ``2.0``, ``1e+155``, never ``np.float64(2.0)``).

The rules, kept here once for every public object:

* **Kind** (:class:`TypeError`). Arrays (contexts, designs, rewards, propensities,
  actions) must hold real numbers: numpy dtype kinds ``f``, ``i``, ``u``, and ``b``
  (booleans, as 0/1) where the caller allows them. Strings, bytes, complex numbers,
  datetimes, timedeltas and object arrays are refused, never cast (a cast would drop
  an imaginary part or parse ``"1.0"``). Scalars must be :class:`numbers.Real`
  (not ``bool``) or :class:`numbers.Integral`.
* **Magnitude** (:class:`ValueError`). Every array entry and every real parameter
  must be finite with ``|v| <= MAX_MAGNITUDE`` (1e50). Policies keep Gram matrices
  and products of up to four such factors (``x x' V⁻¹ x``, ``r·x``), and
  (1e50)⁴ = 1e200 is still far from the float64 limit 1.8e308, so an accepted
  input never overflows a policy's state; a row of norm 1e155, whose square is
  inf, is refused up front and the object is left unchanged. Non-zero real
  parameters must also satisfy ``|v| >= MIN_MAGNITUDE`` (1e-50), so that their
  reciprocals (``V⁻¹ = I/λ``, ``log(1/δ)``) stay finite.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Union

import numpy as np

#: Largest magnitude accepted for an array entry or a real parameter (see the module docstring).
MAX_MAGNITUDE = 1e50
#: Smallest non-zero magnitude accepted for a real parameter.
MIN_MAGNITUDE = 1e-50

_MAX_SQUARED = MAX_MAGNITUDE * MAX_MAGNITUDE
_FLOAT64 = np.dtype(np.float64)

#: numpy dtype kinds that are real numbers.
_REAL_KINDS = frozenset("fiu")
_KIND_NAMES = {"b": "booleans", "c": "complex numbers", "M": "datetimes", "m": "timedeltas",
               "O": "an object array", "U": "strings", "S": "bytes", "V": "a structured array"}

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


def format_value(value: Any) -> str:
    """A number as a message prints it: ``2.0``, ``3``, ``1e+155``, ``nan``.

    numpy scalars are shown as the Python numbers they equal (numpy 2's repr would
    print ``np.float64(2.0)``); anything else falls back to ``repr``.

    Examples
    --------
    >>> import numpy as np
    >>> format_value(np.float64(2.0)), format_value(np.int64(3)), format_value(1e155)
    ('2.0', '3', '1e+155')
    """
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    return repr(value)


def _describe_kind(array: np.ndarray) -> str:
    return _KIND_NAMES.get(array.dtype.kind, f"dtype {array.dtype}")


def as_float_array(value: Any, name: str, owner: str, *, allow_bool: bool = True) -> np.ndarray:
    """Convert to a float64 array; anything but real numbers is a TypeError.

    Parameters
    ----------
    allow_bool : bool, default True
        Accept booleans (as 0.0/1.0). Actions and propensities pass ``False``.

    Raises
    ------
    TypeError
        For strings, bytes, complex numbers, datetimes, timedeltas, object arrays
        (e.g. a list holding ``None`` or Python ints too large for int64) and ragged
        nested lists.
    """
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{owner}: {name} must be a numeric array, got {type(value).__name__}")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"{owner}: {name} must be a numeric array, got {type(value).__name__} ({error})"
        ) from None
    if array.dtype is _FLOAT64:
        return array  # the common case: nothing to check or convert
    kind = array.dtype.kind
    if kind not in _REAL_KINDS and not (allow_bool and kind == "b"):
        raise TypeError(f"{owner}: {name} must be a numeric array of real numbers, got "
                        f"{_describe_kind(array)}")
    with np.errstate(over="ignore"):  # float128 beyond float64: inf, refused by the finite check
        return array.astype(np.float64, copy=False)


def _check_finite(array: np.ndarray, name: str, owner: str) -> None:
    """Every entry finite and ``|v| <= MAX_MAGNITUDE``.

    Fast path: one BLAS pass, ``Σ v² <= MAX_MAGNITUDE²``, which implies the rule and fails
    for NaN, inf and any entry beyond the bound (cheaper than ``np.isfinite(a).all()``
    for the (K, d) arrays of a round). Arrays with a large Frobenius norm but legal
    entries take the exact check.
    """
    if array.size == 0 or np.vdot(array, array) <= _MAX_SQUARED:
        return
    if array.max() <= MAX_MAGNITUDE and array.min() >= -MAX_MAGNITUDE:
        return  # NaN fails both comparisons, so it reaches the diagnosis below
    finite = np.isfinite(array)
    bad = int(np.size(array) - np.count_nonzero(finite))
    if bad:
        raise ValueError(f"{owner}: {name} must be finite, got {bad} NaN or inf value(s)")
    magnitude = np.abs(array)
    where = np.unravel_index(int(np.argmax(magnitude)), array.shape)
    index = f" at index {tuple(int(i) for i in where)}" if array.ndim else ""
    raise ValueError(
        f"{owner}: {name} must have entries of magnitude <= {MAX_MAGNITUDE:g} (larger values "
        f"would overflow the arithmetic on them; rescale), got "
        f"{format_value(array[where])}{index}"
    )


def check_finite(array: np.ndarray, owner: str, name: str) -> None:
    """Raise ``ValueError`` unless every entry is finite with ``|v| <= MAX_MAGNITUDE``."""
    _check_finite(array, name, owner)


def check_contexts(value: Any, n_features: int, owner: str, name: str = "contexts") -> np.ndarray:
    """Check a (K, d) matrix of per-action features with K >= 1 and return it as float64."""
    array = as_float_array(value, name, owner)
    if array.ndim != 2 or array.shape[1] != n_features:
        raise ValueError(f"{owner}: {name} must have shape (K, {n_features}), got {array.shape}")
    if array.shape[0] == 0:
        raise ValueError(f"{owner}: {name} must hold at least one action (K >= 1), got K = 0")
    _check_finite(array, name, owner)
    return array


def is_checked_contexts(value: Any, n_features: int) -> bool:
    """Whether :func:`check_contexts` would return ``value`` itself, unchanged.

    The per-round fast path of ``select``: a float64 ndarray of shape (K, n_features),
    K >= 1, whose entries pass the magnitude rule by the one-pass test of
    :func:`check_finite` (``Σ v² <= MAX_MAGNITUDE²``). No message is built; on
    ``False`` the caller runs :func:`check_contexts`, which converts the value or
    raises naming the parameter (it also accepts what this test leaves to it, e.g.
    legal entries with a large sum of squares).

    Examples
    --------
    >>> import numpy as np
    >>> is_checked_contexts(np.eye(3), 3), is_checked_contexts([[1.0, 0.0]], 2)
    (True, False)
    """
    return (type(value) is np.ndarray and value.dtype is _FLOAT64 and value.ndim == 2
            and value.shape[1] == n_features and value.shape[0] > 0
            and bool(np.vdot(value, value) <= _MAX_SQUARED))


def is_checked_vector(value: Any, size: int) -> bool:
    """Whether :func:`check_vector` would return ``value`` itself, unchanged.

    The per-round fast path of ``update``: a float64 ndarray of shape (size,) that
    passes the one-pass magnitude test (see :func:`is_checked_contexts`). On
    ``False`` the caller runs :func:`check_vector` (convert or raise).

    Examples
    --------
    >>> import numpy as np
    >>> is_checked_vector(np.zeros(2), 2), is_checked_vector(np.array([np.nan, 0.0]), 2)
    (True, False)
    """
    return (type(value) is np.ndarray and value.dtype is _FLOAT64 and value.shape == (size,)
            and bool(np.vdot(value, value) <= _MAX_SQUARED))  # vdot: no overflow warning


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
    try:
        result = float(value)
    except OverflowError:  # a Python int beyond float64
        raise ValueError(f"{owner}: {name} must have magnitude <= {MAX_MAGNITUDE:g}, got "
                         f"an int of {int(math.trunc(value)).bit_length()} bits") from None
    if not np.isfinite(result):
        raise ValueError(f"{owner}: {name} must be finite, got {format_value(result)}")
    if abs(result) > MAX_MAGNITUDE or 0.0 < abs(result) < MIN_MAGNITUDE:
        raise ValueError(f"{owner}: {name} must be 0 or have magnitude between {MIN_MAGNITUDE:g} "
                         f"and {MAX_MAGNITUDE:g}, got {format_value(result)}")
    return result


def check_positive(value: Any, owner: str, name: str) -> float:
    """Check a finite real scalar > 0."""
    result = check_real(value, owner, name)
    if result <= 0:
        raise ValueError(f"{owner}: {name} must be > 0, got {format_value(result)}")
    return result


def check_nonnegative(value: Any, owner: str, name: str) -> float:
    """Check a finite real scalar >= 0."""
    result = check_real(value, owner, name)
    if result < 0:
        raise ValueError(f"{owner}: {name} must be >= 0, got {format_value(result)}")
    return result


def check_probability(value: Any, owner: str, name: str) -> float:
    """Check a real scalar in the open interval (0, 1)."""
    result = check_real(value, owner, name)
    if not 0.0 < result < 1.0:
        raise ValueError(f"{owner}: {name} must lie in (0, 1), got {format_value(result)}")
    return result


def check_int(value: Any, owner: str, name: str, minimum: int | None = None) -> int:
    """Check an integer (not a bool) with an optional lower bound."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be an int, got {type(value).__name__}")
    result = int(value)
    if abs(result) > MAX_MAGNITUDE:
        given = f"an int of {result.bit_length()} bits"
        raise ValueError(f"{owner}: {name} must have magnitude <= {MAX_MAGNITUDE:g}, got {given}")
    if minimum is not None and result < minimum:
        raise ValueError(f"{owner}: {name} must be >= {minimum}, got {format_value(result)}")
    return result
