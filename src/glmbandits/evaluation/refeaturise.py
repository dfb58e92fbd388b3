"""Feature evaluation offline: a service's logged requests featurised again by another schema.

A decision service with a feature schema (``[features]``) logs each named decide as it
was sent, and ``glmbandits export`` writes it into the joined export's ``request``
column with every catalogue id resolved to the features the action had at that point
of the log (``{"context": {...}, "actions": [{"id", "features"}, ...]}``). So the
export alone is enough to build every decision's contexts again, with **any** schema:
:func:`~glmbandits.evaluation.refeaturise.logged_from_requests` turns the export into
the :class:`~glmbandits.data.LoggedBanditData` that schema would have produced (the
same rounds, logged actions, propensities and rewards as
:meth:`~glmbandits.data.LoggedBanditData.from_parquet`; only the contexts differ), so
the offline estimators evaluate that schema's policies on the traffic the service saw
(what Azure Personalizer calls feature evaluation; ``glmbandits replay --log
FILE.parquet --features SCHEMA``).

The logged action keeps its meaning: it is the row of the request's ``actions`` the
service chose, and the new contexts have one row per action in the same order.

References
----------
Li, Lu & Zhou (2017), Section 2: each round's K actions come with feature vectors x_{t,a}
(‖x‖ <= 1), here built from the logged named features by the schema; Li, Chu, Langford
& Wang (2011) and Dudík, Langford & Li (2011): the offline estimators that read the log.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..data import LoggedBanditData
from ..features import FeatureSchema

__all__ = ["logged_from_requests", "logged_requests"]


def logged_requests(requests: list[str | None], rows: list[int], decision_ids: list[str],
                    owner: str) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The (context, actions) of each row of ``rows``, decoded from the export's
    ``request`` texts; refusals name the row and the decision.

    Parameters
    ----------
    requests : list of str or None
        The export's ``request`` column (None: a dense decide).
    rows : list of int
        The rows to decode.
    decision_ids : list of str
        The export's ``decision_id`` column, for the messages.
    owner : str
        The caller, for the messages.

    Returns
    -------
    list of (dict, list of dict)
        Each row's context mapping and its K action feature mappings, in the logged order.

    Examples
    --------
    >>> text = '{"actions":[{"features":{"t":"a"},"id":"x"}],"context":{"age":3}}'
    >>> logged_requests([text], [0], ["d1"], "example")
    [({'age': 3}, [{'t': 'a'}])]
    >>> logged_requests([None], [0], ["d1"], "example")
    Traceback (most recent call last):
    ...
    ValueError: example: the log's decisions are dense (no named request: the service had no [features] schema, or they were dense decides), so only their logged contexts can be replayed
    """
    if rows and all(requests[i] is None for i in rows):
        raise ValueError(f"{owner}: the log's decisions are dense (no named request: the "
                         "service had no [features] schema, or they were dense decides), so "
                         "only their logged contexts can be replayed")
    decoded = []
    for i in rows:
        where = f"{owner}: row {i} (decision {decision_ids[i]!r})"
        text = requests[i]
        if text is None:
            raise ValueError(f"{where} is a dense decision (no named request) among named "
                             "ones; a schema can only featurise named requests")
        try:
            body = json.loads(text)
        except ValueError as error:
            raise ValueError(f"{where}: 'request' is not JSON ({error})") from None
        if not isinstance(body, dict):
            raise ValueError(f"{where}: 'request' must be a JSON object, got "
                             f"{type(body).__name__}")
        if "action_ids" in body:
            raise ValueError(f"{where}: 'request' names its actions by catalogue id "
                             "(action_ids), not by their features; export the service's log "
                             "with 'glmbandits export', which resolves the ids through the "
                             "catalogue as it was at each decision")
        context, actions = body.get("context", {}), body.get("actions")
        if not isinstance(context, dict):
            raise ValueError(f"{where}: 'request' context must be an object, got "
                             f"{type(context).__name__}")
        if not isinstance(actions, list) or not actions or not all(
                isinstance(a, dict) and isinstance(a.get("features"), dict) for a in actions):
            raise ValueError(f"{where}: 'request' actions must be a non-empty list of "
                             f'{{"id", "features"}} objects, got {str(actions)[:80]}')
        decoded.append((context, [a["features"] for a in actions]))
    return decoded


def _unique_actions(decoded: list[tuple[dict[str, Any], list[dict[str, Any]]]]
                    ) -> list[dict[str, Any]]:
    """Every distinct action mapping of the requests, in order of first appearance."""
    seen: dict[str, dict[str, Any]] = {}
    for _, actions in decoded:
        for features in actions:
            seen.setdefault(json.dumps(features, sort_keys=True), features)
    return list(seen.values())


def _refused_row(schema: FeatureSchema, decoded: list[Any], rows: list[int],
                 columns: Mapping[str, Any]) -> str | None:
    """The first row that a fit on it alone refuses, and why (``contexts[0]`` is its
    context, ``actions[j]`` its j-th action); None when every row passes alone. Only on
    the way to an error."""
    for i, (context, actions) in zip(rows, decoded):
        single = FeatureSchema.from_declaration(schema.declaration())
        try:
            single.fit([context], actions, norm_bound=1.0 if schema.unit_ball else None)
        except (TypeError, ValueError) as error:
            return f"row {i} (decision {columns['decision_id'][i]!r}): {error}"
    return None


def logged_from_requests(path: str | Path, schema: FeatureSchema, *,
                         norm_bound: float | None = None, include_defaults: bool = True,
                         name: str | None = None) -> LoggedBanditData:
    """The rounds of a service's export with contexts built again by ``schema``.

    Parameters
    ----------
    path : str or Path
        A joined export of a service's log with named requests (``glmbandits export``,
        ``glmbandits.service.export.export_parquet``).
    schema : FeatureSchema
        The schema to evaluate. Used as it is when fitted; otherwise it is **fitted in
        place** on the export (every rewarded round's context, every distinct action of
        those rounds: the fitted vocabularies and scales, and the unit-ball factor unless
        ``norm_bound`` declares it), so ``schema.fingerprint_`` names what was evaluated;
        a refused call leaves it unfitted.
    norm_bound : float, optional
        For an unfitted schema with ``unit_ball``: the unit-ball factor, declared (the
        service's ``[features] norm_bound``) instead of fitted.
    include_defaults : bool, default True
        Keep the rounds closed with the policy's default reward (as
        :meth:`~glmbandits.data.LoggedBanditData.from_parquet`).
    name : str, optional
        A label for tables (default: the file's stem).

    Returns
    -------
    LoggedBanditData
        The rounds :meth:`~glmbandits.data.LoggedBanditData.from_parquet` reads from
        the file (its logged actions, rewards, propensities and ``join_counts``), each
        with the (K_t, schema.n_features_out_) contexts of its request.

    Raises
    ------
    ValueError
        A file whose decisions are dense (no named request), a request the schema
        refuses (naming the row, the decision and the feature), a fitted schema given
        with ``norm_bound``, or anything
        :meth:`~glmbandits.data.LoggedBanditData.from_parquet` refuses.
    TypeError
        ``schema`` is not a FeatureSchema.

    Examples
    --------
    The contexts a service would have built under one more interaction; see
    ``docs/offline-evaluation.md`` ("Feature evaluation offline") for a whole service.

    >>> import tempfile, pathlib
    >>> from glmbandits.features import Categorical, Numeric
    >>> from glmbandits.service.export import export_parquet
    >>> from glmbandits.service.store import open_store
    >>> from glmbandits.service.events import Event
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> store = open_store(f"sqlite:///{folder / 'log.db'}")
    >>> request = {"actions": [{"id": "a1", "features": {"topic": "news"}},
    ...                        {"id": "a2", "features": {"topic": "golf"}}]}
    >>> for i, age in enumerate([20, 60]):
    ...     store.append(Event("decision", f"d{i}", 1.0 + i, contexts=np.eye(2, 3),
    ...                        action=0, probabilities=np.array([1.0, 0.0]), propensity=1.0,
    ...                        model_version=0,
    ...                        request=json.dumps({**request, "context": {"age": age}})))
    ...     store.append(Event("reward", f"d{i}", 2.0 + i, reward=float(i), status="learned"))
    >>> _ = store.commit(); store.close()
    >>> _ = export_parquet(f"sqlite:///{folder / 'log.db'}", folder / "log.parquet")
    >>> schema = FeatureSchema(context=[Numeric("age", scale="fit")],
    ...                        action=[Categorical("topic", vocabulary="fit")],
    ...                        interactions=[("context", "action")], unit_ball=False)
    >>> data = logged_from_requests(folder / "log.parquet", schema)
    >>> data.n_rounds, data.n_features, schema.feature_names_out_[-4:-1]
    (2, 8, ['age*topic=golf', 'age*topic=news', 'age*topic=<other>'])
    """
    owner = "logged_from_requests"
    if not isinstance(schema, FeatureSchema):
        raise TypeError(f"{owner}: schema must be a glmbandits.features.FeatureSchema, got "
                        f"{type(schema).__name__}")
    fitted = hasattr(schema, "fingerprint_")
    if fitted and norm_bound is not None:
        raise ValueError(f"{owner}: norm_bound declares the unit-ball factor of a schema to "
                         f"fit; this schema is fitted already (norm_bound_ "
                         f"{schema.norm_bound_!r}), got norm_bound={norm_bound!r}")
    if not isinstance(include_defaults, bool):
        raise TypeError(f"{owner}: include_defaults must be a bool, got "
                        f"{type(include_defaults).__name__}")

    used = schema if fitted else FeatureSchema.from_declaration(schema.declaration())
    examples: list[Any] = []

    def contexts(columns: Mapping[str, Any], rows: list[int]) -> list[np.ndarray]:
        where = f"{owner}({str(path)!r})"
        decoded = logged_requests(columns["request"], rows, columns["decision_id"], where)
        if not fitted and decoded:
            examples[:] = [[context for context, _ in decoded], _unique_actions(decoded)]
            try:
                used.fit(*examples, norm_bound=norm_bound)
            except (TypeError, ValueError) as error:
                row = _refused_row(used, decoded, rows, columns)
                raise type(error)(f"{where}: fitting the schema on the logged requests: "
                                  f"{error if row is None else row}") from None
        built = []
        for i, (context, actions) in zip(rows, decoded):
            X = np.empty((len(actions), used.n_features_out_))
            try:
                used.transform(context, actions, out=X)
            except (TypeError, ValueError) as error:
                raise type(error)(f"{where}: row {i} (decision "
                                  f"{columns['decision_id'][i]!r}): {error}") from None
            built.append(X)
        return built

    data = LoggedBanditData.from_parquet(path, include_defaults=include_defaults, name=name,
                                         contexts=contexts)
    if examples:  # everything passed: fit the caller's schema as the copy was (the same fit)
        schema.fit(*examples, norm_bound=norm_bound)
    return data
