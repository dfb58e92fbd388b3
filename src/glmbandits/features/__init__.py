"""Feature builders: the common data shapes turned into per-action contexts (K, d).

Fitted on data like scikit-learn transformers (``fit(users, items)``), then
applied once per round (``transform(user, items) -> (K, d)``), writing into a
preallocated buffer that the next call reuses (policies copy what they keep).
``n_features_out_`` is known after ``fit``, so a policy can be built with it.

* :class:`UserFeatures`, :class:`ItemFeatures` — the raw sides, optionally standardised
  (:class:`Standardizer`);
* :class:`OneHotAction`, :class:`Intercept` — the action id, a bias column;
* :class:`Concat` — blocks side by side; :class:`Interaction` — user × item (or
  one-hot × user: the disjoint per-arm model) outer products, optionally low-rank;
* :class:`UnitBall` — one fitted factor so that ‖x‖ <= 1;
* :func:`disjoint_features` — the classic "one user context, K arms" encoding;
* :class:`FeatureSchema` — named, typed context and action features (:class:`Numeric`,
  :class:`Boolean`, :class:`Categorical`, :class:`MultiCategorical`, :class:`Vector`,
  hashed categories, interactions) from request mappings, saved with the model
  (:func:`attach_schema`).

Examples
--------
>>> import numpy as np
>>> from glmbandits.features import Concat, Interaction, ItemFeatures, UserFeatures
>>> users, items = np.random.default_rng(0).normal(size=(100, 3)), np.eye(4)
>>> builder = Concat(UserFeatures(standardize=True), Interaction(UserFeatures(), ItemFeatures()))
>>> builder.fit(users, items).n_features_out_
15
>>> builder.transform(users[0], items).shape
(4, 15)

See ``docs/features.md`` for the digits data run through them into UCB-GLM.
"""

from .base import FeatureBuilder, Standardizer
from .builders import (Concat, Intercept, Interaction, ItemFeatures, OneHotAction, UnitBall,
                       UserFeatures, disjoint_features)
from .categorical_fields import Categorical, MultiCategorical, stable_hash
from .fields import Field
from .numeric_fields import Boolean, Numeric, Vector
from .schema import FeatureSchema
from .schema_model import attach_schema

__all__ = ["FeatureBuilder", "Standardizer", "UserFeatures", "ItemFeatures", "OneHotAction",
           "Intercept", "Concat", "Interaction", "UnitBall", "disjoint_features",
           "FeatureSchema", "attach_schema", "Field", "Numeric", "Boolean", "Categorical",
           "MultiCategorical", "Vector", "stable_hash"]
