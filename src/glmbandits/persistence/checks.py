"""The checks a decoded policy passes before :func:`~glmbandits.persistence.load` returns it.

A model file is data, so a crafted one can hold any values the codec can write:
``alpha = nan``, ``kappa = 0``, a NaN estimate, a complex Gram matrix, an array of
the wrong shape, a family object that is not a family. Such a policy would load and
fail later (or never: a NaN estimate scores NaN). :func:`check_policy` refuses it
at load, in this order:

1. ``n_features`` is an int >= 1 (the constructor's own check) with
   ``64·n_features² <= max_bytes``, room for the eight d×d float64 matrices a
   constructor builds at most, so the next step allocates at most ``max_bytes``.
2. **The constructor is the one home of the parameter checks**: the policy's class
   is built again from the loaded values of its constructor parameters (a deep
   copy, so nothing of the loaded policy is consumed), which runs every check the
   constructor runs (its ``ValueError``/``TypeError`` names the parameter), and
   every public attribute the constructor sets (the parameters as normalised,
   derived constants such as ``RSGLinCB.warmup_threshold``) must equal the loaded
   one. A class whose constructor takes a parameter it does not keep under the same
   name (a user's registered subclass) skips this step.
3. The decision options pass :meth:`PendingDecisions.configure`'s checks.
4. The learned state, walked through every object of a glmbandits class:

   * arrays hold real numbers (never complex); float arrays are float64 and finite
     (a :class:`~glmbandits.estimation.history.SampleHistory` is checked on its
     filled rows ``X`` and ``y``, not on the unused tail of its buffers);
   * the arrays of :data:`ARRAY_SHAPES` have their shapes, in terms of d =
     ``n_features`` and of lengths shared within one object;
   * float scalars are finite, except the sentinels of :data:`INFINITE_SENTINELS`;
   * every family is one of the library's families as its own constructor builds it
     (which runs its checks, e.g. ``LinearFamily``'s ``noise_sd > 0``), or a class
     the user registered, and equals the policy's family; an attribute named
     ``family`` holds a family or ``None``;
   * no instance attribute hides a method or property of its class.

Objects of classes outside glmbandits (a user's registered classes) are not walked.
This module imports no other glmbandits layer but the lowest: the families are
resolved by name (:mod:`importlib`), as :mod:`.allowed` resolves classes.

Examples
--------
>>> import math
>>> from glmbandits import LinUCB
>>> policy = LinUCB(n_features=2, seed=0)
>>> check_policy(policy, 1 << 30)
>>> policy.__dict__["alpha"] = math.nan
>>> check_policy(policy, 1 << 30)
Traceback (most recent call last):
ValueError: LinUCB: alpha must be finite, got nan
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import importlib
import inspect
import math
from typing import Any

import numpy as np

from .._validation import check_int, format_value
from ._nodes import slot_names
from .allowed import qualified_name

__all__ = ["ARRAY_SHAPES", "INFINITE_SENTINELS", "UNKNOWN_ARRAYS", "check_policy"]

_D = (("d",), "f")
_DD = (("d", "d"), "f")

#: The arrays of glmbandits' classes, by class (its qualified name, matched along the MRO)
#: and attribute: (shape, kind). In a shape, ``"d"`` is the policy's ``n_features`` and
#: any other letter a length shared by the arrays of that letter within one object. Kind
#: ``"f"`` is float64, ``"i"`` any integer dtype, ``"b"`` bool. ``tests/persistence``
#: checks genuine states of every policy class against this table.
ARRAY_SHAPES: dict[str, dict[str, tuple[tuple[str, ...], str]]] = {
    "glmbandits.policies.base.Policy": {"last_probabilities_": (("K",), "f")},
    "glmbandits.policies.scores.ActionScores": {
        "ucb": (("K",), "f"), "mean": (("K",), "f"), "width": (("K",), "f")},
    "glmbandits.policies.decisions.Decision": {
        "probabilities": (("K",), "f"), "candidates": (("m",), "i")},
    "glmbandits.policies.decisions.PendingDecision": {"x": _D},
    "glmbandits.policies.domd_glb.DOMDGLB": {"theta_": _D},
    "glmbandits.policies.ecolog.ECOLog": {"W_": _DD, "W_inv_": _DD, "theta_": _D},
    "glmbandits.policies.gloc.GLOC": {
        "V_": _DD, "V_inv_": _DD, "b_": _D, "theta_": _D, "theta_online_": _D},
    "glmbandits.policies.laplace_ts.LaplaceTS": {"m_": _D, "q_": _D},
    "glmbandits.policies.rs_glincb.RSGLinCB": {
        "H_inv_": _DD, "H_tau_inv_": _DD, "theta_": _D, "theta_w_": _D},
    "glmbandits.policies.supcb_glm.SupCBGLM": {"last_candidates_": (("C",), "b")},
    "glmbandits.estimation.estimates.GLMEstimate": {
        "theta_": _D, "V_inv_": _DD, "newton_theta_": _D},
    "glmbandits.estimation.estimates.RidgeEstimate": {"theta_": _D, "V_inv_": _DD, "b_": _D},
    "glmbandits.estimation.history.SampleHistory": {"X": (("n", "d"), "f"), "y": (("n",), "f")},
    "glmbandits.estimation.incremental.IncrementalMLE": {
        "theta_": _D, "grad_": _D, "hess_": _DD, "hess_inv_": _DD, "offset_": _D},
    "glmbandits.estimation.lazy.NewtonCache": {
        "theta": (("r", "d"), "f"), "gradient": (("r", "d"), "f"),
        "hessian": (("r", "d", "d"), "f"), "n_seen": (("r",), "i"),
        "hessian_n": (("r",), "i"), "age": (("r",), "i")},
    "glmbandits.estimation.schedule.RarelySwitchingSnapshot": {"theta_": _D, "V_inv_": _DD},
    "glmbandits.estimation.discounted.DiscountedGram": {
        "M_": _DD, "M2_": _DD, "V_inv_": _DD, "width_matrix_": _DD},
    "glmbandits.estimation.discounted.DiscountedRidgeEstimate": {"b_": _D, "theta_": _D},
    "glmbandits.estimation.discounted.DiscountedGLMEstimate": {"theta_": _D},
    "glmbandits.estimation.windowed.SlidingWindow": {"X_": (("w", "d"), "f"), "y_": (("w",), "f")},
    "glmbandits.estimation.windowed.WindowedGLMEstimate": {"theta_": _D, "V_inv_": _DD},
}

#: Float attributes that may hold one infinite value, by (class, attribute): their
#: "nothing yet" sentinels. Every other float of a glmbandits object is finite.
INFINITE_SENTINELS: dict[tuple[str, str], float] = {
    ("glmbandits.estimation.incremental.IncrementalMLE", "hessian_n_"): math.inf,
    ("glmbandits.estimation.schedule.RarelySwitchingSnapshot", "log_det_"): -math.inf,
    ("glmbandits.policies.rs_glincb.RSGLinCB", "logdet_H_tau_"): -math.inf,
}

#: Float arrays that may be entirely NaN, by (class, attribute): their "unknown" sentinel.
#: A decision the policy registers from the log (``Policy.register_decision``: made by a
#: scale-out API process, learned here) carries scores it never computed, stored as NaN.
#: A partly NaN array is still refused.
UNKNOWN_ARRAYS: frozenset[tuple[str, str]] = frozenset({
    ("glmbandits.policies.scores.ActionScores", "ucb"),
    ("glmbandits.policies.scores.ActionScores", "mean"),
    ("glmbandits.policies.scores.ActionScores", "width"),
})

#: Buffers whose tail beyond the filled rows is unused (and uninitialised): checked through
#: the views of :data:`ARRAY_SHAPES` (``X``, ``y``) instead.
_BUFFERS: dict[str, tuple[str, ...]] = {
    "glmbandits.estimation.history.SampleHistory": ("_X", "_y"),
    # the builder and buffers a FeatureSchema rebuilds from its checked saved state
    "glmbandits.features.schema.FeatureSchema": ("_runtime",),
}

#: Matrices a constructor builds at most, each d×d float64 (the bound of ``n_features``).
_MATRICES = 8
_KIND_NAMES = {"f": "float64", "i": "an integer dtype", "b": "bool"}
_OPAQUE = (np.random.Generator, np.random.SeedSequence, np.random.BitGenerator)
_SCALARS = (type(None), bool, int, str, bytes, np.bool_, np.integer, np.str_, np.bytes_)


def _is_own(cls: type) -> bool:
    """Whether ``cls`` is a glmbandits class or derives from one."""
    return any(klass.__module__ == "glmbandits" or klass.__module__.startswith("glmbandits.")
               for klass in cls.__mro__)


def _lookup(table: dict[str, Any], cls: type) -> list[Any]:
    """The entries of ``table`` for ``cls`` and its bases, nearest first."""
    return [table[name] for name in map(qualified_name, cls.__mro__) if name in table]


def _same(first: Any, second: Any) -> bool:
    if isinstance(first, np.ndarray) or isinstance(second, np.ndarray):
        return (isinstance(first, np.ndarray) and isinstance(second, np.ndarray)
                and first.dtype == second.dtype and np.array_equal(first, second))
    try:
        return bool(first == second)
    except Exception:  # an equality that does not reduce to a bool
        return False


def _constructor_arguments(policy: Any) -> dict[str, Any] | None:
    """The loaded values of the constructor's parameters, or None when one is not kept."""
    signature = inspect.signature(type(policy).__init__)
    state = vars(policy)
    arguments = {name: state[name] for name, parameter in signature.parameters.items()
                 if name != "self" and name in state
                 and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)}
    try:
        signature.bind(None, **arguments)
    except TypeError:
        return None
    return arguments


def _check_constructor(policy: Any, owner: str) -> None:
    """Build the class again from the loaded parameters; compare its public attributes."""
    arguments = _constructor_arguments(policy)
    if arguments is None:
        return
    fresh = type(policy)(**copy.deepcopy(arguments))  # raises, naming the parameter
    state = vars(policy)
    for name, value in vars(fresh).items():
        if name.startswith("_") or name.endswith("_") or name in ("seed", "event_log"):
            continue
        if name not in state:
            raise ValueError(f"{owner}.{name} is missing (the constructor sets it)")
        if not _same(value, state[name]):
            raise ValueError(f"{owner}.{name} is {state[name]!r}, the constructor makes "
                             f"{value!r} from the same parameters")


def _check_decision_options(policy: Any, owner: str) -> None:
    """The decision options through the checks of ``configure_decisions``."""
    decisions = getattr(policy, "decisions_", None)
    if decisions is None or not hasattr(decisions, "options"):
        return
    where = f"{owner}.decisions_"

    def reward_check(value: Any, who: str) -> float:
        checked: float = policy._check_reward(value, f"{who}: default_reward")
        return checked

    type(decisions)().configure(where, reward_check, **decisions.options())


class _StateWalk:
    """One walk of a policy's object graph (iterative: no recursion limit)."""

    def __init__(self, policy: Any, n_features: int) -> None:
        self.d = n_features
        self.family = getattr(policy, "family", None)
        families = importlib.import_module("glmbandits.families")
        self.family_base = families.GLMFamily
        self.library_families = {type(families.get_family(name))
                                 for name in families.FAMILY_NAMES}
        self.seen: set[int] = set()
        self.keep: list[Any] = []  # views made here stay alive: no id() reuse

    def run(self, policy: Any, owner: str) -> None:
        # (value, path, owner class or None, attribute name or None, shape bindings or None)
        stack: list[tuple[Any, str, type | None, str | None, dict | None]] = [
            (policy, owner, None, None, None)]
        while stack:
            value, path, cls, name, bindings = stack.pop()
            if isinstance(value, _SCALARS) or isinstance(value, _OPAQUE):
                continue
            if isinstance(value, (float, np.floating)):
                self._float(value, path, cls, name)
                continue
            if isinstance(value, (complex, np.complexfloating)):
                raise TypeError(f"{path} must be a real number, got {value!r}")
            if type(value) is np.ndarray:
                self._array(value, path, cls, name, bindings)
                continue
            if id(value) in self.seen:
                continue
            self.seen.add(id(value))
            if isinstance(value, (list, tuple)):
                stack.extend((item, f"{path}[{i}]", None, None, None)
                             for i, item in reversed(list(enumerate(value))))
            elif isinstance(value, dict):
                stack.extend((item, f"{path}[{key!r}]", None, None, None)
                             for key, item in reversed(list(value.items())))
            elif isinstance(value, self.family_base):
                self._family(value, path)
            elif _is_own(type(value)):
                stack.extend(reversed(self._attributes(value, path)))

    def _attributes(self, obj: Any, path: str) -> list[tuple[Any, str, type, str, dict]]:
        cls = type(obj)
        state = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
        self._no_shadowing(cls, state, path)
        for slot in slot_names(cls):
            if hasattr(obj, slot):
                state[slot] = getattr(obj, slot)
        buffers = {name for names in _lookup(_BUFFERS, cls) for name in names}
        for shapes in _lookup(ARRAY_SHAPES, cls):  # views declared in place of buffers
            for name in shapes:
                if buffers and name not in state:
                    view = getattr(obj, name)
                    self.keep.append(view)
                    state[name] = view
        bindings: dict[str, int] = {}
        items = []
        for name, value in state.items():
            if name in buffers:
                continue
            if name == "family" and value is not None and not isinstance(value,
                                                                          self.family_base):
                raise TypeError(f"{path}.family must be a GLMFamily or None, got "
                                f"{qualified_name(type(value))}")
            items.append((value, f"{path}.{name}", cls, name, bindings))
        return items

    @staticmethod
    def _no_shadowing(cls: type, state: dict[str, Any], path: str) -> None:
        for name in state:
            found = inspect.getattr_static(cls, name, None)
            if isinstance(found, functools.cached_property):
                continue
            kind = ("property" if isinstance(found, property)
                    else "method" if callable(found) or isinstance(found, (classmethod,
                                                                             staticmethod))
                    else None)
            if kind is not None:
                raise TypeError(f"{path}.{name} shadows the {kind} {cls.__name__}.{name}")

    def _float(self, value: Any, path: str, cls: type | None, name: str | None) -> None:
        if math.isfinite(value):
            return
        if cls is not None and name is not None and not math.isnan(value):
            for klass in cls.__mro__:
                if INFINITE_SENTINELS.get((qualified_name(klass), name)) == value:
                    return
        raise ValueError(f"{path} must be finite, got {format_value(value)}")

    @staticmethod
    def _may_be_unknown(cls: type, name: str | None) -> bool:
        return any((qualified_name(klass), name) in UNKNOWN_ARRAYS for klass in cls.__mro__)

    def _array(self, array: np.ndarray, path: str, cls: type | None, name: str | None,
               bindings: dict | None) -> None:
        kind = array.dtype.kind
        if kind == "c":
            raise TypeError(f"{path} must hold real numbers, got {array.dtype}")
        if kind == "f":
            if array.dtype.itemsize != 8:
                raise TypeError(f"{path} must be float64, got {array.dtype}")
            bad = _count_non_finite(array)
            if bad and not (bad == array.size and cls is not None
                            and self._may_be_unknown(cls, name) and np.isnan(array).all()):
                raise ValueError(f"{path} must be finite, got {bad} NaN or inf value(s)")
        specs = _lookup(ARRAY_SHAPES, cls) if cls is not None else []
        spec = next((shapes[name] for shapes in specs if name in shapes), None)
        if spec is None or bindings is None:
            return
        shape, expected_kind = spec
        if kind != expected_kind and not (expected_kind == "i" and kind == "u"):
            raise TypeError(f"{path} must be {_KIND_NAMES[expected_kind]}, got {array.dtype}")
        known = {**bindings, "d": self.d}
        wanted = tuple(known.get(letter) for letter in shape)
        if array.ndim != len(shape) or any(n is not None and n != size
                                           for n, size in zip(wanted, array.shape)):
            rendered = tuple(n if n is not None else array.shape[i] if i < array.ndim else letter
                             for i, (n, letter) in enumerate(zip(wanted, shape)))
            raise ValueError(f"{path} must have shape {_shape_text(rendered)}, got "
                             f"{_shape_text(array.shape)}")
        for letter, size in zip(shape, array.shape):
            bindings.setdefault(letter, size)

    def _family(self, family: Any, path: str) -> None:
        cls = type(family)
        self._no_shadowing(cls, vars(family), path)
        if cls in self.library_families:
            if dataclasses.is_dataclass(cls):
                rebuilt = cls(**{field.name: getattr(family, field.name)
                                 for field in dataclasses.fields(cls) if field.init})
            else:
                rebuilt = cls()
            if vars(rebuilt).keys() != vars(family).keys() or not all(
                    _same(value, vars(family)[key]) for key, value in vars(rebuilt).items()):
                raise ValueError(f"{path}: a {cls.__name__} with {vars(family)}, its "
                                 f"constructor makes one with {vars(rebuilt)}")
        if not _same(family, self.family):
            expected = (f"the policy's family is {self.family!r}" if self.family is not None
                        else "the policy has no family")
            raise ValueError(f"{path} is {family!r}, {expected}")


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _count_non_finite(array: np.ndarray) -> int:
    """NaN and inf entries, counted in slices (no temporary the size of a large array)."""
    flat = array.reshape(-1)
    step = 1 << 20
    return sum(int(flat[i:i + step].size - np.count_nonzero(np.isfinite(flat[i:i + step])))
               for i in range(0, flat.size, step))


def check_policy(policy: Any, max_bytes: int) -> None:
    """Refuse a decoded policy that no constructor and no learning could have made.

    Parameters
    ----------
    policy : Policy
        The policy as decoded from a model file.
    max_bytes : int
        ``load``'s bound: ``64·n_features²`` may not exceed it.

    Raises
    ------
    ValueError, TypeError
        Naming the attribute (``UCBGLM.estimate_.theta_ must be finite, ...``) or, from
        the constructor's own checks, the parameter (``UCBGLM: alpha must be ...``).
    """
    owner = type(policy).__name__
    n_features = check_int(vars(policy).get("n_features"), owner, "n_features", minimum=1)
    need = _MATRICES * 8 * n_features * n_features
    if need > max_bytes:
        raise ValueError(f"{owner}: n_features = {n_features} needs d×d matrices of "
                         f"{need} bytes ({_MATRICES} of {8 * n_features * n_features}), more "
                         f"than max_bytes = {max_bytes}")
    _check_constructor(policy, owner)
    _check_decision_options(policy, owner)
    schema = vars(policy).get("feature_schema_")
    if schema is not None and getattr(schema, "n_features_out_", None) != n_features:
        raise ValueError(f"{owner}.feature_schema_ must be a fitted FeatureSchema of "
                         f"{n_features} columns (n_features), got "
                         f"{getattr(schema, 'n_features_out_', type(schema).__name__)!r}")
    _StateWalk(policy, n_features).run(policy, owner)
