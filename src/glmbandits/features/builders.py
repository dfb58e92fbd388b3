"""The feature blocks: user, item, one-hot action id, intercept; concatenation,
interaction (outer product, optionally low-rank) and unit-ball scaling.

Every block is a :class:`~glmbandits.features.base.FeatureBuilder`; blocks nest, so
``Concat(UserFeatures(), ItemFeatures())`` and ``Interaction(OneHotAction(K),
UserFeatures())`` are builders too. The per-round path writes every block's columns
straight into the parent's output (column slices of one buffer); only an
:class:`Interaction` keeps two small scratch buffers for its factors.

Why this module is long: the blocks implement one small protocol each (fitted state,
rows, column names, the per-round write) and nest into one another; they are kept side
by side so that a change to the protocol is made to all of them at once.

References
----------
Li, Lu & Zhou (2017), Section 2 (one θ* shared by all actions, x_{t,a} per action);
Li, Chu, Langford & Schapire (2010), LinUCB's disjoint and hybrid models (the
one-hot ⊗ context encoding makes the disjoint model a shared-θ model).
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .._params import unfitted_copy
from .._validation import check_int
from .base import FeatureBuilder, Standardizer, finite_norm, scaled_by_peak

__all__ = ["UserFeatures", "ItemFeatures", "OneHotAction", "Intercept", "Concat", "Interaction",
           "UnitBall", "disjoint_features"]


def _check_bool(value: Any, owner: str, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{owner}: {name} must be a bool, got {type(value).__name__}")
    return bool(value)


def _check_block(value: Any, owner: str, name: str) -> FeatureBuilder:
    if not isinstance(value, FeatureBuilder):
        raise TypeError(f"{owner}: {name} must be a FeatureBuilder, got {type(value).__name__}")
    return value


def _row_norms_max(rows: np.ndarray) -> float:
    """max_a ‖rows[a]‖, computed on the rows scaled by a power of two near their largest
    entry (exact), so that finite rows never give inf by overflowing their squares; inf
    only when a norm itself is beyond float64."""
    scaled, exponent = scaled_by_peak(rows)
    norm = float(np.sqrt(np.einsum("ij,ij->i", scaled, scaled).max()))
    try:
        return math.ldexp(norm, int(exponent))
    except OverflowError:
        return math.inf


def _combined_norm(norms: list[float]) -> float:
    """sqrt(sum of squares) of the blocks' bounds (math.hypot when the squares overflow)."""
    total = sum(norm * norm for norm in norms)
    return math.sqrt(total) if math.isfinite(total) else math.hypot(*norms)


class _SideFeatures(FeatureBuilder):
    """The user vector (broadcast to every action) or the item rows, optionally standardised."""

    side = ""
    # learned by fit (``_fit_state``)
    scaler_: Standardizer
    _scratch: np.ndarray

    def __init__(self, standardize: bool = False) -> None:
        self.standardize = _check_bool(standardize, type(self).__name__, "standardize")

    def _fit_state(self, users: np.ndarray | None, items: np.ndarray | None) -> dict[str, Any]:
        data = users if self.side == "user" else items
        if data is None:
            raise ValueError(f"{type(self).__name__}.fit: {self.side}s must be an (n, "
                             f"{'p' if self.side == 'user' else 'q'}) array, got None")
        scaler = Standardizer(with_mean=self.standardize, with_std=self.standardize).fit(data)
        rows = scaler.transform(data)  # finite: the checked data, within its own scale
        return {"scaler_": scaler, "n_features_out_": data.shape[1],
                "max_norm_": _row_norms_max(rows), "fit_rows": rows,
                "_scratch": np.empty(data.shape[1])}

    def _fit_rows(self, state: dict[str, Any]) -> np.ndarray:
        rows: np.ndarray = state["fit_rows"]
        return rows

    def _names(self, user: list[str], item: list[str]) -> list[str]:
        return list(user if self.side == "user" else item)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(standardize={self.standardize})"


class UserFeatures(_SideFeatures):
    """The round's user context z (shape (p,)), the same row for every action.

    Parameters
    ----------
    standardize : bool
        Centre and scale z with the mean and standard deviation fitted on ``users``.

    Examples
    --------
    >>> import numpy as np
    >>> b = UserFeatures().fit(users=np.array([[1.0, 2.0]]))
    >>> b.transform(np.array([3.0, 4.0]), np.zeros((2, 1)))
    array([[3., 4.],
           [3., 4.]])
    """

    side = "user"

    def _write(self, user: np.ndarray | None, items: np.ndarray | None, out: np.ndarray) -> None:
        assert user is not None  # transform requires it of a builder fitted on users
        if self.standardize:
            user = self.scaler_._apply(user, out=self._scratch)
        out[...] = user


class ItemFeatures(_SideFeatures):
    """The per-action feature rows v_a (shape (K, q)).

    Parameters
    ----------
    standardize : bool
        Centre and scale columns with statistics fitted on ``items``.

    Examples
    --------
    >>> import numpy as np
    >>> b = ItemFeatures(standardize=True).fit(items=np.array([[0.0], [2.0]]))
    >>> b.transform(items=np.array([[1.0], [3.0]]))
    array([[0.],
           [2.]])
    """

    side = "item"

    def _write(self, user: np.ndarray | None, items: np.ndarray | None, out: np.ndarray) -> None:
        assert items is not None  # transform requires them of a builder fitted on items
        if self.standardize:
            self.scaler_._apply(items, out=out)
        else:
            out[...] = items


class OneHotAction(FeatureBuilder):
    """The action id as a one-hot row: row a is e_a (shape (K, n_actions)).

    Without ``items``, K is ``n_actions``; with them, their K <= n_actions rows are
    actions 0..K-1. ``Interaction(OneHotAction(K), UserFeatures())`` is the
    disjoint ("one model per arm") encoding e_a ⊗ z, so the per-arm model is the
    shared-θ model with θ = (θ_1, ..., θ_K).

    Parameters
    ----------
    n_actions : int

    Examples
    --------
    >>> OneHotAction(3).fit().transform()
    array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 1.]])
    """

    def __init__(self, n_actions: int) -> None:
        self.n_actions = check_int(n_actions, "OneHotAction", "n_actions", minimum=1)

    def _fixed_n_actions(self) -> int | None:
        return self.n_actions

    def _fit_state(self, users: np.ndarray | None, items: np.ndarray | None) -> dict[str, Any]:
        return {"n_features_out_": self.n_actions, "max_norm_": 1.0}

    def _fit_rows(self, state: dict[str, Any]) -> np.ndarray:
        return np.eye(self.n_actions)

    def _names(self, user: list[str], item: list[str]) -> list[str]:
        return [f"action_{a}" for a in range(self.n_actions)]

    def _write(self, user: np.ndarray | None, items: np.ndarray | None, out: np.ndarray) -> None:
        out[...] = 0.0
        # The diagonal as a strided view (no copy, also on a parent's column slice).
        as_strided(out, shape=(out.shape[0],), strides=(out.strides[0] + out.strides[1],),
                   writeable=True)[...] = 1.0

    def __repr__(self) -> str:
        return f"OneHotAction(n_actions={self.n_actions})"


class Intercept(FeatureBuilder):
    """A constant 1 column (the bias of a linear predictor).

    Examples
    --------
    >>> Intercept().fit().transform(items=np.zeros((2, 3)))
    array([[1.],
           [1.]])
    """

    def _fit_state(self, users: np.ndarray | None, items: np.ndarray | None) -> dict[str, Any]:
        return {"n_features_out_": 1, "max_norm_": 1.0}

    def _fit_rows(self, state: dict[str, Any]) -> np.ndarray:
        return np.ones((1, 1))

    def _names(self, user: list[str], item: list[str]) -> list[str]:
        return ["intercept"]

    def _write(self, user: np.ndarray | None, items: np.ndarray | None, out: np.ndarray) -> None:
        out[...] = 1.0


class Concat(FeatureBuilder):
    """Blocks side by side: row a is (b_1(a), b_2(a), ...), written into column slices.

    Parameters
    ----------
    *blocks : FeatureBuilder
        At least one block.

    Examples
    --------
    >>> import numpy as np
    >>> b = Concat(UserFeatures(), ItemFeatures(), Intercept())
    >>> _ = b.fit(users=np.zeros((1, 1)), items=np.zeros((1, 2)))
    >>> b.n_features_out_, b.transform(np.array([7.0]), np.array([[1.0, 2.0], [3.0, 4.0]]))
    (4, array([[7., 1., 2., 1.],
           [7., 3., 4., 1.]]))
    """

    slices_: list[slice]  # learned by fit: each block's columns

    def __init__(self, *blocks: FeatureBuilder) -> None:
        if not blocks:
            raise ValueError("Concat: blocks must hold at least one FeatureBuilder, got none")
        self.blocks = tuple(_check_block(b, "Concat", f"blocks[{i}]") for i, b in enumerate(blocks))

    def _children(self) -> tuple[FeatureBuilder, ...]:
        return self.blocks

    def __sklearn_clone__(self) -> "Concat":  # sklearn's clone cannot pass *blocks by name
        return cast(Concat, unfitted_copy(self))

    def _fit_state(self, users: np.ndarray | None, items: np.ndarray | None) -> dict[str, Any]:
        children = [b._fit_state(users, items) for b in self.blocks]
        widths = [c["n_features_out_"] for c in children]
        edges = np.concatenate([[0], np.cumsum(widths)]).tolist()
        return {"children": children, "n_features_out_": int(edges[-1]),
                "max_norm_": _combined_norm([c["max_norm_"] for c in children]),
                "slices_": [slice(a, b) for a, b in zip(edges[:-1], edges[1:])]}

    def _fit_rows(self, state: dict[str, Any]) -> np.ndarray:
        parts = [b._fit_rows(s) for b, s in zip(self.blocks, state["children"])]
        n = max(p.shape[0] for p in parts)
        if any(p.shape[0] not in (1, n) for p in parts):
            raise ValueError("Concat: its blocks' fitted rows differ in number "
                             f"({[p.shape[0] for p in parts]}); a low-rank Interaction needs "
                             "each side to be user-only or item-only")
        return np.hstack([np.broadcast_to(p, (n, p.shape[1])) for p in parts])

    def _names(self, user: list[str], item: list[str]) -> list[str]:
        return [name for block in self.blocks for name in block._names(user, item)]

    def _write(self, user: np.ndarray | None, items: np.ndarray | None, out: np.ndarray) -> None:
        for block, columns in zip(self.blocks, self.slices_):
            block._write(user, items, out[:, columns])

    def __repr__(self) -> str:
        return f"Concat({', '.join(map(repr, self.blocks))})"


class Interaction(FeatureBuilder):
    """Row-wise outer product of two blocks: row a is vec(l_a r_a') = l_a ⊗ r_a.

    A shared θ on these rows is a bilinear model l_a' Θ r_a (Θ = θ reshaped to
    (dim l, dim r)), e.g. user × item affinities, or with ``OneHotAction`` on the
    left the disjoint per-arm model.

    Parameters
    ----------
    left, right : FeatureBuilder
    rank : int or (int or None, int or None) or None
        Low-rank option: project each side on the leading ``rank`` right singular
        vectors of its fitted rows (uncentred SVD: the directions that carry most
        of ‖l‖², resp. ‖r‖²) before the product, so Θ is restricted to
        P A Q' and d = r_left · r_right instead of dim l · dim r. ``None`` (or a
        side's None) keeps that side whole. Each projected side must be user-only
        or item-only (its fitted rows are then known).

    Examples
    --------
    >>> import numpy as np
    >>> b = Interaction(UserFeatures(), ItemFeatures())
    >>> _ = b.fit(users=np.ones((1, 2)), items=np.ones((1, 2)))
    >>> b.transform(np.array([1.0, 2.0]), np.array([[1.0, 10.0]]))
    array([[ 1., 10.,  2., 20.]])
    """

    # learned by fit: each side's projection (None: kept whole) and per-round scratch
    projections_: list[np.ndarray | None]
    _factors: tuple[np.ndarray, ...]
    _projected: tuple[np.ndarray, ...]

    def __init__(self, left: FeatureBuilder, right: FeatureBuilder,
                 rank: int | tuple[int | None, int | None] | None = None) -> None:
        self.left = _check_block(left, "Interaction", "left")
        self.right = _check_block(right, "Interaction", "right")
        ranks = rank if isinstance(rank, tuple) else (rank, rank)
        if len(ranks) != 2:
            raise ValueError(f"Interaction: rank must be an int, None or a pair, got {rank!r}")
        self.rank = rank
        self._ranks = tuple(None if r is None else check_int(r, "Interaction", "rank", minimum=1)
                            for r in ranks)

    def _children(self) -> tuple[FeatureBuilder, ...]:
        return (self.left, self.right)

    def _fit_state(self, users: np.ndarray | None, items: np.ndarray | None) -> dict[str, Any]:
        children = [self.left._fit_state(users, items), self.right._fit_state(users, items)]
        projections: list[np.ndarray | None] = []
        dims, norms = [], []
        for block, state, r in zip(self._children(), children, self._ranks):
            width = state["n_features_out_"]
            if r is None or r >= width:
                projections.append(None)
                dims.append(width)
                norms.append(state["max_norm_"])
                continue
            rows = block._fit_rows(state)  # from the computed, not yet committed, state
            if rows.shape[0] < r:  # the SVD has only as many directions as rows
                side = "left" if block is self.left else "right"
                raise ValueError(
                    f"Interaction.fit: rank of the {side} side is {r}, but its block has "
                    f"{rows.shape[0]} fitted row(s), so only {rows.shape[0]} leading "
                    f"direction(s) exist; fit on at least {r} rows (users or items for that "
                    f"side), or give that side a rank <= {rows.shape[0]} (or None: whole)")
            basis = np.linalg.svd(rows, full_matrices=False)[2][:r].T  # (width, r)
            projections.append(np.ascontiguousarray(basis))
            dims.append(r)
            norms.append(_row_norms_max(rows @ basis))
        return {"children": children, "n_features_out_": dims[0] * dims[1],
                "max_norm_": finite_norm(norms[0] * norms[1], "Interaction.fit"),
                "projections_": projections,
                "_factors": (np.empty((0, children[0]["n_features_out_"])),
                             np.empty((0, children[1]["n_features_out_"]))),
                "_projected": (np.empty((0, dims[0])), np.empty((0, dims[1])))}

    def _names(self, user: list[str], item: list[str]) -> list[str]:
        sides = []
        for side, block, basis in zip(("left", "right"), self._children(), self.projections_):
            sides.append(block._names(user, item) if basis is None
                         else [f"{side}_svd{j}" for j in range(basis.shape[1])])
        return [f"{a}*{b}" for a in sides[0] for b in sides[1]]  # vec(l r'): left-major

    def _write(self, user: np.ndarray | None, items: np.ndarray | None, out: np.ndarray) -> None:
        K = out.shape[0]
        if self._factors[0].shape[0] < K:  # grow the scratch buffers geometrically
            n = max(K, 2 * self._factors[0].shape[0])
            self._factors = tuple(np.empty((n, f.shape[1])) for f in self._factors)
            self._projected = tuple(np.empty((n, f.shape[1])) for f in self._projected)
        factors = []
        for block, scratch, projected, basis in zip(self._children(), self._factors,
                                                    self._projected, self.projections_):
            block._write(user, items, scratch[:K])
            if basis is None:
                factors.append(scratch[:K])
            else:
                factors.append(np.matmul(scratch[:K], basis, out=projected[:K]))
        a, b = factors[0].shape[1], factors[1].shape[1]
        # A view also for a parent's column slice (its last axis is contiguous).
        view = out.reshape(K, a, b)
        # einsum: no iterator buffers (a broadcast np.multiply allocates ~200 kB of them).
        np.einsum("ka,kb->kab", factors[0], factors[1], out=view)
        if not np.shares_memory(view, out):  # pragma: no cover - reshape had to copy
            out[...] = view.reshape(K, a * b)

    def __repr__(self) -> str:
        return f"Interaction({self.left!r}, {self.right!r}, rank={self.rank!r})"


class UnitBall(FeatureBuilder):
    """Divide a block's rows by one fitted factor so that ‖x‖ <= 1 on the fitted data.

    The factor is an upper bound on the row norm over every row the fitted data
    can build (exact for a single block; for ``Concat`` the root of the sum of
    squares, for ``Interaction`` the product). One global factor keeps the same
    linear model (θ absorbs it), unlike per-row normalisation; new data beyond
    the fitted range may give ‖x‖ > 1.

    Parameters
    ----------
    block : FeatureBuilder

    Examples
    --------
    >>> import numpy as np
    >>> b = UnitBall(UserFeatures()).fit(users=np.array([[3.0, 4.0], [0.0, 1.0]]))
    >>> b.transform(np.array([3.0, 4.0]), np.zeros((1, 1)))
    array([[0.6, 0.8]])
    """

    factor_: float  # learned by fit

    def __init__(self, block: FeatureBuilder) -> None:
        self.block = _check_block(block, "UnitBall", "block")

    def _children(self) -> tuple[FeatureBuilder, ...]:
        return (self.block,)

    def _fit_state(self, users: np.ndarray | None, items: np.ndarray | None) -> dict[str, Any]:
        child = self.block._fit_state(users, items)
        norm = finite_norm(child["max_norm_"], "UnitBall.fit")
        return {"children": [child], "n_features_out_": child["n_features_out_"],
                "max_norm_": 1.0 if norm > 0 else 0.0, "factor_": norm if norm > 0 else 1.0}

    def _names(self, user: list[str], item: list[str]) -> list[str]:
        return self.block._names(user, item)  # the same columns, divided by one factor

    def _write(self, user: np.ndarray | None, items: np.ndarray | None, out: np.ndarray) -> None:
        self.block._write(user, items, out)
        np.divide(out, self.factor_, out=out)

    def __repr__(self) -> str:
        return f"UnitBall({self.block!r})"


def disjoint_features(n_actions: int, standardize: bool = False,
                      intercept: bool = True) -> FeatureBuilder:
    """The disjoint per-arm encoding e_a ⊗ (z, 1), scaled into the unit ball.

    LinUCB's disjoint model (Li et al. 2010, Algorithm 1) keeps one θ_a per arm;
    on these rows one shared θ = (θ_1, ..., θ_K) is that model, so any policy of
    this library runs it.

    Examples
    --------
    >>> import numpy as np
    >>> b = disjoint_features(2, intercept=False).fit(users=np.array([[1.0, 0.0]]))
    >>> b.n_features_out_, b.transform(np.array([0.5, 0.5]))
    (4, array([[0.5, 0.5, 0. , 0. ],
           [0. , 0. , 0.5, 0.5]]))
    """
    owner = "disjoint_features"
    n_actions = check_int(n_actions, owner, "n_actions", minimum=1)
    user: FeatureBuilder = UserFeatures(standardize=_check_bool(standardize, owner, "standardize"))
    if _check_bool(intercept, owner, "intercept"):
        user = Concat(user, Intercept())
    return UnitBall(Interaction(OneHotAction(n_actions), user))
