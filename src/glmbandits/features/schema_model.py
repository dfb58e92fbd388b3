"""A fitted feature schema attached to the model it defines (saved in its model file).

:func:`attach_schema` stores the schema on the policy as ``policy.feature_schema_``: the
policy's state then holds it, so every path that saves or copies a policy (``save``,
``Policy.save``, a service snapshot, pickle) carries it, and a model and its schema cannot
be separated. Attaching refuses a schema of another width, or another fingerprint than a
schema already attached; the attached schema is frozen (its ``fit`` is refused).
"""

from __future__ import annotations

from typing import Any

from .schema import FeatureSchema

__all__ = ["attach_schema"]


def attach_schema(policy: Any, schema: FeatureSchema) -> Any:
    """Store the fitted ``schema`` on ``policy`` (``policy.feature_schema_``), so that the
    model file holds it; refuse a policy already trained under another schema.

    The schema is then frozen (its ``fit`` is refused): it defines the model's columns.

    Returns
    -------
    policy

    Examples
    --------
    >>> from glmbandits import LinUCB
    >>> from glmbandits.features import Boolean
    >>> schema = FeatureSchema(action=[Boolean("new")]).fit(actions=[{"new": True}])
    >>> policy = attach_schema(LinUCB(n_features=schema.n_features_out_), schema)
    >>> policy.feature_schema_ is schema
    True
    """
    owner = "attach_schema"
    if not isinstance(schema, FeatureSchema):
        raise TypeError(f"{owner}: schema must be a FeatureSchema, got {type(schema).__name__}")
    if not hasattr(schema, "fingerprint_"):
        raise ValueError(f"{owner}: schema must be fitted (call fit first)")
    d = getattr(policy, "n_features", None)
    if d != schema.n_features_out_:
        raise ValueError(f"{owner}: the schema has {schema.n_features_out_} columns, the "
                         f"policy's n_features is {d!r}")
    if vars(policy).get("feature_schema_") is not None:
        schema.check_compatible(policy)
    schema.attached_ = True
    policy.feature_schema_ = schema
    return policy
