"""Reading a model file within bounds: every size is checked before it is allocated.

A model file comes from outside, so ``load`` trusts none of its sizes: a 0.5 MB
file could otherwise inflate to gigabytes (a compression bomb) or announce an
array of terabytes. The limits, all in one place:

* ``max_bytes`` (``load``'s parameter, default :data:`DEFAULT_MAX_BYTES`, 4 GiB)
  bounds the file, the members inflated (together) and the arrays (together);
* a compressed member inflates to at most :data:`MAX_INFLATE_RATIO` times its
  compressed size (beyond :data:`INFLATE_FLOOR`), checked on its header and
  again on the bytes as they are streamed out (:func:`inflate`);
* a JSON member holds at most ``max(JSON_MIN_CONTAINERS, max_bytes //
  JSON_BYTES_PER_CONTAINER)`` arrays and objects, counted before parsing;
* at most :data:`MAX_ARRAYS` arrays; the zip directories' entry counts are read
  before :mod:`zipfile` parses a directory of any length;
* ints of at most :data:`~._nodes.MAX_INT_BITS` bits and SeedSequences of bounded
  cost (:mod:`._nodes`, checked by the decoder), and the policy's ``n_features``
  (:mod:`.checks`).

Examples
--------
>>> check_max_bytes(None) == DEFAULT_MAX_BYTES, check_max_bytes(1 << 20)
(True, 1048576)
>>> zip_entry_count(b"PK\\x05\\x06" + bytes(4) + (3).to_bytes(2, "little") * 2 + bytes(10), 0)
3
"""

from __future__ import annotations

import math
import os
import stat
import zipfile
from typing import Any

from .._validation import check_int
from ..exceptions import ModelFileError

__all__ = ["DEFAULT_MAX_BYTES", "MAX_INFLATE_RATIO", "INFLATE_FLOOR", "MAX_ARRAYS",
           "JSON_BYTES_PER_CONTAINER", "JSON_MIN_CONTAINERS", "check_max_bytes", "refuse",
           "read_regular_file", "zip_entry_count", "inflate", "check_json_size"]

#: What ``load`` reads at most by default: the file, its members inflated, its arrays (4 GiB).
#: A policy keeping its samples grows by 8·(d + 1) bytes a round (``docs/persistence.md``):
#: with d = 1000, about 500,000 rounds.
DEFAULT_MAX_BYTES = 4 << 30
#: A compressed member may inflate to at most this many times its compressed size (beyond
#: :data:`INFLATE_FLOOR`). Real states stay far below (about 30 for pending decisions, 105 for
#: 20,000 ids of 256 characters that differ only at their end); DEFLATE reaches 1,032.
MAX_INFLATE_RATIO = 250
#: Members smaller than this (1 MiB) inflated are never refused for their ratio.
INFLATE_FLOOR = 1 << 20
#: The most arrays a model file holds (the number of members a zip lists without Zip64).
MAX_ARRAYS = 65_535
#: A JSON member may hold at most ``max(JSON_MIN_CONTAINERS, max_bytes //
#: JSON_BYTES_PER_CONTAINER)`` arrays and objects (2,097,152 at the default max_bytes): each
#: costs Python about 60 to 250 bytes once parsed.
JSON_BYTES_PER_CONTAINER = 2048
JSON_MIN_CONTAINERS = 65_536
_EOCD_SIZE = 22  # the end-of-central-directory record of a zip, without its comment
_CHUNK = 1 << 20


def check_max_bytes(value: Any, owner: str = "glmbandits.load") -> int:
    """``max_bytes`` as an int >= 1 (``None``: :data:`DEFAULT_MAX_BYTES`)."""
    if value is None:
        return DEFAULT_MAX_BYTES
    return check_int(value, owner, "max_bytes", minimum=1)


def refuse(path: Any, reason: str) -> ModelFileError:
    """The error of ``load`` for the file ``path``: it names the file and the reason."""
    return ModelFileError(f"glmbandits.load: {os.fspath(path)} cannot be loaded: {reason}")


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "fifo"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "special file"


def read_regular_file(path: Any, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them.

    A folder, FIFO, socket or device is refused from its ``stat``, without reading
    (opening a FIFO would wait for a writer); the file is opened non-blocking and
    checked again, so a path swapped in between is refused too. A missing path
    raises :class:`FileNotFoundError`.
    """
    name = os.fspath(path)
    mode = os.stat(name).st_mode
    if not stat.S_ISREG(mode):
        raise refuse(path, f"it is not a regular file (a {_file_kind(mode)})")
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
    with os.fdopen(os.open(name, flags), "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise refuse(path, f"it is not a regular file (a {_file_kind(status.st_mode)})")
        if status.st_size > max_bytes:
            raise refuse(path, f"the file has {status.st_size} bytes, more than max_bytes = "
                         f"{max_bytes}")
        data = handle.read(status.st_size + 1)  # + 1: a file that grew since is noticed
    if len(data) > max_bytes:
        raise refuse(path, f"the file has more than max_bytes = {max_bytes} bytes")
    return data


def zip_entry_count(data: bytes | bytearray, comment_length: int) -> int | None:
    """The entry count of the zip ``data`` ending in a comment of ``comment_length`` bytes.

    Read from the end-of-central-directory record, so that a directory is counted
    before :mod:`zipfile` parses it; None when the record is not where it should be
    (or spans disks).
    """
    start = len(data) - comment_length - _EOCD_SIZE
    if start < 0 or data[start:start + 4] != b"PK\x05\x06":
        return None
    on_disk = int.from_bytes(data[start + 8:start + 10], "little")
    total = int.from_bytes(data[start + 10:start + 12], "little")
    return total if on_disk == total else None


def inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo, methods: tuple[int, ...],
            budget: int, max_bytes: int, path: Any) -> bytes | bytearray:
    """A member's bytes, inflated as a stream that stops at its limit (headers not trusted).

    ``methods`` are the zip methods the member may use; ``budget`` is what is left of
    ``max_bytes`` after the members before it.
    """
    name = info.filename
    if info.compress_type not in methods:
        if methods == (zipfile.ZIP_STORED,):
            raise refuse(path, f"{name} must be stored uncompressed (as glmbandits writes it), "
                         f"got zip method {info.compress_type}")
        raise refuse(path, f"{name} must be stored or deflated, got zip method "
                     f"{info.compress_type}")
    ratio_cap = (max(MAX_INFLATE_RATIO * info.compress_size, INFLATE_FLOOR)
                 if info.compress_type != zipfile.ZIP_STORED else math.inf)
    if info.file_size > min(budget, ratio_cap):  # refused before inflating anything
        if info.file_size > budget:
            raise refuse(path, f"{name} inflates to {info.file_size} bytes, more than max_bytes"
                         f" = {max_bytes}" + (f" with the {max_bytes - budget} bytes before it"
                                              if budget < max_bytes else ""))
        raise refuse(path, f"{name} inflates to {info.file_size} bytes from "
                     f"{info.compress_size} compressed bytes, more than {MAX_INFLATE_RATIO} "
                     "times its compressed size (a compression bomb?)")
    if info.compress_type == zipfile.ZIP_STORED:
        with archive.open(info) as member:  # one read: bytes that a BytesIO shares, no copy
            stored = member.read(info.file_size + 1)
        if len(stored) != info.file_size:
            raise refuse(path, f"{name} holds {len(stored)} bytes, its header declares "
                         f"{info.file_size}")
        return stored
    content = bytearray(info.file_size)
    filled = 0
    with archive.open(info) as member, memoryview(content) as view:
        while True:  # the bytes themselves: never more than the declared size (within the cap)
            chunk = member.read(min(_CHUNK, info.file_size - filled + 1))
            if not chunk:
                break
            if filled + len(chunk) > info.file_size:
                raise refuse(path, f"{name} inflates to more than the {info.file_size} bytes "
                             "its header declares")
            view[filled:filled + len(chunk)] = chunk
            filled += len(chunk)
    if filled != info.file_size:
        raise refuse(path, f"{name} inflates to {filled} bytes, its header declares "
                     f"{info.file_size}")
    return content


def check_json_size(path: Any, name: str, data: bytes | bytearray, max_bytes: int) -> None:
    """Refuse JSON with more arrays and objects than ``max_bytes`` allows, before parsing it.

    Counting ``[`` and ``{`` bytes (those inside strings too) bounds the containers the
    parser would build; nesting depth is bounded by the parser and the decoder.
    """
    limit = max(JSON_MIN_CONTAINERS, max_bytes // JSON_BYTES_PER_CONTAINER)
    count = data.count(b"[") + data.count(b"{")
    if count > limit:
        raise refuse(path, f"{name} holds {count} JSON arrays and objects, more than {limit} "
                     f"(the larger of {JSON_MIN_CONTAINERS} and max_bytes // "
                     f"{JSON_BYTES_PER_CONTAINER}, max_bytes = {max_bytes})")
