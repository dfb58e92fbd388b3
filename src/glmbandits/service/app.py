"""The ASGI app: routes only. Each parses and checks its request, then calls the core.

Every endpoint needs ``Authorization: Bearer KEY`` except ``GET /v1/health`` (liveness:
the process answers), ``GET /v1/ready`` (readiness: 200 once the model is restored and
the worker serves, 503 before and while stopping), ``GET /v1/openapi.json`` and the
dashboard's files (``/``, and each of
:data:`~glmbandits.dashboard.ASSET_FILES`; any other path is 404): the page and its
scripts hold no data; the page asks for the key and reads the API with it. A method a
route does not take is 405 with an ``Allow`` header. The order
of refusals is fixed: 401 (no or wrong key), 415 (a decide body neither JSON nor .npy),
413 (body above ``max_body_bytes``), 422 (malformed, naming the field), then the core's
404 (unknown decision id), 409 (a decision id reused) or 503 (the log could not be
written). A refused request writes nothing.

``POST /v1/decide`` and ``POST /v1/reward`` are served by
:class:`~glmbandits.service.hot_routes.HotRoutes` in front of this Starlette app
(plain ASGI: they carry the traffic); the other routes and the lifespan are here.
"""

from __future__ import annotations

import contextlib
import re
import time
from typing import Any, AsyncIterator, Iterator

import msgspec
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.staticfiles import StaticFiles

from .auth import KeyChecker, authorize
from .config import ServiceConfig
from ..dashboard import ASSET_FILES, asset_folder
from .core import DecisionService
from .errors import Invalid, ServiceError, TooLarge, error_body, refusal_body
from .evaluation import ShadowEvaluator
from .hot_routes import HotRoutes
from .metrics import Metrics, drift_body
from .named_body import check_action_id
from .named_operations import (action_operation, catalogue_operation,
                               delete_action_operation, put_action_operation)
from .schemas import ActionBody, decode_body
from .openapi import MAX_AFTER, MAX_EVENTS_PAGE, openapi_document

__all__ = ["create_app"]

_JSON = "application/json"
_DIGITS = re.compile(f"[0-9]{{1,{len(str(MAX_AFTER))}}}")


def _json(body: Any, status: int = 200) -> Response:
    return Response(msgspec.json.encode(body), status_code=status, media_type=_JSON)


def _error(error: ServiceError) -> Response:
    status, body, extra = error_body(error)
    return Response(body, status_code=status, media_type=_JSON,
                    headers={name.decode(): value.decode() for name, value in extra} or None)


def _asset_routes() -> list[Route]:
    """``GET /`` (the page) and one route per file of the dashboard (``ASSET_FILES``): only
    these are served, never another file of the package's folder (its ``__init__.py``...).
    Starlette's :class:`StaticFiles` answers them (content type, ETag, 304, HEAD)."""
    files = StaticFiles(directory=asset_folder())

    def route(path: str, name: str) -> Route:
        async def asset(request: Request) -> Response:
            return await files.get_response(name, request.scope)

        return Route(path, asset, methods=["GET"])

    return [route("/", "index.html"), *(route(f"/{name}", name) for name in ASSET_FILES)]


def create_app(config: ServiceConfig, service: DecisionService, *,
               environ: dict[str, str] | None = None) -> HotRoutes:
    """The app serving ``service`` (already started); stopping the app stops the service.

    Parameters
    ----------
    config : ServiceConfig
        Limits (body size, K, d) and the accepted key digests.
    service : DecisionService
        The started core; the app's shutdown stops it (which writes a snapshot).
    environ : dict, optional
        Where ``GLMBANDITS_API_KEYS`` is read (default ``os.environ``).
    """
    keys = KeyChecker(config.key_hashes(environ))
    metrics = Metrics()
    limit = config.max_body_bytes
    schema = msgspec.json.encode(openapi_document(config))
    evaluator = ShadowEvaluator(service.store, config.policy.family, config.decisions.mode)

    def endpoint(name: str, handler: Any, *, public: bool = False) -> Any:
        async def route(request: Request) -> Response:
            started = time.perf_counter()
            try:
                if not public:
                    authorize(keys, request.headers.get("authorization"))
                response: Response = await handler(request)
            except ServiceError as error:
                response = _error(error)
            metrics.observe(name, response.status_code, time.perf_counter() - started)
            return response

        return route

    async def health(request: Request) -> Response:
        if not service.running and not service.restoring:  # live while restoring
            return _json({"status": "stopping"}, 503)
        return _json({"status": "ok"})

    async def ready(request: Request) -> Response:
        if service.ready:
            return _json({"status": "ready"})
        return _json({"status": "stopping" if service.stopping else "restoring"}, 503)

    async def model(request: Request) -> Response:
        return _json(await service.call_async(service.model_info_operation()))

    async def prometheus(request: Request) -> Response:
        drift = None if config.drift is None else await service.call_async(
            lambda: drift_body(service.policy))  # on the worker: one consistent status
        text = metrics.render(service.totals(), service.pending_count(),
                              service.commit_counts(), drift)
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    def _query_int(request: Request, name: str, default: int | None) -> int | None:
        text = request.query_params.get(name)
        if text is None:
            return default
        if not _DIGITS.fullmatch(text):  # ASCII digits only ("²".isdigit() is True)
            raise Invalid(f"{name} must be an integer from 0 to {MAX_AFTER}, got "
                          f"{text[:30]!r}", name)
        return int(text)

    async def events(request: Request) -> Response:
        after = _query_int(request, "after", 0)
        limit_rows = _query_int(request, "limit", MAX_EVENTS_PAGE)
        if limit_rows is not None and limit_rows > MAX_EVENTS_PAGE:
            raise Invalid(f"limit must be at most {MAX_EVENTS_PAGE} events a page (page on "
                          f"with after = the last seq), got {limit_rows}", "limit")

        def lines() -> Iterator[bytes]:
            for event in service.store.events(after=after or 0, limit=limit_rows):
                yield msgspec.json.encode(event.to_json()) + b"\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    async def evaluation(request: Request) -> Response:
        # reads the log through the store's reader connections, in a worker thread of
        # the event loop's pool: never on the policy's thread (see ShadowEvaluator)
        return _json(await run_in_threadpool(evaluator.evaluate))

    async def openapi(request: Request) -> Response:
        return Response(schema, media_type=_JSON)

    def _action_id(request: Request) -> str:
        action_id: str = request.path_params["action_id"]
        check_action_id(action_id, "action_id")
        return action_id

    async def list_actions(request: Request) -> Response:
        return _json(await service.call_async(catalogue_operation(service)))

    async def one_action(request: Request) -> Response:
        action_id = _action_id(request)
        if request.method == "GET":
            return _json(await service.call_async(action_operation(service, action_id)))
        if request.method == "DELETE":
            return _json(await service.call_async(delete_action_operation(service, action_id)))
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise TooLarge(f"the body has {length} bytes, above the limit max_body_bytes = "
                           f"{limit}")
        body = await request.body()
        if len(body) > limit:
            raise TooLarge(f"the body has more than max_body_bytes = {limit} bytes")
        put = decode_body(body, ActionBody)
        answer = await service.call_async(put_action_operation(service, action_id,
                                                               put.features))
        return _json(answer, 201 if answer["status"] == "created" else 200)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        service.stop(snapshot=True)

    routes = [
        Route("/v1/health", endpoint("health", health, public=True), methods=["GET"]),
        Route("/v1/ready", endpoint("ready", ready, public=True), methods=["GET"]),
        Route("/v1/model", endpoint("model", model), methods=["GET"]),
        Route("/v1/events", endpoint("events", events), methods=["GET"]),
        Route("/metrics", endpoint("metrics", prometheus), methods=["GET"]),
        Route("/v1/evaluation", endpoint("evaluation", evaluation), methods=["GET"]),
        Route("/v1/openapi.json", endpoint("openapi", openapi, public=True), methods=["GET"]),
        Route("/v1/actions", endpoint("actions", list_actions), methods=["GET"]),
        Route("/v1/actions/{action_id:path}", endpoint("action", one_action),
              methods=["GET", "PUT", "DELETE"]),
        # the dashboard (GET /): its static files only (no data, so no key)
        *_asset_routes(),
    ]

    async def http_error(request: Request, error: Exception) -> Response:
        status = getattr(error, "status_code", 500)
        detail = getattr(error, "detail", "") or "error"
        response = Response(refusal_body(status, f"{request.method} {request.url.path}: "
                                         f"{detail}", error=str(detail).lower()),
                            status_code=status, media_type=_JSON)
        response.headers.update(getattr(error, "headers", None) or {})  # a 405's Allow
        return response

    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: http_error})
    app.state.service = service
    app.state.metrics = metrics
    return HotRoutes(app, service, keys=keys, metrics=metrics, max_body_bytes=limit,
                     n_features=config.policy.n_features,
                     max_actions=config.decisions.max_actions,
                     named=config.features is not None)
