"""Snapshots of a served policy: bytes that restore it bit for bit.

The preferred format is the library's model file (``glmbandits.persistence``
``save``/``load``: a checksummed zip that cannot run code). Where that format
cannot hold a policy's state yet (pending decisions are not in its allow-list
on every branch), the snapshot falls back to a pickle. A pickle runs code when
loaded, so it is only ever read from the service's own store, whose integrity
the service already relies on (it replays that store's events), and each
snapshot is checked against the SHA-256 stored with it.
"""

from __future__ import annotations

import io
import os
import pickle
import tempfile
from typing import Any

__all__ = ["encode_snapshot", "decode_snapshot"]

_MODEL_FILE = b"GLMBSNAP model-file\n"
_PICKLE = b"GLMBSNAP pickle\n"


def _save_model_file(policy: Any) -> bytes | None:
    try:
        from ..persistence import load, save  # noqa: F401
    except ImportError:
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "snapshot.glmb")
        try:
            save(policy, path)
        except TypeError:  # the format cannot hold this state
            return None
        with open(path, "rb") as handle:
            return handle.read()


def encode_snapshot(policy: Any) -> bytes:
    """The snapshot of ``policy`` (a header naming the format, then the payload)."""
    data = _save_model_file(policy)
    if data is not None:
        return _MODEL_FILE + data
    return _PICKLE + pickle.dumps(policy, protocol=pickle.HIGHEST_PROTOCOL)


def decode_snapshot(data: bytes) -> Any:
    """The policy a snapshot of :func:`encode_snapshot` holds."""
    if data.startswith(_MODEL_FILE):
        from ..persistence import load

        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "snapshot.glmb")
            with open(path, "wb") as handle:
                handle.write(data[len(_MODEL_FILE):])
            return load(path)
    if data.startswith(_PICKLE):
        return pickle.load(io.BytesIO(data[len(_PICKLE):]))
    raise ValueError("decode_snapshot: data is not a glmbandits service snapshot (unknown "
                     f"header {data[:24]!r})")
