"""The event records of :class:`glmbandits.data.EventLog`: their types, checks and decoding.

Kept apart from the log itself so that the join and the Parquet export
(:mod:`.event_export`) read the same types without importing the database code.
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from .._validation import check_finite, check_real, format_value

__all__ = ["DecisionEvent", "RewardEvent", "ExpiryEvent", "Event", "SCHEMA_VERSION",
           "APPLICATION_ID", "REWARD_STATUSES", "EXPIRY_OUTCOMES", "MAX_ID_LENGTH",
           "DECISION_ID_RULE", "DECISION_ID_PATTERN", "check_decision_id",
           "check_timestamp", "check_count", "check_decision", "check_reward", "check_expiry",
           "decode"]

#: Version 2 (shadow mode) adds ``policy_action`` and lets a shadow decision's
#: propensity be null; version-1 logs are migrated in place when opened for writing.
SCHEMA_VERSION = 2
#: ``PRAGMA application_id`` of an event log ("GLMB"), so a foreign database is refused.
APPLICATION_ID = 0x474C4D42
#: Statuses of a reward event (as returned by ``Policy.reward``).
REWARD_STATUSES = ("learned", "held", "duplicate", "late")
#: Outcomes of an expiry event (as counted by ``Policy.expire``).
EXPIRY_OUTCOMES = ("dropped", "default", "learned")
#: The longest decision id, in characters (code points; at most 1,024 bytes of UTF-8).
MAX_ID_LENGTH = 256
#: The legal decision ids, in words (quoted by every refusal).
DECISION_ID_RULE = (f"1 to {MAX_ID_LENGTH} characters, none of them a control character "
                    "(U+0000-U+001F, U+007F-U+009F) or a surrogate (U+D800-U+DFFF)")
#: The characters an id may not hold: controls (a NUL is dropped from the end of a NumPy
#: unicode array, so a saved, pickled or copied policy would merge "a" and "a\x00", and
#: PostgreSQL text cannot hold one) and surrogates (not Unicode scalar values: no UTF-8,
#: JSON body, database or model file can hold a lone one).
_ID_CONTROLS = r"\x00-\x1f\x7f-\x9f"
_ID_FORBIDDEN = re.compile(f"[{_ID_CONTROLS}\ud800-\udfff]")
#: The legal ids as a regular expression (Python and JSON Schema) for text that cannot hold
#: a surrogate: JSON (msgspec refuses a lone surrogate's escape) and UTF-8 (the service's
#: OpenAPI document). :func:`check_decision_id` also refuses surrogates.
DECISION_ID_PATTERN = f"^[^{_ID_CONTROLS}]{{1,{MAX_ID_LENGTH}}}$"

@dataclass(frozen=True, eq=False)
class DecisionEvent:
    """A logged decision: the contexts, the full distribution and the chosen action.

    A shadow decision (``policy_action`` not None) shows the caller's default
    ``action``: its ``propensity`` is None (unknown: the caller chose) and
    ``probabilities`` is the policy's own distribution, from which it drew
    ``policy_action``.
    """

    sequence: int
    decision_id: str
    timestamp: float
    contexts: np.ndarray        # (K, d) float64
    probabilities: np.ndarray   # (K,) float64
    action: int
    propensity: float | None
    model_version: int
    policy_action: int | None = None
    kind: str = "decision"

    @property
    def shadow(self) -> bool:
        """Whether the caller's default action was shown (shadow mode)."""
        return self.policy_action is not None


@dataclass(frozen=True)
class RewardEvent:
    """A received reward and what the policy did with it (``status``: :data:`REWARD_STATUSES`)."""

    sequence: int
    decision_id: str
    timestamp: float
    reward: float
    status: str
    kind: str = "reward"


@dataclass(frozen=True)
class ExpiryEvent:
    """A decision closed by expiry (``outcome``: :data:`EXPIRY_OUTCOMES`) and the reward learned."""

    sequence: int
    decision_id: str
    timestamp: float
    outcome: str
    reward: float | None
    kind: str = "expiry"


Event = Union[DecisionEvent, RewardEvent, ExpiryEvent]


# -- input checks (they mirror the policy's, so the log never holds what a policy could not
# -- have written; they run before anything is written) ----------------------------------
def check_decision_id(value: Any, owner: str) -> str:
    r"""A decision id, checked: the one rule of every door (policies, event logs, service).

    A legal id is a ``str`` of 1 to :data:`MAX_ID_LENGTH` characters with no control
    character (U+0000-U+001F, U+007F-U+009F) and no surrogate (U+D800-U+DFFF). Every
    legal id round-trips exactly through a model file, pickle, deepcopy, the SQLite and
    PostgreSQL event logs and the Parquet export. A ``str`` subclass (e.g. ``np.str_``)
    is returned as a plain ``str``.

    Parameters
    ----------
    value : Any
        The id to check.
    owner : str
        The caller, e.g. ``"UCBGLM.reward"``, for the message.

    Returns
    -------
    str
        ``value`` as a plain ``str``.

    Raises
    ------
    TypeError
        If ``value`` is not a ``str``.
    ValueError
        If it is empty, too long, or holds a refused character (named with its code
        point and position).

    Examples
    --------
    >>> check_decision_id("req-1 caf\u00e9", "f")
    'req-1 café'
    >>> check_decision_id("a\x00", "f")
    Traceback (most recent call last):
    ...
    ValueError: f: decision_id must be 1 to 256 characters, none of them a control character (U+0000-U+001F, U+007F-U+009F) or a surrogate (U+D800-U+DFFF); got 'a\x00', which holds U+0000 at index 1
    """
    if type(value) is not str:
        if not isinstance(value, str):
            raise TypeError(f"{owner}: decision_id must be a str, got {type(value).__name__} "
                            f"{_shown(value)}")
        value = str.__str__(value)
    if not 0 < len(value) <= MAX_ID_LENGTH:
        raise ValueError(f"{owner}: decision_id must be {DECISION_ID_RULE}; got "
                         f"{len(value)} characters")
    bad = _ID_FORBIDDEN.search(value)
    if bad is not None:
        raise ValueError(f"{owner}: decision_id must be {DECISION_ID_RULE}; got "
                         f"{_shown(value)}, which holds U+{ord(bad.group()):04X} at index "
                         f"{bad.start()}")
    return value


def _shown(value: Any) -> str:
    """A short repr for a message (an id may be long)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def check_timestamp(value: Any, owner: str) -> float:
    return check_real(value, owner, "timestamp")


def check_count(value: Any, owner: str, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be an int, got {type(value).__name__}")
    return int(value)


def float_array(value: Any, owner: str, name: str) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype == bool or array.dtype.kind not in "iuf":
        raise TypeError(f"{owner}: {name} must be an array of real numbers, got dtype "
                        f"{array.dtype}")
    return np.ascontiguousarray(array, dtype="<f8")


def check_decision(owner: str, decision_id: Any, timestamp: Any, contexts: Any,
                    probabilities: Any, action: Any, propensity: Any, model_version: Any,
                    policy_action: Any = None) -> tuple[Any, ...]:
    """The checked row values of a decision. A live decision has ``propensity`` =
    ``probabilities[action]``; a shadow decision has ``policy_action`` (a row with
    positive probability) and ``propensity`` None."""
    decision_id = check_decision_id(decision_id, owner)
    timestamp = check_timestamp(timestamp, owner)
    X = float_array(contexts, owner, "contexts")
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"{owner}: contexts must be a 2-d array of shape (K, d) with K, d >= 1, "
                         f"got shape {X.shape}")
    # the readers' rule (finite, |x| <= MAX_MAGNITUDE), so that no accepted decision makes
    # the log unreadable for LoggedBanditData or a policy rebuilt from it
    check_finite(X, owner, "contexts")
    K = X.shape[0]
    p = float_array(probabilities, owner, "probabilities")
    if p.shape != (K,):
        raise ValueError(f"{owner}: probabilities must have shape ({K},) (one per row of "
                         f"contexts), got {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0.0) or np.any(p > 1.0):
        raise ValueError(f"{owner}: probabilities must be finite and lie in [0, 1], got "
                         f"{p.tolist() if K <= 8 else 'a value outside'}")
    total = float(p.sum())
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"{owner}: probabilities must sum to 1, got a sum of {total!r}")
    action = check_count(action, owner, "action")
    if not 0 <= action < K:
        raise ValueError(f"{owner}: action must lie in [0, {K - 1}], got {action}")
    if policy_action is not None:
        policy_action = check_count(policy_action, owner, "policy_action")
        if not 0 <= policy_action < K or not p[policy_action] > 0.0:
            raise ValueError(f"{owner}: policy_action must be a row in [0, {K - 1}] with "
                             f"positive probability, got {policy_action}")
        if propensity is not None:
            raise ValueError(f"{owner}: a shadow decision (policy_action given) has "
                             f"propensity None (the caller chose action), got "
                             f"{format_value(propensity)}")
    elif propensity is None:
        raise ValueError(f"{owner}: propensity must be a number (probabilities[action]); "
                         "it is None only for a shadow decision, which gives policy_action")
    else:
        propensity = check_real(propensity, owner, "propensity")
        if not 0.0 < propensity <= 1.0 or abs(propensity - float(p[action])) > 1e-9:
            raise ValueError(f"{owner}: propensity must equal probabilities[action] = "
                             f"{format_value(float(p[action]))} and lie in (0, 1], got "
                             f"{format_value(propensity)}")
    model_version = check_count(model_version, owner, "model_version")
    if model_version < 0:
        raise ValueError(f"{owner}: model_version must be >= 0, got {model_version}")
    return ("decision", decision_id, timestamp, K, X.shape[1], X.tobytes(), p.tobytes(),
            action, propensity, model_version, None, None, policy_action)


def decode(row: tuple[Any, ...]) -> Event:
    (sequence, kind, decision_id, timestamp, K, d, contexts, probabilities, action,
     propensity, model_version, reward, status, policy_action) = row
    if kind == "decision":
        X = np.frombuffer(contexts, dtype="<f8").reshape(K, d).astype(np.float64)
        p = np.frombuffer(probabilities, dtype="<f8").astype(np.float64)
        return DecisionEvent(sequence, decision_id, timestamp, X, p, action, propensity,
                             model_version, policy_action)
    if kind == "reward":
        return RewardEvent(sequence, decision_id, timestamp, reward, status)
    return ExpiryEvent(sequence, decision_id, timestamp, status, reward)


def check_reward(owner: str, decision_id: Any, timestamp: Any, reward: Any,
                 status: Any) -> tuple[Any, ...]:
    """The checked row values of a reward event (status one of :data:`REWARD_STATUSES`)."""
    decision_id = check_decision_id(decision_id, owner)
    timestamp = check_timestamp(timestamp, owner)
    reward = check_real(reward, owner, "reward")
    if status not in REWARD_STATUSES:
        raise ValueError(f"{owner}: status must be one of {list(REWARD_STATUSES)}, "
                         f"got {status!r}")
    return ("reward", decision_id, timestamp, None, None, None, None, None, None, None,
            reward, status, None)


def check_expiry(owner: str, decision_id: Any, timestamp: Any, outcome: Any,
                 reward: Any) -> tuple[Any, ...]:
    """The checked row values of an expiry event (outcome one of :data:`EXPIRY_OUTCOMES`;
    ``reward`` None exactly when the outcome is ``"dropped"``)."""
    decision_id = check_decision_id(decision_id, owner)
    timestamp = check_timestamp(timestamp, owner)
    if outcome not in EXPIRY_OUTCOMES:
        raise ValueError(f"{owner}: outcome must be one of {list(EXPIRY_OUTCOMES)}, "
                         f"got {outcome!r}")
    if outcome == "dropped":
        if reward is not None:
            raise ValueError(f"{owner}: reward must be None when outcome is 'dropped', "
                             f"got {format_value(reward)}")
    else:
        reward = check_real(reward, owner, "reward")
    return ("expiry", decision_id, timestamp, None, None, None, None, None, None, None,
            reward, outcome, None)
