"""The worker's operations of a service with a feature schema: named decides and the catalogue.

Each function returns an operation for the one commit worker
(:class:`~glmbandits.service.core.DecisionService`), so that it runs in log order with
every other call: a decide naming catalogue ids sees the catalogue exactly as the log
has it at that point, which is what recovery, the offline rebuild and the export
replay.

* :func:`decide_named_operation`: the contexts from the schema
  (:func:`~glmbandits.service.named_body.featurise`), then the role's own decide with
  the request as sent set on the log's sink (the ``decision`` event keeps it), then the
  answer with the ids.
* :func:`put_action_operation`, :func:`delete_action_operation`: a ``catalogue`` event
  (status ``put``/``delete``, the action in ``request``) appended, then the catalogue
  changed; a change that changes nothing logs nothing.
* :func:`catalogue_operation`, :func:`action_operation`: reads.

A process that shares its log with others (``--role api``) first applies the catalogue
events the others logged (:func:`sync_catalogue`): a PUT answered by one API process is
seen by the next decide of every other.
"""

from __future__ import annotations

from typing import Any, Callable

from ..data.vocabulary import CATALOGUE
from .catalogue import (ActionCatalogue, CatalogueFullError, RetiredActionError,
                        UnknownActionError)
from .errors import Conflict, Invalid, NotFound
from .events import Event
from .named_body import NamedDecide, featurise, named_answer, refused_feature

__all__ = ["decide_named_operation", "put_action_operation", "delete_action_operation",
           "catalogue_operation", "action_operation", "restore_catalogue", "sync_catalogue",
           "require_schema"]

Operation = Callable[[], Any]


def require_schema(service: Any) -> Any:
    """The service's feature schema; 404 naming the config table when it has none."""
    schema = service.config.features
    if schema is None:
        raise NotFound("this service has no feature schema: named features and the action "
                       "catalogue need a [features] table in its config (docs/service.md)",
                       "features")
    return schema


def restore_catalogue(service: Any) -> ActionCatalogue:
    """The catalogue as the store's log has it (its ``catalogue`` events, in order)."""
    return ActionCatalogue.replayed(service.store.events(kinds=(CATALOGUE,)),
                                    service.config.features,
                                    service.config.decisions.max_catalogue)


def sync_catalogue(service: Any) -> None:
    """Apply the catalogue events other processes logged since the last one applied (only
    in a process whose role shares its log: ``--role api``)."""
    if not service.role.shares_log:
        return
    catalogue = service.catalogue
    for event in service.store.events(after=catalogue.cursor, kinds=(CATALOGUE,)):
        catalogue.apply(event)


def decide_named_operation(service: Any, named: NamedDecide) -> Operation:
    """The worker's half of a named decide (see the module docstring)."""
    schema = require_schema(service)
    try:
        shown = service.default_row(named.default_action)
    except Invalid as error:  # (a named decide names its default by id)
        raise Invalid(error.message.replace("default_action is", "default_action_id is")
                      .replace("send the row", "send the id of the action"),
                      "default_action_id") from None

    def operation() -> dict[str, Any]:
        if named.features is None:
            sync_catalogue(service)
        X = featurise(named, schema, service.catalogue)
        decide = service.role.decide_operation(service, X, named.decision_id, named.excluded,
                                               named.default_action, shown,
                                               explain=named.explain)
        service.sink.request = named.request
        try:
            answer = decide()
        finally:
            service.sink.request = None
        return named_answer(answer, named)

    return operation


def _log(service: Any, change: Any) -> None:
    service.append(Event(CATALOGUE, None, service.clock(), status=change.status,
                         request=change.request))


def put_action_operation(service: Any, action_id: str, features: Any) -> Operation:
    """``PUT /v1/actions/{id}``: add the action or replace its features."""
    require_schema(service)

    def operation() -> dict[str, Any]:
        sync_catalogue(service)
        catalogue: ActionCatalogue = service.catalogue
        try:
            change = catalogue.put(action_id, features)
        except (RetiredActionError, CatalogueFullError) as error:
            raise Conflict(str(error), "action_id") from None
        except (TypeError, ValueError) as error:
            raise Invalid(str(error), _feature_field(str(error))) from None
        if change is None:
            return {"id": action_id, "features": catalogue.get(action_id),
                    "status": "unchanged"}
        _log(service, change)  # (a failed write: the worker rebuilds the catalogue)
        return {"id": action_id, "features": change.features,
                "status": "created" if change.created else "updated"}

    return operation


def _feature_field(message: str) -> str:
    """``features.<name>`` for a schema refusal naming a feature, ``action_id`` for the id
    rule's, else ``features``."""
    found = refused_feature(message)
    if found is not None:
        return f"features.{found[2]}"
    return "action_id" if "action_id" in message else "features"


def delete_action_operation(service: Any, action_id: str) -> Operation:
    """``DELETE /v1/actions/{id}``: retire the action (its id is never reused)."""
    require_schema(service)

    def operation() -> dict[str, Any]:
        sync_catalogue(service)
        try:
            change = service.catalogue.delete(action_id)
        except UnknownActionError as error:
            raise NotFound(str(error), "action_id") from None
        except (TypeError, ValueError) as error:
            raise Invalid(str(error), "action_id") from None
        if change is None:
            return {"id": action_id, "status": "already deleted"}
        _log(service, change)  # (a failed write: the worker rebuilds the catalogue)
        return {"id": action_id, "status": "deleted"}

    return operation


def catalogue_operation(service: Any) -> Operation:
    """``GET /v1/actions``: the live actions and the retired ids."""
    require_schema(service)

    def operation() -> dict[str, Any]:
        sync_catalogue(service)
        catalogue: ActionCatalogue = service.catalogue
        return {"actions": [{"id": action_id, "features": features}
                            for action_id, features in catalogue.items()],
                "retired": catalogue.retired}

    return operation


def action_operation(service: Any, action_id: str) -> Operation:
    """``GET /v1/actions/{id}``: one live action (404 if never put or retired)."""
    require_schema(service)

    def operation() -> dict[str, Any]:
        sync_catalogue(service)
        try:
            return {"id": action_id, "features": service.catalogue.get(action_id)}
        except UnknownActionError as error:
            raise NotFound(str(error), "action_id") from None

    return operation
