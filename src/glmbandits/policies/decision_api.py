"""``decide``/``reward``: decisions with ids and rewards that arrive later, for every policy.

:class:`DecisionAPI` is mixed into :class:`glmbandits.Policy`; it is written once
here and uses only the policy's shared hooks (the checked ``select``, the
transactional learning step, the algorithm's per-decision tag), so every
algorithm gets it without code of its own. The store and its options are in
:mod:`glmbandits.policies.decisions`.

``policy.decide(contexts)`` is ``policy.select(contexts)`` plus an id, the full
distribution and a pending record; ``policy.reward(decision_id, r)`` is
``policy.update(x, r)`` with ``x`` (and, e.g., SupCB-GLM's stage) taken from the
record instead of from the last ``select``. With rewards that arrive in the
order of the decisions and at once, ``decide``/``reward`` and ``select``/
``update`` give the same actions bit for bit.

References
----------
Agarwal et al. (2016), "Making Contextual Decisions with Low Technical Debt"
(the Multiworld Testing Decision Service: explore, log by event id, join
rewards, learn); Azure Personalizer's rank/reward API (reward wait time,
default reward, reward aggregation).

Why this module is long: ``decide``, ``register_decision``, ``reward`` and
``expire`` are one protocol over one store of pending decisions (each keeps the
invariants the others rely on), and their docstrings are the public reference.
"""

from __future__ import annotations

import time
import uuid
from functools import partial
from typing import (TYPE_CHECKING, Any, Callable, Protocol, Sequence, TypeVar,
                    runtime_checkable)

import numpy as np

from .._validation import check_contexts, check_real, format_value
from ..estimation.checkpoint import checkpoint
from ..data.event_records import check_decision_id
from .decisions import (DEFAULTED, DROPPED, HELD, LATE, LEARNED, REWARDED, Decision,
                        EventSink, PendingDecision, PendingDecisions, UnknownDecisionError,
                        _read_only, check_default_action, check_excluded, check_timestamp,
                        field_error, request_digest)
from .explain import ExplainedDecision, check_explainable
from .explain import explain as explain_round
from .scores import ActionScores

__all__ = ["DecisionAPI", "DecisionHost", "REWARDED"]

_T = TypeVar("_T")


@runtime_checkable
class DecisionHost(Protocol):
    """What :class:`DecisionAPI` needs from the class it is mixed into
    (:class:`glmbandits.Policy` provides all of it)."""

    decisions_: PendingDecisions
    event_log: EventSink | None
    n_features: int
    n_updates_: int
    rng_: np.random.Generator
    last_probabilities_: np.ndarray
    last_scores_: ActionScores

    def _select_checked(self, contexts: np.ndarray, owner: str) -> int:
        """Choose a row of checked contexts (sets ``last_probabilities_``, ``last_scores_``)."""

    def _decision_tag(self) -> int | None:
        """What the algorithm attaches to the decision just made (SupCB-GLM's stage)."""

    def _check_reward(self, reward: Any, owner: str) -> float:
        """A reward in the family's domain, as a float (else ValueError/TypeError)."""

    def _learn_transaction(self, x: np.ndarray, reward: float, tag: int | None, owner: str,
                           then: Callable[[], None] | None, decision: Any = None) -> None:
        """Learn one sample as a transaction; ``then`` runs before it is kept (``decision``:
        the one the reward joins, for a drift monitor)."""


class DecisionAPI:
    """``decide``, ``reward``, ``reward_batch``, ``expire`` (mixed into :class:`Policy`).

    Attributes
    ----------
    decisions_ : PendingDecisions
        The pending decisions, the options and the counts (saved with the policy).
    event_log : EventSink or None
        Where decisions and rewards are appended (e.g. :class:`glmbandits.EventLog`);
        not part of the saved state. A decision is written before ``decide``
        returns it, a reward before ``reward`` returns; if writing fails the call
        raises and the policy is as it was before the call.

    The host class must satisfy :class:`DecisionHost`. Refusals are typed: a bad
    argument is a :class:`~glmbandits.policies.decisions.FieldError` naming it (a
    ``ValueError`` or ``TypeError``), a reused id a
    :class:`~glmbandits.policies.decisions.DecisionConflict`, an unknown one an
    :class:`UnknownDecisionError`.

    Every call is a transaction: ``decide`` (with the expiries of a full store),
    ``reward`` (a late one closes its decision first), ``reward_batch`` (checked as
    a whole first) and ``expire`` either complete or, if anything fails part-way
    (an event-log write, a numerical refusal), leave the policy exactly as it was,
    its generator included. Events written to the log before the failure stay
    there (each records a step that was made, then undone with the call).
    """

    # provided by :class:`glmbandits.policies.base.Policy`
    decisions_: PendingDecisions
    event_log: EventSink | None
    n_features: int
    n_updates_: int
    rng_: np.random.Generator
    last_scores_: ActionScores | None
    last_probabilities_: np.ndarray | None

    if TYPE_CHECKING:  # Policy's hooks, for the type checker (DecisionHost states them)
        def _select_checked(self, X: np.ndarray, owner: str) -> int: ...

        def _decision_tag(self) -> int | None: ...

        def _check_reward(self, reward: Any, owner: str) -> float: ...

        def _learn_transaction(self, x: np.ndarray, reward: float, tag: Any, owner: str,
                               then: Callable[[], None] | None = None,
                               decision: Any = None) -> None: ...

    # -- options and statistics ------------------------------------------------
    def configure_decisions(self, **options: Any) -> Any:
        """Set how pending decisions and their rewards are handled.

        Options (see :mod:`glmbandits.policies.decisions`): ``max_pending``,
        ``duplicate_rewards`` ("ignore" or "sum"), ``default_reward`` (None:
        drop), ``reward_wait`` (seconds or None), ``max_resolved``. All are
        checked before any is set. Returns the policy.

        Examples
        --------
        >>> from glmbandits import UCBGLM
        >>> policy = UCBGLM(n_features=2, seed=0).configure_decisions(default_reward=0.0)
        >>> policy.decisions_.options()["default_reward"]
        0.0
        """
        owner = f"{type(self).__name__}.configure_decisions"
        self.decisions_.configure(owner, self._check_reward, **options)
        return self

    @property
    def decision_statistics(self) -> dict[str, int]:
        """Counts: decided, retried, learned, held, duplicate, late, expired_*, pending."""
        return self.decisions_.statistics()

    @property
    def model_version(self) -> int:
        """The number of rewards absorbed so far (what a :class:`Decision` records)."""
        return self.n_updates_

    def pending_decision(self, decision_id: str) -> Decision:
        """The pending :class:`Decision` with this id (:class:`UnknownDecisionError` if none)."""
        owner = f"{type(self).__name__}.pending_decision"
        try:
            decision_id = check_decision_id(decision_id, owner)
        except (TypeError, ValueError) as error:
            raise field_error(error, "decision_id") from None
        entry = self.decisions_.lookup(decision_id)
        if entry is None:
            raise UnknownDecisionError(f"{owner}: no pending decision has decision_id "
                                       f"{decision_id!r}", decision_id)
        return entry.decision

    # -- decide -----------------------------------------------------------------
    def decide(self, contexts: Any, decision_id: str | None = None,
               excluded: Sequence[int] | None = None, *, default_action: int | None = None,
               now: float | None = None, keep_pending: bool = True,
               explain: bool = False) -> Decision:
        """Choose an action and keep the decision until its reward arrives.

        With ``default_action`` (shadow mode, Azure Personalizer's apprentice mode)
        the caller has already chosen: the policy still chooses (its generator
        advances exactly as in live mode), but the returned decision shows the
        default (``action = default_action``, ``propensity = None``,
        ``policy_action`` the policy's choice, ``probabilities`` the policy's own
        distribution), and the reward that arrives later is learned for the
        default action's row.

        Parameters
        ----------
        contexts : array-like of shape (K, d)
            One feature vector per action.
        decision_id : str, optional
            The id rewards will name (1–256 characters, no control characters or
            surrogates: :func:`glmbandits.data.event_records.check_decision_id`); a new
            UUID4 when omitted.
            Deciding again with an id that is still pending and the same request
            returns the same :class:`Decision` and draws no randomness (a safe
            client retry); with other contexts or exclusions it is refused.
        excluded : sequence of int, optional
            Rows that must not be chosen (probability 0); at least one must remain.
        default_action : int, optional
            Shadow mode: the row the caller shows (an int in [0, K), not excluded).
            It is part of the request a retry must repeat.
        now : float, optional
            The decision's time in seconds (default ``time.time()``); ``expire``
            and ``reward_wait`` compare these times.
        keep_pending : bool, default True
            False: choose and log (``event_log``, with the tag) only. No pending
            entry is kept, nothing is counted and the id is not looked up (the
            caller answers retries, e.g. from the log): a policy copy that only
            decides, while another process learns the logged decisions with
            :meth:`register_decision`. Its pending decisions do not grow.
        explain : bool, default False
            True: return an :class:`~glmbandits.policies.explain.ExplainedDecision`
            whose ``explanation`` explains the policy's choice and the runner-up
            (:mod:`glmbandits.policies.explain`); the same action, random stream and
            state as without it. Refused (``TypeError``) before deciding for a policy
            whose decisions cannot be explained. A retry returns the decision as
            first made.

        Returns
        -------
        Decision

        Examples
        --------
        >>> import numpy as np
        >>> from glmbandits import UCBGLM
        >>> policy = UCBGLM(n_features=2, seed=0)
        >>> decision = policy.decide(np.eye(2), decision_id="req-1", now=0.0)
        >>> decision.action, decision.probabilities.tolist(), decision.model_version
        (1, [0.5, 0.5], 0)
        >>> policy.decide(np.eye(2), decision_id="req-1") is decision  # a retry
        True
        >>> policy.reward("req-1", 1.0)
        'learned'
        >>> policy.model_version
        1
        """
        owner = f"{type(self).__name__}.decide"
        field = "contexts"  # the argument being checked: a refusal names it (FieldError)
        try:
            X = check_contexts(contexts, self.n_features, owner)
            field = "decision_id"
            if decision_id is not None:
                decision_id = check_decision_id(decision_id, owner)
            field = "excluded"
            candidates = check_excluded(excluded, X.shape[0], owner)
            field = "default_action"
            default_action = check_default_action(default_action, X.shape[0], candidates,
                                                  owner)
            field = "now"
            now = time.time() if now is None else check_timestamp(now, owner)
            field = "explain"
            if not isinstance(explain, (bool, np.bool_)):
                raise TypeError(f"{owner}: explain must be a bool, got "
                                f"{type(explain).__name__}")
            if explain:
                check_explainable(self, owner)
        except (TypeError, ValueError) as error:
            raise field_error(error, field) from None
        store = self.decisions_
        digest = request_digest(X, candidates, default_action) if keep_pending else ""
        if decision_id is None:
            decision_id = str(uuid.uuid4())
        elif keep_pending:
            repeated = store.find_retry(decision_id, X, candidates, default_action, digest,
                                        owner)
            if repeated is not None:
                return repeated
        log = self.event_log
        # With an event log, or when the store is full (the oldest decisions expire, and
        # learn their default reward), the decision is a transaction: if writing it or
        # an expiry fails, the policy (what its _choose touched, the generator, last_*,
        # the store) is put back.
        evicts = keep_pending and store.n_pending >= store.max_pending
        record = checkpoint(self) if log is not None or evicts or explain else None
        rng_state = None if record is None else self.rng_.bit_generator.state
        try:
            rows = X if candidates is None else X[candidates]
            chosen = self._select_checked(rows, owner)
            # explained before _decision_tag (RS-GLinCB's tag clears its warm-up flag)
            explanation = None if not explain else explain_round(
                self, rows, chosen, self.last_scores_, candidates=candidates)
            tag = self._decision_tag()
            assert self.last_probabilities_ is not None and self.last_scores_ is not None
            probabilities = self.last_probabilities_
            if candidates is None:
                action = chosen
                candidate_rows = np.arange(X.shape[0])
            else:
                action = int(candidates[chosen])
                probabilities = np.zeros(X.shape[0])
                probabilities[candidates] = self.last_probabilities_
                candidate_rows = candidates
                self.last_probabilities_ = probabilities
            policy_action = None
            if default_action is not None:  # shadow mode: show (and learn) the default
                policy_action, action = action, default_action
            made = Decision if explanation is None else partial(ExplainedDecision,
                                                                explanation=explanation)
            decision = made(
                decision_id=decision_id, action=action,
                probabilities=_read_only(probabilities.copy()),
                propensity=None if policy_action is not None else float(probabilities[action]),
                scores=self.last_scores_, candidates=_read_only(candidate_rows),
                model_version=self.n_updates_, timestamp=now, policy_action=policy_action)
            if log is not None:
                log.record_decision(decision_id, now, X, decision.probabilities,
                                    action, decision.propensity, self.n_updates_, tag=tag,
                                    policy_action=policy_action)
            if keep_pending:
                self._keep_pending(PendingDecision(decision, X[action].copy(), tag, digest),
                                   now)
        except BaseException:
            if record is not None and rng_state is not None:  # (taken together)
                record.restore()
                self.rng_.bit_generator.state = rng_state
            raise
        if record is not None:
            record.release()
        return decision

    def _keep_pending(self, entry: PendingDecision, now: float) -> None:
        """Add a made (and logged) decision to the pending ones, and count it."""
        store = self.decisions_
        # Only a decision that was made (and logged) makes room: the oldest pending
        # ones expire (as expire() would), so a refused decide evicts nothing.
        for decision_id in store.overflow():
            self._close_decision(decision_id, now)
        store.open(entry)

    def _atomically(self, run: Callable[[], _T]) -> _T:
        """``run()`` as one transaction: if it raises, the policy (its learned state, the
        store of decisions, the generator) is put back exactly as it was."""
        record = checkpoint(self)
        rng_state = self.rng_.bit_generator.state
        try:
            result = run()
        except BaseException:
            record.restore()
            self.rng_.bit_generator.state = rng_state
            raise
        record.release()
        return result

    def register_decision(self, decision_id: str, contexts: Any, action: int,
                          probabilities: Any, *, model_version: int, timestamp: float,
                          propensity: float | None = None, tag: int | None = None,
                          excluded: Sequence[int] | None = None,
                          policy_action: int | None = None) -> Decision:
        """Keep a decision made elsewhere (a logged one) as pending, without deciding.

        The learner of a scale-out service reads the decisions that API processes
        logged (with ``decide(..., keep_pending=False)`` on a copy of this policy)
        and registers each here, in log order; a later :meth:`reward` then learns
        from it exactly as if this policy had made it: ``x = contexts[action]`` and
        ``tag`` (SupCB-GLM's stage) come from the record. ``max_pending`` is obeyed
        as in :meth:`decide` (the oldest pending decisions close first). No
        randomness is drawn and ``event_log`` is not written (the decision is in
        the log already); the decision's ``scores`` are unknown here and NaN.

        Parameters
        ----------
        decision_id : str
            The logged id; it must not be pending or closed in this policy.
        contexts : array-like of shape (K, d)
            The logged contexts.
        action : int
            The row that was played (the client's own, in shadow mode).
        probabilities : array-like of shape (K,)
            The logged distribution.
        model_version : int
            The model version the decision was made with.
        timestamp : float
            When it was decided (``reward_wait`` and ``expire`` compare it).
        propensity : float or None
            The logged propensity; None (shadow mode) is kept as NaN.
        tag : int or None
            The algorithm's tag for the decision, as logged.
        excluded : sequence of int, optional
            The rows the request excluded.
        policy_action : int, optional
            A shadow decision (``decide(..., default_action=...)``): what the policy
            would have chosen; ``action`` is then the client's default, and the
            propensity must be None.

        Returns
        -------
        Decision

        Examples
        --------
        >>> import numpy as np
        >>> from glmbandits import UCBGLM
        >>> deciding, learning = UCBGLM(n_features=2, seed=0), UCBGLM(n_features=2, seed=0)
        >>> made = deciding.decide(np.eye(2), "d1", now=0.0, keep_pending=False)
        >>> deciding.decision_statistics["pending"]
        0
        >>> _ = learning.register_decision("d1", np.eye(2), made.action, made.probabilities,
        ...                                model_version=0, timestamp=0.0)
        >>> learning.reward("d1", 1.0, now=1.0), learning.model_version
        ('learned', 1)
        """
        owner = f"{type(self).__name__}.register_decision"
        field = "decision_id"
        try:
            decision_id = check_decision_id(decision_id, owner)
            field = "contexts"
            X = check_contexts(contexts, self.n_features, owner)
            field = "excluded"
            candidates = check_excluded(excluded, X.shape[0], owner)
            field = "timestamp"
            now = check_timestamp(timestamp, owner)
        except (TypeError, ValueError) as error:
            raise field_error(error, field) from None
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or \
                not 0 <= int(action) < X.shape[0]:
            raise ValueError(f"{owner}: action must be a row index in [0, {X.shape[0] - 1}], "
                             f"got {action!r}")
        action = int(action)
        p = np.array(probabilities, dtype=np.float64)
        if p.shape != (X.shape[0],):
            raise ValueError(f"{owner}: probabilities must have shape ({X.shape[0]},), got "
                             f"{p.shape}")
        if policy_action is not None:
            if isinstance(policy_action, bool) or not isinstance(policy_action, (int, np.integer)) \
                    or not 0 <= int(policy_action) < X.shape[0]:
                raise ValueError(f"{owner}: policy_action must be a row index in "
                                 f"[0, {X.shape[0] - 1}] or None, got {policy_action!r}")
            if propensity is not None:
                raise ValueError(f"{owner}: a shadow decision (policy_action given) has no "
                                 f"propensity (the client chose), got propensity={propensity!r}")
            policy_action = int(policy_action)
        store = self.decisions_
        store.check_new(decision_id, owner)
        rows = np.arange(X.shape[0]) if candidates is None else candidates
        unknown = np.full(rows.shape[0], np.nan)
        scores = ActionScores(ucb=unknown, mean=unknown.copy(), width=unknown.copy(),
                              family=getattr(self, "family", None))
        decision = Decision(
            decision_id=decision_id, action=action, probabilities=_read_only(p),
            propensity=None if propensity is None else float(propensity),
            scores=scores, candidates=_read_only(rows.copy()),
            model_version=int(model_version), timestamp=now, policy_action=policy_action)
        default_action = None if policy_action is None else action
        entry = PendingDecision(decision, X[action].copy(), None if tag is None else int(tag),
                                request_digest(X, candidates, default_action))
        if store.n_pending >= store.max_pending:  # expiries (logged, learned): atomic
            self._atomically(lambda: self._keep_pending(entry, now))
        else:
            self._keep_pending(entry, now)
        return decision

    def check_reward(self, reward: Any) -> float:
        """``reward`` as a float if the family accepts it, else ValueError/TypeError (what
        :meth:`reward` would refuse; a process that only logs rewards checks them first)."""
        return self._check_reward(reward, f"{type(self).__name__}.reward")

    def reseed(self, entropy: Any = None) -> Any:
        """Replace the policy's random generator by ``numpy.random.default_rng(entropy)``.

        ``None`` (the default) draws fresh entropy from the OS: copies of one model
        that decide in several processes then draw different samples. Returns the
        policy.
        """
        self.rng_ = np.random.default_rng(entropy)
        return self

    # -- rewards ------------------------------------------------------------------
    def reward(self, decision_id: str, reward: Any, *, now: float | None = None
               ) -> str:
        """Join a reward to its decision and learn from it.

        Parameters
        ----------
        decision_id : str
            The id of a decision made by :meth:`decide`.
        reward : float
            The observed reward, inside the family's reward domain.
        now : float, optional
            When the reward arrived (seconds; default ``time.time()``), compared
            with ``reward_wait``.

        Returns
        -------
        str
            ``"learned"`` (learned now), ``"held"`` (``duplicate_rewards="sum"``:
            added to the decision's sum, learned when it closes), ``"duplicate"``
            (a repeated reward, ignored) or ``"late"`` (the decision had expired;
            ignored). Every outcome is counted in :attr:`decision_statistics`.

        Raises
        ------
        UnknownDecisionError
            (a ``KeyError``) if the id was never decided, or was closed longer ago
            than the last ``max_resolved`` closed decisions.
        """
        owner = f"{type(self).__name__}.reward"
        field = "decision_id"
        try:
            decision_id = check_decision_id(decision_id, owner)
            field = "reward"
            reward = self._check_reward(reward, owner)
            field = "now"
            now = time.time() if now is None else check_timestamp(now, owner)
        except (TypeError, ValueError) as error:
            raise field_error(error, field) from None
        self.decisions_.check_known(decision_id, owner)
        if self.decisions_.duplicate_rewards == "sum":
            self._check_sum(decision_id, reward, now, owner)
        return self._reward_checked(decision_id, reward, now, owner)

    def reward_batch(self, decision_ids: Sequence[str], rewards: Any, *,
                     now: float | None = None) -> list[str]:
        """:meth:`reward` for many decisions, in the given order, as one transaction.

        Every id and reward is checked before the first is applied, so a bad
        entry changes nothing; the ids known when the batch starts stay known until
        it ends (an id repeated in the batch is a duplicate, even under a small
        ``max_resolved``); if applying fails part-way (an event-log write, a
        numerical refusal), the whole batch is undone. Refits are lazy, so an
        exact-refit policy solves its MLE once, at its next decision, whatever the
        batch size.

        Returns
        -------
        list of str
            The status of each reward (see :meth:`reward`).
        """
        owner = f"{type(self).__name__}.reward_batch"
        if isinstance(decision_ids, np.ndarray) and decision_ids.ndim == 1:
            decision_ids = decision_ids.tolist()  # e.g. a column of ids read with numpy/pandas
        field = "decision_ids"
        try:
            if isinstance(decision_ids, str) or not isinstance(decision_ids, Sequence):
                raise TypeError(f"{owner}: decision_ids must be a sequence of str, got "
                                f"{type(decision_ids).__name__}")
            ids = [check_decision_id(value, owner) for value in decision_ids]
            field = "rewards"
            values = self._check_rewards(rewards, len(ids), owner)
            field = "now"
            now = time.time() if now is None else check_timestamp(now, owner)
        except (TypeError, ValueError) as error:
            raise field_error(error, field) from None
        for decision_id in ids:
            self.decisions_.check_known(decision_id, owner)
        if self.decisions_.duplicate_rewards == "sum":
            added: dict[str, float] = {}
            for decision_id, value in zip(ids, values):
                added[decision_id] = added.get(decision_id, 0.0) + value
            for decision_id, value in added.items():
                self._check_sum(decision_id, value, now, owner)
        store = self.decisions_

        def apply() -> list[str]:
            store._keep_resolved = True  # every id of the batch stays known until its end
            try:
                statuses = [self._reward_checked(decision_id, value, now, owner)
                            for decision_id, value in zip(ids, values)]
            finally:
                store._keep_resolved = False
            store.trim()
            return statuses

        return self._atomically(apply)

    def expire(self, older_than: float = 0.0, *, now: float | None = None
               ) -> dict[str, int]:
        """Close every pending decision made at least ``older_than`` seconds before ``now``.

        A closed decision with held rewards (``duplicate_rewards="sum"``) is
        learned with their sum; one without rewards gets ``default_reward`` (if
        configured) or is dropped. Oldest first. A reward that arrives later is
        counted as late. One transaction: if an expiry fails (its event-log write,
        or learning its reward), none of them is applied.

        Returns
        -------
        dict
            How many were closed with each outcome: ``dropped``, ``default``, ``learned``.
        """
        owner = f"{type(self).__name__}.expire"
        field = "older_than"
        try:
            older_than = check_real(older_than, owner, "older_than")
            if not older_than >= 0.0:
                raise ValueError(f"{owner}: older_than must be >= 0 seconds, got "
                                 f"{format_value(older_than)}")
            field = "now"
            now = time.time() if now is None else check_timestamp(now, owner)
        except (TypeError, ValueError) as error:
            raise field_error(error, field) from None
        outcomes = {DROPPED: 0, DEFAULTED: 0, LEARNED: 0}
        expired = list(self.decisions_.expired_before(now - older_than))
        if expired:
            def close_all() -> None:
                for decision_id in expired:
                    outcomes[self._close_decision(decision_id, now)] += 1
            self._atomically(close_all)
        return outcomes

    # -- internals ------------------------------------------------------------------
    def _check_sum(self, decision_id: str, added: float, now: float, owner: str) -> None:
        total = self.decisions_.held_sum(decision_id, added, now)
        if total is None:
            return  # a duplicate, or late: it will not be added to the sum
        try:
            self._check_reward(total, owner)
        except ValueError:
            raise field_error(ValueError(
                f"{owner}: the rewards of decision {decision_id!r} would sum to "
                f"{format_value(total)}, outside the family's reward domain "
                "(duplicate_rewards='sum'); nothing was changed"), "reward") from None

    def _check_rewards(self, rewards: Any, n: int, owner: str) -> list[float]:
        array = np.asarray(rewards)
        if array.ndim != 1 or array.shape[0] != n:
            raise ValueError(f"{owner}: rewards must have shape ({n},), got {array.shape}")
        return [self._check_reward(value, owner) for value in array.tolist()]

    def _reward_checked(self, decision_id: str, reward: float, now: float,
                        owner: str) -> str:
        """Apply a checked reward for a known id (see :meth:`reward`)."""
        store = self.decisions_
        entry = store.lookup(decision_id)
        if entry is None:
            return self._count_closed(decision_id, reward, now)
        if store.status_of_reward(decision_id, now) == LATE:
            # late: the reward first closes its decision (as expire would), then is
            # counted as late; both or neither (their log writes can fail)
            def close_then_count() -> str:
                self._close_decision(decision_id, now)
                return self._count_closed(decision_id, reward, now)
            return self._atomically(close_then_count)
        log = self.event_log
        if store.duplicate_rewards == "sum":
            if log is not None:
                log.record_reward(decision_id, now, reward, HELD)
            store.hold(entry, reward)
            return HELD
        then = None if log is None else (
            lambda: log.record_reward(decision_id, now, reward, LEARNED))
        self._learn_transaction(entry.x, reward, entry.tag, owner, then, entry.decision)
        store.close_rewarded(decision_id)
        return LEARNED

    def _count_closed(self, decision_id: str, reward: float, now: float) -> str:
        """A reward for a closed decision: logged and counted as a duplicate or late."""
        store = self.decisions_
        status = store.status_of_reward(decision_id, now)
        assert status is not None  # a closed decision's reward is a duplicate or late
        log = self.event_log
        if log is not None:
            log.record_reward(decision_id, now, reward, status)
        store.count(status)
        return status

    def _close_decision(self, decision_id: str, now: float) -> str:
        """Close a pending decision by expiry; returns its outcome."""
        store = self.decisions_
        entry, outcome, value = store.expiry_of(decision_id)
        log = self.event_log
        write = None if log is None else (
            lambda: log.record_expiry(decision_id, now, outcome, value))
        if value is not None:
            self._learn_transaction(entry.x, value, entry.tag,
                                    f"{type(self).__name__}.expire", write, entry.decision)
        elif write is not None:
            write()
        store.close_expired(decision_id, outcome)
        return outcome
