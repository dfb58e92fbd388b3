"""Cheap checkpoints of learned state: a failed ``Policy.update`` changes nothing.

:meth:`glmbandits.policies.base.Policy.update` takes a :func:`checkpoint` of the
policy before it learns, restores it if anything raises, and releases it
otherwise. A policy that says what its ``_learn`` changes
(``Policy._learn_checkpoint``) is checkpointed there only: UCB-GLM and LinUCB learn
through their estimate's ``add``, which changes nothing in place, so its
``_add_checkpoint`` is a :class:`Checkpoint` of two attribute dicts. A checkpoint is
shallow where that is enough and copies only what is mutated in place:

* the object's attribute dict (a shallow copy: rebinding an attribute is undone);
* the numpy arrays held directly in it (``V⁻¹`` by Sherman–Morrison, ``b``, ...:
  d- and d²-sized), restored *in place* so that shared references stay shared;
* lists held in it, restored by contents (a shallow copy); lists *inside* those
  lists are treated as append-only logs (SupCB-GLM's ``Ψ_s``, which grow to T
  entries) and restored by truncation to their recorded length, so that a
  checkpoint never copies O(T) items;
* every attribute that has its own ``_checkpoint()`` method (the estimates,
  the sample history, the lazy snapshot, the store of pending decisions), recursively.
  Such a method returns any object with ``restore()`` and ``release()``: the store of
  pending decisions (:class:`glmbandits.policies.decisions.PendingDecisions`) returns a
  savepoint of its undo journal, so that a call made of several steps (``expire``,
  ``reward_batch``) is undone whole.

Objects with big buffers define ``_checkpoint`` themselves:
:class:`~glmbandits.estimation.history.SampleHistory` only appends beyond its
length (its dict is enough), and :class:`~glmbandits.estimation.estimates.GLMEstimate`
copies its solver caches only if a refit actually runs inside the transaction
(copy on write, :meth:`Checkpoint.save_once`). Anything else a ``_learn`` mutates
in place must be reachable this way.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["Checkpoint", "checkpoint"]


class Checkpoint:
    """What :func:`checkpoint` recorded about one object (see the module docstring)."""

    __slots__ = ("owner", "state", "arrays", "lists", "logs", "children", "saved", "on_release",
                 "parent")

    def __init__(self, owner: Any, state: dict) -> None:
        self.owner = owner
        self.state = state
        # filled by :func:`checkpoint` (None: nothing of that kind, the common case)
        self.arrays: list[tuple[np.ndarray, np.ndarray]] | None = None
        self.lists: list[tuple[list, list]] | None = None
        self.logs: list[tuple[list, int]] | None = None
        self.children: list[Checkpoint] | None = None
        self.saved: dict[str, Any] | None = None
        self.on_release: Callable[[], None] | None = None
        #: the enclosing checkpoint of the same object, when transactions nest (a
        #: ``decide`` with an event log around a transactional ``select``)
        self.parent: Checkpoint | None = None

    def save_once(self, name: str, make_copy: Callable[[], Any]) -> None:
        """Copy-on-write: keep ``make_copy()`` as attribute ``name``'s value to restore.

        With nested checkpoints of the same object, the enclosing ones get their own
        copy too (once each), so that each level can restore what it recorded.
        """
        if self.saved is None:
            self.saved = {}
        if name not in self.saved:
            self.saved[name] = make_copy()
        if self.parent is not None:
            self.parent.save_once(name, make_copy)

    def restore(self) -> None:
        """Put the object (and everything recorded under it) back as it was."""
        for child in self.children or ():
            child.restore()
        for array, copy in self.arrays or ():
            array[...] = copy
        for items, contents in self.lists or ():
            items[:] = contents
        for items, length in self.logs or ():
            del items[length:]
        attributes = self.owner.__dict__
        attributes.clear()
        attributes.update(self.state)
        if self.saved:
            attributes.update(self.saved)

    def release(self) -> None:
        """The transaction succeeded: drop the hooks that copy on write."""
        if self.children is not None:
            for child in self.children:
                child.release()
        if self.on_release is not None:
            self.on_release()


_SKIP, _ARRAY, _LIST, _NESTED = 0, 1, 2, 3
#: What :func:`checkpoint` does with a value of each type (filled on first sight:
#: one dict lookup per attribute, so that a checkpoint costs little per round).
_KINDS: dict[type, int] = {np.ndarray: _ARRAY, list: _LIST}


def _kind(kind: type) -> int:
    found = _KINDS.get(kind)
    if found is None:
        found = _KINDS[kind] = _NESTED if callable(getattr(kind, "_checkpoint", None)) else _SKIP
    return found


def checkpoint(owner: Any) -> Checkpoint:
    """A :class:`Checkpoint` of ``owner`` (an object with a ``__dict__``)."""
    state = owner.__dict__.copy()
    record = Checkpoint(owner, state)
    kinds = _KINDS
    arrays, lists, logs, children = [], [], [], []
    for value in state.values():
        kind = kinds.get(type(value))
        if kind is None:
            kind = _kind(type(value))
        if kind == _SKIP:
            continue
        if kind == _ARRAY:
            arrays.append((value, value.copy()))
        elif kind == _NESTED:
            children.append(value._checkpoint())
        else:
            lists.append((value, value.copy()))
            for item in value:
                item_kind = kinds.get(type(item))
                if item_kind is None:
                    item_kind = _kind(type(item))
                if item_kind == _LIST:
                    logs.append((item, len(item)))
                elif item_kind == _NESTED:
                    children.append(item._checkpoint())
    if arrays:
        record.arrays = arrays
    if lists:
        record.lists = lists
    if logs:
        record.logs = logs
    if children:
        record.children = children
    return record
