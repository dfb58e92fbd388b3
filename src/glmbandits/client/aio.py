"""The asyncio client: :class:`AsyncClient` (httpx; the ``client`` extra)."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable, Mapping, Sequence

from ._base import ClientBase
from .models import Decision, Model, RewardResult, from_json
from .retry import RetryPolicy

__all__ = ["AsyncClient"]


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

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def _call(self, operation: str, content: bytes | None = None) -> Any:
        method, path = self._route(operation)
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

    async def decide(self, contexts: Any, decision_id: str | None = None, *,
                     excluded: Sequence[int] | None = None,
                     default_action: int | None = None, explain: bool = False) -> Decision:
        """As :meth:`glmbandits.client.Client.decide`."""
        content = self._decide_request(contexts, decision_id, excluded, default_action,
                                       explain)
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
