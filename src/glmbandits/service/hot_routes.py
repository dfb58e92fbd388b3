"""``POST /v1/decide`` and ``POST /v1/reward`` as plain ASGI, in front of the Starlette app.

These two routes carry nearly all of a service's traffic, and on the two-core
benchmark machine the event loop's Python time per request limits the
throughput (it holds the GIL the policy's worker thread needs). Starlette's
path to a route (``ServerErrorMiddleware``, ``ExceptionMiddleware``, the
router, ``request_response``, a ``Request`` with its header and query parsers,
a ``Response`` and the send wrappers) is about ten coroutine and wrapper layers
per request; here a route is one coroutine that reads the ASGI scope directly.
Every other request (the dashboard, ``/v1/model``, ``/v1/events``, ``/metrics``,
the lifespan) goes on to the Starlette app unchanged. The measured difference is
in ``docs/service.md`` (Performance).

The answers are the ones the Starlette routes gave, byte for byte: the same
refusal order (401 no or wrong key, 415 a decide body neither JSON nor .npy, 413
above ``max_body_bytes``, 422 malformed naming the field, then the core's 404,
409 or 503), the same JSON error bodies (:func:`~glmbandits.service.errors.error_body`,
shared with the app), a 405 naming the allowed method for another method on these paths, the
same metrics, and a body read chunk by chunk that stops at the limit.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Awaitable, Callable, MutableMapping

import msgspec

from .auth import KeyChecker, authorize
from .errors import ServiceError, TooLarge, error_body, refusal_body
from .media import decide_encoding, parse_decide_body, parse_query
from .metrics import Metrics
from .named_body import NamedDecide
from .schemas import parse_reward

__all__ = ["HotRoutes"]

logger = logging.getLogger("glmbandits.service")

# the ASGI types (as starlette.types spells them)
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_JSON_HEADERS = [(b"content-type", b"application/json")]


class _Disconnected(Exception):
    """The client went away before its body was read: nothing to answer."""


def _header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower case, as ASGI servers send names)."""
    for key, value in scope["headers"]:
        if key == name:
            text: str = value.decode("latin-1")
            return text
    return None


def _route_path(scope: Scope) -> str:
    """The path without the ``root_path`` a proxy mounts the service under (as Starlette's
    router matches it)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path


class HotRoutes:
    """An ASGI app: the decide and reward routes itself, everything else to ``app``.

    Parameters
    ----------
    app : ASGI app
        The Starlette app with every other route and the lifespan.
    service : DecisionService
        The started commit worker, of any role (its ``decide_async``/``reward_async``).
    keys : KeyChecker
        The accepted API keys.
    metrics : Metrics
        Where each answered request is counted (as ``decide`` and ``reward``).
    max_body_bytes, n_features, max_actions : int
        The config's limits.
    named : bool, default False
        The service has a feature schema: a JSON decide may name its features
        (:mod:`~glmbandits.service.named_body`).
    """

    def __init__(self, app: ASGIApp, service: Any, *, keys: KeyChecker, metrics: Metrics,
                 max_body_bytes: int, n_features: int, max_actions: int,
                 named: bool = False) -> None:
        self.app = app
        self.service = service
        self.keys = keys
        self.metrics = metrics
        self.limit = max_body_bytes
        self.n_features = n_features
        self.max_actions = max_actions
        self.named = named
        self._routes: dict[str, tuple[str, Callable[[Scope, Receive], Awaitable[Any]]]] = {
            "/v1/decide": ("decide", self._decide), "/v1/reward": ("reward", self._reward)}

    @property
    def state(self) -> Any:
        """The Starlette app's ``state`` (``service``, ``metrics``)."""
        return self.app.state  # type: ignore[attr-defined]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = self._routes.get(_route_path(scope)) if scope["type"] == "http" else None
        if route is None:
            await self.app(scope, receive, send)
            return
        name, handler = route
        if scope["method"] != "POST":
            await self._send(send, 405, refusal_body(
                405, f"{scope['method']} {scope['path']}: Method Not Allowed"),
                [(b"allow", b"POST")])
            return
        started = time.perf_counter()
        try:
            authorize(self.keys, _header(scope, b"authorization"))
            answer = await handler(scope, receive)
        except ServiceError as error:
            status, body, extra = error_body(error)
        except _Disconnected:
            return
        except Exception:  # a bug: logged with its traceback, answered 500
            logger.exception("glmbandits serve: %s %s failed", scope["method"], scope["path"],
                             extra={"method": scope["method"], "path": scope["path"],
                                    "status": 500})
            status, body, extra = 500, refusal_body(
                500, f"POST {scope['path']}: the service failed on this request (see its "
                "log)"), []
        else:
            status, body, extra = 200, msgspec.json.encode(answer), []
        self.metrics.observe(name, status, time.perf_counter() - started)
        await self._send(send, status, body, extra)

    @staticmethod
    async def _send(send: Send, status: int, body: bytes,
                    extra: list[tuple[bytes, bytes]]) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [*_JSON_HEADERS, (b"content-length", str(len(body)).encode()),
                                *extra]})
        await send({"type": "http.response.body", "body": body})

    async def _body(self, scope: Scope, receive: Receive) -> bytes:
        """The request body, refused (413) as soon as it is known to pass the limit."""
        limit = self.limit
        length = _header(scope, b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise TooLarge(f"the body has {length} bytes, above the limit max_body_bytes = "
                           f"{limit}")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise TooLarge(f"the body has more than max_body_bytes = {limit} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def _decide(self, scope: Scope, receive: Receive) -> dict[str, Any]:
        encoding = decide_encoding(_header(scope, b"content-type"))
        body = await self._body(scope, receive)
        query = parse_query(scope["query_string"])
        parsed = parse_decide_body(encoding, body, query, self.n_features, self.max_actions,
                                   named=self.named)
        if isinstance(parsed, NamedDecide):
            named: dict[str, Any] = await self.service.decide_named_async(parsed)
            return named
        answer: dict[str, Any] = await self.service.decide_async(
            parsed.contexts, parsed.decision_id, parsed.excluded, parsed.default_action,
            parsed.explain)
        return answer

    async def _reward(self, scope: Scope, receive: Receive) -> dict[str, Any]:
        parsed = parse_reward(await self._body(scope, receive))
        answer: dict[str, Any] = await self.service.reward_async(parsed.decision_id,
                                                                 parsed.reward)
        return answer
