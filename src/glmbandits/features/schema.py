"""The declared feature schema: named context and action features to the (K, d) contexts.

A :class:`FeatureSchema` declares the context's fields and the actions' fields
(:mod:`.fields`), interactions between groups or fields (Vowpal Wabbit's ``-q``), an
intercept and the unit-ball scaling. ``fit(contexts, actions)`` learns what is declared
as fitted (vocabularies, scales) and the unit-ball factor; ``transform(context,
actions)`` turns one request, a context mapping and K action mappings, into the (K, d)
contexts a policy takes. The columns are assembled by the library's feature builders
(:mod:`.builders`: the context row broadcast to every action, the action rows, their
:class:`~.builders.Interaction`, :class:`~.builders.Intercept`, :class:`~.builders.UnitBall`),
so the layout and the norm bound are theirs.

**The reused buffer** (the convention of :mod:`.base`): ``transform`` writes into one
buffer per schema, grown geometrically with K, and returns the same array object
while K stays the same. It is overwritten by the next call; policies copy what they
keep (``policy.update(X[a], r)`` is safe), and ``out=`` writes elsewhere.

**Saved with the model.** :func:`~.schema_model.attach_schema` stores the fitted schema on a policy
(``policy.feature_schema_``), so the model file (``glmbandits.persistence``) holds it
and a model and its schema cannot be separated; ``load(path, schema=...)`` and
``attach_schema`` refuse a schema whose fingerprint differs from the model's. The
state saved is the declaration and the fitted values only (JSON values, no pickle);
loading runs the constructor's checks again and rebuilds the rest.

Why this module is long: the schema is one object (its declaration, its fit, the
per-request path and its checks, the explanations and the saved state all read the one
fitted layout); the column layout and the declaration's reading are already apart
(:mod:`.schema_layout`, :mod:`.schema_io`).

References
----------
Li, Lu & Zhou (2017), Section 2: one θ* shared by all actions, x_{t,a} per action with
‖x‖ <= 1 (the unit-ball scaling). Weinberger et al. (2009), feature hashing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .base import all_finite, check_result, finite_norm
from .fields import MISSING, Field
from .schema_io import (SCHEMA_FORMAT, check_fields, check_interactions, difference,
                        fields_from_declaration, json_copy, refuse)
from .schema_layout import SchemaLayout

__all__ = ["FeatureSchema", "SCHEMA_FORMAT"]

GROUPS = ("context", "action")


class FeatureSchema:
    """Named, typed context and action features, turned into the (K, d) contexts.

    Parameters
    ----------
    context, action : sequence of Field
        The context's and the actions' fields (:class:`~.fields.Numeric`,
        :class:`~.fields.Boolean`, :class:`~.fields.Categorical`,
        :class:`~.fields.MultiCategorical`, :class:`~.fields.Vector`); names are unique
        across both groups and may not be ``context``, ``action`` or ``intercept``.
    interactions : sequence of (str, str)
        Each pair names a group (``"context"``, ``"action"``) or a field; its columns are
        the products of every column of the one with every column of the other (row-wise
        outer product, as Vowpal Wabbit's ``-q``), named ``"a=x*b=y"``.
    intercept : bool
        A constant column ``intercept``.
    unit_ball : bool
        Divide every row by one factor fitted so that ‖x‖ <= 1 on every combination of
        a fitted context with a fitted action (:class:`~.builders.UnitBall`'s bound). A
        request beyond the fitted data (a number outside the fitted values, a longer
        list of categories) may give ‖x‖ > 1: fit on data that spans what requests hold
        (one-hot, hashed and boolean columns are bounded whatever the value).
    unknown : "refuse" or "ignore"
        A key of a context or action mapping that is no field of its group is refused
        (default, naming it) or ignored.

    Attributes
    ----------
    n_features_out_ : int
        d, after ``fit``.
    feature_names_out_ : list of str
        The name of every column: ``"age"``, ``"country=DE"``, ``"country=<other>"``,
        ``"url#513"``, ``"embedding[3]"``, ``"country=DE*category=news"``, ``"intercept"``.
    groups_ : list of str
        The field names, then one ``"a*b"`` per interacting pair of fields, then
        ``"intercept"``; ``column_groups_`` gives each column's index into it.
    norm_bound_ : float
        The fitted factor (1.0 without ``unit_ball``).
    fingerprint_, declaration_fingerprint_ : str
        SHA-256 of the declaration and the fitted state, and of the declaration alone.

    Examples
    --------
    >>> from glmbandits.features import Categorical, Numeric
    >>> schema = FeatureSchema(context=[Numeric("age", scale=(40.0, 10.0))],
    ...                        action=[Categorical("topic", vocabulary=["news", "sport"])],
    ...                        interactions=[("context", "action")], unit_ball=False)
    >>> X = schema.fit().transform({"age": 50}, [{"topic": "news"}, {"topic": "golf"}])
    >>> schema.feature_names_out_
    ['age', 'topic=news', 'topic=sport', 'topic=<other>', 'age*topic=news', 'age*topic=sport', 'age*topic=<other>', 'intercept']
    >>> X
    array([[1., 1., 0., 0., 1., 0., 0., 1.],
           [1., 0., 0., 1., 0., 0., 1., 1.]])
    """

    n_features_out_: int
    feature_names_out_: list[str]
    groups_: list[str]
    column_groups_: np.ndarray
    norm_bound_: float
    fingerprint_: str
    declaration_fingerprint_: str
    _runtime: SchemaLayout

    def __init__(self, context: Sequence[Field] = (), action: Sequence[Field] = (), *,
                 interactions: Sequence[tuple[str, str]] = (), intercept: bool = True,
                 unit_ball: bool = True, unknown: str = "refuse") -> None:
        owner = "FeatureSchema"
        self.context, self.action = check_fields(context, action, owner)
        self.interactions = check_interactions(interactions, self.context, self.action, owner)
        for name, value in (("intercept", intercept), ("unit_ball", unit_ball)):
            if not isinstance(value, (bool, np.bool_)):
                raise refuse(TypeError, name, f"{owner}: {name} must be a bool, got "
                             f"{type(value).__name__}")
        self.intercept, self.unit_ball = bool(intercept), bool(unit_ball)
        if not isinstance(unknown, str) or unknown not in ("refuse", "ignore"):
            raise refuse(ValueError, "unknown", f"{owner}: unknown must be 'refuse' or "
                         f"'ignore', got {unknown!r}")
        self.unknown = unknown
        self.attached_ = False
        self._names = {"context": frozenset(f.name for f in self.context),
                       "action": frozenset(f.name for f in self.action)}

    # -- declaration, fingerprints ---------------------------------------------------
    def declaration(self, fitted: bool = False) -> dict[str, Any]:
        """The constructor's arguments as JSON values (see :meth:`from_declaration`).

        With ``fitted=True`` (after ``fit``), what was fitted is declared instead: each
        ``vocabulary="fit"`` becomes the fitted vocabulary and each numeric
        ``scale="fit"`` the fitted (mean, sd), so a schema fitted offline can be declared
        where nothing is fitted (a service's config); the columns are the same. A
        :class:`~.numeric_fields.Vector`'s fitted scale has no declared form and stays
        ``"fit"``.

        Examples
        --------
        >>> from glmbandits.features import Categorical
        >>> s = FeatureSchema(action=[Categorical("t", vocabulary="fit")], unit_ball=False)
        >>> s.fit(actions=[{"t": "b"}, {"t": "a"}]).declaration(fitted=True)["action"][0]
        {'kind': 'categorical', 'name': 't', 'missing': 'refuse', 'vocabulary': ['a', 'b'], 'buckets': None, 'unseen': 'other'}
        """
        if fitted and not hasattr(self, "fingerprint_"):
            raise ValueError("FeatureSchema.declaration: fitted=True needs a fitted schema "
                             "(call fit first)")
        return {"format": SCHEMA_FORMAT,
                "context": [{**f.declaration(), **(f.declared_fit() if fitted else {})}
                            for f in self.context],
                "action": [{**f.declaration(), **(f.declared_fit() if fitted else {})}
                           for f in self.action],
                "interactions": [list(pair) for pair in self.interactions],
                "intercept": self.intercept, "unit_ball": self.unit_ball,
                "unknown": self.unknown}

    @classmethod
    def from_declaration(cls, declaration: Mapping[str, Any]) -> "FeatureSchema":
        """The schema a :meth:`declaration` describes (errors name the key).

        Examples
        --------
        >>> from glmbandits.features import Numeric
        >>> s = FeatureSchema(context=[Numeric("age")])
        >>> FeatureSchema.from_declaration(s.declaration()).declaration() == s.declaration()
        True
        """
        return cls(**fields_from_declaration(declaration, "FeatureSchema.from_declaration"))

    def _fitted_state(self) -> dict[str, Any]:
        return {"context": [f.fitted_state() for f in self.context],
                "action": [f.fitted_state() for f in self.action],
                "norm_bound": self.norm_bound_}

    @staticmethod
    def _digest(value: Any) -> str:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    # -- fit ---------------------------------------------------------------------------
    def fit(self, contexts: Sequence[Mapping[str, Any]] | None = None,
            actions: Sequence[Mapping[str, Any]] | None = None, *,
            norm_bound: float | None = None) -> "FeatureSchema":
        """Learn the fitted vocabularies and scales and the unit-ball factor; a refused call
        changes nothing.

        Parameters
        ----------
        contexts, actions : sequence of mappings, optional
            Example contexts and actions (e.g. past requests and the catalogue), checked
            as ``transform`` checks them. A group needs at least one when one of its
            fields is fitted (``scale="fit"``, ``vocabulary="fit"``) or with
            ``unit_ball=True`` and no ``norm_bound`` (the factor is fitted); a fully
            declared schema fits on nothing (with ``unit_ball``, given ``norm_bound``).
        norm_bound : float, optional
            With ``unit_ball=True`` only: the unit-ball factor, declared (a finite
            float > 0, e.g. the ``norm_bound_`` of a schema fitted offline) rather than
            fitted; rows are divided by it whatever the data.

        Returns
        -------
        self

        Examples
        --------
        >>> from glmbandits.features import Boolean
        >>> schema = FeatureSchema(action=[Boolean("new")]).fit(norm_bound=2.0)
        >>> schema.transform(None, [{"new": True}])
        array([[0.5, 0.5]])
        """
        owner = "FeatureSchema.fit"
        if self.attached_:
            raise ValueError(f"{owner}: this schema is attached to a model (attach_schema) "
                             "whose columns it defines; build a new FeatureSchema to fit "
                             "another")
        factor: float | None = None  # a declared unit-ball factor
        if norm_bound is not None:  # (refusals naming the key, as a declaration's)
            if not self.unit_ball:
                raise refuse(ValueError, "norm_bound", f"{owner}: norm_bound is the unit-ball "
                             f"factor; this schema has unit_ball=False, got "
                             f"norm_bound={norm_bound!r:.40}")
            if not isinstance(norm_bound, (int, float, np.integer, np.floating)) or isinstance(
                    norm_bound, (bool, np.bool_)):
                raise refuse(TypeError, "norm_bound", f"{owner}: norm_bound must be a float, "
                             f"got {type(norm_bound).__name__}")
            try:
                factor = float(norm_bound)
            except OverflowError:  # an int beyond float64
                factor = float("inf")
            if not (np.isfinite(factor) and factor > 0):
                raise refuse(ValueError, "norm_bound", f"{owner}: norm_bound must be a finite "
                             f"float > 0, got {norm_bound!r:.40}")
        fitted_bound = self.unit_ball and factor is None
        fields, data = {}, {}
        for group, rows in zip(GROUPS, (contexts, actions)):
            declared = self.context if group == "context" else self.action
            name = f"{group}s"
            needed = bool(declared) and (fitted_bound or any(f.learns() for f in declared))
            rows = self._mappings(rows, name, owner, required=needed)
            where = (lambda i, name=name: f"{name}[{i}]")
            fields[group] = [f.fitted([r.get(f.name, MISSING) for r in rows], where, owner)
                             for f in declared]
            data[group] = [f._parse([r.get(f.name, MISSING) for r in rows], where, owner)
                           for f in fields[group]], len(rows)
        layout = SchemaLayout(fields["context"], fields["action"], self.interactions,
                              self.intercept, self.unit_ball)
        encoded: list[np.ndarray | None] = []
        for group, slices, width in (("context", layout.context_slices, layout.p),
                                     ("action", layout.action_slices, layout.q)):
            parsed, n = data[group]
            if not fields[group]:
                encoded.append(None)
                continue
            rows_out = np.zeros((max(n, 1), width))  # one row of zeros: a group fitted on nothing
            if n:
                with np.errstate(over="ignore", invalid="ignore"):  # refused just below
                    layout.encode(fields[group], slices, parsed, rows_out)
                check_result(rows_out, owner)
            encoded.append(rows_out)
        state = layout.builder._fit_state(encoded[0], encoded[1])
        finite_norm(state["max_norm_"], owner)
        if factor is not None:
            state["factor_"] = factor  # (UnitBall's state, as a restored schema's)
        self._commit(fields["context"], fields["action"], layout, state)
        return self

    def _commit(self, context: list[Field], action: list[Field], layout: SchemaLayout,
                state: dict[str, Any]) -> None:
        layout.builder._commit(state)
        self.context, self.action = tuple(context), tuple(action)
        self.norm_bound_ = float(getattr(layout.builder, "factor_", 1.0))
        self.feature_names_out_ = layout.names
        self.groups_ = list(dict.fromkeys(layout.groups))
        index = {g: i for i, g in enumerate(self.groups_)}
        self.column_groups_ = np.array([index[g] for g in layout.groups], dtype=np.intp)
        self.n_features_out_ = len(layout.names)
        self.declaration_fingerprint_ = self._digest(self.declaration())
        self.fingerprint_ = self._digest({"declaration": self.declaration(),
                                          "fitted": self._fitted_state()})
        self._runtime = layout

    # -- the per-request path ------------------------------------------------------------
    def _mappings(self, rows: Any, name: str, owner: str, required: bool,
                  at_least_one: bool = True) -> Sequence[Mapping[str, Any]]:
        if rows is None and not required:
            return []
        if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Sequence):
            raise TypeError(f"{owner}: {name} must be a sequence of mappings (feature name -> "
                            f"value), got {type(rows).__name__}")
        if at_least_one and required and len(rows) == 0:
            raise ValueError(f"{owner}: {name} must hold at least one mapping, got none")
        group = "context" if name.startswith("context") else "action"
        for i, row in enumerate(rows):
            self._check_keys(row, group, f"{name}[{i}]", owner)
        return rows

    def _check_keys(self, row: Any, group: str, where: str, owner: str) -> None:
        if type(row) is not dict and not isinstance(row, Mapping):
            raise TypeError(f"{owner}: {where} must be a mapping of feature names to values, "
                            f"got {type(row).__name__}")
        names = self._names[group]
        if self.unknown == "refuse" and not names.issuperset(row):
            key = next(k for k in row if k not in names)
            other = "action" if group == "context" else "context"
            hint = f" ({key!r} is an {other} feature)" if key in self._names[other] else ""
            raise ValueError(f"{owner}: {where} has an unknown feature {key!r}{hint}; the "
                             f"schema's {group} features are {sorted(names)} (unknown='refuse')")

    def transform(self, context: Mapping[str, Any] | None, actions: Sequence[Mapping[str, Any]],
                  *, out: np.ndarray | None = None) -> np.ndarray:
        """The (K, d) contexts of one request; a refused call changes nothing.

        Parameters
        ----------
        context : mapping
            Feature name -> value for this request's context (``None``: no context fields).
        actions : sequence of K >= 1 mappings
            Feature name -> value for each candidate action.
        out : ndarray of shape (K, d), optional
            Write here instead of the schema's buffer.

        Returns
        -------
        ndarray of shape (K, n_features_out_)
            ``out``, or the schema's buffer (the same object while K is unchanged),
            **overwritten by the next call**.

        Raises
        ------
        TypeError, ValueError
            Naming the feature, the context or ``actions[i]``, what was expected and what
            was given: an unknown key, a wrong type, a value out of its declared range, a
            vector of the wrong length, a missing value under ``missing='refuse'``, an
            unseen category under ``unseen='refuse'``.
        """
        owner = "FeatureSchema.transform"
        parsed_context = self._parsed_context(context, owner)
        actions = self._mappings(actions, "actions", owner, required=True)
        K = len(actions)
        if K == 0:
            raise ValueError(f"{owner}: actions must hold at least one mapping, got none")
        in_actions = (lambda i: f"actions[{i}]")
        parsed_actions = [f._parse([a.get(f.name, MISSING) for a in actions], in_actions, owner)
                          for f in self.action]
        runtime = self._runtime
        target = self._target(K, out, owner)
        items = runtime.rows(K)
        with np.errstate(over="ignore", invalid="ignore"):  # refused just below, named
            runtime.encode(self.action, runtime.action_slices, parsed_actions, items)
        return self._write(parsed_context, items, target, owner)

    def encode_actions(self, actions: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """The action rows of K actions as :meth:`transform_encoded` takes them: each
        action's own columns (its fields encoded: one-hot, hashed, scaled), before the
        interactions, the intercept and the unit-ball factor. A catalogue encodes each
        action once, so a request names actions by id without their features being parsed
        again (checks and errors: :meth:`transform`'s).

        Returns
        -------
        ndarray of shape (K, q)
            A new array (q: the width of the action fields' columns).

        Examples
        --------
        >>> from glmbandits.features import Categorical, Numeric
        >>> s = FeatureSchema(context=[Numeric("age", scale=(40.0, 10.0))],
        ...                   action=[Categorical("topic", vocabulary=["news", "sport"])],
        ...                   interactions=[("context", "action")], unit_ball=False).fit()
        >>> rows = s.encode_actions([{"topic": "news"}, {"topic": "golf"}])
        >>> rows
        array([[1., 0., 0.],
               [0., 0., 1.]])
        >>> X = s.transform_encoded({"age": 50}, rows).copy()  # (the buffer is reused)
        >>> bool((X == s.transform({"age": 50}, [{"topic": "news"}, {"topic": "golf"}])).all())
        True
        """
        owner = "FeatureSchema.encode_actions"
        if not hasattr(self, "_runtime"):
            raise ValueError(f"{owner}: call fit first")
        actions = self._mappings(actions, "actions", owner, required=True)
        in_actions = (lambda i: f"actions[{i}]")
        parsed = [f._parse([a.get(f.name, MISSING) for a in actions], in_actions, owner)
                  for f in self.action]
        rows = np.zeros((len(actions), self._runtime.q))
        with np.errstate(over="ignore", invalid="ignore"):
            self._runtime.encode(self.action, self._runtime.action_slices, parsed, rows)
        return rows if all_finite(rows) else check_result(rows, owner)

    def transform_encoded(self, context: Mapping[str, Any] | None, action_rows: np.ndarray,
                          *, out: np.ndarray | None = None) -> np.ndarray:
        """:meth:`transform` with the actions given as rows of :meth:`encode_actions`
        (bit for bit the same result); only the context is parsed.

        Parameters
        ----------
        context : mapping
            As :meth:`transform`'s.
        action_rows : ndarray of shape (K, q)
            Rows of :meth:`encode_actions` (e.g. gathered from a catalogue).
        out : ndarray of shape (K, d), optional
            Write here instead of the schema's buffer.
        """
        owner = "FeatureSchema.transform_encoded"
        parsed_context = self._parsed_context(context, owner)
        runtime = self._runtime
        if not (isinstance(action_rows, np.ndarray) and action_rows.dtype == np.float64
                and action_rows.ndim == 2 and action_rows.shape[1] == runtime.q
                and action_rows.shape[0] >= 1):
            raise ValueError(f"{owner}: action_rows must be a float64 ndarray of shape (K, "
                             f"{runtime.q}) with K >= 1 (rows of encode_actions), got "
                             f"{getattr(action_rows, 'shape', type(action_rows))}")
        target = self._target(action_rows.shape[0], out, owner)
        return self._write(parsed_context, action_rows, target, owner)

    def _parsed_context(self, context: Mapping[str, Any] | None, owner: str) -> list[Any]:
        if not hasattr(self, "_runtime"):
            raise ValueError(f"{owner}: call fit first")
        if context is None and not self.context:
            context = {}
        self._check_keys(context, "context", "the context", owner)
        assert context is not None  # _check_keys refuses anything but a mapping
        in_context = (lambda i: "the context")
        return [f._parse([context.get(f.name, MISSING)], in_context, owner)
                for f in self.context]

    def _target(self, K: int, out: np.ndarray | None, owner: str) -> np.ndarray:
        if out is None:
            return self._runtime.output(K)
        if not (isinstance(out, np.ndarray) and out.dtype == np.float64
                and out.shape == (K, self.n_features_out_)):
            raise ValueError(f"{owner}: out must be a float64 ndarray of shape ({K}, "
                             f"{self.n_features_out_}), got {getattr(out, 'shape', type(out))}")
        return out

    def _write(self, parsed_context: list[Any], items: np.ndarray, target: np.ndarray,
               owner: str) -> np.ndarray:
        """The context encoded, then the builder's columns from it and the action rows."""
        runtime = self._runtime
        with np.errstate(over="ignore", invalid="ignore"):  # refused just below, named
            runtime.encode(self.context, runtime.context_slices, parsed_context, runtime.z)
            runtime.builder._write(runtime.z[0] if self.context else None,
                                   items if self.action else None, target)
        return target if all_finite(target) else check_result(target, owner)

    def check_action(self, features: Mapping[str, Any], where: str = "action") -> dict[str, Any]:
        """Check one action's features as :meth:`transform` checks them, and return them as
        plain JSON values (e.g. before a catalogue stores them).

        Parameters
        ----------
        features : mapping
            Feature name -> value of one action.
        where : str
            What the errors call it (``"action 'a17'"``).

        Returns
        -------
        dict
            A copy of ``features`` as JSON values (lists for tuples, Python's numbers for
            numpy's); keys ignored under ``unknown='ignore'`` are kept (another schema may
            use them), and refused if they are not JSON values.

        Raises
        ------
        TypeError, ValueError
            Those of :meth:`transform`, naming the feature and ``where``: an unknown key, a
            wrong type, a value out of range, a missing or an unseen value that its rule
            refuses.

        Examples
        --------
        >>> from glmbandits.features import Categorical
        >>> s = FeatureSchema(action=[Categorical("t", vocabulary=["a"], unseen="refuse")],
        ...                   unit_ball=False).fit()
        >>> s.check_action({"t": "a"})
        {'t': 'a'}
        >>> s.check_action({"t": "b"}, where="action 'x'")
        Traceback (most recent call last):
        ...
        ValueError: FeatureSchema.check_action: feature 't' of action 'x' has the category 'b', which is not in its vocabulary ['a'] (unseen='refuse')
        """
        return self._check_one(features, "action", where, "FeatureSchema.check_action")

    def check_context(self, context: Mapping[str, Any] | None,
                      where: str = "context") -> dict[str, Any]:
        """:meth:`check_action` for a context (``None``: no context fields, gives ``{}``)."""
        if context is None and not self.context:
            context = {}
        return self._check_one(context, "context", where, "FeatureSchema.check_context")

    def _check_one(self, row: Any, group: str, where: str, owner: str) -> dict[str, Any]:
        if not hasattr(self, "_runtime"):
            raise ValueError(f"{owner}: call fit first")
        self._check_keys(row, group, where, owner)
        for f in self.context if group == "context" else self.action:
            f._parse([row.get(f.name, MISSING)], lambda i: where, owner)
        copied: dict[str, Any] = json_copy(row, where, owner)
        return copied

    # -- explanations ------------------------------------------------------------------
    def group_of_column(self, column: int) -> str:
        """The group (a field name, ``"a*b"`` or ``"intercept"``) of a column."""
        return self.groups_[int(self.column_groups_[column])]

    def group_contributions(self, x: Any, theta: Any) -> dict[str, Any]:
        """x′θ split by group: ``{group: sum of x_j θ_j over its columns}``.

        ``x`` of shape (d,) gives floats, (K, d) arrays of K; the values add up to x′θ
        (up to rounding).

        Examples
        --------
        >>> from glmbandits.features import Numeric
        >>> s = FeatureSchema(context=[Numeric("age")], unit_ball=False).fit([{"age": 1}])
        >>> s.group_contributions(s.transform({"age": 3.0}, [{}])[0], [0.5, 2.0])
        {'age': 1.5, 'intercept': 2.0}
        """
        d, G = self.n_features_out_, len(self.groups_)
        x = np.asarray(x, dtype=np.float64)
        theta = np.asarray(theta, dtype=np.float64)
        if x.shape[-1:] != (d,) or x.ndim > 2 or theta.shape != (d,):
            raise ValueError(f"FeatureSchema.group_contributions: x must have shape ({d},) or "
                             f"(K, {d}) and theta ({d},), got {x.shape} and {theta.shape}")
        rows = np.atleast_2d(x) * theta
        index = (np.arange(rows.shape[0])[:, None] * G + self.column_groups_).ravel()
        sums = np.bincount(index, weights=rows.ravel(), minlength=rows.shape[0] * G)
        sums = sums.reshape(rows.shape[0], G)
        if x.ndim == 1:
            return {g: float(sums[0, i]) for i, g in enumerate(self.groups_)}
        return {g: sums[:, i].copy() for i, g in enumerate(self.groups_)}

    # -- saved with the model ----------------------------------------------------------
    def check_compatible(self, model: Any) -> None:
        """Refuse ``model`` unless it was trained under this schema (its fingerprint; for a
        schema not fitted yet, its declaration), with a ValueError naming the first
        difference."""
        owner = "FeatureSchema"
        theirs = vars(model).get("feature_schema_") if hasattr(model, "__dict__") else None
        if theirs is None:
            raise ValueError(f"{owner}: the model ({type(model).__name__}) holds no feature "
                             "schema; attach one with glmbandits.features.attach_schema")
        fitted = hasattr(self, "fingerprint_")
        mine = self.fingerprint_ if fitted else self.declaration_fingerprint()
        other = theirs.fingerprint_ if fitted else theirs.declaration_fingerprint_
        if mine != other:
            where = difference(theirs._full() if fitted else theirs.declaration(),
                               self._full() if fitted else self.declaration())
            kind = "" if fitted else "declaration "
            raise ValueError(f"{owner}: the model was trained under feature schema "
                             f"{kind}{other[:12]}, not {mine[:12]}: {where}")

    def declaration_fingerprint(self) -> str:
        """SHA-256 of :meth:`declaration` (the same before and after ``fit``)."""
        return self._digest(self.declaration())

    def _full(self) -> dict[str, Any]:
        return {"declaration": self.declaration(), "fitted": self._fitted_state()}

    def __getstate__(self) -> dict[str, Any]:
        state: dict[str, Any] = {"declaration": self.declaration()}
        if hasattr(self, "fingerprint_"):
            state.update(fitted=self._fitted_state(), fingerprint=self.fingerprint_,
                         attached=self.attached_)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        owner = "FeatureSchema (restored)"
        if type(state) is not dict or not set(state) <= {"declaration", "fitted",
                                                          "fingerprint", "attached"}:
            raise ValueError(f"{owner}: the state must be a dict of declaration, fitted, "
                             f"fingerprint and attached, got {state!r:.200}")
        self.__init__(**fields_from_declaration(state.get("declaration"), owner))  # type: ignore[misc]
        if "fitted" not in state:
            return
        fitted = state["fitted"]
        if type(fitted) is not dict or set(fitted) != {"context", "action", "norm_bound"}:
            raise ValueError(f"{owner}: fitted must hold context, action and norm_bound")
        fields = {}
        for group in GROUPS:
            declared, states = getattr(self, group), fitted[group]
            if type(states) is not list or len(states) != len(declared):
                raise ValueError(f"{owner}: fitted {group} must hold one state per field")
            fields[group] = [f.restored(s, owner) for f, s in zip(declared, states)]
        layout = SchemaLayout(fields["context"], fields["action"], self.interactions,
                              self.intercept, self.unit_ball)
        zeros = [np.zeros((1, width)) if fields[g] else None
                 for g, width in zip(GROUPS, (layout.p, layout.q))]
        built = layout.builder._fit_state(*zeros)  # the structure; the factor is the saved one
        bound = fitted["norm_bound"]
        if type(bound) is not float or not (bound > 0 and np.isfinite(bound)) or (
                not self.unit_ball and bound != 1.0):
            raise ValueError(f"{owner}: norm_bound must be a finite float > 0 (1.0 without "
                             f"unit_ball), got {bound!r}")
        if self.unit_ball:
            built["factor_"] = bound
        self._commit(fields["context"], fields["action"], layout, built)
        if state.get("fingerprint") != self.fingerprint_:
            raise ValueError(f"{owner}: the saved fingerprint {state.get('fingerprint')!r:.20} "
                             f"is not that of the saved schema ({self.fingerprint_[:12]})")
        if type(state.get("attached")) is not bool:
            raise ValueError(f"{owner}: attached must be a bool")
        self.attached_ = state["attached"]

    def __repr__(self) -> str:
        return (f"FeatureSchema(context={list(self.context)!r}, action={list(self.action)!r}, "
                f"interactions={self.interactions!r}, intercept={self.intercept}, "
                f"unit_ball={self.unit_ball}, unknown={self.unknown!r})")

