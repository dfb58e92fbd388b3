"""Fingerprints of decide requests: a retry must repeat its request exactly.

The retry rule and its fingerprints live in :mod:`glmbandits.policies.decisions` (the
decision protocol's one home); this module keeps the names importable from here.
"""

from __future__ import annotations

from .decisions import digest_matches, request_digest

__all__ = ["request_digest", "digest_matches"]
