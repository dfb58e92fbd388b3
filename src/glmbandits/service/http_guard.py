"""What a client may send before the app sees its request: header size and count, and how
long a request's head and body may take to arrive.

uvicorn's httptools protocol enforces none of it. httptools (llhttp) hands over a header
value of any length, joined piece by piece in Python bytes: one 60 MB header held the
event loop for seconds (every other client waited) and took about 120 MB. And a connection
that sends its headers a byte a second, or announces a body it never sends, stays open for
ever: uvicorn times out only idle keep-alive connections, after a response. uvicorn's
``h11_max_incomplete_event_size`` bounds the head for its h11 protocol only, and nothing in
either protocol times out a slow head or body, so the limits live here, at the narrowest
place: :func:`guarded_protocol` makes a subclass of uvicorn's ``HttpToolsProtocol`` that,
per connection,

* counts the bytes of each request's head (request line and headers) **before** the parser
  sees them, and refuses a head above ``max_header_bytes``, or one with more than
  ``max_headers`` header lines, with ``431`` and a closed connection (so at most one read
  of the socket, 256 KiB, is ever held beyond the limit);
* closes a connection whose request head is not complete ``header_timeout`` seconds after
  its first byte (after the connection opened, for the first request), or whose body is not
  complete ``body_timeout`` seconds after the end of its head, answering ``408`` when no
  answer to that request has started. An idle keep-alive connection between requests is
  closed by uvicorn after ``timeout_keep_alive`` (5 s).

The refusals are JSON ``{"error", "detail", "field"}`` like every other refusal of the
service; ``field`` is ``headers`` or ``body``. uvicorn's own 400 for a malformed request
is unchanged.
"""

from __future__ import annotations

import asyncio
import http
from typing import Any

from .errors import refusal_body

__all__ = ["guarded_protocol", "refusal"]


def refusal(status: int, detail: str, field: str) -> bytes:
    """A complete HTTP/1.1 response closing the connection: ``status`` with the service's JSON
    error body.

    Examples
    --------
    >>> refusal(431, "too many headers", "headers").split(b"\\r\\n")[0]
    b'HTTP/1.1 431 Request Header Fields Too Large'
    """
    body = refusal_body(status, detail, field)
    return (f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode("ascii") + body


class _Refused(Exception):
    """Raised in a parser callback to stop parsing a request already refused."""


def guarded_protocol(*, max_header_bytes: int, max_headers: int, header_timeout: float,
                     body_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with these limits (pass it as ``uvicorn.Config(http=...)``).

    Parameters
    ----------
    max_header_bytes : int
        The most bytes of a request line and its headers, the blank line included.
    max_headers : int
        The most header lines of one request.
    header_timeout : float
        Seconds a request's head may take, from its first byte (from the connection's
        opening, for the first request).
    body_timeout : float
        Seconds its body may take, from the end of its head.
    """
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._reading_head = True
            self._head_bytes = 0
            self._head_tail = b""  # the last 3 bytes counted: a terminator may straddle reads
            self._header_lines = 0
            self._timer: asyncio.TimerHandle | None = None
            self._refused = False

        # -- the clock ---------------------------------------------------------------
        def _arm(self, seconds: float) -> None:
            self._disarm()
            self._timer = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expired(self) -> None:
            self._timer = None
            if self.transport.is_closing():
                return
            cycle = self.cycle
            if self._reading_head:
                detail, field = (f"the request line and headers did not arrive within "
                                 f"header_timeout = {header_timeout:g} s"), "headers"
                answer = cycle is None or cycle.response_complete
            else:
                detail, field = (f"the request body did not arrive within body_timeout = "
                                 f"{body_timeout:g} s of its headers"), "body"
                answer = cycle is not None and not cycle.response_started and not self.pipeline
            if answer:
                self.transport.write(refusal(408, detail, field))
            self.transport.close()

        # -- the head's size ---------------------------------------------------------
        def _head_fits(self, data: bytes) -> bool:
            """Count ``data`` as head bytes; False if the head passes ``max_header_bytes``."""
            budget = max_header_bytes - self._head_bytes
            if len(data) <= budget:
                self._head_bytes += len(data)
                self._head_tail = (self._head_tail + data[-3:])[-3:]
                return True
            # more than the budget arrived: fine only if the head ends within it
            window = self._head_tail + data[:max(budget, 0)]
            return b"\r\n\r\n" in window or b"\n\n" in window

        def _refuse(self, detail: str) -> None:
            self._refused = True
            self._disarm()
            if not self.transport.is_closing():
                self.transport.write(refusal(431, detail, "headers"))
                self.transport.close()

        # -- uvicorn's protocol ------------------------------------------------------
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm(header_timeout)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            if self._reading_head:
                if self._timer is None:  # the first byte of a request after a keep-alive wait
                    self._arm(header_timeout)
                if not self._head_fits(data):
                    self._refuse(f"the request line and headers pass max_header_bytes = "
                                 f"{max_header_bytes} bytes")
                    return
            super().data_received(data)

        def send_400_response(self, msg: str) -> None:
            if not self._refused:  # a 431 already went out (a callback stopped the parser)
                super().send_400_response(msg)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._header_lines += 1
            if self._header_lines > max_headers:
                self._refuse(f"the request has more than max_headers = {max_headers} header "
                             "lines")
                raise _Refused()
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self._reading_head = False
            self._head_bytes, self._head_tail, self._header_lines = 0, b"", 0
            self._arm(body_timeout)
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._disarm()
            self._reading_head = True  # the next byte starts the next request

    return GuardedHttpToolsProtocol
