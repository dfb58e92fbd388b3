"""The asyncio client: :class:`AsyncClient` (httpx; the ``client`` extra)."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable, Mapping, Sequence

from ._base import ClientBase
from .models import (ActionResult, Catalogue, Decision, Model, RewardResult, from_json,
                     read_catalogue)
from .retry import RetryPolicy

__all__ = ["AsyncClient", "AsyncActions"]


class AsyncClient(ClientBase):
    """The asyncio form of :class:`~glmbandits.client.Client`: the same parameters, calls
    and retries, each call awaited (``sleep`` is a coroutine function, ``asyncio.sleep``).

    Examples
    --------
    >>> import asyncio, httpx
    >>> def service(request):
    ...     return httpx.Response(200, json={"decision_id": "d1", "status": "learned",
    ...                                      "model_version": 5})
    >>> async def main():
    ...     async with AsyncClient("http://service",
    ...                            transport=httpx.MockTransport(service)) as client:
    ...         return await client.reward("d1", 1.0)
    >>> asyncio.run(main())
    RewardResult(decision_id='d1', status='learned', model_version=5)

    References
    ----------
    As :class:`~glmbandits.client.Client`.
    """

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 10.0,
                 retry: RetryPolicy | None = None, headers: Mapping[str, str] | None = None,
                 transport: Any = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        import httpx  # the client extra

        super().__init__(base_url, api_key=api_key, timeout=timeout, retry=retry,
                         headers=headers, clock=clock)
        self._sleep = sleep
        self._httpx = httpx
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self.headers,
                                       timeout=self.timeout, transport=transport)
        #: the action catalogue, awaited (:class:`AsyncActions`)
        self.actions = AsyncActions(self)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def _call(self, operation: str, content: bytes | None = None,
                    action_id: str | None = None) -> Any:
        method, path = self._route(operation, action_id)
        started, retry = self._clock(), 0
        while True:
            try:
                outcome: Any = await self._http.request(method, path, content=content)
            except self._httpx.UnsupportedProtocol:
                raise
            except self._httpx.TransportError as error:
                outcome = error
            done, value = self._settle(outcome, operation, retry, started)
            if done:
                return value
            await self._sleep(value)
            retry += 1

    async def decide(self, contexts: Any = None, decision_id: str | None = None, *,
                     excluded: Sequence[int] | None = None,
                     default_action: int | None = None, explain: bool = False,
                     context: Mapping[str, Any] | None = None, actions: Any = None,
                     action_ids: Sequence[str] | None = None,
                     excluded_ids: Sequence[str] | None = None,
                     default_action_id: str | None = None) -> Decision:
        """As :meth:`glmbandits.client.Client.decide`."""
        content = self._decide_request(contexts, decision_id, excluded, default_action,
                                       explain, {"context": context, "actions": actions,
                                                 "action_ids": action_ids,
                                                 "excluded_ids": excluded_ids,
                                                 "default_action_id": default_action_id})
        return from_json(Decision,  # type: ignore[no-any-return]
                         await self._call("decide", content))

    async def reward(self, decision_id: str, value: float) -> RewardResult:
        """As :meth:`glmbandits.client.Client.reward`."""
        return from_json(RewardResult,  # type: ignore[no-any-return]
                         await self._call("reward", self._reward_request(decision_id, value)))

    async def model(self) -> Model:
        """As :meth:`glmbandits.client.Client.model`."""
        return from_json(Model, await self._call("model"))  # type: ignore[no-any-return]

    async def health(self) -> str:
        """As :meth:`glmbandits.client.Client.health`."""
        return str((await self._call("health"))["status"])

    async def ready(self) -> bool:
        """As :meth:`glmbandits.client.Client.ready`."""
        method, path = self._route("ready")
        try:
            response = await self._http.request(method, path)
        except self._httpx.TransportError:
            return False
        return self._is_ready(response.status_code, response.text)


class AsyncActions:
    """The action catalogue of :class:`AsyncClient` (``client.actions``): the calls of
    :class:`~glmbandits.client.Actions`, awaited.

    Examples
    --------
    >>> import asyncio, httpx
    >>> def service(request):
    ...     return httpx.Response(200, json={"actions": [{"id": "a1", "features": {}}],
    ...                                      "retired": ["a0"]})
    >>> async def main():
    ...     async with AsyncClient("http://service",
    ...                            transport=httpx.MockTransport(service)) as client:
    ...         return await client.actions.list()
    >>> asyncio.run(main()).retired
    ('a0',)

    References
    ----------
    As :class:`~glmbandits.client.Actions`.
    """

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def put(self, action_id: str, features: Mapping[str, Any]) -> ActionResult:
        """As :meth:`glmbandits.client.Actions.put`."""
        client = self._client
        client._route("put_action", action_id)  # the id's kind, before the body's
        content = client._put_request(features)
        return from_json(ActionResult,  # type: ignore[no-any-return]
                         await client._call("put_action", content, action_id))

    async def get(self, action_id: str) -> ActionResult:
        """As :meth:`glmbandits.client.Actions.get`."""
        return from_json(ActionResult,  # type: ignore[no-any-return]
                         await self._client._call("get_action", action_id=action_id))

    async def list(self) -> Catalogue:
        """As :meth:`glmbandits.client.Actions.list`."""
        return read_catalogue(await self._client._call("list_actions"))

    async def delete(self, action_id: str) -> ActionResult:
        """As :meth:`glmbandits.client.Actions.delete`."""
        return from_json(ActionResult,  # type: ignore[no-any-return]
                         await self._client._call("delete_action", action_id=action_id))
