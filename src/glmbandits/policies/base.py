"""The policy interface and the machinery every policy shares.

A policy is an *estimate* (θ̂ and V⁻¹, refitted or updated online) plus an
*exploration rule* (a small function of the estimate and the contexts). This
module holds the interface (:class:`Policy`); the result of scoring a round
(:class:`ActionScores`), the upper-confidence rule and the tie-breaking argmax
are in :mod:`.scores` (re-exported here).

Interface
---------
``a = policy.select(contexts)``
    ``contexts`` is a (K, d) float array; K may change from round to round.
    Returns the chosen row index as an ``int``. The per-action scores of the
    round are kept in ``policy.last_scores_``, the whole action distribution of
    the round in ``policy.last_probabilities_`` (shape (K,), summing to 1) and
    the probability with which the chosen action was picked in
    ``policy.last_propensity_`` (``last_probabilities_[a]``).
``policy.update(x, reward)``
    ``x`` is the chosen row (shape (d,)), ``reward`` a float in the family's
    reward domain.

Every policy takes ``exploration_floor`` ε in [0, 1] (default 0): with
probability ε the round's action is drawn uniformly from the K actions instead
of by the rule, so the distribution is (1 − ε)·p + ε/K and every propensity is
at least ε/K; a policy's own log is then usable for off-policy evaluation.

Inputs are checked before any state changes: a rejected call raises
``ValueError``/``TypeError`` and leaves the policy exactly as it was. An update
is also a transaction: if learning from an accepted sample raises (a numerical
failure, an interrupt), the policy is restored to its state before the call
(:mod:`glmbandits.estimation.checkpoint`). The checkpoint covers the whole
policy unless the policy says what its ``_learn`` changes
(:meth:`Policy._learn_checkpoint`: UCB-GLM and LinUCB checkpoint only their
estimate), which keeps the transaction of a round cheap.

Why this module is long: the interface, its input checks and the update
transaction that every policy shares are kept together, the one module a
subclass reads.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, Callable

import numpy as np

from .. import persistence
from ..persistence.allowed import allow_library_class, declare_model_root
from .._validation import (MAX_MAGNITUDE, SeedLike, as_generator, check_contexts, check_int,
                           check_real, check_vector, format_value, is_checked_contexts,
                           is_checked_vector)
from ..estimation import check_rewards
from ..estimation.checkpoint import Checkpoint, checkpoint
from ..families import GLMFamily, get_family
from .decision_api import DecisionAPI
from .decisions import PendingDecisions
from .params import GIVEN_PARAMS, PolicyParameters
from .scores import (SCORE_SCALES, ActionScores, argmax_distribution, argmax_random_tie,
                     gram_norms, tied_scores, ucb_scores)

__all__ = ["ActionScores", "Policy", "ucb_scores", "argmax_random_tie", "argmax_distribution",
           "gram_norms", "tied_scores", "SCORE_SCALES", "check_exploration_floor"]


def _norm(x: np.ndarray) -> float:
    """Euclidean norm for messages, without overflow (entries are at most 1e50)."""
    return float(np.linalg.norm(x))


def check_exploration_floor(value: Any, owner: str) -> float:
    """``exploration_floor`` as a float in [0, 1] (``TypeError``/``ValueError`` otherwise)."""
    value = check_real(value, owner, "exploration_floor")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{owner}: exploration_floor must lie in [0, 1], got {value!r}")
    return float(value)


#: ``tag`` of :meth:`Policy._learn_transaction` for the ``update`` path: learn with
#: ``_learn`` (the sample belongs to the last ``select``), not ``_learn_decided``.
_LAST_SELECT = object()


class Policy(PolicyParameters, DecisionAPI, ABC):
    """Base class of every glmbandits policy.

    Subclasses implement :meth:`_choose` (pick an action from checked contexts)
    and :meth:`_learn` (absorb one checked sample). The base class does the input
    checks, so that a rejected call changes nothing, and keeps the bookkeeping
    shared by all policies. ``get_params``/``set_params`` and the ``repr`` of the
    non-default parameters come from :class:`~glmbandits.policies.params.PolicyParameters`
    (scikit-learn's conventions: ``sklearn.base.clone(policy)`` is an unfitted copy).

    Parameters
    ----------
    n_features : int
        Dimension d of every action's feature vector.
    family : str or GLMFamily or None
        Reward family; rewards are checked against its domain. ``None`` accepts
        any finite reward.
    seed : int, numpy.random.Generator, SeedSequence or None
        Source of the policy's randomness (initial random rounds, tie-breaking,
        the exploration floor's draws).
    exploration_floor : float in [0, 1], default 0.0
        ε: each round, with probability ε play an action drawn uniformly from
        the K actions instead of the rule's (one uniform number, then one
        integer when exploring, from the policy's own generator; with ε = 0
        nothing is drawn and the policy behaves exactly as without the option).
        The round's distribution is (1 − ε)·p_rule + ε/K, so every logged
        propensity is at least ε/K and the policy's log supports off-policy
        evaluation of any other policy.

    Attributes
    ----------
    last_probabilities_ : ndarray of shape (K,) or None
        The distribution the last ``select`` drew its action from: exact for
        rules that break ties uniformly (1/m on each of m tied maxima), a
        Monte-Carlo estimate for Thompson sampling (see
        :func:`glmbandits.policies.thompson.thompson_distribution` for the number of
        draws), mixed with the exploration floor.
    last_propensity_ : float or None
        ``last_probabilities_[a]`` of the chosen action a.

    References
    ----------
    Li, Chu, Langford & Wang (2011), WSDM: logs with known, non-degenerate
    propensities are what off-policy evaluation needs; the ε-uniform mixture is
    the "ε-greedy exploration" of Langford & Zhang (2007), NeurIPS.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A policy class of the library is allowed in model files where it is defined.

        A user's subclass is not: it goes through
        :func:`glmbandits.persistence.register_class`, as before.
        """
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("glmbandits."):
            allow_library_class(cls)
        if "_learn_checkpoint" in cls.__dict__:
            cls._learn_checkpoint_of = cls._learn  # the _learn that hook describes

    def __init__(self, n_features: int, family: Any = None, seed: SeedLike = None,
                 exploration_floor: float = 0.0) -> None:
        owner = type(self).__name__
        self.n_features = check_int(n_features, owner, "n_features", minimum=1)
        self.exploration_floor = check_exploration_floor(exploration_floor, owner)
        self.family: GLMFamily | None = (None if family is None and not self._needs_family()
                                         else get_family(family, owner))  # None: TypeError
        self.seed = seed
        self.rng_ = as_generator(seed, owner)
        self.n_updates_ = 0
        self.last_scores_: ActionScores | None = None
        self.last_propensity_: float | None = None
        self.last_probabilities_: np.ndarray | None = None
        self.decisions_ = PendingDecisions()
        self.event_log = None

    # -- public interface -------------------------------------------------
    def select(self, contexts: Any) -> int:
        """Choose an action for this round.

        Parameters
        ----------
        contexts : array-like of shape (K, d)
            One feature vector per available action, K >= 1.

        Returns
        -------
        int
            Row index of the chosen action.
        """
        owner = f"{type(self).__name__}.select"
        if not is_checked_contexts(contexts, self.n_features):  # else: already what it returns
            contexts = check_contexts(contexts, self.n_features, owner)
        return self._select_checked(contexts, owner)

    def _select_checked(self, X: np.ndarray, owner: str) -> int:
        """:meth:`select` on checked contexts (shared with ``decide``)."""
        if self._transactional_select:
            action, scores, probabilities = self._choose_or_refuse(X, owner)
        else:
            action, scores, probabilities = self._choose(X)
        if type(probabilities) is not np.ndarray:  # a subclass that returns only a propensity
            probabilities = _legacy_distribution(float(probabilities), action, X.shape[0])
        epsilon = self.exploration_floor
        if epsilon > 0.0:
            K = probabilities.shape[0]
            if self.rng_.random() < epsilon:
                action = int(self.rng_.integers(K))
                self._floor_action(X, action)
            probabilities = (1.0 - epsilon) * probabilities
            probabilities += epsilon / K
        self.last_scores_ = scores._with_family(self.family)
        self.last_probabilities_ = probabilities
        self.last_propensity_ = float(probabilities[action])
        if "drift_monitor_" in self.__dict__:  # the prediction its reward will be tested on
            self.drift_monitor_.expect(self.last_scores_, action)
        return action

    def update(self, x: Any, reward: Any) -> None:
        """Learn from the reward of the chosen action.

        Parameters
        ----------
        x : array-like of shape (d,)
            The chosen action's feature vector (the row passed to ``select``).
        reward : float
            Observed reward, inside the family's reward domain.
        """
        owner = f"{type(self).__name__}.update"
        if not is_checked_vector(x, self.n_features):  # else: already what it returns
            x = check_vector(x, self.n_features, owner, "x")
        reward = self._check_reward(reward, owner)
        self._check_sample(x, owner)
        cls = type(self)
        if cls._learn is cls._learn_checkpoint_of and not self._finite_state:
            # What _learn changes is known and small: _transaction's steps (nothing to
            # check for overflow, no event to write) on _learn_checkpoint's record.
            record = self._learn_checkpoint()
            try:
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    self._learn(x, reward)
            except BaseException:
                record.restore()
                raise
            record.release()
            self.n_updates_ += 1
        else:
            self._learn_transaction(x, reward, _LAST_SELECT, owner)
        if "drift_monitor_" in self.__dict__:
            self.drift_monitor_.record(self, None, reward)

    def update_batch(self, X: Any, rewards: Any) -> None:
        """Learn from many (row, reward) samples at once: sequential ``update`` calls.

        The samples are absorbed in the given order as one transaction (if one
        fails, none is learned). Exact-refit policies refit lazily, so the
        result equals that of the sequential updates bit for bit, at the cost of
        one refit (at the next decision); online policies take their steps in
        the given order.

        Parameters
        ----------
        X : array-like of shape (n, d)
            The chosen rows.
        rewards : array-like of shape (n,)
            Their rewards.

        Examples
        --------
        >>> import numpy as np
        >>> from glmbandits import UCBGLM
        >>> policy = UCBGLM(n_features=2, seed=0)
        >>> policy.update_batch(np.eye(2), [1.0, 0.0])
        >>> policy.n_updates_
        2
        """
        owner = f"{type(self).__name__}.update_batch"
        X = check_contexts(X, self.n_features, owner, "X") if np.size(X) else np.zeros(
            (0, self.n_features))
        values = self._check_rewards(rewards, X.shape[0], owner)
        self._check_batch(owner)
        if not values:
            return
        learn = self._learn

        def learn_all() -> None:
            for row, value in zip(X, values):
                learn(row, value)
        self._transaction(learn_all, owner, X[-1], values[-1])
        self.n_updates_ += len(values) - 1  # _transaction counted one

    def _learn_transaction(self, x: np.ndarray, reward: float, tag: Any, owner: str,
                           then: Callable[[], None] | None = None,
                           decision: Any = None) -> None:
        """Absorb one checked sample as a transaction (the ``update``/``reward`` step).

        ``tag`` is :data:`_LAST_SELECT` for ``update`` (``_learn``) or the tag the
        decision recorded (``_learn_decided``). ``then`` (e.g. writing the event
        log) runs inside the transaction: if it raises, the learning is undone.
        ``decision`` (the ``Decision`` a reward joins) goes to an attached drift monitor.
        """
        if tag is _LAST_SELECT:
            self._transaction(lambda: self._learn(x, reward), owner, x, reward, then)
        else:
            self._transaction(lambda: self._learn_decided(x, reward, tag), owner, x, reward, then)
            if decision is not None and "drift_monitor_" in self.__dict__:
                self.drift_monitor_.record(self, decision, reward)

    def _transaction(self, learn: Callable[[], None], owner: str, x: np.ndarray,
                     reward: float, then: Callable[[], None] | None = None) -> None:
        # Check first, then learn as one transaction: if anything raises inside
        # ``learn`` (or ``then``), the policy is put back exactly as it was.
        record = checkpoint(self)
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                learn()
            overflowed = self._overflowed_state() if self._finite_state else None
            if not overflowed and then is not None:
                then()
        except BaseException:
            record.restore()
            raise
        if overflowed:
            record.restore()
            raise ValueError(
                f"{owner}: learning from this sample (x of norm {format_value(_norm(x))}, "
                f"reward {format_value(reward)}) would overflow the policy's state "
                f"({', '.join(overflowed)}); the policy is unchanged. The theory assumes "
                "||x|| <= 1: rescale the features (e.g. glmbandits.features.UnitBall)")
        record.release()
        self.n_updates_ += 1

    #: Learned attributes that ``update`` checks for overflow after ``_learn`` (the
    #: policies whose update is a closed-form online step; refitted estimates are
    #: kept finite by their solvers). A non-finite value rolls the update back.
    _finite_state: tuple[str, ...] = ()

    #: The ``_learn`` that this class's :meth:`_learn_checkpoint` describes (set by
    #: ``__init_subclass__`` where a class defines the hook). ``update`` uses the hook
    #: only while ``type(self)._learn`` is that very function: a subclass that overrides
    #: ``_learn`` (or a test that patches it) gets the whole-policy checkpoint again.
    _learn_checkpoint_of: Callable[..., None] | None = None

    def _learn_checkpoint(self) -> Checkpoint:
        """Optional hook: a checkpoint of everything :meth:`_learn` changes, and no more.

        ``update`` restores it if learning raises, instead of a checkpoint of the
        whole policy: UCB-GLM and LinUCB learn only through their estimate's ``add``,
        whose ``_add_checkpoint`` is O(1). Not defined by default (the whole policy
        is checkpointed, as it is for a policy with :attr:`_finite_state`, and for
        ``decide``/``reward``); a class that defines it must change nothing outside
        it in ``_learn``.
        """
        raise NotImplementedError  # never called unless a subclass defines it

    #: Policies whose scoring runs an inner optimisation that can overflow on
    #: extreme rows set this: ``select`` then runs as a transaction and refuses
    #: (state unchanged) a round whose scores are not finite.
    _transactional_select: bool = False

    def _choose_or_refuse(self, X: np.ndarray, owner: str
                          ) -> tuple[int, ActionScores, np.ndarray]:
        """:meth:`_choose` as a transaction: non-finite scores undo it and raise ``ValueError``."""
        record = checkpoint(self)
        rng_state = self.rng_.bit_generator.state  # a checkpoint does not cover the generator

        def undo() -> None:
            record.restore()
            self.rng_.bit_generator.state = rng_state

        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                action, scores, probabilities = self._choose(X)
        except BaseException:
            undo()
            raise
        if not (np.isfinite(scores.ucb).all() and np.isfinite(scores.mean).all()
                and np.isfinite(scores.width).all() and np.isfinite(probabilities).all()):
            undo()
            rows = np.flatnonzero(~(np.isfinite(scores.ucb) & np.isfinite(scores.mean)))
            raise ValueError(
                f"{owner}: the scores of rows {rows.tolist()} overflow float64 (row norms "
                f"{[format_value(_norm(X[i])) for i in rows[:3]]}); the policy is unchanged. "
                "The theory assumes ||x|| <= 1: rescale the features "
                "(e.g. glmbandits.features.UnitBall)")
        record.release()
        return action, scores, probabilities

    def _overflowed_state(self) -> list[str]:
        """Names in :attr:`_finite_state` whose value is no longer finite."""
        bad = []
        for name in self._finite_state:
            value = getattr(self, name)
            if not (math.isfinite(value) if isinstance(value, float)
                    else bool(np.isfinite(value).all())):
                bad.append(name)
        return bad

    # -- hooks for subclasses --------------------------------------------
    @abstractmethod
    def _choose(self, X: np.ndarray) -> tuple[int, ActionScores, np.ndarray]:
        """Return (action, scores, probabilities).

        ``probabilities`` (shape (K,), summing to 1) is the distribution this
        call draws ``action`` from given the policy's state: ``1/m`` on each of
        the top m tied actions of a deterministic rule (broken uniformly), a
        Monte-Carlo estimate for sampling policies (documented with its number
        of samples). The base class applies the exploration floor to it and
        derives ``last_propensity_``. (A subclass written for the older
        interface may still return the chosen action's propensity as a float;
        see :func:`_legacy_distribution`.)
        """

    @abstractmethod
    def _learn(self, x: np.ndarray, reward: float) -> None:
        """Absorb one checked sample."""

    def _check_sample(self, x: np.ndarray, owner: str) -> None:
        """Extra checks a subclass needs before ``_learn`` (must not mutate)."""

    def _check_batch(self, owner: str) -> None:
        """Refuse ``update_batch`` when samples cannot be learned without their decisions."""

    def _decision_tag(self) -> int | None:
        """What the last ``_choose`` decided that learning will need (``decide`` keeps it).

        Default: nothing. SupCB-GLM returns the stage of the decision, RS-GLinCB
        whether it was a warm-up round. Called once right after the decision,
        it also clears the ``update`` path's record of that ``select``.
        """
        return None

    def _learn_decided(self, x: np.ndarray, reward: float, tag: int | None) -> None:
        """Absorb a sample joined to its decision (``reward``); default: :meth:`_learn`."""
        self._learn(x, reward)

    def _floor_action(self, X: np.ndarray, action: int) -> None:
        """Called when the exploration floor replaces the rule's action by ``action``.

        A subclass that keeps per-round state about its chosen action (SupCB-GLM's
        stage) updates it here. Default: nothing.
        """

    # -- helpers -----------------------------------------------------------
    def _check_reward(self, reward: Any, owner: str) -> float:
        if type(reward) is float and -MAX_MAGNITUDE <= reward <= MAX_MAGNITUDE and (
                self.family is None or self.family.in_domain(reward)):
            return reward  # fast path for a valid Python float; anything else: full checks
        if isinstance(reward, (bool, np.bool_)):
            reward = float(reward)
        if np.ndim(reward) != 0:
            raise ValueError(f"{owner}: reward must be a scalar, got shape {np.shape(reward)}")
        if self.family is None:
            return float(check_vector(np.atleast_1d(reward), 1, owner, "reward")[0])
        return float(check_rewards(np.atleast_1d(reward), self.family, owner, 1, "reward")[0])

    def _choose_max(self, scores: ActionScores) -> tuple[int, ActionScores, np.ndarray]:
        """Argmax of ``scores.ucb`` with uniform tie-breaking; 1/(number tied) on each tie."""
        action, probabilities = argmax_distribution(scores.ucb, self.rng_)
        return action, scores, probabilities

    def __getstate__(self) -> dict[str, Any]:
        # The attached event log is a connection, not learned state: never saved. Nor are
        # the parameters given as None that get_params reports (glmbandits._params):
        # restored, a policy reports the values it plays with.
        state = self.__dict__.copy()
        state["event_log"] = None
        state.pop(GIVEN_PARAMS, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Pickles from before the exploration floor / decide existed restore with
        # ε = 0 and no pending decisions.
        state.setdefault("exploration_floor", 0.0)
        state.setdefault("last_probabilities_", None)
        state.setdefault("decisions_", PendingDecisions())
        state.setdefault("event_log", None)
        self.__dict__.update(state)

    # -- drift monitoring (glmbandits.evaluation.drift) ----------------------
    #: The attached monitor (an instance attribute only once one is attached).
    drift_monitor_: Any

    def monitor_drift(self, monitor: Any) -> "Policy":
        """Attach a drift monitor (``None`` detaches it); returns the policy.

        Every reward the policy learns for one of its own decisions (``update`` after
        ``select``, ``reward``, an expiry's default) is then passed to the monitor with
        the predicted mean μ(x'θ̂) the decision was made with; an alarm may restart the
        estimate (the monitor's ``action``). The monitor is saved with the policy.
        See :class:`glmbandits.evaluation.DriftMonitor` (policies do not import it).
        """
        owner = f"{type(self).__name__}.monitor_drift"
        if monitor is None:
            self.__dict__.pop("drift_monitor_", None)
            return self
        if not all(callable(getattr(monitor, name, None)) for name in ("attach", "expect",
                                                                        "record", "status")):
            raise TypeError(f"{owner}: monitor must be a DriftMonitor (attach, expect, record, "
                            f"status) or None, got {type(monitor).__name__}")
        monitor.attach(self, owner)  # checks first (raises, naming the problem)
        self.drift_monitor_ = monitor
        return self

    @property
    def drift_(self) -> Any:
        """The attached monitor's ``status()`` (a ``DriftStatus``), or None without one."""
        monitor = self.__dict__.get("drift_monitor_")
        return None if monitor is None else monitor.status()

    # -- persistence (glmbandits.persistence) ------------------------------
    def save(self, path: Any) -> Any:
        """Write this policy to one model file, atomically; returns the ``pathlib.Path``.

        See :func:`glmbandits.persistence.save` and ``docs/persistence.md``.
        """
        return persistence.save(self, path)

    @classmethod
    def load(cls, path: Any, *, max_bytes: int | None = None) -> "Policy":
        """Read a policy saved by :meth:`save`; refuses (``ModelFileError``) one not a ``cls``.

        See :func:`glmbandits.persistence.load` (``max_bytes``: its size bound).
        """
        loaded: Policy = persistence.load(path, expected_class=cls, max_bytes=max_bytes)
        return loaded


declare_model_root(Policy)  # what a model file's top object must be


def _legacy_distribution(propensity: float, action: int, K: int) -> np.ndarray:
    """The distribution of a ``_choose`` that returned only the chosen action's propensity.

    Exact when the propensity is 1; otherwise the remaining mass is spread
    uniformly over the other actions (an assumption: such a subclass does not
    say where it is).
    """
    probabilities = np.full(K, (1.0 - propensity) / (K - 1) if K > 1 else 0.0)
    probabilities[action] = propensity
    return probabilities
