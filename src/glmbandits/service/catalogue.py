"""The action catalogue: named actions and their features, changed by put and delete.

A decision service with a feature schema keeps a catalogue of its actions (``PUT``,
``GET`` and ``DELETE /v1/actions/{id}``), so that a decide may name its candidates by
id (``"action_ids": [...]``) instead of sending their features. Every change is an
event of the service's log (kind ``catalogue``, see :mod:`glmbandits.data.vocabulary`):
:meth:`ActionCatalogue.apply` replays one, so recovery, the offline rebuild and the
export rebuild the catalogue exactly as it was at any point of the log.

Rules (the ones a client can rely on):

* an id follows the decision-id rule (1 to 256 characters, no control character);
* ``put`` adds an action or replaces its features; putting the same features again
  changes nothing (no event);
* ``delete`` retires an action: a retired id is **never reused** (a later ``put`` of
  it is refused), so an id seen in a log always meant one action; deleting a retired
  id again changes nothing;
* the features are checked by the schema when put (the same checks as a decide's),
  so a decide naming catalogue actions can only fail on its context;
* with a schema, each action is also encoded once when put
  (:meth:`~glmbandits.features.FeatureSchema.encode_actions`): a decide by ids gathers
  the rows (:meth:`ActionCatalogue.encoded`) and parses only its context
  (:meth:`~glmbandits.features.FeatureSchema.transform_encoded`, bit for bit what
  ``transform`` gives on the features).

References
----------
Li, Lu & Zhou (2017), Section 2: each round's K actions come with their feature
vectors x_{t,a}; here they are built from the catalogue's named features by the
schema (:class:`~glmbandits.features.schema.FeatureSchema`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..data.vocabulary import CATALOGUE, DELETE, PUT, check_decision_id

__all__ = ["ActionCatalogue", "CatalogueChange", "UnknownActionError", "RetiredActionError",
           "CatalogueFullError"]


class UnknownActionError(KeyError):
    """An action id the catalogue does not hold (never put, or retired): ``action_id``,
    and ``retired`` (whether it was retired)."""

    def __init__(self, message: str, action_id: str, retired: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.action_id = action_id
        self.retired = retired

    def __str__(self) -> str:
        return self.message


class RetiredActionError(ValueError):
    """A ``put`` of a retired id (retired ids are never reused)."""

    def __init__(self, message: str, action_id: str) -> None:
        super().__init__(message)
        self.action_id = action_id


class CatalogueFullError(ValueError):
    """A ``put`` of a new id while the catalogue holds its ``limit`` of live actions."""


class CatalogueChange:
    """One change to log: ``status`` (``put``/``delete``), the action's ``id`` and, for a
    put, its checked ``features``; :attr:`request` is the event's JSON text."""

    __slots__ = ("status", "action_id", "features", "created")

    def __init__(self, status: str, action_id: str, features: dict[str, Any] | None,
                 created: bool = False) -> None:
        self.status = status
        self.action_id = action_id
        self.features = features
        self.created = created

    @property
    def request(self) -> str:
        """The ``request`` of the ``catalogue`` event (canonical JSON)."""
        body: dict[str, Any] = {"id": self.action_id}
        if self.features is not None:
            body["features"] = self.features
        return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class ActionCatalogue:
    """The actions a service decides over, by id, with their named features.

    Parameters
    ----------
    schema : FeatureSchema, optional
        Checks every action's features when put (``schema.check_action``); without
        one, features must only be a mapping of names to JSON values.
    limit : int, optional
        The most live actions: a ``put`` of a new id beyond it is refused
        (:class:`CatalogueFullError`); replaying logged changes is never refused.

    Attributes
    ----------
    cursor : int
        The ``seq`` of the last catalogue event applied (0 for none): a process that
        shares its log with others reads the events after it.

    Examples
    --------
    >>> catalogue = ActionCatalogue()
    >>> change = catalogue.put("article-1", {"topic": "news"})
    >>> change.created, change.request
    (True, '{"features":{"topic":"news"},"id":"article-1"}')
    >>> catalogue.put("article-1", {"topic": "news"}) is None   # the same: nothing to log
    True
    >>> catalogue.delete("article-1").status
    'delete'
    >>> catalogue.put("article-1", {"topic": "sport"})
    Traceback (most recent call last):
    ...
    glmbandits.service.catalogue.RetiredActionError: ActionCatalogue.put: action 'article-1' was deleted (retired); a retired id is never reused: put the action under a new id
    """

    def __init__(self, schema: Any = None, limit: int | None = None) -> None:
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 1):
            raise ValueError(f"ActionCatalogue: limit must be an int >= 1 or None, got "
                             f"{limit!r}")
        self.schema = schema
        self.limit = limit
        self._actions: dict[str, dict[str, Any]] = {}
        self._retired: set[str] = set()
        self.cursor = 0
        # with a schema: each live action's encoded row, in a slot of one matrix (made at
        # the first put, when its width is known)
        self._slots: dict[str, int] = {}
        self._free: list[int] = []
        self._rows: np.ndarray | None = None

    # -- reading --------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._actions)

    def __contains__(self, action_id: object) -> bool:
        return action_id in self._actions

    @property
    def retired(self) -> list[str]:
        """The retired ids, sorted."""
        return sorted(self._retired)

    def items(self) -> list[tuple[str, dict[str, Any]]]:
        """``(id, features)`` of every live action, in the order they were first put."""
        return list(self._actions.items())

    def get(self, action_id: str) -> dict[str, Any]:
        """The features of one live action (:class:`UnknownActionError` otherwise)."""
        try:
            return self._actions[action_id]
        except KeyError:
            raise self._unknown(action_id, "the catalogue") from None

    def features(self, action_ids: Sequence[str], field: str = "action_ids"
                 ) -> list[dict[str, Any]]:
        """The features of each id in order; :class:`UnknownActionError` names the first id
        that is not live (``field[i]``)."""
        actions = self._actions
        try:
            return [actions[action_id] for action_id in action_ids]
        except KeyError:
            index = next(i for i, a in enumerate(action_ids) if a not in actions)
            raise self._unknown(action_ids[index], f"{field}[{index}]") from None

    def encoded(self, action_ids: Sequence[str], field: str = "action_ids") -> np.ndarray:
        """The encoded rows of each id in order (a new (K, q) array; only with a schema),
        for :meth:`~glmbandits.features.FeatureSchema.transform_encoded`;
        :class:`UnknownActionError` as :meth:`features`."""
        slots = self._slots
        try:
            index = [slots[action_id] for action_id in action_ids]
        except KeyError:
            self.features(action_ids, field)  # names the first id that is not live
            raise
        assert self._rows is not None  # (a live action has a row)
        return self._rows[index]

    def _unknown(self, action_id: str, where: str) -> UnknownActionError:
        if action_id in self._retired:
            return UnknownActionError(f"{where}: action {action_id!r} was deleted (retired) "
                                      "from the catalogue", action_id, retired=True)
        return UnknownActionError(f"{where}: no action {action_id!r} in the catalogue (PUT "
                                  f"/v1/actions/{{id}} adds one)", action_id)

    # -- changing -------------------------------------------------------------------
    def put(self, action_id: Any, features: Any) -> CatalogueChange | None:
        """Add an action or replace its features; the change to log, or None if the
        action already has exactly these features. Checks first, changes after: a refusal
        (TypeError/ValueError naming the id or the feature, :class:`RetiredActionError`)
        leaves the catalogue unchanged."""
        owner = "ActionCatalogue.put"
        action_id = check_decision_id(action_id, owner, "action_id")
        if action_id in self._retired:
            raise RetiredActionError(
                f"{owner}: action {action_id!r} was deleted (retired); a retired id is never "
                "reused: put the action under a new id", action_id)
        checked = self._check_features(features, owner)
        if self._actions.get(action_id) == checked:
            return None
        if (self.limit is not None and action_id not in self._actions
                and len(self._actions) >= self.limit):
            raise CatalogueFullError(f"{owner}: the catalogue holds its limit of {self.limit} "
                                     "live actions ([decisions] max_catalogue); delete one "
                                     f"before putting the new action {action_id!r}")
        change = CatalogueChange(PUT, action_id, checked, created=action_id not in self._actions)
        self._apply(change)
        return change

    def delete(self, action_id: Any) -> CatalogueChange | None:
        """Retire an action; the change to log, or None if it is retired already.
        :class:`UnknownActionError` for an id never put."""
        owner = "ActionCatalogue.delete"
        action_id = check_decision_id(action_id, owner, "action_id")
        if action_id in self._retired:
            return None
        if action_id not in self._actions:
            raise self._unknown(action_id, owner)
        change = CatalogueChange(DELETE, action_id, None)
        self._apply(change)
        return change

    def _check_features(self, features: Any, owner: str) -> dict[str, Any]:
        if not isinstance(features, Mapping):
            raise TypeError(f"{owner}: features must be a mapping of feature names to values, "
                            f"got {type(features).__name__}")
        if self.schema is not None:
            checked: dict[str, Any] = self.schema.check_action(features, "the action")
            return checked
        copied: dict[str, Any] = json.loads(json.dumps(dict(features), allow_nan=False))
        return copied

    def _apply(self, change: CatalogueChange) -> None:
        action_id = change.action_id
        if change.status == PUT:
            assert change.features is not None
            if self.schema is not None:
                self._store_row(action_id, self.schema.encode_actions([change.features])[0])
            self._actions[action_id] = change.features
        else:
            self._actions.pop(action_id, None)
            self._retired.add(action_id)
            slot = self._slots.pop(action_id, None)
            if slot is not None:
                self._free.append(slot)

    def _store_row(self, action_id: str, row: np.ndarray) -> None:
        """The action's encoded row in its slot (a new slot for a new action: a free one,
        or one more row, the matrix grown geometrically)."""
        if self._rows is None:
            self._rows = np.zeros((8, row.shape[0]))
        slot = self._slots.get(action_id)
        if slot is None:
            if self._free:
                slot = self._free.pop()
            else:
                slot = len(self._slots)
                if slot == self._rows.shape[0]:
                    grown = np.zeros((2 * slot, self._rows.shape[1]))
                    grown[:slot] = self._rows
                    self._rows = grown
            self._slots[action_id] = slot
        self._rows[slot] = row

    # -- replay -----------------------------------------------------------------------
    def apply(self, event: Any) -> None:
        """Replay one logged ``catalogue`` event (``status``, ``request``, ``seq``): the
        change it records, as it was logged (its features were checked when put)."""
        if event.kind != CATALOGUE:
            raise ValueError(f"ActionCatalogue.apply: event {event.seq} is a {event.kind!r} "
                             "event, not a catalogue change")
        body = json.loads(event.request)
        if event.status == PUT:
            self._apply(CatalogueChange(PUT, body["id"], body["features"]))
        elif event.status == DELETE:
            self._apply(CatalogueChange(DELETE, body["id"], None))
        else:
            raise ValueError(f"ActionCatalogue.apply: event {event.seq} has the unknown "
                             f"catalogue status {event.status!r}")
        self.cursor = max(self.cursor, int(event.seq))

    @classmethod
    def replayed(cls, events: Iterable[Any], schema: Any = None,
                 limit: int | None = None) -> "ActionCatalogue":
        """A catalogue with every ``catalogue`` event of ``events`` applied in order (other
        kinds are skipped; ``limit`` bounds only later puts)."""
        catalogue = cls(schema, limit)
        for event in events:
            if event.kind == CATALOGUE:
                catalogue.apply(event)
        return catalogue
