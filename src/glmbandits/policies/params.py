"""What a policy adds to the parameter machinery of :mod:`glmbandits._params`.

* The family is reported by its name (``"logistic"``) when that name gives it back
  (:func:`~glmbandits.families.get_family`), otherwise as the family object; the
  policy keeps the resolved object in ``family``.
* ``set_params`` applies to a policy that has not played yet (no ``select``,
  ``update``, ``decide`` or ``reward``): the learned state starts from the
  parameters (a Gram matrix from ``l2``, a window of ``window`` rows), so new
  parameters on a policy that has learned would not describe its state. Such a
  policy refuses, naming what it has done; ``sklearn.base.clone(policy)`` gives an
  unfitted copy to set instead (scikit-learn allows ``set_params`` on a fitted
  estimator because its next ``fit`` starts over; a policy has no such next ``fit``).
* A policy whose ``family`` defaults to a family (every GLM policy) refuses
  ``family=None`` with ``TypeError``, as it refuses any other non-family.
* What was attached after construction (an event log, decision options, a drift
  monitor, a feature schema) is kept; a change of ``n_features`` or ``family``,
  which those are checked against, is refused while one is attached.

Examples
--------
>>> import numpy as np
>>> from glmbandits import UCBGLM
>>> policy = UCBGLM(n_features=2, family="probit", seed=0)
>>> policy.get_params()["family"]
'probit'
>>> policy.update(np.array([1.0, 0.0]), 1.0)
>>> policy.set_params(alpha=2.0)  # doctest: +ELLIPSIS
Traceback (most recent call last):
ValueError: UCBGLM.set_params: the policy has played (1 update(s), 0 pending ...
"""

from __future__ import annotations

from typing import Any

from .._params import GIVEN_PARAMS, Parameters, parameter_defaults
from ..families import GLMFamily, get_family

__all__ = ["PolicyParameters", "GIVEN_PARAMS"]

#: Set by the constructor, kept by ``set_params``: what was attached to the policy.
_ATTACHED_IN_INIT = ("event_log", "decisions_")


class PolicyParameters(Parameters):
    """The :class:`~glmbandits._params.Parameters` of a policy (see the module docstring)."""

    @classmethod
    def _needs_family(cls) -> bool:
        """Whether ``family=None`` is refused: the constructor's family defaults to a family.

        LinUCB, D-LinUCB and the random policy (default ``None``) take any finite reward
        without one; a GLM policy (default ``"logistic"``) needs its link.
        """
        return parameter_defaults(cls).get("family") is not None

    def _reported_param(self, name: str, value: Any) -> Any:
        if isinstance(value, GLMFamily) and type(value).name:
            try:
                if get_family(type(value).name) == value:
                    return type(value).name
            except (TypeError, ValueError):  # a user's family under a name of its own
                pass
        return value

    def _check_settable(self, owner: str, changes: dict[str, Any]) -> None:
        state = self.__dict__
        updates = state.get("n_updates_", 0)
        decisions = state.get("decisions_")
        pending = decisions.n_pending if decisions is not None else 0
        if updates or pending or state.get("last_probabilities_") is not None:
            raise ValueError(f"{owner}: the policy has played ({updates} update(s), {pending} "
                             "pending decision(s)); set the parameters of an unfitted copy "
                             "instead (sklearn.base.clone(policy).set_params(...))")
        attached = sorted(name for name in ("drift_monitor_", "feature_schema_")
                          if state.get(name) is not None)
        if state.get("event_log") is not None:
            attached.append("event_log")
        if decisions is not None and decisions.default_reward is not None:
            attached.append("decisions_.default_reward")  # checked against the family
        current = self.get_params(deep=False)
        moved = [name for name in ("n_features", "family")
                 if name in changes and changes[name] is not current.get(name)
                 and changes[name] != current.get(name)]
        if attached and moved:
            raise ValueError(f"{owner}: {moved[0]} cannot change while {attached[0]} is "
                             f"attached (it was checked against {moved[0]} = "
                             f"{current[moved[0]]!r}), got {changes[moved[0]]!r}")

    def _adopt(self, fresh: Any) -> None:
        kept = {name: self.__dict__[name] for name in _ATTACHED_IN_INIT if name in self.__dict__}
        super()._adopt(fresh)
        self.__dict__.update(kept)
