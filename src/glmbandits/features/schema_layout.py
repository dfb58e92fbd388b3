"""The columns of a fitted feature schema, assembled by the library's feature builders.

:class:`SchemaLayout` knows where each field writes (its column slice of the context row
z or of the action rows V), the builder that turns (z, V) into the (K, d) rows
(``Concat`` of ``UserFeatures`` — z broadcast to every action —, ``ItemFeatures``, one
``Interaction`` per declared pair, ``Intercept``, under ``UnitBall``: :mod:`.builders`),
the name and group of every column, and the buffers reused from request to request
(grown geometrically with K; the output view is the same object while K is unchanged).

Examples
--------
>>> from glmbandits.features import Categorical, Numeric
>>> layout = SchemaLayout([Numeric("age").fitted([])],
...                       [Categorical("t", vocabulary=["a"], unseen="zero").fitted([])],
...                       [("context", "action")], intercept=False, unit_ball=False)
>>> layout.names
['age', 't=a', 'age*t=a']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .base import FeatureBuilder
from .builders import (Concat, Intercept, Interaction, ItemFeatures, UnitBall, UserFeatures,
                       _row_norms_max)
from .fields import Field

__all__ = ["SchemaLayout"]


class _Columns(FeatureBuilder):
    """A column range of the context row (broadcast to every action) or of the action rows."""

    def __init__(self, side: str, start: int, stop: int) -> None:
        self.side, self.start, self.stop = side, start, stop

    def _fit_state(self, users: np.ndarray | None, items: np.ndarray | None) -> dict[str, Any]:
        data = users if self.side == "context" else items
        assert data is not None  # a layout fits every group it interacts
        rows = data[:, self.start:self.stop]
        return {"n_features_out_": self.stop - self.start, "max_norm_": _row_norms_max(rows),
                "fit_rows": rows}

    def _fit_rows(self, state: dict[str, Any]) -> np.ndarray:
        rows: np.ndarray = state["fit_rows"]
        return rows

    def _write(self, user: np.ndarray | None, items: np.ndarray | None, out: np.ndarray) -> None:
        source = user if self.side == "context" else items
        assert source is not None
        out[...] = source[..., self.start:self.stop]


def _slices(fields: Sequence[Field]) -> list[slice]:
    edges = np.concatenate([[0], np.cumsum([f.width() for f in fields])]).astype(int).tolist()
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:])]


class SchemaLayout:
    """Field slices, the builder, column names and groups, and the buffers of one schema.

    Parameters
    ----------
    context, action : sequence of Field
        Fitted fields (their widths are known).
    interactions : sequence of (str, str)
        Checked pairs of group or field names.
    intercept, unit_ball : bool
    """

    def __init__(self, context: Sequence[Field], action: Sequence[Field],
                 interactions: Sequence[tuple[str, str]], intercept: bool,
                 unit_ball: bool) -> None:
        self.context_slices, self.action_slices = _slices(context), _slices(action)
        self.p = sum(f.width() for f in context)
        self.q = sum(f.width() for f in action)
        spans: dict[str, tuple[str, slice, list[Field]]] = {}
        for group, fields, slices in (("context", context, self.context_slices),
                                      ("action", action, self.action_slices)):
            spans.update({f.name: (group, s, [f]) for f, s in zip(fields, slices)})
            spans[group] = (group, slice(0, sum(f.width() for f in fields)), list(fields))
        blocks: list[FeatureBuilder] = []
        if context:
            blocks.append(UserFeatures())
        if action:
            blocks.append(ItemFeatures())
        for left, right in interactions:
            (ls, lcols, _), (rs, rcols, _) = spans[left], spans[right]
            blocks.append(Interaction(_Columns(ls, lcols.start, lcols.stop),
                                      _Columns(rs, rcols.start, rcols.stop)))
        if intercept:
            blocks.append(Intercept())
        if not blocks:
            raise ValueError("FeatureSchema: no columns (no field and no intercept)")
        self.builder: FeatureBuilder = UnitBall(Concat(*blocks)) if unit_ball else Concat(*blocks)
        self.names, self.groups = self._columns(context, action, interactions, spans, intercept)
        self.z = np.zeros((1, self.p))
        self.v = np.zeros((0, self.q))
        self.out = np.zeros((0, len(self.names)))
        self.view = self.out

    @staticmethod
    def _columns(context: Sequence[Field], action: Sequence[Field],
                 interactions: Sequence[tuple[str, str]], spans: dict[str, Any],
                 intercept: bool) -> tuple[list[str], list[str]]:
        """Every column's name and group, in the builder's order (an interaction's columns
        row-major: left column i times right column j at i * width_right + j)."""
        names: list[str] = []
        groups: list[str] = []
        for f in (*context, *action):
            names += f.names_out()
            groups += [f.name] * f.width()
        for left, right in interactions:
            left_columns = [(a.name, n) for a in spans[left][2] for n in a.names_out()]
            right_columns = [(b.name, m) for b in spans[right][2] for m in b.names_out()]
            for a, n in left_columns:
                names += [f"{n}*{m}" for _, m in right_columns]
                groups += [f"{a}*{b}" for b, _ in right_columns]
        if intercept:
            names.append("intercept")
            groups.append("intercept")
        return names, groups

    @staticmethod
    def encode(fields: Sequence[Field], slices: Sequence[slice], parsed: Sequence[Any],
               out: np.ndarray) -> np.ndarray:
        """Write the parsed values of ``fields`` into the zeroed rows ``out`` (n, width)."""
        out[...] = 0.0
        for f, columns, values in zip(fields, slices, parsed):
            f._write(values, out[:, columns])
        return out

    def rows(self, K: int) -> np.ndarray:
        """The (K, q) action rows' buffer."""
        if self.v.shape[0] < K:
            self.v = np.zeros((max(K, 2 * self.v.shape[0]), self.q))
        return self.v[:K]

    def output(self, K: int) -> np.ndarray:
        """The (K, d) output: the same view object while K is unchanged."""
        if self.view.shape[0] != K:
            if self.out.shape[0] < K:
                self.out = np.zeros((max(K, 2 * self.out.shape[0]), self.out.shape[1]))
            self.view = self.out[:K]
        return self.view
