r"""The event vocabulary: the kinds of logged events, their statuses and the decision-id rule.

The one home of these names. Policies (:mod:`glmbandits.policies.decisions`), the
event logs (:mod:`.event_records`, :class:`~glmbandits.data.EventLog`,
:class:`~glmbandits.data.PostgresEventLog`), the decision-reward join
(:mod:`.event_export`) and the decision service (its events, store totals, metrics
and replay) import them from here; nothing else declares them. The module needs
the standard library only.

Kinds (:data:`EVENT_KINDS`), in the order they happen:

``decision``
    ``Policy.decide`` made a new decision: contexts (K, d), the action, its
    probabilities and propensity, the model version (the service also logs the
    excluded rows and the policy's tag). In shadow mode the action is the
    caller's default action, ``policy_action`` the policy's own choice and the
    propensity is None (the caller chose, with no known probability).
``retry``
    (service) a ``decide`` that repeated a pending decision (same id and
    request): the same answer, logged so that replay restores the retry count.
``reward``
    a reward received and what was done with it (:data:`REWARD_STATUSES`).
``expiry``
    a decision closed without a learned reward (:data:`EXPIRY_OUTCOMES`),
    written by the policy while it closes it: an effect of the call that closed
    it, so replay does not apply it.
``expire``
    (service) a sweep ``Policy.expire(older_than, now=timestamp)`` that closed
    at least one decision; replay calls it again.
``catalogue``
    (service) a change of the action catalogue (``PUT``/``DELETE /v1/actions/{id}``):
    status :data:`CATALOGUE_CHANGES` (``put``: the action's features, new or replaced;
    ``delete``: the action retired, its id never reused), the action's id and
    features in the event's ``request`` (JSON). Recovery and the offline rebuild
    replay them into the catalogue; the policy never sees them.

A policy's own log (:data:`RECORD_KINDS`) holds the three kinds a policy writes;
``retry``, ``expire`` and ``catalogue`` are calls of the service, which logs them too.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["DECISION", "RETRY", "REWARD", "EXPIRY", "EXPIRE", "CATALOGUE", "EVENT_KINDS",
           "RECORD_KINDS", "PUT", "DELETE", "CATALOGUE_CHANGES",
           "LEARNED", "HELD", "DUPLICATE", "LATE", "REWARD_STATUSES",
           "DROPPED", "DEFAULTED", "EXPIRY_OUTCOMES",
           "MAX_ID_LENGTH", "DECISION_ID_RULE", "DECISION_ID_PATTERN", "check_decision_id",
           "total_keys"]

#: The kinds of logged events (see the module docstring).
DECISION, RETRY, REWARD, EXPIRY, EXPIRE = "decision", "retry", "reward", "expiry", "expire"
CATALOGUE = "catalogue"
EVENT_KINDS = (DECISION, RETRY, REWARD, EXPIRY, EXPIRE, CATALOGUE)
#: The kinds a policy writes to its ``event_log`` (the others are the service's calls).
RECORD_KINDS = (DECISION, REWARD, EXPIRY)

#: What :meth:`Policy.reward` did with a reward (the status of a ``reward`` event).
LEARNED, HELD, DUPLICATE, LATE = "learned", "held", "duplicate", "late"
REWARD_STATUSES = (LEARNED, HELD, DUPLICATE, LATE)
#: What closing a decision without (learned) rewards did (the outcome of an ``expiry``
#: event): nothing learned, the default reward learned, or (``duplicate_rewards="sum"``)
#: the held sum learned.
DROPPED, DEFAULTED = "dropped", "default"
EXPIRY_OUTCOMES = (DROPPED, DEFAULTED, LEARNED)
#: What a ``catalogue`` event did (its status): an action's features put (added or
#: replaced), or the action retired (its id is never reused).
PUT, DELETE = "put", "delete"
CATALOGUE_CHANGES = (PUT, DELETE)

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


def check_decision_id(value: Any, owner: str, name: str = "decision_id") -> str:
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
    name : str, default "decision_id"
        What the message calls the value (the service's action ids follow the same rule:
        ``"action_id"``).

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
            raise TypeError(f"{owner}: {name} must be a str, got {type(value).__name__} "
                            f"{_shown(value)}")
        value = str.__str__(value)
    if not 0 < len(value) <= MAX_ID_LENGTH:
        raise ValueError(f"{owner}: {name} must be {DECISION_ID_RULE}; got "
                         f"{len(value)} characters")
    bad = _ID_FORBIDDEN.search(value)
    if bad is not None:
        raise ValueError(f"{owner}: {name} must be {DECISION_ID_RULE}; got "
                         f"{_shown(value)}, which holds U+{ord(bad.group()):04X} at index "
                         f"{bad.start()}")
    checked: str = value
    return checked


def _shown(value: Any) -> str:
    """A short repr for a message (an id may be long)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def total_keys(kind: str, status: str | None) -> tuple[str, ...]:
    """The keys of a log's totals (the service's ``Store.totals``) that one event adds 1 to.

    ``decisions``, ``retries``, ``rewards`` and ``rewards_<status>`` for each of
    :data:`REWARD_STATUSES`, ``expiries_<outcome>`` for each of :data:`EXPIRY_OUTCOMES`;
    ``catalogue_put`` and ``catalogue_delete``; an ``expire`` sweep counts nothing (its
    closings are ``expiry`` events).

    Examples
    --------
    >>> total_keys("reward", "learned")
    ('rewards', 'rewards_learned')
    >>> total_keys("expiry", "default")
    ('expiries_default',)
    """
    if kind == DECISION:
        return ("decisions",)
    if kind == RETRY:
        return ("retries",)
    if kind == REWARD:
        return ("rewards", f"rewards_{status}")
    if kind == EXPIRY:
        return (f"expiries_{status}",)
    if kind == CATALOGUE:
        return (f"catalogue_{status}",)
    return ()
