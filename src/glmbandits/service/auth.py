"""API keys: ``Authorization: Bearer KEY`` checked in constant time against SHA-256 digests.

The service holds only digests (from the config, and of the keys in
``GLMBANDITS_API_KEYS``, hashed at start); a presented key is hashed and
compared with every digest by :func:`hmac.compare_digest`, all of them, so the
time taken says nothing about which digest or how much of it matched. Keys are
never logged or stored.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Iterable

from .errors import Unauthorized

__all__ = ["KeyChecker", "authorize"]


class KeyChecker:
    """Accepts the keys whose SHA-256 digest is one of ``digests``.

    Examples
    --------
    >>> from glmbandits.service.config import hash_key
    >>> checker = KeyChecker([hash_key("s3cret")])
    >>> checker.check("Bearer s3cret"), checker.check("Bearer nope"), checker.check(None)
    (True, False, False)
    """

    def __init__(self, digests: Iterable[str]) -> None:
        self._digests = [bytes.fromhex(d) for d in digests]
        if not self._digests:
            raise ValueError("KeyChecker: at least one API key is needed (config [auth] "
                             "api_key_sha256 or GLMBANDITS_API_KEYS), got none")

    def check(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header value carries an accepted key."""
        if not authorization:
            return False
        scheme, _, key = authorization.partition(" ")
        if scheme.lower() != "bearer" or not key:
            return False
        presented = hashlib.sha256(key.strip().encode("utf-8", "surrogatepass")).digest()
        matched = False
        for digest in self._digests:
            matched |= hmac.compare_digest(presented, digest)
        return matched


def authorize(keys: KeyChecker, authorization: str | None) -> None:
    """Refuse (401) a request whose ``Authorization`` header carries no accepted key."""
    if not keys.check(authorization):
        raise Unauthorized("a valid API key is needed: send 'Authorization: Bearer KEY'")
