"""``save`` and ``load``: a policy to a model file and back, exactly.

:func:`save` encodes the policy's object graph (:mod:`.codec`), writes the
manifest, the state tree and the arrays into one signed zip (:mod:`.archive`)
and renames it into place atomically. :func:`load` verifies the whole file
before building anything, bounding every size first (:mod:`.archive`),
resolves only allowed classes (:mod:`.allowed`), checks that the constructor
parameters in the manifest agree with the restored state, and passes the
restored policy through its constructor's checks and the learned-state checks
(:mod:`.checks`); on any problem it raises :class:`ModelFileError` and returns
nothing.

A loaded policy continues exactly as the saved one would have: the same
actions, scores and estimates, bit for bit, for the same inputs (its random
generator is restored mid-stream).

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> from glmbandits import UCBGLM
>>> policy = UCBGLM(n_features=2, seed=0)
>>> for _ in range(5):
...     a = policy.select(np.eye(2) / 2)
...     policy.update(np.eye(2)[a] / 2, 1.0)
>>> path = save(policy, os.path.join(tempfile.mkdtemp(), "ucb.glmb"))
>>> copy = load(path, expected_class=UCBGLM)
>>> np.array_equal(copy.estimate_.theta, policy.estimate_.theta)
True
>>> copy.select(np.eye(2) / 2) == policy.select(np.eye(2) / 2)
True
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

from .allowed import model_roots, qualified_name, resolve_class
from .archive import build_manifest, load_arrays, npz_bytes, pack, unpack, write_atomic
from .checks import check_policy
from .codec import decode, dumps_json, encode, loads_json, to_json_value
from .limits import check_max_bytes
from .limits import refuse as _refuse

__all__ = ["save", "load", "policy_params"]


def _policy_base() -> tuple[type, ...]:
    """``glmbandits.policies.base.Policy``, as it declared itself (a higher layer)."""
    return model_roots()


def policy_params(policy: Any) -> dict[str, Any]:
    """The constructor parameters of ``policy`` as JSON values.

    The names come from ``inspect.signature(type(policy).__init__)``, the values
    from the policy's attributes of the same names (a parameter without such an
    attribute is left out), each encoded by :func:`.codec.to_json_value`.
    """
    params = {}
    for name, parameter in inspect.signature(type(policy).__init__).parameters.items():
        if name == "self" or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if name in vars(policy):
            params[name] = to_json_value(vars(policy)[name])
    return params


def save(policy: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``policy`` to one model file at ``path``, atomically.

    Parameters
    ----------
    policy : Policy
        Any glmbandits policy (or a registered subclass), fresh or mid-run.
    path : str or path-like
        The file to write (conventionally ``*.glmb``); replaced atomically if it
        exists, so a crash leaves the old file or the new one, never a mix.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    TypeError
        ``policy`` is not a Policy, or its state holds something a model file
        cannot hold (the message names where).
    """
    if not isinstance(policy, _policy_base()):
        raise TypeError(f"save: policy must be a glmbandits Policy, got {type(policy).__name__}")
    tree, arrays = encode(policy)
    state = dumps_json(tree)
    manifest = build_manifest(qualified_name(type(policy)), policy_params(policy), state, arrays)
    return write_atomic(path, pack(manifest, state, npz_bytes(arrays)))


def _contradicting(params: dict[str, Any], written: dict[str, Any], cls: type[Any]) -> list[str]:
    """The parameters on which the manifest and the restored state disagree.

    A parameter the manifest does not list agrees when the state holds its default: the
    file was written before the parameter existed (its ``__setstate__`` filled it in).
    """
    defaults = {name: parameter.default
                for name, parameter in inspect.signature(cls.__init__).parameters.items()
                if parameter.default is not parameter.empty}
    differing = []
    for name in sorted(set(params) | set(written)):
        if name in written:
            agree = name in params and params[name] == written[name]
        else:
            agree = name in defaults and params[name] == to_json_value(defaults[name])
        if not agree:
            differing.append(name)
    return differing


def load(path: str | os.PathLike[str], expected_class: type | None = None, *,
         max_bytes: int | None = None, schema: Any = None) -> Any:
    """Read a policy written by :func:`save`.

    Parameters
    ----------
    path : str or path-like
        The model file.
    expected_class : type, optional
        Refuse a file whose policy is not an instance of this class (or a subclass).
    max_bytes : int, optional
        The most bytes the file, its members inflated and its arrays may each have (default
        :data:`~glmbandits.persistence.limits.DEFAULT_MAX_BYTES`, 4 GiB); the number of
        JSON arrays and objects and the policy's ``n_features`` are bounded by it too
        (``docs/persistence.md``, "Size limits"). Every size is checked before it is
        allocated.
    schema : glmbandits.features.FeatureSchema, optional
        Refuse a model not trained under this feature schema: its saved
        ``feature_schema_`` must have the same fingerprint (for a schema not fitted
        yet, the same declaration); the message names the first difference
        (``docs/features.md``, "Declared schemas").

    Returns
    -------
    Policy
        The policy, in exactly the state it was saved in.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ModelFileError
        The path is not a regular file; the file is not a model file, is damaged
        or truncated (any flipped bit), is over a size limit, is of a newer or
        unknown format version, names a class that is not allowed or not
        ``expected_class``, is inconsistent (arrays against the manifest, the
        state tree, the parameters against the state), or its state fails the
        checks of the policy's constructor or holds learned values no policy
        has (NaN, inf or complex arrays, arrays of the wrong shape, a family
        that is not one). The message names the file and the reason.
    """
    max_bytes = check_max_bytes(max_bytes)
    check = None if schema is None else getattr(schema, "check_compatible", None)
    if schema is not None and not callable(check):
        raise TypeError(f"glmbandits.load: schema must be a FeatureSchema, got "
                        f"{type(schema).__name__}")
    manifest, state_bytes, npz = unpack(path, max_bytes)
    class_name = manifest["policy"]["class"]
    try:
        tree = loads_json(state_bytes)
    except ValueError as error:
        raise _refuse(path, f"state.json is not valid JSON ({error})") from None
    if (type(tree) is not dict or tree.get("$") != "object"
            or f"{tree.get('module')}.{tree.get('qualname')}" != class_name):
        raise _refuse(path, f"the state is not an instance of the manifest's class {class_name}")
    if expected_class is not None:
        try:
            cls = resolve_class(tree["module"], tree["qualname"])
        except (LookupError, ImportError) as error:
            raise _refuse(path, str(error)) from None
        if not (inspect.isclass(cls) and issubclass(cls, expected_class)):
            raise _refuse(path, f"it holds a {class_name}, not a {qualified_name(expected_class)}")
    arrays = load_arrays(npz, manifest, path, max_bytes)
    del npz, state_bytes
    try:
        policy = decode(tree, arrays, max_bytes)
    except Exception as error:  # malformed tree, refused class, a __setstate__ that raised
        raise _refuse(path, f"the state is malformed ({error})") from None
    if not isinstance(policy, _policy_base()):
        raise _refuse(path, f"it holds a {class_name}, which is not a glmbandits Policy")
    try:
        params = policy_params(policy)
    except Exception as error:
        raise _refuse(path, f"the restored policy is malformed ({error})") from None
    differing = _contradicting(params, manifest["policy"]["params"], type(policy))
    if differing:
        raise _refuse(path, f"the parameters {differing} in the manifest contradict the state")
    try:
        check_policy(policy, max_bytes)
    except Exception as error:  # the constructor's own checks, or the learned state's
        raise _refuse(path, f"its state fails the checks of its class ({error})") from None
    if check is not None:
        try:
            check(policy)
        except ValueError as error:
            raise _refuse(path, str(error)) from None
    return policy
