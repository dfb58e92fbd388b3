"""Decisions with ids, and rewards that arrive later: the pending-decision store.

``Policy.decide`` returns a frozen :class:`Decision` and keeps what learning
will need (the chosen row, and whatever the algorithm attached to the decision,
e.g. SupCB-GLM's stage) in the policy's :class:`PendingDecisions`, keyed by the
decision id. ``Policy.reward(decision_id, r)`` joins a reward to it later, in
any order; ``Policy.expire`` closes decisions whose reward never came.

This is the rank/reward-by-event-id model of Azure Personalizer and of the
Multiworld Testing Decision Service (Agarwal et al. 2016, "Making Contextual
Decisions with Low Technical Debt", arXiv:1606.03966): every decision has an
event id, rewards join to it within a wait window, a decision whose window
closes without a reward gets a configured default reward or is dropped.

The options (:meth:`PendingDecisions.configure`, through
``Policy.configure_decisions``):

``max_pending`` (default 100,000)
    At most this many decisions wait for a reward; a decision beyond it, once
    made, expires the oldest (as :meth:`Policy.expire` would: default reward or
    drop), so a refused ``decide`` evicts nothing.
``duplicate_rewards`` ("ignore", the default, or "sum")
    "ignore": the first reward of a decision is learned at once; any later one
    is acknowledged, counted as a duplicate and not learned. "sum": rewards of a
    decision are added up while it is pending (Personalizer's "sum" reward
    aggregation) and the sum is learned when the decision is closed by
    :meth:`Policy.expire` (or when the wait window has passed); the running sum
    must stay in the family's reward domain.
``default_reward`` (default None)
    What a decision closed without any reward teaches: ``None`` drops it (it is
    counted, nothing is learned); a number is learned as its reward, as
    Personalizer's default reward is.
``reward_wait`` (seconds, default None: no window)
    A reward that arrives more than ``reward_wait`` seconds after its decision
    first closes that decision (as an expiry would) and is then counted as late
    and not learned.
``max_resolved`` (default 100,000)
    How many closed decision ids are remembered, so that a repeated or late
    reward is recognised as such; an id older than that is unknown. Within one
    ``reward_batch`` the ids known when it starts stay known until it ends.

This module is the one home of the decision protocol's rules: what a retry is
(:meth:`PendingDecisions.find_retry`, :func:`match_retry`), what a reward is
(:func:`reward_status`), how a decision expires and which are evicted; the policy's
``decide``/``reward``/``expire`` and the service ask it, and its refusals are typed
(:class:`DecisionConflict`, :class:`UnknownDecisionError`, :class:`FieldError`).

Why this module is long: the store's bookkeeping, its rules, its compact saved state and
the journal that lets a policy's transaction undo it are one object's invariants (each
change method journals what the rollback undoes, in the pending and closed order).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol

import numpy as np

from .._validation import check_int, check_real, format_value
from ..data.vocabulary import (DEFAULTED, DROPPED, DUPLICATE, EXPIRY_OUTCOMES, HELD, LATE,
                               LEARNED, MAX_ID_LENGTH, REWARD_STATUSES, check_decision_id)
from .scores import ActionScores

__all__ = ["Decision", "PendingDecision", "PendingDecisions", "EventSink",
           "UnknownDecisionError", "DecisionConflict", "FieldError", "InvalidValue",
           "InvalidType", "field_error", "LEARNED", "HELD", "DUPLICATE", "LATE",
           "DROPPED", "DEFAULTED", "REWARDED", "REWARD_STATUSES", "EXPIRY_OUTCOMES",
           "check_default_action", "match_retry", "retry_default_action", "reward_status",
           "request_digest", "digest_matches"]

# What Policy.reward did with a reward (REWARD_STATUSES) and what closing a decision did
# (EXPIRY_OUTCOMES) are the event vocabulary's (glmbandits.data.vocabulary), passed on here.
#: How a decision closed by its first (learned) reward is remembered among the closed ones.
REWARDED = "rewarded"

_DUPLICATE_MODES = ("ignore", "sum")


class UnknownDecisionError(KeyError):
    """A reward named a decision id that was never decided (or was forgotten).

    A subclass of :class:`KeyError`; its message names the id and why it is unknown.
    ``field`` is ``"decision_id"``, ``decision_id`` the id.
    """

    field = "decision_id"

    def __init__(self, message: str, decision_id: str | None = None) -> None:
        super().__init__(message)
        self.decision_id = decision_id

    def __reduce__(self) -> tuple[Any, ...]:  # pickles with its id
        return type(self), (str(self), self.decision_id)

    def __str__(self) -> str:  # KeyError would print the repr of the message
        return str(self.args[0]) if self.args else ""


class DecisionConflict(ValueError):
    """A decision id that cannot be used for this request (a :class:`ValueError`).

    Either it is pending for another request (``closed_as`` None: a retry must repeat
    its request exactly), or its decision is closed already (``closed_as`` says how:
    ``"rewarded"`` or an expiry outcome). ``field`` is ``"decision_id"``.
    """

    field = "decision_id"

    def __init__(self, message: str, decision_id: str, closed_as: str | None = None) -> None:
        super().__init__(message)
        self.decision_id = decision_id
        self.closed_as = closed_as

    def __reduce__(self) -> tuple[Any, ...]:  # pickles with its attributes
        return type(self), (str(self), self.decision_id, self.closed_as)


class FieldError(Exception):
    """A refused value of one named argument of a request; ``field`` is its name.

    Raised as :class:`InvalidValue` (a :class:`ValueError`) or :class:`InvalidType` (a
    :class:`TypeError`), whose message is the check's own.
    """

    field: str = "body"

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field

    def __reduce__(self) -> tuple[Any, ...]:  # pickles with its field
        return type(self), (str(self), self.field)


class InvalidValue(FieldError, ValueError):
    """A :class:`FieldError` that is a :class:`ValueError` (a wrong value)."""


class InvalidType(FieldError, TypeError):
    """A :class:`FieldError` that is a :class:`TypeError` (a wrong kind)."""


def field_error(error: TypeError | ValueError, field: str) -> Exception:
    """``error`` (a check's refusal) as the :class:`FieldError` of ``field``, same message
    and kind (an error that is typed already, e.g. a :class:`DecisionConflict`, is
    returned as it is)."""
    if isinstance(error, (FieldError, DecisionConflict)):
        return error
    kind = InvalidType if isinstance(error, TypeError) else InvalidValue
    return kind(str(error), field)


@dataclass(frozen=True, eq=False)
class Decision:
    """One decision of :meth:`glmbandits.Policy.decide`.

    Attributes
    ----------
    decision_id : str
        The id rewards refer to (a new UUID4 string when none was given).
    action : int
        The row of ``contexts`` that is shown: the policy's choice, or in shadow
        mode the caller's ``default_action``.
    probabilities : ndarray of shape (K,)
        The policy's full distribution (read-only), 0 on excluded rows; it
        includes the exploration floor. In shadow mode it is still the policy's
        own distribution, not the distribution ``action`` was drawn from.
    propensity : float or None
        ``probabilities[action]``, what off-policy estimators divide by; ``None``
        in shadow mode (the caller chose ``action``, with no known probability).
    scores : ActionScores
        The policy's per-action scores, over the candidate rows only
        (``candidates``; all K rows when nothing was excluded).
    candidates : ndarray of int
        The rows that were not excluded, in order (read-only).
    model_version : int
        The number of rewards the policy had absorbed when it decided.
    timestamp : float
        When it was decided, in seconds (``time.time()`` unless ``now`` was given).
    policy_action : int or None
        Shadow mode (``decide(..., default_action=a)``): the row the policy chose
        (drawn from ``probabilities``) while ``action`` is the default; ``None``
        for a live decision.
    """

    decision_id: str
    action: int
    probabilities: np.ndarray
    propensity: float | None
    scores: ActionScores
    candidates: np.ndarray
    model_version: int
    timestamp: float
    policy_action: int | None = None

    @property
    def shadow(self) -> bool:
        """Whether this is a shadow decision (the caller's default action was shown)."""
        return self.policy_action is not None

    def __repr__(self) -> str:
        if self.policy_action is not None:
            return (f"Decision(decision_id={self.decision_id!r}, action={self.action} "
                    f"(default), policy_action={self.policy_action}, "
                    f"model_version={self.model_version})")
        return (f"Decision(decision_id={self.decision_id!r}, action={self.action}, "
                f"propensity={self.propensity:.6g}, model_version={self.model_version})")


class EventSink(Protocol):
    """What a policy writes its events to (:class:`glmbandits.EventLog` implements it)."""

    def record_decision(self, decision_id: str, timestamp: float, contexts: np.ndarray,
                        probabilities: np.ndarray, action: int, propensity: float | None,
                        model_version: int, *, tag: int | None = None,
                        policy_action: int | None = None) -> None:
        """Append one decision (before ``decide`` returns it); ``tag`` is what the
        algorithm attached to it (SupCB-GLM's stage, else None), which a learner that
        did not make the decision needs to learn from its reward. In shadow mode
        ``action`` is the caller's default action, ``propensity`` is None and
        ``policy_action`` the policy's own choice (None for a live decision)."""

    def record_reward(self, decision_id: str, timestamp: float, reward: float,
                      status: str) -> None:
        """Append one received reward and what was done with it (:data:`REWARD_STATUSES`)."""

    def record_expiry(self, decision_id: str, timestamp: float, outcome: str,
                      reward: float | None) -> None:
        """Append the closing of a decision by expiry (:data:`EXPIRY_OUTCOMES`)."""


@dataclass
class PendingDecision:
    """A decision waiting for its reward, with what learning from it needs."""

    decision: Decision
    x: np.ndarray            # the chosen row (a copy)
    tag: int | None          # what the algorithm attached to the decision (SupCB-GLM's stage)
    digest: str              # fingerprint of (contexts, excluded): a retry must repeat them
    reward_sum: float = 0.0  # duplicate_rewards="sum": rewards held so far
    n_rewards: int = 0
    #: its place in the pending order, set by :meth:`PendingDecisions.open` (not saved: a
    #: loaded store numbers its entries in their saved order); a rollback sorts by it
    order: int = field(default=0, compare=False, repr=False)


# -- the retry rule: fingerprints of decide requests, and the match ----------------------
# A pending decision keeps a digest of the request that made it (contexts, candidate rows,
# shadow mode's default action) instead of the request itself (40 KB at K=100, d=50); a
# ``decide`` with the same decision id is a retry only if its request has the same digest.
_DIGEST_TAG = "s256:"


def request_digest(X: np.ndarray, candidates: np.ndarray | None,
                   default_action: int | None = None) -> str:
    """Fingerprint of a decide request, so that a retry with other contexts is refused.

    SHA-256 (hardware-accelerated on current CPUs: about twice as fast as BLAKE2b
    on a K=100, d=50 request) of the shape, the float64 bytes of the contexts,
    the candidate rows and (shadow mode) the default action, truncated to 128
    bits and tagged ``"s256:"``. A live request (``default_action`` None) hashes
    exactly as before shadow mode existed. Digests saved by earlier versions
    (untagged BLAKE2b, see :func:`digest_matches`) still match their retries.
    """
    digest = hashlib.sha256(np.asarray(X.shape, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(X, dtype=np.float64).data)
    if candidates is not None:
        digest.update(np.ascontiguousarray(candidates, dtype=np.int64).tobytes())
    if default_action is not None:
        digest.update(b"default_action" + np.int64(default_action).tobytes())
    return _DIGEST_TAG + digest.hexdigest()[:32]


def _legacy_digest(X: np.ndarray, candidates: np.ndarray | None) -> str:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.asarray(X.shape, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(X, dtype=np.float64).tobytes())
    if candidates is not None:
        digest.update(np.ascontiguousarray(candidates, dtype=np.int64).tobytes())
    return digest.hexdigest()


def digest_matches(stored: str, X: np.ndarray, candidates: np.ndarray | None,
                   digest: str | None = None, default_action: int | None = None) -> bool:
    """Whether a pending decision's ``stored`` digest is that of the request
    (X, candidates, default_action).

    ``digest`` is the request's :func:`request_digest` when already computed. A
    stored digest without the ``"s256:"`` tag was saved by an earlier version
    (BLAKE2b, before shadow mode: it never matches a request with a default action)
    and is compared with that fingerprint.
    """
    if not stored.startswith(_DIGEST_TAG):
        return default_action is None and stored == _legacy_digest(X, candidates)
    if digest is None:
        digest = request_digest(X, candidates, default_action)
    return stored == digest


def retry_default_action(decided_in_shadow: bool, requested: int | None) -> int | None:
    """The ``default_action`` a retry is judged with: a retry is judged by the mode its
    decision was made in (a restart may switch the mode), so the requested default
    action counts for a shadow decision only."""
    return requested if decided_in_shadow else None


def match_retry(decision_id: str, stored_digest: str, X: np.ndarray,
                candidates: np.ndarray | None, default_action: int | None,
                digest: str | None = None, owner: str = "decide") -> None:
    """Refuse (:class:`DecisionConflict`) a request that reuses ``decision_id`` of a
    decision made for another request (``stored_digest``, see
    :func:`~glmbandits.policies.fingerprints.request_digest`): a retry must repeat
    contexts, exclusions and ``default_action`` exactly."""
    if not digest_matches(stored_digest, X, candidates, digest, default_action):
        raise DecisionConflict(
            f"{owner}: decision_id {decision_id!r} is pending for a request with other "
            "contexts or exclusions (or default_action); a retry must repeat the request "
            "exactly (use a new decision_id for a new request)", decision_id)


def reward_status(closed_as: str | None, decided_at: float, now: float,
                  reward_wait: float | None) -> str | None:
    """What a reward is, by when and to what it arrived: :data:`DUPLICATE` (its decision
    was closed by a reward, ``closed_as`` :data:`REWARDED`), :data:`LATE` (closed by an
    expiry, or ``reward_wait`` seconds have passed since the decision), or None: a new
    reward, to be learned (or held, or accepted for a learner)."""
    if closed_as is not None:
        return DUPLICATE if closed_as == REWARDED else LATE
    if reward_wait is not None and now - decided_at > reward_wait:
        return LATE
    return None


class PendingDecisions:
    """The decisions of one policy that wait for a reward, and the counts of what happened.

    Held by every policy as ``policy.decisions_`` (see the module docstring for
    the options). Its state is plain arrays when saved (:meth:`__getstate__`),
    so a policy saved with pending decisions resumes them exactly.

    It takes part in the policy's transactions (:mod:`glmbandits.estimation.checkpoint`):
    while a checkpoint of the policy is open, every change made through :meth:`open`,
    :meth:`close`, :meth:`remember`, :meth:`hold` and :meth:`count` is journaled (O(1)
    each), and a restored checkpoint undoes them, the order of the pending and of the
    closed ids included. Outside a transaction nothing is journaled.
    """

    def __init__(self) -> None:
        self.max_pending = 100_000
        self.duplicate_rewards = "ignore"
        self.default_reward: float | None = None
        self.reward_wait: float | None = None
        self.max_resolved = 100_000
        self.pending: dict[str, PendingDecision] = {}
        self.resolved: dict[str, str] = {}   # id -> LEARNED (rewarded) or an expiry outcome
        self.counts: dict[str, int] = dict.fromkeys(
            ("decided", "retried", "learned", "held", "duplicate", "late", "expired_dropped",
             "expired_default", "expired_learned"), 0)
        self._start_journal()

    def _start_journal(self) -> None:
        """No transaction open (not saved state: set on creation and on load)."""
        self._undo: list[tuple] | None = None  # the undo journal while a checkpoint is open
        self._open = 0                         # open checkpoints (they nest)
        self._next_order = len(self.pending)
        self._keep_resolved = False            # reward_batch: trim the closed ids at its end

    # -- options ----------------------------------------------------------------
    def configure(self, owner: str, family_check: Any, **options: Any) -> None:
        """Check every given option, then set them all (nothing changes if one is bad)."""
        checked: dict[str, Any] = {}
        for name, value in options.items():
            if name in ("max_pending", "max_resolved"):
                checked[name] = check_int(value, owner, name, minimum=1)
            elif name == "duplicate_rewards":
                if value not in _DUPLICATE_MODES:
                    raise ValueError(f"{owner}: duplicate_rewards must be one of "
                                     f"{list(_DUPLICATE_MODES)}, got {value!r}")
                if value != self.duplicate_rewards and self.pending:
                    raise ValueError(f"{owner}: duplicate_rewards cannot change while "
                                     f"{len(self.pending)} decisions are pending; got {value!r}")
                checked[name] = value
            elif name == "default_reward":
                checked[name] = None if value is None else family_check(value, owner)
            elif name == "reward_wait":
                if value is not None:
                    value = check_real(value, owner, "reward_wait")
                    if not value >= 0.0:
                        raise ValueError(f"{owner}: reward_wait must be >= 0 seconds or None, "
                                         f"got {format_value(value)}")
                checked[name] = value
            else:
                raise TypeError(f"{owner}: unknown option {name!r}; expected one of "
                                "['max_pending', 'duplicate_rewards', 'default_reward', "
                                "'reward_wait', 'max_resolved']")
        self.__dict__.update(checked)

    def options(self) -> dict[str, Any]:
        """The current options, by name."""
        return {name: getattr(self, name) for name in (
            "max_pending", "duplicate_rewards", "default_reward", "reward_wait", "max_resolved")}

    # -- the protocol's questions (the policy's decide/reward/expire and the service ask) --
    @property
    def n_pending(self) -> int:
        """How many decisions wait for a reward."""
        return len(self.pending)

    def lookup(self, decision_id: str) -> PendingDecision | None:
        """The pending entry of ``decision_id`` (None if it is closed or was never decided)."""
        return self.pending.get(decision_id)

    def closed_as(self, decision_id: str) -> str | None:
        """How a remembered closed decision closed (:data:`REWARDED` or an expiry outcome);
        None if it is pending, forgotten or was never decided."""
        return self.resolved.get(decision_id)

    def find_retry(self, decision_id: str, X: np.ndarray, candidates: np.ndarray | None,
                   default_action: int | None, digest: str | None = None,
                   owner: str = "decide") -> Decision | None:
        """The decision a ``decide`` with this id repeats (a retry: counted, nothing else
        changes), or None for a new id.

        Raises :class:`DecisionConflict` if the id is pending for another request
        (:func:`match_retry`) or its decision is closed already.
        """
        entry = self.pending.get(decision_id)
        if entry is not None:
            match_retry(decision_id, entry.digest, X, candidates, default_action, digest, owner)
            self.count("retried")
            return entry.decision
        closed = self.resolved.get(decision_id)
        if closed is not None:
            raise DecisionConflict(f"{owner}: decision_id {decision_id!r} was already closed "
                                   f"({closed}); use a new decision_id", decision_id, closed)
        return None

    def check_new(self, decision_id: str, owner: str) -> None:
        """Refuse (:class:`DecisionConflict`) to register an id that is pending or closed."""
        closed = self.resolved.get(decision_id)
        if decision_id in self.pending or closed is not None:
            raise DecisionConflict(
                f"{owner}: decision_id {decision_id!r} is already "
                f"{'pending' if closed is None else 'closed'} in this policy; a log holds "
                "each decision once", decision_id, closed)

    def check_known(self, decision_id: str, owner: str) -> None:
        """Refuse (:class:`UnknownDecisionError`) an id that is neither pending nor a
        remembered closed one."""
        if decision_id not in self.pending and decision_id not in self.resolved:
            raise UnknownDecisionError(
                f"{owner}: decision_id {decision_id!r} is unknown: it was never decided by "
                f"this policy, or was closed before the last {self.max_resolved} closed "
                "decisions (max_resolved)", decision_id)

    def status_of_reward(self, decision_id: str, now: float) -> str | None:
        """What a reward for a known id arriving at ``now`` is (:func:`reward_status`):
        :data:`DUPLICATE`, :data:`LATE` (a pending decision whose window has passed is
        closed first, as an expiry), or None: learned (or, "sum", held)."""
        entry = self.pending.get(decision_id)
        if entry is None:
            return reward_status(self.resolved[decision_id], 0.0, now, None)
        return reward_status(None, entry.decision.timestamp, now, self.reward_wait)

    def held_sum(self, decision_id: str, added: float, now: float) -> float | None:
        """``duplicate_rewards="sum"``: the decision's held sum once ``added`` is held; None
        when the reward would not be held (a duplicate, or late)."""
        if self.status_of_reward(decision_id, now) is not None:
            return None
        return self.pending[decision_id].reward_sum + added

    def overflow(self) -> list[str]:
        """The oldest pending ids that must close (expire) before one more decision is
        kept under ``max_pending`` (eviction), oldest first; usually none."""
        n = len(self.pending) - self.max_pending + 1
        if n <= 0:
            return []
        ids = iter(self.pending)
        return [next(ids) for _ in range(n)]

    def expiry_of(self, decision_id: str) -> tuple[PendingDecision, str, float | None]:
        """How closing a pending decision without a (learned) reward goes: its entry, the
        outcome (:data:`LEARNED` its held sum, :data:`DEFAULTED` the default reward, or
        :data:`DROPPED`) and the reward that is learned (None: nothing)."""
        entry = self.pending[decision_id]
        if entry.n_rewards > 0:
            return entry, LEARNED, entry.reward_sum
        if self.default_reward is not None:
            return entry, DEFAULTED, self.default_reward
        return entry, DROPPED, None

    def expired_before(self, cutoff: float) -> Iterator[str]:
        """Ids of pending decisions made at or before ``cutoff``, oldest first."""
        for decision_id, entry in list(self.pending.items()):
            if entry.decision.timestamp <= cutoff:
                yield decision_id

    def has_expired(self, cutoff: float) -> bool:
        """Whether a pending decision was made at or before ``cutoff`` (a sweep is due)."""
        return any(entry.decision.timestamp <= cutoff for entry in self.pending.values())

    # -- bookkeeping (every change goes through these, journaled in a transaction) -----
    def open(self, entry: PendingDecision) -> None:
        """Keep a new pending decision (last in the pending order) and count it as decided."""
        decision_id = entry.decision.decision_id
        entry.order = self._next_order
        self._next_order += 1
        self.pending[decision_id] = entry
        if self._undo is not None:
            self._undo.append((_ADDED, decision_id))
        self.count("decided")

    def close(self, decision_id: str, outcome: str) -> None:
        """Remove a pending decision and remember it as closed with ``outcome``."""
        entry = self.pending.pop(decision_id)
        if self._undo is not None:
            self._undo.append((_POPPED, decision_id, entry))
        self.remember(decision_id, outcome)

    def close_rewarded(self, decision_id: str) -> None:
        """Close a pending decision whose reward was learned, and count it as learned."""
        self.close(decision_id, REWARDED)
        self.count(LEARNED)

    def close_expired(self, decision_id: str, outcome: str) -> None:
        """Close a pending decision by expiry (:meth:`expiry_of`'s outcome), and count it."""
        self.close(decision_id, outcome)
        self.count(f"expired_{outcome}")

    def hold(self, entry: PendingDecision, reward: float) -> None:
        """``duplicate_rewards="sum"``: add a reward to a pending decision's held sum (and
        count it as held)."""
        if self._undo is not None:
            self._undo.append((_HELD, entry, entry.reward_sum, entry.n_rewards))
        entry.reward_sum += reward
        entry.n_rewards += 1
        self.count(HELD)

    def count(self, name: str) -> None:
        """Add one to ``counts[name]`` (e.g. a reward counted as a duplicate or late)."""
        self.counts[name] += 1
        if self._undo is not None:
            self._undo.append((_COUNTED, name))

    def remember(self, decision_id: str, outcome: str) -> None:
        """Record a closed decision (bounded: the oldest closed ids are forgotten first)."""
        resolved = self.resolved
        if self._undo is not None:
            self._undo.append((_REMEMBERED, decision_id, resolved.get(decision_id, _MISSING)))
        resolved[decision_id] = outcome
        if not self._keep_resolved:
            self.trim()

    def trim(self) -> None:
        """Forget the oldest closed ids beyond ``max_resolved``."""
        resolved = self.resolved
        while len(resolved) > self.max_resolved:
            oldest = next(iter(resolved))
            if self._undo is not None:
                self._undo.append((_FORGOTTEN, oldest, resolved[oldest]))
            del resolved[oldest]

    # -- transactions (:mod:`glmbandits.estimation.checkpoint`) ---------------------
    def _checkpoint(self) -> "_Savepoint":
        """Open a savepoint: the changes from now on can be undone (see the class docstring)."""
        if self._undo is None:
            self._undo = []
        self._open += 1
        return _Savepoint(self, len(self._undo))

    def _end_savepoint(self) -> None:
        self._open -= 1
        if self._open == 0:  # the outermost transaction ended: nothing more to undo
            self._undo = None

    def _rollback(self, mark: int) -> None:
        """Undo the journaled changes after ``mark``, newest first."""
        assert self._undo is not None
        changes = self._undo[mark:]
        del self._undo[mark:]
        pending, resolved, counts = self.pending, self.resolved, self.counts
        reorder = False
        front: dict[str, str] = {}  # forgotten ids to put back before the others, newest first
        for change in reversed(changes):
            kind = change[0]
            if kind == _COUNTED:
                counts[change[1]] -= 1
            elif kind == _HELD:
                _, entry, entry.reward_sum, entry.n_rewards = change
            elif kind == _ADDED:
                del pending[change[1]]
            elif kind == _POPPED:
                pending[change[1]] = change[2]
                reorder = True
            elif kind == _FORGOTTEN:
                front[change[1]] = change[2]
            else:  # _REMEMBERED
                _, decision_id, previous = change
                where = resolved if decision_id in resolved else front
                if previous is _MISSING:
                    del where[decision_id]
                else:
                    where[decision_id] = previous
        if reorder:  # a closed decision goes back to its place in the pending order
            entries = sorted(pending.items(), key=lambda item: item[1].order)
            pending.clear()
            pending.update(entries)
        if front:
            closed = [*reversed(front.items()), *resolved.items()]
            resolved.clear()
            resolved.update(closed)

    def statistics(self) -> dict[str, int]:
        """Counts of what happened to decisions and rewards, plus the number pending."""
        return {**self.counts, "pending": len(self.pending)}

    def copy(self) -> "PendingDecisions":
        clone = PendingDecisions.__new__(PendingDecisions)
        clone.__setstate__(self.__getstate__())
        return clone

    # -- compact state (persistence, pickle) ------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """Plain arrays: one row (or one slice of a concatenation) per pending decision."""
        entries = list(self.pending.values())
        decisions = [entry.decision for entry in entries]
        sizes = np.array([d.probabilities.shape[0] for d in decisions], dtype=np.int64)
        n_candidates = np.array([d.candidates.shape[0] for d in decisions], dtype=np.int64)

        def concatenated(arrays: list[np.ndarray], dtype: Any) -> np.ndarray:
            return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype)

        x_rows = [entry.x for entry in entries]
        family = decisions[0].scores.family if decisions else None
        return {
            "options": self.options(),
            "counts": dict(self.counts),
            "family": family,
            "ids": np.array([d.decision_id for d in decisions], dtype=f"<U{MAX_ID_LENGTH}")
            if decisions else np.zeros(0, dtype="<U1"),
            "actions": np.array([d.action for d in decisions], dtype=np.int64),
            # shadow decisions: propensity None is stored as NaN, policy_action None as -1
            "propensities": np.array([np.nan if d.propensity is None else d.propensity
                                      for d in decisions], dtype=np.float64),
            "policy_actions": np.array([-1 if d.policy_action is None else d.policy_action
                                        for d in decisions], dtype=np.int64),
            "model_versions": np.array([d.model_version for d in decisions], dtype=np.int64),
            "timestamps": np.array([d.timestamp for d in decisions], dtype=np.float64),
            "sizes": sizes,
            "probabilities": concatenated([d.probabilities for d in decisions], np.float64),
            "n_candidates": n_candidates,
            "candidates": concatenated([d.candidates for d in decisions], np.int64),
            "ucb": concatenated([d.scores.ucb for d in decisions], np.float64),
            "mean": concatenated([d.scores.mean for d in decisions], np.float64),
            "width": concatenated([d.scores.width for d in decisions], np.float64),
            "scales": [d.scores.scale for d in decisions],
            "x": np.array(x_rows) if x_rows else np.zeros((0, 0)),
            "has_tag": np.array([entry.tag is not None for entry in entries], dtype=bool),
            "tags": np.array([entry.tag or 0 for entry in entries], dtype=np.int64),
            "digests": [entry.digest for entry in entries],
            "reward_sums": np.array([entry.reward_sum for entry in entries], dtype=np.float64),
            "n_rewards": np.array([entry.n_rewards for entry in entries], dtype=np.int64),
            "resolved_ids": list(self.resolved),
            "resolved_outcomes": list(self.resolved.values()),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state["options"])
        self.pending = {}
        self._start_journal()
        self.counts = dict(state["counts"])
        self.resolved = dict(zip(state["resolved_ids"], state["resolved_outcomes"]))
        ends = np.cumsum(state["sizes"])
        # files saved before shadow mode have no policy_actions: every decision was live
        policy_actions = state.get("policy_actions")
        candidate_ends = np.cumsum(state["n_candidates"])
        for i, decision_id in enumerate(state["ids"].tolist()):
            start = int(ends[i] - state["sizes"][i])
            cstart = int(candidate_ends[i] - state["n_candidates"][i])
            span, cspan = slice(start, int(ends[i])), slice(cstart, int(candidate_ends[i]))
            scores = ActionScores(ucb=state["ucb"][cspan].copy(), mean=state["mean"][cspan].copy(),
                                  width=state["width"][cspan].copy(), scale=state["scales"][i],
                                  family=state["family"])
            decision = Decision(
                decision_id=decision_id, action=int(state["actions"][i]),
                probabilities=_read_only(state["probabilities"][span].copy()),
                propensity=_optional_float(state["propensities"][i]), scores=scores,
                candidates=_read_only(state["candidates"][cspan].copy()),
                model_version=int(state["model_versions"][i]),
                timestamp=float(state["timestamps"][i]),
                policy_action=None if policy_actions is None or policy_actions[i] < 0
                else int(policy_actions[i]))
            self.pending[decision_id] = PendingDecision(
                decision=decision, x=state["x"][i].copy(),
                tag=int(state["tags"][i]) if state["has_tag"][i] else None,
                digest=state["digests"][i], reward_sum=float(state["reward_sums"][i]),
                n_rewards=int(state["n_rewards"][i]), order=i)
        self._next_order = len(self.pending)


class _Savepoint:
    """A :class:`PendingDecisions` checkpoint: :meth:`restore` undoes, :meth:`release` keeps."""

    __slots__ = ("store", "mark")

    def __init__(self, store: PendingDecisions, mark: int) -> None:
        self.store, self.mark = store, mark

    def restore(self) -> None:
        self.store._rollback(self.mark)
        self.store._end_savepoint()

    def release(self) -> None:
        self.store._end_savepoint()


#: The kinds of journaled change, and "no previous value".
_ADDED, _POPPED, _HELD, _COUNTED, _REMEMBERED, _FORGOTTEN = range(6)
_MISSING = object()


def _optional_float(value: Any) -> float | None:
    """A saved propensity: NaN stands for None (a shadow decision)."""
    value = float(value)
    return None if math.isnan(value) else value


def check_default_action(value: Any, n_actions: int, candidates: np.ndarray | None,
                         owner: str) -> int | None:
    """Shadow mode's ``default_action``: None, or an int row index in [0, K) not excluded."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{owner}: default_action must be an int (a row of contexts) or None, "
                        f"got {type(value).__name__} {value!r}")
    value = int(value)
    if not 0 <= value < n_actions:
        raise ValueError(f"{owner}: default_action must lie in [0, {n_actions - 1}] "
                         f"(K = {n_actions}), got {value}")
    if candidates is not None and value not in set(candidates.tolist()):
        raise ValueError(f"{owner}: default_action {value} is excluded; it must be one of the "
                         f"rows left by excluded, {candidates.tolist()}")
    return int(value)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def check_timestamp(value: Any, owner: str) -> float:
    """``now``: seconds as a finite real number."""
    value = check_real(value, owner, "now")
    if not math.isfinite(value):
        raise ValueError(f"{owner}: now must be finite seconds, got {format_value(value)}")
    return float(value)


def check_excluded(value: Any, n_actions: int, owner: str) -> np.ndarray | None:
    """The candidate rows left by ``excluded`` (None when nothing is excluded)."""
    if value is None:
        return None
    array = np.asarray(value)
    if array.size == 0:
        return None
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise TypeError(f"{owner}: excluded must be a 1-d sequence of row indices (ints), "
                        f"got {array.dtype} of shape {array.shape}")
    if array.min() < 0 or array.max() >= n_actions:
        raise ValueError(f"{owner}: excluded indices must lie in [0, {n_actions - 1}] "
                         f"(K = {n_actions}), got {array.tolist()}")
    keep = np.ones(n_actions, dtype=bool)
    keep[array] = False
    if not keep.any():
        raise ValueError(f"{owner}: excluded must leave at least one of the {n_actions} "
                         f"actions, got {sorted(set(array.tolist()))}")
    return np.flatnonzero(keep)
