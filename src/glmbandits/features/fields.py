"""The field declarations of a :class:`~glmbandits.features.schema.FeatureSchema`: the base.

A field names one feature of the context or of an action and says how its value
becomes columns: :class:`~.numeric_fields.Numeric` (one column, scaled as declared or
fitted), :class:`~.numeric_fields.Boolean` (one 0/1 column),
:class:`~.numeric_fields.Vector` (a fixed-length numeric vector),
:class:`~.categorical_fields.Categorical` (one-hot over a declared or fitted vocabulary,
or one of ``buckets`` hashed columns) and :class:`~.categorical_fields.MultiCategorical`
(a list of categories, multi-hot). Each declares a rule for a missing value
(``missing``) and, when categorical, for a category outside its vocabulary (``unseen``).

A field is a declaration: :meth:`Field.fitted` returns a *new* field with its learned
state (a vocabulary, a scale), so a schema whose ``fit`` is refused keeps its fields as
they were. Values are checked for a whole group of rows first (``_parse``, which raises
naming the feature, the row, what was expected and what was given), then written into
the (n, width) column slice of the output (``_write``, vectorised over the rows; the
slice holds zeros on entry).

Examples
--------
>>> from glmbandits.features import Categorical
>>> Categorical("country", vocabulary=["DE", "FR"]).fitted([]).names_out()
['country=DE', 'country=FR', 'country=<other>']
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Mapping, Sequence
from typing import Any, Callable

import numpy as np

from .._validation import format_value

__all__ = ["Field", "MISSING", "Where"]

#: Stands for an absent key (``None`` is missing too).
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()
#: Characters a field name may not hold: they separate the parts of column names.
_RESERVED_CHARACTERS = "=#*[]"
Where = Callable[[int], str]


def _describe(value: Any) -> str:
    text = format_value(value) if isinstance(value, numbers.Number) else repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _is_category(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, numbers.Integral)
                                      and not isinstance(value, (bool, np.bool_)))


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _check_name(name: Any, owner: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"{owner}: name must be a str, got {_describe(name)}")
    if not name or any(c in name for c in _RESERVED_CHARACTERS):
        raise ValueError(f"{owner}: name must be a non-empty str without any of "
                         f"{_RESERVED_CHARACTERS!r}, got {name!r}")
    return name


def _check_choice(value: Any, owner: str, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{owner}: {name} must be one of {list(choices)}, got {value!r}")
    return value


class Field:
    """Base class of the field declarations (see the module docstring).

    Parameters
    ----------
    name : str
        The key of the feature in a context or action mapping.
    missing : str or value
        What an absent key or ``None`` becomes: ``"refuse"`` (an error naming the
        feature; the default), ``"zero"`` (all of the field's columns 0) or a kind's
        own rule (a value to impute, ``"other"``).
    """

    kind = ""
    _missing_rules: tuple[str, ...] = ("refuse", "zero")

    def __init__(self, name: str, *, missing: Any = "refuse") -> None:
        owner = f"{type(self).__name__}"
        self.name = _check_name(name, owner)
        self.missing = missing
        if isinstance(missing, str) or not self._imputes():
            _check_choice(missing, f"{owner} {name!r}", "missing", self._missing_rules)

    def _imputes(self) -> bool:
        """Whether a non-string ``missing`` (a value to impute) is allowed."""
        return False

    # -- declaration ---------------------------------------------------------
    def declaration(self) -> dict[str, Any]:
        """The constructor's arguments as JSON values, with ``kind`` (see ``FIELD_KINDS``)."""
        return {"kind": self.kind, "name": self.name, "missing": self.missing}

    def fitted_state(self) -> dict[str, Any]:
        """The learned state as JSON values (empty when nothing is learned)."""
        return {}

    def __repr__(self) -> str:
        arguments = ", ".join(f"{k}={v!r}" for k, v in self.declaration().items()
                              if k not in ("kind", "name"))
        return f"{type(self).__name__}({self.name!r}, {arguments})"

    # -- fitting ---------------------------------------------------------------
    def fitted(self, values: Sequence[Any], where: Where | None = None,
               owner: str = "FeatureSchema.fit") -> "Field":
        """A copy of this field with its state learned from ``values`` (self unchanged)."""
        where = where or (lambda i: f"row {i}")
        new = copy.copy(self)
        new._restore(new._learn(values, where, owner), owner)
        return new

    def restored(self, state: Mapping[str, Any], owner: str) -> "Field":
        """A copy of this field with a saved ``fitted_state()`` (checked)."""
        new = copy.copy(self)
        new._restore(dict(state), owner)
        return new

    def _learn(self, values: Sequence[Any], where: Where, owner: str) -> dict[str, Any]:
        self._parse(values, where, owner, fitting=True)  # the same checks as transform
        return {}

    def _restore(self, state: dict[str, Any], owner: str) -> None:
        if state:
            raise ValueError(f"{owner}: field {self.name!r} learns nothing, got state "
                             f"{sorted(state)}")

    def learns(self) -> bool:
        """Whether ``fitted`` learns something from the data (a scale or a vocabulary)."""
        return bool(self.fitted_keys())

    def fitted_keys(self) -> list[str]:
        """The declaration's keys declared as fitted (``scale="fit"``, ``vocabulary="fit"``).

        Examples
        --------
        >>> from glmbandits.features import Numeric
        >>> Numeric("age", scale="fit").fitted_keys(), Numeric("age").fitted_keys()
        (['scale'], [])
        """
        return [key for key in ("scale", "vocabulary") if getattr(self, key, None) == "fit"]

    def declared_fit(self) -> dict[str, Any]:
        """After ``fitted``: the declaration's values that state what was learned (the
        fitted vocabulary, the fitted (mean, sd)), for the keys of :meth:`fitted_keys`
        that have a declared form; ``{}`` for a field that learns nothing."""
        return {}

    def width(self) -> int:
        return len(self.names_out())

    def names_out(self) -> list[str]:
        return [self.name]

    # -- the per-request path --------------------------------------------------
    def _refuse_missing(self, where: Where, i: int, owner: str, expected: str) -> ValueError:
        return ValueError(f"{owner}: feature {self.name!r} of {where(i)} is missing "
                          f"(missing='refuse'); expected {expected}")

    def _parse(self, values: Sequence[Any], where: Where, owner: str,
               fitting: bool = False) -> Any:
        raise NotImplementedError

    def _write(self, parsed: Any, out: np.ndarray) -> None:
        raise NotImplementedError
