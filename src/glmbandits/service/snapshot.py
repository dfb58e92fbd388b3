"""Snapshots of a served policy: bytes that restore it bit for bit.

A snapshot is the library's model file (:mod:`glmbandits.persistence`: a
versioned, checksummed zip of a JSON tree and plain arrays that cannot run code
when loaded), which holds the policy's pending decisions and generator state
too, behind a one-line header naming the format. The store keeps the SHA-256 of
each snapshot beside it as well.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from ..persistence import load, save

__all__ = ["encode_snapshot", "decode_snapshot"]

_MODEL_FILE = b"GLMBSNAP model-file\n"


def encode_snapshot(policy: Any) -> bytes:
    """The snapshot of ``policy`` (a header naming the format, then the model file)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "snapshot.glmb")
        save(policy, path)
        with open(path, "rb") as handle:
            return _MODEL_FILE + handle.read()


def decode_snapshot(data: bytes) -> Any:
    """The policy a snapshot of :func:`encode_snapshot` holds (``ModelFileError`` if damaged)."""
    if not data.startswith(_MODEL_FILE):
        raise ValueError("decode_snapshot: data is not a glmbandits service snapshot (unknown "
                         f"header {data[:24]!r}; expected {_MODEL_FILE!r})")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "snapshot.glmb")
        with open(path, "wb") as handle:
            handle.write(data[len(_MODEL_FILE):])
        return load(path)
