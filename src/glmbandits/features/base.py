"""The builder interface: ``fit`` on data, then ``transform(user, items)`` per round.

A builder turns one round's raw data into the (K, d) contexts a policy takes:
``user`` is the round's context vector (shape (p,), may be ``None`` when no block
uses it) and ``items`` the per-action feature rows (shape (K, q), may be ``None``
when the number of actions is fixed by :class:`~glmbandits.features.OneHotAction`).

Fitting is two-phase so that a rejected ``fit`` changes nothing: every block
first computes its learned state from the data (``_fit_state``, no mutation,
recursive over sub-blocks), and only when every block has succeeded is the
state assigned (``_set_state``).

The conventions of scikit-learn's transformers: ``fit``, ``transform``,
``fit_transform`` (every fitted user's contexts over the items at once),
``get_feature_names_out`` (a name per column of the contexts), and
``get_params``/``set_params`` over the constructor's parameters
(:class:`glmbandits._params.Parameters`; ``left__standardize`` sets a block's
parameter), so ``sklearn.base.clone(builder)`` is an unfitted copy (``Concat``, whose
blocks are positional, through ``__sklearn_clone__``). A builder
whose parameters are set afresh is unfitted: its fitted state was computed with the old
ones.

The per-round path writes into one preallocated buffer per top-level builder,
grown geometrically when K grows, so ``transform`` allocates nothing once warm.
**The returned array is that buffer and is overwritten by the next call.** A
policy copies what it keeps (``select`` keeps only scores computed from it,
``update`` copies the chosen row into its own history), so
``policy.update(X[a], r)`` with ``X`` the returned buffer is safe; a caller who
keeps rows across rounds copies them, or passes its own ``out=`` array.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from .._params import Parameters
from .._validation import as_float_array, format_value

__all__ = ["FeatureBuilder", "Standardizer"]


def check_rows(value: Any, owner: str, name: str, n_columns: int | None = None) -> np.ndarray:
    """A finite float64 (n, q) array with n >= 1 (q fixed when ``n_columns`` is given)."""
    array = as_float_array(value, name, owner)
    expected = "(n, q)" if n_columns is None else f"(n, {n_columns})"
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0 or (
            n_columns is not None and array.shape[1] != n_columns):
        raise ValueError(f"{owner}: {name} must have shape {expected} with n >= 1, "
                         f"got {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{owner}: {name} must be finite, got "
                         f"{int(array.size - np.count_nonzero(np.isfinite(array)))} "
                         "NaN or inf value(s)")
    return array


def _first_nonfinite(array: np.ndarray) -> tuple[int, int, float]:
    """(row, column, value) of the first NaN or inf of a (p,) or (K, p) array (row 0 for 1-d)."""
    rows = array.reshape(-1, array.shape[-1])
    row, column = np.argwhere(~np.isfinite(rows))[0]
    return int(row), int(column), float(rows[row, column])


def all_finite(array: np.ndarray) -> bool:
    """Whether every entry is finite. Fast path: one sum (NaN and inf propagate, so a finite
    sum proves it, without an array of the input's size); a sum that overflows from large
    finite entries takes the exact check."""
    with np.errstate(over="ignore", invalid="ignore"):
        if math.isfinite(np.add.reduce(array, axis=None)):
            return True
    return bool(np.isfinite(array).all())


def check_result(array: np.ndarray, owner: str) -> np.ndarray:
    """``array`` (a computed result) when it is finite, else a ValueError naming its first
    non-finite column: the inputs lie too far beyond the fitted data for float64."""
    if all_finite(array):
        return array
    row, column, _ = _first_nonfinite(array)
    where = f" (row {row})" if array.ndim == 2 else ""
    raise ValueError(f"{owner}: column {column} of the output{where} is beyond float64 (the "
                     "input lies too far outside the data the builder was fitted on, for its "
                     "fitted scale); rescale the input or refit on data that covers it")


def finite_norm(value: float, owner: str) -> float:
    """A fitted row-norm bound, refused with a ValueError naming ``owner`` when it is not
    finite (a UnitBall factor of inf would silently map every row to 0)."""
    if not math.isfinite(value):
        raise ValueError(f"{owner}: the fitted rows' norm is beyond float64 (got "
                         f"{format_value(value)}); rescale the data (e.g. standardize=True "
                         "on the user or item block)")
    return value


def scaled_by_peak(array: np.ndarray, axis: int | None = None) -> tuple[np.ndarray, Any]:
    """``(array * 2**-e, e)`` with ``2**e`` just above the largest ``|entry|`` (per column
    for ``axis=0``), so that squares and sums of the scaled entries cannot overflow.

    Scaling by a power of two is exact (no rounding, barring underflow of entries tiny
    next to the peak), so statistics computed on the scaled array and scaled back with
    ``np.ldexp(stat, e)`` carry the same bits as the direct computation wherever that
    one does not overflow or underflow.
    """
    peak = np.max(np.abs(array), axis=axis)
    exponent = np.frexp(peak)[1]  # peak = f * 2**e with f in [0.5, 1); 0 for a zero peak
    return np.ldexp(array, -exponent), exponent


class FeatureBuilder(Parameters, ABC):
    """Base class of the feature builders (scikit-learn style: ``fit`` then ``transform``).

    Attributes
    ----------
    n_features_out_ : int
        d, the width of every transformed row; known after :meth:`fit`, so a
        policy can be built with ``n_features=builder.n_features_out_``.
    n_user_features_in_, n_item_features_in_ : int or None
        p and q the builder was fitted with (``None`` where no block reads them).
    """

    n_features_out_: int
    n_user_features_in_: int | None
    n_item_features_in_: int | None

    # -- what a block implements -------------------------------------------
    @abstractmethod
    def _fit_state(self, users: np.ndarray | None, items: np.ndarray | None) -> dict[str, Any]:
        """Learned state from checked data, without mutating anything.

        Must hold ``n_features_out_`` and ``max_norm_`` (an upper bound on ‖row‖
        over rows built from the fitted data).
        """

    @abstractmethod
    def _write(self, user: np.ndarray | None, items: np.ndarray | None, out: np.ndarray) -> None:
        """Write this block's (K, d) rows into ``out`` (checked inputs; no allocation once warm)."""

    def _set_state(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            setattr(self, key, value)

    def _children(self) -> tuple["FeatureBuilder", ...]:
        return ()

    def _names(self, user: list[str], item: list[str]) -> list[str]:
        """The names of this block's ``n_features_out_`` columns (fitted), given the inputs'.

        Default (a block that does not name its columns): ``ClassName_j``.
        """
        return [f"{type(self).__name__}_{j}" for j in range(self.n_features_out_)]

    def _adopt(self, fresh: Any) -> None:
        """``set_params``: the new parameters, and no fitted state (fit again)."""
        self.__dict__.clear()
        self.__dict__.update(vars(fresh))

    def _fixed_n_actions(self) -> int | None:
        """K when it is fixed by the builder (a one-hot block), else None."""
        for child in self._children():
            k = child._fixed_n_actions()
            if k is not None:
                return k
        return None

    def _fit_rows(self, state: dict[str, Any]) -> np.ndarray:
        """Rows built from the fitted data (given this block's computed state)."""
        raise ValueError(f"{type(self).__name__}: its fitted rows are not available, so it "
                         "cannot be a low-rank Interaction side (use a user-only or item-only "
                         "block there)")

    # -- public interface ----------------------------------------------------
    def fit(self, users: Any = None, items: Any = None) -> "FeatureBuilder":
        """Learn the builder's state from data; a rejected call changes nothing.

        Parameters
        ----------
        users : array-like of shape (n, p), optional
            User (round) contexts, e.g. a training sample; needed by user blocks.
        items : array-like of shape (m, q), optional
            Item (action) feature rows, e.g. the catalogue; needed by item blocks.

        Returns
        -------
        self
        """
        owner = f"{type(self).__name__}.fit"
        U = None if users is None else check_rows(users, owner, "users")
        V = None if items is None else check_rows(items, owner, "items")
        state = self._fit_state(U, V)
        finite_norm(state["max_norm_"], owner)
        self._commit(state)
        self.n_user_features_in_ = None if U is None else U.shape[1]
        self.n_item_features_in_ = None if V is None else V.shape[1]
        self._out = np.empty((0, self.n_features_out_))
        return self

    def fit_transform(self, users: Any = None, items: Any = None) -> np.ndarray:
        """Fit, then the contexts of every fitted user over the items, in a new array.

        Parameters
        ----------
        users : array-like of shape (n, p), optional
        items : array-like of shape (m, q), optional
            As for :meth:`fit`; ``items`` are also the actions of every round.

        Returns
        -------
        ndarray of shape (n, K, n_features_out_)
            Row i is ``transform(users[i], items)`` (n = 1 without ``users``; K = m, or
            the one-hot block's ``n_actions`` without ``items``); a new array, not the
            builder's buffer.

        Examples
        --------
        >>> import numpy as np
        >>> from glmbandits.features import Interaction, ItemFeatures, UserFeatures
        >>> b = Interaction(UserFeatures(), ItemFeatures())
        >>> b.fit_transform(np.array([[1.0], [2.0]]), np.array([[1.0], [10.0]]))[:, :, 0]
        array([[ 1., 10.],
               [ 2., 20.]])
        """
        self.fit(users, items)
        user_rows = [None] if users is None else check_rows(users, "fit_transform", "users")
        V = None if items is None else check_rows(items, "fit_transform", "items")
        return np.stack([self.transform(u, V).copy() for u in user_rows])

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """A name for each of the ``n_features_out_`` columns of the contexts.

        Parameters
        ----------
        input_features : (user_names, item_names), optional
            Names of the user and item columns (either may be None); by default
            ``user_0``, ... and ``item_0``, ... A one-hot column is ``action_a``, the
            bias ``intercept``, an interaction column ``left*right``, a low-rank side's
            component ``left_svd0`` (``right_svd0``).

        Returns
        -------
        ndarray of str (object dtype), shape (n_features_out_,)

        Examples
        --------
        >>> import numpy as np
        >>> from glmbandits.features import Concat, Intercept, Interaction, ItemFeatures
        >>> from glmbandits.features import UserFeatures
        >>> b = Concat(Interaction(UserFeatures(), ItemFeatures()), Intercept())
        >>> _ = b.fit(np.zeros((1, 2)), np.zeros((1, 1)))
        >>> b.get_feature_names_out((["age", "income"], ["price"])).tolist()
        ['age*price', 'income*price', 'intercept']
        """
        owner = f"{type(self).__name__}.get_feature_names_out"
        if not hasattr(self, "n_features_out_"):
            raise ValueError(f"{owner}: call fit first")
        given = (None, None) if input_features is None else input_features
        if not (isinstance(given, (tuple, list)) and len(given) == 2):
            raise ValueError(f"{owner}: input_features must be a pair (user_names, item_names) "
                             f"or None, got {input_features!r}")
        sides = []
        for side, names, width in (("user", given[0], self.n_user_features_in_),
                                   ("item", given[1], self.n_item_features_in_)):
            if names is None:
                sides.append([f"{side}_{j}" for j in range(width or 0)])
                continue
            names = list(names) if not isinstance(names, str) else [names]
            if width is None or len(names) != width or not all(isinstance(n, str)
                                                               for n in names):
                raise ValueError(f"{owner}: the {side} names must be {width or 0} str (the "
                                 f"{side} columns fitted), got {names!r}")
            sides.append(names)
        return np.asarray(self._names(sides[0], sides[1]), dtype=object)

    def _commit(self, state: dict[str, Any]) -> None:
        state = dict(state)
        children = state.pop("children", ())
        state.pop("fit_rows", None)  # fit-time only
        for child, child_state in zip(self._children(), children):
            child._commit(child_state)
        self._set_state(state)

    def transform(self, user: Any = None, items: Any = None, *, out: Any = None) -> np.ndarray:
        """The (K, d) contexts of one round.

        Parameters
        ----------
        user : array-like of shape (p,), optional
            This round's user context.
        items : array-like of shape (K, q), optional
            This round's per-action features; without them K is the one-hot
            block's ``n_actions`` (row a is action a).
        out : ndarray of shape (K, d), optional
            Write here instead of the builder's own buffer.

        Returns
        -------
        ndarray of shape (K, n_features_out_)
            ``out``, or the builder's buffer, **overwritten by the next call**
            (see the module docstring: policies copy what they keep).

        Raises
        ------
        ValueError
            On a wrong shape, NaN or inf in ``user`` or ``items``, or when a value of
            the result would be beyond float64 (inputs far outside the fitted data:
            the message names the output column; the fitted state is unchanged, the
            buffer or ``out`` then holds no valid result).
        """
        owner = f"{type(self).__name__}.transform"
        if not hasattr(self, "n_features_out_"):
            raise ValueError(f"{owner}: call fit first")
        u = None
        if user is not None:
            u = as_float_array(user, "user", owner)
            if u.shape != (self.n_user_features_in_,):
                raise ValueError(f"{owner}: user must have shape ({self.n_user_features_in_},), "
                                 f"got {u.shape}")
            if not np.isfinite(u).all():
                raise ValueError(f"{owner}: user must be finite")
        elif self.n_user_features_in_ is not None:
            raise ValueError(f"{owner}: user is required (a ({self.n_user_features_in_},) "
                             "array), got None")
        if items is not None:
            V = check_rows(items, owner, "items", self.n_item_features_in_)
            K = V.shape[0]
        elif self.n_item_features_in_ is not None:
            raise ValueError(f"{owner}: items is required (a (K, {self.n_item_features_in_}) "
                             "array), got None")
        else:
            V, K = None, self._fixed_n_actions()
            if K is None:
                raise ValueError(f"{owner}: items is required to know K, got None")
        fixed = self._fixed_n_actions()
        if fixed is not None and K > fixed:
            raise ValueError(f"{owner}: items must have at most n_actions = {fixed} rows, "
                             f"got {K}")
        d = self.n_features_out_
        if out is None:
            if self._out.shape[0] < K:
                self._out = np.empty((max(K, 2 * self._out.shape[0]), d))
            target = self._out[:K]
        else:
            if not isinstance(out, np.ndarray) or out.dtype != np.float64 or out.shape != (K, d):
                raise ValueError(f"{owner}: out must be a float64 ndarray of shape ({K}, {d}), "
                                 f"got {getattr(out, 'shape', type(out).__name__)}")
            target = out
        with np.errstate(over="ignore", invalid="ignore"):  # refused just below, named
            self._write(u, V, target)
            total = np.add.reduce(target, axis=None)  # NaN/inf propagate: finite => all are
        return target if math.isfinite(total) else check_result(target, owner)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Standardizer(Parameters):
    """Centre and scale columns to unit variance, fitted on data (constant columns: centred only).

    Parameters
    ----------
    with_mean, with_std : bool
        Subtract the fitted mean; divide by the fitted standard deviation.

    Examples
    --------
    >>> import numpy as np
    >>> s = Standardizer().fit(np.array([[0.0, 5.0], [2.0, 5.0]]))
    >>> s.mean_, s.scale_
    (array([1., 5.]), array([1., 1.]))
    >>> s.transform(np.array([3.0, 6.0]))
    array([2., 1.])
    """

    def __init__(self, with_mean: bool = True, with_std: bool = True) -> None:
        for name, value in (("with_mean", with_mean), ("with_std", with_std)):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"Standardizer: {name} must be a bool, got {type(value).__name__}")
        self.with_mean, self.with_std = bool(with_mean), bool(with_std)

    def fit(self, X: Any) -> "Standardizer":
        """Learn ``mean_`` and ``scale_`` from the (n, p) rows of X.

        The moments are computed on each column scaled by a power of two near its
        largest magnitude (exact), so values up to the float64 limit give a finite
        ``scale_`` and values near the smallest floats a non-zero one.
        """
        X = check_rows(X, "Standardizer.fit", "X")
        Y, exponent = scaled_by_peak(X, axis=0)
        mean = np.ldexp(Y.mean(axis=0), exponent) if self.with_mean else np.zeros(X.shape[1])
        std = np.ldexp(Y.std(axis=0), exponent)
        self.mean_ = mean
        self.scale_ = np.where(std > 0, std, 1.0) if self.with_std else np.ones(X.shape[1])
        return self

    def fit_transform(self, X: Any) -> np.ndarray:
        """``fit(X)``, then ``transform(X)``."""
        return self.fit(X).transform(X)

    def transform(self, x: Any, out: np.ndarray | None = None) -> np.ndarray:
        """(x - mean_) / scale_ for a (p,) vector or (K, p) rows, into ``out`` when given.

        Raises
        ------
        ValueError
            On a wrong shape, on NaN or inf in ``x``, or when a standardised value
            would be beyond float64 (``x`` far outside the fitted data); the message
            names the column.
        """
        owner = "Standardizer.transform"
        if not hasattr(self, "mean_"):
            raise ValueError(f"{owner}: call fit first")
        x = as_float_array(x, "x", owner)
        if x.shape[-1:] != self.mean_.shape or x.ndim > 2:
            raise ValueError(f"{owner}: x must have shape ({self.mean_.shape[0]},) "
                             f"or (K, {self.mean_.shape[0]}), got {x.shape}")
        if not all_finite(x):
            row, column, value = _first_nonfinite(x)
            where = f" (row {row})" if x.ndim == 2 else ""
            raise ValueError(f"{owner}: x must be finite, got {format_value(value)} in column "
                             f"{column}{where}")
        with np.errstate(over="ignore", invalid="ignore"):  # refused just below, named
            result = self._apply(x, out)
        return check_result(result, owner)

    def _apply(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``transform`` without its checks: the builders' per-round path (inputs checked,
        the result checked by ``FeatureBuilder.transform``)."""
        out = np.subtract(x, self.mean_, out=out)
        scaled: np.ndarray = np.divide(out, self.scale_, out=out)
        return scaled

    def __repr__(self) -> str:
        return f"Standardizer(with_mean={self.with_mean}, with_std={self.with_std})"
