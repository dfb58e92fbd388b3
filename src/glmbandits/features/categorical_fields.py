"""Categorical fields: :class:`Categorical` (one-hot) and :class:`MultiCategorical`
(multi-hot), over a declared or fitted vocabulary or hashed into ``buckets`` columns.

Hashing uses BLAKE2b (``hashlib``, RFC 7693) of the field's name and the category
(:func:`stable_hash`), so a bucket is the same on every machine and in every process
(Python's ``hash`` of a string is salted per process). The hashing trick is Weinberger,
Dasgupta, Langford, Smola & Attenberg (2009), as in Vowpal Wabbit.

Examples
--------
>>> stable_hash("url", "example.org/a") % 1024
808
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._validation import check_int
from .fields import MISSING, Field, Where, _check_choice, _describe, _is_category

__all__ = ["Categorical", "MultiCategorical", "stable_hash"]

_HASH_CACHE_SIZE = 1 << 16


def stable_hash(field: str, value: str | int) -> int:
    """The 64-bit BLAKE2b hash of a category of ``field``: the same on every machine.

    Strings and ints are told apart (``"1"`` and ``1`` hash differently).

    Examples
    --------
    >>> stable_hash("url", "example.org/a")
    2009513255938271016
    """
    text = f"s:{value}" if isinstance(value, str) else f"i:{int(value)}"
    digest = hashlib.blake2b(field.encode("utf-8") + b"\x00" + text.encode("utf-8"),
                             digest_size=8).digest()
    return int.from_bytes(digest, "little")


class _Categories(Field):
    """What :class:`Categorical` and :class:`MultiCategorical` share: the vocabulary or
    the buckets, the unseen rule, the category -> column lookup."""

    vocabulary_: list[Any]
    _index: dict[Any, int]
    _missing_rules = ("refuse", "zero", "other")

    def __init__(self, name: str, *, vocabulary: Any = None, buckets: int | None = None,
                 unseen: str = "other", missing: str = "refuse") -> None:
        super().__init__(name, missing=missing)
        owner = f"{type(self).__name__} {name!r}"
        if (vocabulary is None) == (buckets is None):
            raise ValueError(f"{owner}: give exactly one of vocabulary (a list or 'fit') and "
                             f"buckets, got vocabulary={vocabulary!r}, buckets={buckets!r}")
        if vocabulary is not None and not (isinstance(vocabulary, str) and vocabulary == "fit"):
            vocabulary = self._check_vocabulary(vocabulary, owner)
        self.vocabulary = vocabulary
        self.buckets = None if buckets is None else check_int(buckets, owner, "buckets", 1)
        self.unseen = _check_choice(unseen, owner, "unseen", ("other", "zero", "refuse"))
        if buckets is not None and missing == "other":
            raise ValueError(f"{owner}: missing='other' needs a vocabulary (a hashed field has "
                             "no 'other' column), got buckets")
        self._cache: dict[Any, int] = {}

    @staticmethod
    def _check_vocabulary(vocabulary: Any, owner: str) -> list[Any]:
        if isinstance(vocabulary, (str, bytes)) or not isinstance(vocabulary, (Sequence, set,
                                                                               frozenset)):
            raise TypeError(f"{owner}: vocabulary must be 'fit' or a list of categories, got "
                            f"{_describe(vocabulary)}")
        items = list(vocabulary) if isinstance(vocabulary, Sequence) else sorted(vocabulary)
        bad = [v for v in items if not _is_category(v)]
        if bad:
            raise TypeError(f"{owner}: categories must be str or int, got {_describe(bad[0])}")
        items = [v if isinstance(v, str) else int(v) for v in items]
        if len({(type(v), v) for v in items}) != len(items):
            raise ValueError(f"{owner}: vocabulary must not repeat a category, got {items!r}")
        return items

    def declaration(self) -> dict[str, Any]:
        return {**super().declaration(), "vocabulary": self.vocabulary, "buckets": self.buckets,
                "unseen": self.unseen}

    def fitted_state(self) -> dict[str, Any]:
        return {} if self.buckets is not None else {"vocabulary": list(self.vocabulary_)}

    def declared_fit(self) -> dict[str, Any]:
        return {"vocabulary": list(self.vocabulary_)} if self.vocabulary == "fit" else {}

    def _other(self) -> bool:
        return self.buckets is None and "other" in (self.unseen, self.missing)

    def names_out(self) -> list[str]:
        if self.buckets is not None:
            return [f"{self.name}#{b}" for b in range(self.buckets)]
        return ([f"{self.name}={v}" for v in self.vocabulary_]
                + ([f"{self.name}=<other>"] if self._other() else []))

    def _categories_of(self, value: Any, where: Where, owner: str, i: int) -> list[Any]:
        raise NotImplementedError

    def _learn(self, values: Sequence[Any], where: Where, owner: str) -> dict[str, Any]:
        if self.buckets is not None:
            self._parse(values, where, owner)
            return {}
        if self.vocabulary != "fit":
            self._restore({"vocabulary": self.vocabulary}, owner)  # declared: unseen rules apply
            self._parse(values, where, owner)
            return {"vocabulary": list(self.vocabulary)}
        seen = {(str, c) if isinstance(c, str) else (int, int(c))
                for i, v in enumerate(values) if v is not MISSING and v is not None
                for c in self._categories_of(v, where, owner, i)}
        self._parse(values, where, owner, fitting=True)  # the missing rule
        return {"vocabulary": [v for _, v in sorted(seen, key=lambda p: (p[0] is str, p[1]))]}

    def _restore(self, state: dict[str, Any], owner: str) -> None:
        if self.buckets is not None:
            super()._restore(state, owner)
            return
        if set(state) != {"vocabulary"}:
            raise ValueError(f"{owner}: field {self.name!r} needs a vocabulary, got "
                             f"{sorted(state)}")
        vocabulary = self._check_vocabulary(state["vocabulary"], f"{owner}: field {self.name!r}")
        if self.vocabulary != "fit" and vocabulary != self.vocabulary:
            raise ValueError(f"{owner}: field {self.name!r} declares the vocabulary "
                             f"{self.vocabulary!r}, got {vocabulary!r}")
        self.vocabulary_ = vocabulary
        self._index = {(type(v), v): j for j, v in enumerate(vocabulary)}

    def _column(self, category: Any, where: Where, owner: str, i: int, fitting: bool) -> int:
        """The column of one category: its word's, its bucket's, the other slot's, or -1."""
        if self.buckets is not None:
            column = self._cache.get((type(category), category))
            if column is None:
                if len(self._cache) >= _HASH_CACHE_SIZE:
                    self._cache.clear()
                column = stable_hash(self.name, category) % self.buckets
                self._cache[(type(category), category)] = column
            return column
        if fitting:
            return -1
        column = self._index.get((str if isinstance(category, str) else int, category))
        if column is not None:
            return column
        if self.unseen == "refuse":
            shown = self.vocabulary_[:10] + (["..."] if len(self.vocabulary_) > 10 else [])
            raise ValueError(f"{owner}: feature {self.name!r} of {where(i)} has the category "
                             f"{category!r}, which is not in its vocabulary {shown} "
                             "(unseen='refuse')")
        return len(self.vocabulary_) if self.unseen == "other" else -1

    def _missing_column(self, where: Where, i: int, owner: str) -> int:
        if self.missing == "refuse":
            raise self._refuse_missing(where, i, owner, self._expected)
        return len(self.vocabulary_) if self.missing == "other" else -1

    _expected = ""


class Categorical(_Categories):
    """One category (a str or an int) as a one-hot row.

    Parameters
    ----------
    name : str
    vocabulary : list or "fit", optional
        The categories, one column each in this order, or the sorted categories of the
        fitted data (ints before strings).
    buckets : int, optional
        Instead of a vocabulary: the category's column is its stable hash
        (:func:`stable_hash`) modulo ``buckets`` (columns ``name#0`` ... ``name#b-1``);
        every category has one, so ``unseen`` does not apply.
    unseen : "other", "zero" or "refuse"
        A category outside the vocabulary goes to one extra ``name=<other>`` column
        (default), gives an all-zero row, or is refused.
    missing : "refuse", "zero" or "other"
        An absent value is refused (default), gives zeros, or goes to the other column.

    Examples
    --------
    >>> f = Categorical("device", vocabulary="fit").fitted(["ios", "web", "ios"])
    >>> f.names_out()
    ['device=ios', 'device=web', 'device=<other>']
    """

    kind = "categorical"
    _expected = "a category (str or int)"

    def _categories_of(self, value: Any, where: Where, owner: str, i: int) -> list[Any]:
        if not _is_category(value):
            raise TypeError(f"{owner}: feature {self.name!r} of {where(i)} must be a category "
                            f"(str or int), got {_describe(value)}")
        return [value]

    def _parse(self, values: Sequence[Any], where: Where, owner: str,
               fitting: bool = False) -> np.ndarray:
        columns = np.empty(len(values), dtype=np.intp)
        index = None if fitting or self.buckets is not None else self._index
        for i, value in enumerate(values):
            if index is not None and type(value) is str:  # the common case: a known word
                column = index.get((str, value))
                if column is not None:
                    columns[i] = column
                    continue
            if value is MISSING or value is None:
                columns[i] = -1 if fitting else self._missing_column(where, i, owner)
            else:
                columns[i] = self._column(self._categories_of(value, where, owner, i)[0], where,
                                          owner, i, fitting)
        return columns

    def _write(self, parsed: np.ndarray, out: np.ndarray) -> None:
        if parsed.shape[0] == 1:
            if parsed[0] >= 0:
                out[0, parsed[0]] = 1.0
            return
        rows = np.flatnonzero(parsed >= 0)
        out[rows, parsed[rows]] = 1.0


class MultiCategorical(_Categories):
    """A list of categories (e.g. a user's segments) as a multi-hot row.

    Parameters are those of :class:`Categorical`; the value is a list, tuple or set of
    str or int (a repeated category counts once; an empty list gives zeros).

    Examples
    --------
    >>> f = MultiCategorical("segments", vocabulary=["news", "sports"]).fitted([])
    >>> x = np.zeros((1, f.width()))  # the slice holds zeros on entry
    >>> f._write(f._parse([["sports", "cooking"]], str, "example"), x)
    >>> f.names_out(), x
    (['segments=news', 'segments=sports', 'segments=<other>'], array([[0., 1., 1.]]))
    """

    kind = "multi_categorical"
    _expected = "a list of categories"

    def _categories_of(self, value: Any, where: Where, owner: str, i: int) -> list[Any]:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(
                value, (Sequence, set, frozenset, np.ndarray)):
            raise TypeError(f"{owner}: feature {self.name!r} of {where(i)} must be a list of "
                            f"categories (str or int), got {_describe(value)}")
        items = list(value)
        for item in items:
            if not _is_category(item):
                raise TypeError(f"{owner}: feature {self.name!r} of {where(i)} must hold str "
                                f"or int categories, got {_describe(item)} in the list")
        return items

    def _parse(self, values: Sequence[Any], where: Where, owner: str,
               fitting: bool = False) -> tuple[np.ndarray, np.ndarray]:
        rows: list[int] = []
        columns: list[int] = []
        for i, value in enumerate(values):
            if value is MISSING or value is None:
                found = [-1 if fitting else self._missing_column(where, i, owner)]
            else:
                found = [self._column(c, where, owner, i, fitting)
                         for c in self._categories_of(value, where, owner, i)]
            for column in found:
                if column >= 0:
                    rows.append(i)
                    columns.append(column)
        return np.array(rows, dtype=np.intp), np.array(columns, dtype=np.intp)

    def _write(self, parsed: tuple[np.ndarray, np.ndarray], out: np.ndarray) -> None:
        out[parsed[0], parsed[1]] = 1.0  # a repeated category: 1 again
