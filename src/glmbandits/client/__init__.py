"""A Python client of the decision service (``glmbandits serve``), sync and async.

``pip install "glmbandits[client]"`` (httpx, imported only here). :class:`Client` and
:class:`AsyncClient` send decide, reward and model requests, read the answers into
typed results (:class:`Decision`, :class:`RewardResult`, :class:`Model`), raise one
exception class per refusal (:class:`ClientError` and its subclasses, carrying the
server's message and field) and retry what is safe to retry (:class:`RetryPolicy`).
The routes and fields they use are checked against the service's OpenAPI document by
the test suite. With a service whose config has a ``[features]`` schema, ``decide``
also takes named features (``context=`` with ``actions=`` or ``action_ids=``) and
``client.actions`` keeps the action catalogue (``put``, ``get``, ``list``, ``delete``:
:class:`Actions`, :class:`AsyncActions`, :class:`ActionResult`, :class:`Catalogue`).

Examples
--------
>>> from glmbandits.client import Client, RetryPolicy
>>> client = Client("http://127.0.0.1:8000", api_key="KEY",
...                 retry=RetryPolicy(max_retries=5, seed=0))
>>> client.headers["Authorization"]
'Bearer KEY'
>>> client.close()
"""

from __future__ import annotations

from .aio import AsyncActions, AsyncClient
from .errors import (ClientError, Conflict, ConnectionFailed, InvalidRequest, NotFound,
                     PayloadTooLarge, ServerError, ServiceUnavailable, TooManyRequests,
                     Unauthorized, UnsupportedMediaType)
from .models import ActionResult, Catalogue, Decision, Model, RewardResult
from .retry import RetryPolicy
from .sync import Actions, Client

__all__ = ["Client", "AsyncClient", "RetryPolicy", "Decision", "RewardResult", "Model",
           "Actions", "AsyncActions", "ActionResult", "Catalogue",
           "ClientError", "Unauthorized", "NotFound", "Conflict", "InvalidRequest",
           "PayloadTooLarge", "UnsupportedMediaType", "TooManyRequests",
           "ServiceUnavailable", "ServerError", "ConnectionFailed"]
