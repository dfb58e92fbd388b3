"""The blocking client: :class:`Client` (httpx; the ``client`` extra)."""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Sequence

from ._base import ClientBase
from .models import (ActionResult, Catalogue, Decision, Model, RewardResult, from_json,
                     read_catalogue)
from .retry import RetryPolicy

__all__ = ["Client", "Actions"]


class Client(ClientBase):
    """A client of ``glmbandits serve``: decide, reward, model, and the action catalogue
    (``actions``, a service with a ``[features]`` schema).

    Parameters
    ----------
    base_url : str
        The service's address, e.g. ``"http://127.0.0.1:8000"``.
    api_key : str or None
        Sent as ``Authorization: Bearer KEY`` (the service's ``GLMBANDITS_API_KEYS``).
    timeout : float
        Seconds for one attempt (connect, send and read).
    retry : RetryPolicy or None
        When to retry and how long to wait (:class:`~glmbandits.client.RetryPolicy`;
        default: 3 retries within 30 s). A retry repeats the request byte for byte, so
        with the same ``decision_id``: the service answers it as it answered the first.
    headers : mapping or None
        Extra headers for every request.
    transport : httpx.BaseTransport or None
        httpx's transport (``httpx.MockTransport`` in tests).
    sleep : callable
        How the client waits between attempts (``time.sleep``).

    Examples
    --------
    >>> import httpx
    >>> def service(request):
    ...     return httpx.Response(200, json={"decision_id": "d1", "action": 1,
    ...         "probabilities": [0.0, 1.0], "propensity": 1.0, "model_version": 4})
    >>> with Client("http://service", transport=httpx.MockTransport(service)) as client:
    ...     decision = client.decide([[0.1, 0.2], [0.3, 0.4]], decision_id="d1")
    >>> decision.action, decision.probabilities, decision.propensity, decision.action_id
    (1, (0.0, 1.0), 1.0, None)

    References
    ----------
    The rank/reward loop of Li et al. (2017), "Provably Optimal Algorithms for Generalized
    Linear Contextual Bandits" (Algorithm 1: decide, then learn from the reward), served
    by ``glmbandits serve`` (docs/service.md).
    """

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 10.0,
                 retry: RetryPolicy | None = None, headers: Mapping[str, str] | None = None,
                 transport: Any = None, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        import httpx  # the client extra

        super().__init__(base_url, api_key=api_key, timeout=timeout, retry=retry,
                         headers=headers, clock=clock)
        self._sleep = sleep
        self._httpx = httpx
        self._http = httpx.Client(base_url=self.base_url, headers=self.headers,
                                  timeout=self.timeout, transport=transport)
        #: the action catalogue: put, get, list, delete (:class:`Actions`)
        self.actions = Actions(self)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def _call(self, operation: str, content: bytes | None = None,
              action_id: str | None = None) -> Any:
        method, path = self._route(operation, action_id)
        started, retry = self._clock(), 0
        while True:
            try:
                outcome: Any = self._http.request(method, path, content=content)
            except self._httpx.UnsupportedProtocol:
                raise
            except self._httpx.TransportError as error:
                outcome = error
            done, value = self._settle(outcome, operation, retry, started)
            if done:
                return value
            self._sleep(value)
            retry += 1

    def decide(self, contexts: Any = None, decision_id: str | None = None, *,
               excluded: Sequence[int] | None = None, default_action: int | None = None,
               explain: bool = False, context: Mapping[str, Any] | None = None,
               actions: Any = None, action_ids: Sequence[str] | None = None,
               excluded_ids: Sequence[str] | None = None,
               default_action_id: str | None = None) -> Decision:
        """Choose one of K candidate actions: the rows of ``contexts`` (a (K, d) array or
        nested lists), or, with a ``[features]`` schema, named features.

        ``decision_id`` defaults to a fresh UUID4, made once, so every retry repeats it;
        pass your own to retry across processes. ``explain`` asks for the decision's
        explanation. Dense: ``excluded`` rows are not chosen; ``default_action`` is the
        row shown in shadow mode. Named: ``context`` maps the context's feature names to
        values, and the candidates come inline (``actions``: a sequence of ``{"id",
        "features"}`` mappings, or a mapping id -> features) or from the catalogue
        (``action_ids``), exactly one of the two; ``excluded_ids`` are not chosen;
        ``default_action_id`` is shown in shadow mode; the answer names the actions by id
        (``Decision.action_id``, ``Decision.probabilities_by_id``). A call mixing
        the dense and the named arguments is refused (``TypeError``) before anything is
        sent.
        """
        content = self._decide_request(contexts, decision_id, excluded, default_action,
                                       explain, {"context": context, "actions": actions,
                                                 "action_ids": action_ids,
                                                 "excluded_ids": excluded_ids,
                                                 "default_action_id": default_action_id})
        return from_json(Decision, self._call("decide", content))  # type: ignore[no-any-return]

    def reward(self, decision_id: str, value: float) -> RewardResult:
        """The reward ``value`` of the decision ``decision_id``."""
        return from_json(RewardResult,  # type: ignore[no-any-return]
                         self._call("reward", self._reward_request(decision_id, value)))

    def model(self) -> Model:
        """The served policy, its model version and counts."""
        return from_json(Model, self._call("model"))  # type: ignore[no-any-return]

    def health(self) -> str:
        """The service's liveness status (``"ok"``)."""
        return str(self._call("health")["status"])

    def ready(self) -> bool:
        """Whether the service is ready (``GET /v1/ready`` is 200): False while it restores
        or stops (503) and while nothing answers; not retried, so a caller can poll it."""
        method, path = self._route("ready")
        try:
            response = self._http.request(method, path)
        except self._httpx.TransportError:
            return False
        return self._is_ready(response.status_code, response.text)


class Actions:
    """The action catalogue of a service with a ``[features]`` schema
    (``client.actions``): ``put``, ``get``, ``list``, ``delete``. ``PUT`` and ``DELETE``
    are idempotent, so they are retried like a decide; an id is percent-encoded in the
    path (any character, ``/`` included). A service without a schema answers 404
    (:class:`~glmbandits.client.NotFound`, ``field`` ``features``).

    Examples
    --------
    >>> import httpx, json
    >>> def service(request):
    ...     features = json.loads(request.content)["features"]
    ...     return httpx.Response(201, json={"id": "a/1", "features": features,
    ...                                      "status": "created"})
    >>> with Client("http://service", transport=httpx.MockTransport(service)) as client:
    ...     client.actions.put("a/1", {"topic": "news"}).created
    True

    References
    ----------
    The candidate actions a of Li et al. (2017), "Provably Optimal Algorithms for
    Generalized Linear Contextual Bandits" (Section 2: each round's K actions and their
    feature vectors x_{t,a}), kept by the service under ids.
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    def put(self, action_id: str, features: Mapping[str, Any]) -> ActionResult:
        """Add the action ``action_id`` or replace its features (``status``: created,
        updated, unchanged); a retired id is refused (:class:`~glmbandits.client.Conflict`),
        features the schema refuses too (:class:`~glmbandits.client.InvalidRequest`,
        ``field`` ``features.<name>``)."""
        client = self._client
        client._route("put_action", action_id)  # the id's kind, before the body's
        return from_json(ActionResult,  # type: ignore[no-any-return]
                         client._call("put_action", client._put_request(features), action_id))

    def get(self, action_id: str) -> ActionResult:
        """The live action ``action_id`` (:class:`~glmbandits.client.NotFound` if none)."""
        return from_json(ActionResult,  # type: ignore[no-any-return]
                         self._client._call("get_action", action_id=action_id))

    def list(self) -> Catalogue:
        """The live actions and the retired ids."""
        return read_catalogue(self._client._call("list_actions"))

    def delete(self, action_id: str) -> ActionResult:
        """Retire the action ``action_id`` (``status``: deleted, already deleted); its id is
        never reused. :class:`~glmbandits.client.NotFound` for an id never put."""
        return from_json(ActionResult,  # type: ignore[no-any-return]
                         self._client._call("delete_action", action_id=action_id))
