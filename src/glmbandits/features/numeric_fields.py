"""Numeric fields: :class:`Numeric` (one scaled number), :class:`Boolean` (0/1) and
:class:`Vector` (a fixed-length numeric vector), each one column per number.

Scaling is ``(value - mean) / sd`` with the mean and sd declared or fitted (fitted by
:class:`~glmbandits.features.base.Standardizer`, whose moments are exact for values up to
the float64 limit). A request's numbers are checked at once when there are many of them
(the K actions' prices), one by one otherwise; either way a refused value is named with
its row.

Examples
--------
>>> Numeric("age", scale=(40.0, 10.0)).fitted([]).fitted_state()
{'mean': 40.0, 'scale': 10.0}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._validation import MAX_MAGNITUDE, check_int, format_value
from .base import Standardizer
from .fields import MISSING, Field, Where, _describe, _is_number

__all__ = ["Numeric", "Boolean", "Vector"]


def _numbers_at_once(values: Sequence[Any], ndim: int) -> np.ndarray | None:
    """The values as one float64 array of ``ndim`` dimensions when they are all plain
    numbers (or rows of numbers) of one shape, else None (then the per-row checks run)."""
    if len(values) < 8 or values[0] is MISSING or isinstance(values[0], (str, bool, np.bool_)):
        return None  # a few values: the per-value path is faster than numpy's
    try:
        array = np.asarray(values)
    except (TypeError, ValueError):  # ragged rows, ...
        return None
    if array.ndim != ndim or array.dtype.kind not in "iuf" or 0 in array.shape or (
            ndim == 1 and any(type(v) is bool for v in values)):
        return None
    return array.astype(np.float64)


class _Scaled(Field):
    """A field whose numbers are scaled: ``(value - mean) / sd``, declared or fitted."""

    mean_: Any
    scale_: Any
    _missing_rules = ("refuse", "zero")

    def __init__(self, name: str, *, scale: Any = None, missing: Any = "refuse") -> None:
        super().__init__(name, missing=missing)
        owner = f"{type(self).__name__} {name!r}"
        if scale is not None and not (isinstance(scale, str) and scale == "fit"):
            if (not isinstance(scale, (tuple, list)) or len(scale) != 2
                    or not all(_is_number(v) for v in scale)):
                raise TypeError(f"{owner}: scale must be None, 'fit' or a (mean, sd) pair of "
                                f"numbers, got {scale!r}")
            mean, sd = float(scale[0]), float(scale[1])
            if not (math.isfinite(mean) and math.isfinite(sd) and sd > 0):
                raise ValueError(f"{owner}: scale must be a finite (mean, sd) with sd > 0, "
                                 f"got {scale!r}")
            scale = [mean, sd]
        self.scale = scale

    def declaration(self) -> dict[str, Any]:
        return {**super().declaration(), "scale": self.scale}

    def fitted_state(self) -> dict[str, Any]:
        return {"mean": self.mean_, "scale": self.scale_}

    def declared_fit(self) -> dict[str, Any]:
        return {"scale": [self.mean_, self.scale_]} if self.scale == "fit" else {}


class Numeric(_Scaled):
    """One number, one column: ``(value - mean) / sd``.

    Parameters
    ----------
    name : str
    scale : None, "fit" or (mean, sd)
        No scaling, the mean and standard deviation fitted on the data (a constant
        feature is only centred), or declared.
    range : (low, high), optional
        Values outside ``[low, high]`` are refused, naming the feature.
    missing : "refuse", "zero" or a number
        An absent value is refused, gives 0 in the column (the mean, when centred), or
        is replaced by the number (before scaling).

    Examples
    --------
    >>> f = Numeric("age", scale=(40.0, 10.0), range=(0, 120)).fitted([])
    >>> f.names_out(), f.fitted_state()
    (['age'], {'mean': 40.0, 'scale': 10.0})
    """

    kind = "numeric"

    def __init__(self, name: str, *, scale: Any = None, range: Any = None,
                 missing: Any = "refuse") -> None:
        super().__init__(name, scale=scale, missing=missing)
        owner = f"Numeric {name!r}"
        if range is not None:
            if (not isinstance(range, (tuple, list)) or len(range) != 2
                    or not all(_is_number(v) for v in range)):
                raise TypeError(f"{owner}: range must be None or a (low, high) pair of numbers, "
                                f"got {range!r}")
            range = [float(range[0]), float(range[1])]
            if not (math.isfinite(range[0]) and math.isfinite(range[1])
                    and range[0] <= range[1]):
                raise ValueError(f"{owner}: range must be finite with low <= high, got {range}")
        self.range = range
        if not isinstance(missing, str):
            if not _is_number(missing) or not math.isfinite(float(missing)):
                raise TypeError(f"{owner}: missing must be 'refuse', 'zero' or a finite number, "
                                f"got {missing!r}")
            self.missing = float(missing)
            self._check_value(self.missing, lambda i: "its declared missing value", owner, 0)

    def _imputes(self) -> bool:
        return True

    def declaration(self) -> dict[str, Any]:
        return {**super().declaration(), "range": self.range}

    def _check_value(self, value: Any, where: Where, owner: str, i: int) -> float:
        if not _is_number(value):
            raise TypeError(f"{owner}: feature {self.name!r} of {where(i)} must be a number, "
                            f"got {_describe(value)}")
        try:
            number = float(value)
        except OverflowError:  # an int beyond float64
            number = math.inf if value > 0 else -math.inf
        if not (math.isfinite(number) and abs(number) <= MAX_MAGNITUDE):
            raise ValueError(f"{owner}: feature {self.name!r} of {where(i)} must be a finite "
                             f"number of magnitude <= {MAX_MAGNITUDE:g}, got "
                             f"{format_value(number)} (give None for a missing value)")
        if self.range is not None and not self.range[0] <= number <= self.range[1]:
            raise ValueError(f"{owner}: feature {self.name!r} of {where(i)} must lie in "
                             f"[{format_value(self.range[0])}, {format_value(self.range[1])}], "
                             f"got {format_value(number)}")
        return number

    def _within(self, numbers_: np.ndarray) -> bool:
        """Whether every number is legal (the slow path diagnoses the first that is not)."""
        if not (np.isfinite(numbers_).all() and np.abs(numbers_).max() <= MAX_MAGNITUDE):
            return False
        return self.range is None or bool(
            (numbers_.min() >= self.range[0]) & (numbers_.max() <= self.range[1]))

    def _learn(self, values: Sequence[Any], where: Where, owner: str) -> dict[str, Any]:
        numbers_, zero = self._parse(values, where, owner)
        if self.scale is None:
            return {"mean": 0.0, "scale": 1.0}
        if self.scale != "fit":
            return {"mean": self.scale[0], "scale": self.scale[1]}
        seen = numbers_ if zero is None else numbers_[~zero]
        if seen.size == 0:
            raise ValueError(f"{owner}: feature {self.name!r} has scale='fit' but no value in "
                             "the data to fit it on")
        scaler = Standardizer().fit(seen[:, None])
        return {"mean": float(scaler.mean_[0]), "scale": float(scaler.scale_[0])}

    def _restore(self, state: dict[str, Any], owner: str) -> None:
        if set(state) != {"mean", "scale"} or not all(_is_number(state[k]) for k in state):
            raise ValueError(f"{owner}: field {self.name!r} needs a numeric mean and scale, "
                             f"got {state!r}")
        mean, scale = float(state["mean"]), float(state["scale"])
        if not (math.isfinite(mean) and math.isfinite(scale) and scale > 0):
            raise ValueError(f"{owner}: field {self.name!r} needs a finite mean and a scale "
                             f"> 0, got mean {format_value(mean)}, scale {format_value(scale)}")
        self.mean_, self.scale_ = mean, scale

    def _parse(self, values: Sequence[Any], where: Where, owner: str,
               fitting: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        fast = _numbers_at_once(values, 1)
        if fast is not None and self._within(fast):
            return fast, None
        numbers_ = np.empty(len(values))
        zero = None
        for i, value in enumerate(values):
            if value is MISSING or value is None:
                if self.missing == "refuse":
                    raise self._refuse_missing(where, i, owner, "a number")
                if self.missing == "zero":
                    zero = np.zeros(len(values), dtype=bool) if zero is None else zero
                    zero[i] = True
                    numbers_[i] = 0.0
                else:
                    numbers_[i] = self.missing
                continue
            numbers_[i] = value if type(value) is float and self.range is None and (
                -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE) else self._check_value(
                    value, where, owner, i)
        return numbers_, zero

    def _write(self, parsed: tuple[np.ndarray, np.ndarray | None], out: np.ndarray) -> None:
        numbers_, zero = parsed
        if numbers_.shape[0] == 1:  # a context's number: scalar arithmetic, the same bits
            out[0, 0] = 0.0 if zero is not None else (numbers_[0] - self.mean_) / self.scale_
            return
        column = out[:, 0]
        np.subtract(numbers_, self.mean_, out=column)
        np.divide(column, self.scale_, out=column)
        if zero is not None:
            column[zero] = 0.0


class Boolean(Field):
    """``True``/``False`` as one 1/0 column (numbers, even 0 and 1, are refused).

    Parameters
    ----------
    name : str
    missing : "refuse", "zero" or a bool
        An absent value is refused, gives 0, or is replaced by the bool.

    Examples
    --------
    >>> Boolean("premium", missing=False).names_out()
    ['premium']
    """

    kind = "boolean"

    def __init__(self, name: str, *, missing: Any = "refuse") -> None:
        super().__init__(name, missing=missing)
        if not isinstance(missing, str) and not isinstance(missing, (bool, np.bool_)):
            raise TypeError(f"Boolean {name!r}: missing must be 'refuse', 'zero' or a bool, "
                            f"got {missing!r}")
        self.missing = missing if isinstance(missing, str) else bool(missing)

    def _imputes(self) -> bool:
        return True

    def _parse(self, values: Sequence[Any], where: Where, owner: str,
               fitting: bool = False) -> np.ndarray:
        if len(values) >= 8:
            fast = np.asarray(values) if isinstance(values[0], (bool, np.bool_)) else None
            if fast is not None and fast.dtype == np.bool_ and fast.ndim == 1:
                return fast.astype(np.float64)
        ones = np.zeros(len(values))
        for i, value in enumerate(values):
            if value is MISSING or value is None:
                if self.missing == "refuse":
                    raise self._refuse_missing(where, i, owner, "a bool")
                value = self.missing is True
            elif not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{owner}: feature {self.name!r} of {where(i)} must be a bool "
                                f"(true or false), got {_describe(value)}")
            ones[i] = 1.0 if value else 0.0
        return ones

    def _write(self, parsed: np.ndarray, out: np.ndarray) -> None:
        out[:, 0] = parsed


class Vector(_Scaled):
    """A fixed-length numeric vector (e.g. an embedding), one column per component.

    Parameters
    ----------
    name : str
    length : int
    scale : None or "fit"
        No scaling, or each component standardised with statistics fitted on the data.
    missing : "refuse" or "zero"

    Examples
    --------
    >>> Vector("embedding", length=3).fitted([[0.1, 0.2, 0.3]]).names_out()
    ['embedding[0]', 'embedding[1]', 'embedding[2]']
    """

    kind = "vector"

    def __init__(self, name: str, *, length: int, scale: Any = None,
                 missing: str = "refuse") -> None:
        if scale is not None and scale != "fit":
            raise ValueError(f"Vector {name!r}: scale must be None or 'fit', got {scale!r}")
        super().__init__(name, scale=scale, missing=missing)
        self.length = check_int(length, f"Vector {name!r}", "length", minimum=1)

    def declaration(self) -> dict[str, Any]:
        return {**super().declaration(), "length": self.length}

    def names_out(self) -> list[str]:
        return [f"{self.name}[{j}]" for j in range(self.length)]

    def _learn(self, values: Sequence[Any], where: Where, owner: str) -> dict[str, Any]:
        rows, zero = self._parse(values, where, owner)
        if self.scale is None:
            return {"mean": [0.0] * self.length, "scale": [1.0] * self.length}
        seen = rows if zero is None else rows[~zero]
        if seen.shape[0] == 0:
            raise ValueError(f"{owner}: feature {self.name!r} has scale='fit' but no value in "
                             "the data to fit it on")
        scaler = Standardizer().fit(seen)
        return {"mean": scaler.mean_.tolist(), "scale": scaler.scale_.tolist()}

    def _restore(self, state: dict[str, Any], owner: str) -> None:
        ok = set(state) == {"mean", "scale"} and all(
            isinstance(state[k], (list, tuple)) and len(state[k]) == self.length
            and all(_is_number(v) and math.isfinite(v) for v in state[k]) for k in state)
        if not ok or not all(v > 0 for v in state["scale"]):
            raise ValueError(f"{owner}: field {self.name!r} needs a finite mean and a scale > 0 "
                             f"of {self.length} numbers each, got {state!r}")
        self.mean_ = np.array(state["mean"], dtype=np.float64)
        self.scale_ = np.array(state["scale"], dtype=np.float64)

    def fitted_state(self) -> dict[str, Any]:
        return {"mean": self.mean_.tolist(), "scale": self.scale_.tolist()}

    def declared_fit(self) -> dict[str, Any]:
        return {}  # a vector's scale is None or "fit": a fitted one has no declared form

    def _parse(self, values: Sequence[Any], where: Where, owner: str,
               fitting: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        fast = _numbers_at_once(values, 2)
        if (fast is not None and fast.shape[1] == self.length and np.isfinite(fast).all()
                and np.abs(fast).max() <= MAX_MAGNITUDE):
            return fast, None
        rows = np.zeros((len(values), self.length))
        zero = None
        for i, value in enumerate(values):
            if value is MISSING or value is None:
                if self.missing == "refuse":
                    raise self._refuse_missing(where, i, owner, f"{self.length} numbers")
                zero = np.zeros(len(values), dtype=bool) if zero is None else zero
                zero[i] = True
                continue
            if isinstance(value, (str, bytes, Mapping)) or not isinstance(
                    value, (Sequence, np.ndarray)) or not all(map(_is_number, value)):
                raise TypeError(f"{owner}: feature {self.name!r} of {where(i)} must be a "
                                f"sequence of {self.length} numbers, got {_describe(value)}")
            if len(value) != self.length:
                raise ValueError(f"{owner}: feature {self.name!r} of {where(i)} must have "
                                 f"length {self.length}, got {len(value)}")
            row = np.asarray(value, dtype=np.float64)
            if not (np.isfinite(row).all() and np.abs(row).max() <= MAX_MAGNITUDE):
                raise ValueError(f"{owner}: feature {self.name!r} of {where(i)} must hold "
                                 f"finite numbers of magnitude <= {MAX_MAGNITUDE:g}, got "
                                 f"{_describe(value)}")
            rows[i] = row
        return rows, zero

    def _write(self, parsed: tuple[np.ndarray, np.ndarray | None], out: np.ndarray) -> None:
        rows, zero = parsed
        np.subtract(rows, self.mean_, out=out)
        np.divide(out, self.scale_, out=out)
        if zero is not None:
            out[zero] = 0.0
