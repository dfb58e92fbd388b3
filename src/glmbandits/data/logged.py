"""Logged bandit data: what a deployed policy saw, chose, earned, and with what probability.

A log is T rounds. Round t offers K_t actions with feature vectors x_{t,a}
(K_t may change from round to round), the logging policy chose a_t with
probability p_t (its *propensity*) and the reward r_t of a_t was observed. This
is the input of the offline evaluators of :mod:`glmbandits.evaluation`
(Li, Chu, Langford & Wang 2011; Dudík, Langford & Li 2011).

Contexts are held by a *context store* (:mod:`.contexts`) so that large action
catalogues need not be materialised as a (T, K, d) array.

Every check runs in the constructor, before anything is evaluated: missing
columns, NaN or inf, a propensity outside (0, 1], an action outside the round's
action set, or mismatched lengths raise a :class:`ValueError` naming the log,
the column, what was expected and what was given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .._validation import as_float_array, format_value
from .contexts import ContextStore, FactoredContexts, PaddedContexts, check_finite

__all__ = ["LoggedBanditData", "LOG_COLUMNS"]

#: Columns of a log table; ``propensity`` and ``reward_table`` are optional.
LOG_COLUMNS = ("contexts", "action", "reward", "propensity", "reward_table")
_REQUIRED = ("contexts", "action", "reward")


class LoggedBanditData:
    """A checked log of T bandit rounds: contexts, actions, rewards and propensities.

    Parameters
    ----------
    contexts : PaddedContexts, FactoredContexts, array (T, K, d) or list of (K_t, d) arrays
        Each round's per-action feature vectors x_{t,a}.
    actions : array-like of int, shape (T,)
        The logged action a_t, a row index into round t's contexts.
    rewards : array-like of shape (T,)
        The observed reward r_t of a_t.
    propensities : array-like of shape (T,), optional
        p_t = P(logging policy picks a_t | history), in (0, 1]. Needed by
        IPS/SNIPS/DR; without them replay warns that uniform logging cannot be
        checked.
    n_actions : array-like of int, shape (T,), optional
        K_t for a padded (T, K_max, d) array.
    reward_table : array-like of shape (T, K_max), optional
        Full-information rewards of *every* action (classification-as-bandit
        data, synthetic logs): not used by the estimators, only to compute a
        policy's true value on the log (:func:`~glmbandits.evaluation.true_value`).
    name : str
        A label for tables.

    Raises
    ------
    ValueError
        On NaN/inf, propensities outside (0, 1], actions outside [0, K_t),
        non-integer actions or mismatched lengths. Nothing is evaluated on a
        log that fails a check.

    Examples
    --------
    >>> import numpy as np
    >>> log = LoggedBanditData(np.zeros((3, 2, 4)), actions=[0, 1, 1], rewards=[1.0, 0.0, 1.0],
    ...                        propensities=[0.5, 0.5, 0.5])
    >>> log.n_rounds, log.n_features, log.chosen_contexts().shape
    (3, 4, (3, 4))
    >>> LoggedBanditData(np.zeros((1, 2, 4)), actions=[2], rewards=[1.0])
    Traceback (most recent call last):
    ...
    ValueError: LoggedBanditData: action must lie in the round's action set [0, K_t - 1]; round 0 has K_t = 2, got action 2
    """

    def __init__(self, contexts: Any, actions: Any, rewards: Any, propensities: Any = None, *,
                 n_actions: Any = None, reward_table: Any = None, name: str = "log") -> None:
        owner = type(self).__name__
        if isinstance(contexts, (PaddedContexts, FactoredContexts)):
            if n_actions is not None:
                raise ValueError(f"{owner}: n_actions must be None when contexts is a context "
                                 "store (it knows K_t)")
            store: ContextStore = contexts
        else:
            store = PaddedContexts(contexts, n_actions, owner)
        T = store.n_rounds
        action_array = self._column(actions, T, owner, "action", allow_bool=False)
        if not np.all(action_array == np.round(action_array)):
            first = action_array[action_array != np.round(action_array)][0]
            raise ValueError(f"{owner}: action must hold integers, got {format_value(first)}")
        action_array = action_array.astype(np.int64)
        outside = (action_array < 0) | (action_array >= store.n_actions)
        if np.any(outside):
            t = int(np.flatnonzero(outside)[0])
            raise ValueError(f"{owner}: action must lie in the round's action set "
                             f"[0, K_t - 1]; round {t} has K_t = {store.n_actions[t]}, "
                             f"got action {action_array[t]}")
        reward_array = self._column(rewards, T, owner, "reward")
        propensity_array = None
        if propensities is not None:
            propensity_array = self._column(propensities, T, owner, "propensity",
                                            allow_bool=False)
            bad = (propensity_array <= 0.0) | (propensity_array > 1.0)
            if np.any(bad):
                t = int(np.flatnonzero(bad)[0])
                raise ValueError(f"{owner}: propensity must lie in (0, 1], got "
                                 f"{format_value(propensity_array[t])} in round {t}")
        table = None
        if reward_table is not None:
            table = as_float_array(reward_table, "reward_table", owner)
            K_max = int(store.n_actions.max())
            if table.shape != (T, K_max):
                raise ValueError(f"{owner}: reward_table must have shape ({T}, {K_max}), "
                                 f"got {table.shape}")
            valid = np.arange(K_max)[None, :] < store.n_actions[:, None]
            check_finite(table[valid], owner, "reward_table")
        self.contexts = store
        self.actions = action_array
        self.rewards = reward_array
        self.propensities = propensity_array
        self.reward_table = table
        self.name = str(name)
        #: Set by :meth:`from_event_log`: how many decisions were kept and why not the others.
        self.join_counts: dict[str, int] | None = None

    @staticmethod
    def _column(values: Any, T: int, owner: str, name: str, *,
                allow_bool: bool = True) -> np.ndarray:
        array = as_float_array(values, name, owner, allow_bool=allow_bool)
        if array.shape != (T,):
            raise ValueError(f"{owner}: {name} must have shape ({T},) (one per round), "
                             f"got {array.shape}")
        check_finite(array, owner, name)
        return array

    # -- constructors ------------------------------------------------------------
    @classmethod
    def from_columns(cls, table: Mapping[str, Any], *, name: str = "log") -> "LoggedBanditData":
        """Build a log from a mapping of columns (a dict, an ``npz`` file, a DataFrame).

        Required: ``contexts`` ((T, K, d) array or list of (K_t, d) arrays),
        ``action``, ``reward``. Optional: ``propensity``, ``n_actions``,
        ``reward_table``. A missing required column raises a ValueError.
        """
        owner = f"{cls.__name__}.from_columns"
        if not hasattr(table, "keys") or not hasattr(table, "__getitem__"):
            raise TypeError(f"{owner}: table must be a mapping of columns, "
                            f"got {type(table).__name__}")
        keys = set(table.keys())
        missing = [column for column in _REQUIRED if column not in keys]
        if missing:
            raise ValueError(f"{owner}: the log is missing required column(s) {missing}; "
                             f"expected {list(_REQUIRED)} (optional: propensity, n_actions, "
                             f"reward_table), got {sorted(keys)}")

        def optional(column: str) -> Any:
            return table[column] if column in keys else None

        contexts = table["contexts"]
        if not isinstance(contexts, (list, tuple, PaddedContexts, FactoredContexts)):
            contexts = np.asarray(contexts)
            if contexts.dtype == object:
                contexts = list(contexts)
        return cls(contexts, table["action"], table["reward"], optional("propensity"),
                   n_actions=optional("n_actions"), reward_table=optional("reward_table"),
                   name=name)

    @classmethod
    def from_event_log(cls, log_or_path: Any, *, reward: str = "first",
                       include_defaults: bool = True, name: str | None = None
                       ) -> "LoggedBanditData":
        """The rounds of an :class:`~glmbandits.data.EventLog` whose reward is known.

        Decisions are joined with their rewards by decision id and kept in
        decision order (sequence number). The reward of a round is the one the
        policy learned from it:

        * the reward with status ``"learned"`` (with ``duplicate_rewards="ignore"``,
          the first one received);
        * the summed reward of an expiry with outcome ``"learned"``
          (``duplicate_rewards="sum"``);
        * the default reward of an expiry with outcome ``"default"``, only when
          ``include_defaults``.

        Shadow decisions (made with ``decide(..., default_action=a)``) are **left
        out** and counted in ``join_counts["shadow"]``: the caller chose their
        action, with no known propensity, so importance-weighted estimators cannot
        use them as the logging policy's rounds. Evaluate them with
        :func:`glmbandits.evaluation.evaluate_shadow` (``GET /v1/evaluation`` of the
        service does), which takes the caller as deterministic.

        Duplicate and late rewards are never used. Decisions without a usable
        reward (dropped, still pending, or defaults with ``include_defaults=False``)
        are **left out**, and counted in ``join_counts``. Leaving them out keeps
        the estimators unbiased only if whether a reward arrives is independent
        of the action (given the contexts); if, say, clicks are reported but
        non-clicks are not, configure a ``default_reward`` in the policy and keep
        ``include_defaults=True`` instead.

        Parameters
        ----------
        log_or_path : EventLog, str or Path
            An open log, or the path of one (opened read-only, then closed).
        reward : {"first"}, default "first"
            Which reward counts: "first" is the rule above (the learned reward).
        include_defaults : bool, default True
            Keep the rounds closed with the policy's default reward.
        name : str, optional
            A label for tables (default: the file's stem).

        Returns
        -------
        LoggedBanditData
            Contexts (one (K_t, d) array per round), logged actions, rewards and
            propensities; its ``join_counts`` dict says how many decisions were
            kept and why the others were not (see
            :class:`~glmbandits.data.event_export.JoinedDecisions`).

        Examples
        --------
        >>> import tempfile, pathlib
        >>> import numpy as np
        >>> from glmbandits.data import EventLog
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     with EventLog(pathlib.Path(folder) / "events.sqlite") as events:
        ...         events.record_decision("a", 0.0, np.eye(2), [0.5, 0.5], 1, 0.5, 0)
        ...         events.record_decision("b", 1.0, np.eye(2), [0.5, 0.5], 0, 0.5, 0)
        ...         events.record_reward("a", 2.0, 1.0, "learned")
        ...         data = LoggedBanditData.from_event_log(events)
        >>> data.actions.tolist(), data.rewards.tolist(), data.join_counts["pending"]
        ([1], [1.0], 1)
        """
        from .event_export import JoinedDecisions

        owner = f"{cls.__name__}.from_event_log"
        if reward != "first":
            raise ValueError(f"{owner}: reward must be 'first' (the reward the policy "
                             f"learned), got {reward!r}")
        if not isinstance(include_defaults, bool):
            raise TypeError(f"{owner}: include_defaults must be a bool, got "
                            f"{type(include_defaults).__name__}")
        if not isinstance(log_or_path, (str, Path)) and not hasattr(log_or_path, "events"):
            raise TypeError(f"{owner}: log_or_path must be an EventLog, str or Path, got "
                            f"{type(log_or_path).__name__}")
        joined = JoinedDecisions.from_log(log_or_path, include_defaults=include_defaults,
                                          owner=owner)
        label = Path(joined.source).stem
        assert joined.policy_actions is not None  # from_log fills it
        shadow = joined.policy_actions >= 0
        keep = [i for i, source in enumerate(joined.reward_sources)
                if source is not None and not shadow[i]]
        return cls._from_joined(owner, [joined.contexts[i] for i in keep],
                                joined.actions[keep], joined.rewards[keep],
                                joined.propensities[keep], dict(joined.counts),
                                label if name is None else name)

    @classmethod
    def from_parquet(cls, path: str | Path, *, include_defaults: bool = True,
                     name: str | None = None,
                     contexts: Callable[[Mapping[str, Any], list[int]], list[np.ndarray]]
                     | None = None) -> "LoggedBanditData":
        """Read back a Parquet file of :func:`~glmbandits.data.export_parquet` (rounds with a reward).

        The same rounds as :meth:`from_event_log` on the log it was exported
        from (when exported with ``include_defaults=True``), bit for bit. Needs
        pyarrow (the ``data`` extra). ``contexts(columns, rows)``, when given, builds
        the kept rows' contexts instead of the logged ones, from the file's decoded
        columns (:func:`~glmbandits.evaluation.refeaturise.logged_from_requests`
        featurises the logged requests again with another schema).
        """
        from .event_export import read_parquet_columns

        owner = f"{cls.__name__}.from_parquet"
        columns = read_parquet_columns(path, owner)
        owner = f"{owner}({str(path)!r})"
        keep = [i for i, source in enumerate(columns["reward_source"])
                if source is not None and (include_defaults or source != "default")
                and columns["policy_action"][i] < 0]  # shadow rounds: see from_event_log
        counts = dict(columns["info"].get("counts", {}))
        X = ([columns["contexts"][i] for i in keep] if contexts is None
             else contexts(columns, keep))
        return cls._from_joined(owner, X, columns["action"][keep], columns["reward"][keep],
                                columns["propensity"][keep], counts,
                                Path(path).stem if name is None else name)

    @classmethod
    def _from_joined(cls, owner: str, contexts: list[np.ndarray], actions: np.ndarray,
                     rewards: np.ndarray, propensities: np.ndarray, counts: dict[str, int],
                     name: str) -> "LoggedBanditData":
        if not contexts:
            shadow = (f"; its {counts['shadow']} shadow decision(s) have no propensity and "
                      "are left out (evaluate them with glmbandits.evaluation.evaluate_shadow)"
                      if counts.get("shadow") else "")
            raise ValueError(f"{owner}: the event log has no decision with a usable reward "
                             f"(join counts: {counts}){shadow}")
        widths = {X.shape[1] for X in contexts}
        if len(widths) > 1:
            raise ValueError(f"{owner}: every decision must have the same number of features "
                             f"d, got decisions with d in {sorted(widths)}")
        try:
            data = cls(contexts, actions, rewards, propensities, name=name)
        except (TypeError, ValueError) as error:  # name the source (the file) too
            raise type(error)(f"{owner}: {error}") from None
        data.join_counts = counts
        return data

    @classmethod
    def from_simulation(cls, result: Any, *, name: str = "simulation") -> "LoggedBanditData":
        """The log of a :func:`~glmbandits.simulate` run made with ``record_contexts=True``.

        Propensities are the policy's ``last_propensity_`` of each round (1/m
        for UCB rules with m tied actions).
        """
        owner = f"{cls.__name__}.from_simulation"
        contexts = getattr(result, "contexts", None)
        if contexts is None:
            raise ValueError(f"{owner}: result must come from simulate(..., record_contexts=True), "
                             "got a result without contexts")
        propensities = result.propensities
        if np.any(np.isnan(propensities)):
            propensities = None
        return cls(list(contexts), result.actions, result.rewards, propensities, name=name)

    @classmethod
    def load(cls, path: str | Path, *, name: str | None = None) -> "LoggedBanditData":
        """Read a log written by :meth:`save` (or any ``.npz`` with the log's columns).

        Raises
        ------
        ValueError
            When ``path`` is a directory, not an ``.npz`` archive, truncated or
            damaged, holds a column of Python objects (never unpickled), or a
            column fails a check; the message names the file (and the column).
        TypeError
            When a column has the wrong kind (e.g. strings as actions).
        """
        import zipfile
        import zlib

        owner = f"{cls.__name__}.load({str(path)!r})"
        path = Path(path)
        if path.is_dir():
            raise ValueError(f"{owner}: path must be an .npz log file, got a directory")
        try:
            with path.open("rb") as handle:
                magic = handle.read(4)
        except OSError as error:
            raise type(error)(f"{owner}: cannot read the file: "
                              f"{error.strerror or error}") from None
        if magic != b"PK\x03\x04":
            raise ValueError(f"{owner}: the file must be an .npz archive (as written by "
                             "LoggedBanditData.save), got a file that is not one"
                             + (" (it is empty)" if not magic else ""))
        columns: dict[str, np.ndarray] = {}
        column = None
        try:
            with np.load(path, allow_pickle=False) as data:
                for column in data.files:
                    columns[column] = data[column]
        except ValueError as error:
            if "allow_pickle" in str(error) or "pickle" in str(error):
                raise ValueError(f"{owner}: column {column!r} must hold numbers, got Python "
                                 "objects (dtype=object; they are never unpickled)") from None
            raise ValueError(f"{owner}: the archive is damaged"
                             f"{'' if column is None else f' in column {column!r}'}: "
                             f"{error}") from None
        except (zipfile.BadZipFile, EOFError, zlib.error, OSError, KeyError) as error:
            where = "" if column is None else f" (column {column!r})"
            raise ValueError(f"{owner}: the .npz archive is truncated or damaged{where}: "
                             f"{error}") from None
        try:
            return cls.from_columns(columns, name=name if name is not None else path.stem)
        except (TypeError, ValueError) as error:
            raise type(error)(f"{owner}: {error}") from None

    def save(self, path: str | Path) -> Path:
        """Write the log as an ``.npz`` (contexts padded to (T, K_max, d))."""
        contexts, counts = self.contexts.padded()
        columns: dict[str, Any] = {"contexts": contexts, "n_actions": counts,
                                   "action": self.actions, "reward": self.rewards}
        if self.propensities is not None:
            columns["propensity"] = self.propensities
        if self.reward_table is not None:
            columns["reward_table"] = self.reward_table
        path = Path(path)
        np.savez_compressed(path, **columns)
        return path

    # -- views ---------------------------------------------------------------------
    @property
    def n_rounds(self) -> int:
        return self.contexts.n_rounds

    @property
    def n_features(self) -> int:
        return self.contexts.n_features

    @property
    def n_actions(self) -> np.ndarray:
        """K_t of every round, shape (T,)."""
        return self.contexts.n_actions

    def __len__(self) -> int:
        return self.n_rounds

    def chosen_contexts(self) -> np.ndarray:
        """(T, d): x_{t,a_t}, the logged actions' feature vectors."""
        return self.contexts.chosen(self.actions)

    def is_uniform(self, rtol: float = 1e-6) -> bool:
        """Whether every propensity equals 1/K_t (uniform random logging)."""
        if self.propensities is None:
            return False
        return bool(np.allclose(self.propensities, 1.0 / self.n_actions, rtol=rtol, atol=0.0))

    def subset(self, rounds: Sequence[int] | np.ndarray, name: str | None = None
               ) -> "LoggedBanditData":
        """The log restricted to the given rounds (in the given order)."""
        rounds = np.asarray(rounds, dtype=np.int64)
        return LoggedBanditData(
            self.contexts.subset(rounds), self.actions[rounds], self.rewards[rounds],
            None if self.propensities is None else self.propensities[rounds],
            reward_table=None if self.reward_table is None else self.reward_table[rounds],
            name=self.name if name is None else name)

    def split(self, fraction: float) -> tuple["LoggedBanditData", "LoggedBanditData"]:
        """The first ``fraction`` of the rounds and the rest (a time-ordered split)."""
        if not 0.0 < fraction < 1.0:
            raise ValueError(f"{type(self).__name__}.split: fraction must lie in (0, 1), "
                             f"got {fraction!r}")
        cut = min(max(int(round(fraction * self.n_rounds)), 1), self.n_rounds - 1)
        return (self.subset(np.arange(cut), f"{self.name}[:{cut}]"),
                self.subset(np.arange(cut, self.n_rounds), f"{self.name}[{cut}:]"))

    def __repr__(self) -> str:
        K = self.n_actions
        k_text = str(int(K[0])) if K.min() == K.max() else f"{int(K.min())}..{int(K.max())}"
        return (f"LoggedBanditData(name={self.name!r}, T={self.n_rounds}, K={k_text}, "
                f"d={self.n_features}, propensities={'yes' if self.propensities is not None else 'no'})")
