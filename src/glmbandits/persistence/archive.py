"""The model file: one zip of ``manifest.json``, ``state.json`` and ``arrays.npz``, written atomically.

Layout (format ``glmbandits-model``, :data:`FORMAT_VERSION` 1)::

    manifest.json   format, format_version, library_version, created (UTC),
                    policy {class, params}, state {member, sha256},
                    arrays [{name, shape, dtype, sha256}]      (DEFLATED)
    state.json      the codec's tree (:mod:`.codec`)            (DEFLATED)
    arrays.npz      one .npy member per array, read with allow_pickle=False (STORED)
    zip comment     64 hex digits: SHA-256 of every byte of the file before it

The trailing digest covers every byte of the file (headers, directory, data),
so a flipped bit or a truncation anywhere is detected before anything is
parsed; the zip CRCs and the per-member and per-array SHA-256s name the damaged
part when a file was edited and re-signed. The file is still an ordinary zip
(``unzip -l model.glmb`` lists it).

Reading bounds every size before allocating it (``max_bytes``, default
:data:`DEFAULT_MAX_BYTES`): the file, each member as it inflates (streamed, and at
most :data:`MAX_INFLATE_RATIO` times its compressed size beyond
:data:`INFLATE_FLOOR`), the JSON (at most 65,536 arrays and objects, or
``max_bytes // 2048`` if more), the
number of arrays (:data:`MAX_ARRAYS`) and each array (its ``.npy`` header must
announce exactly the bytes stored after it; ``arrays.npz`` and its members are
stored, never compressed, as :func:`npz_bytes` writes them).

Examples
--------
>>> import numpy as np, tempfile, os
>>> arrays = {"a0": np.arange(3.0)}
>>> manifest = build_manifest("glmbandits.Example", {}, b"[]", arrays)
>>> data = pack(manifest, b"[]", npz_bytes(arrays))
>>> path = os.path.join(tempfile.mkdtemp(), "model.glmb")
>>> write_atomic(path, data).name
'model.glmb'
>>> manifest2, state, npz = unpack(path)
>>> manifest2 == manifest, state, load_arrays(npz, manifest2)["a0"].tolist()
(True, b'[]', [0.0, 1.0, 2.0])
"""

from __future__ import annotations

import datetime
import hashlib
import io
import math
import os
import stat
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .._version import __version__
from .._validation import check_int
from ..exceptions import ModelFileError
from .codec import check_dtype, dumps_json, loads_json

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "MEMBERS", "DEFAULT_MAX_BYTES", "MAX_INFLATE_RATIO",
           "INFLATE_FLOOR", "MAX_ARRAYS", "JSON_BYTES_PER_CONTAINER", "JSON_MIN_CONTAINERS",
           "check_max_bytes",
           "build_manifest", "npz_bytes", "pack", "write_atomic", "unpack", "check_manifest",
           "load_arrays", "array_sha256"]

FORMAT_NAME = "glmbandits-model"
#: The version of the file layout this glmbandits writes (and the newest it reads).
FORMAT_VERSION = 1
MEMBERS = ("manifest.json", "state.json", "arrays.npz")
_DIGEST_LENGTH = 64
#: The smallest possible zip is its 22-byte end-of-directory record.
_EOCD_SIZE = 22
_MIN_SIZE = _EOCD_SIZE + _DIGEST_LENGTH

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
#: How each member must be stored: the JSON members stored or deflated, the arrays stored.
_METHODS = {"manifest.json": (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED),
            "state.json": (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED),
            "arrays.npz": (zipfile.ZIP_STORED,)}
_CHUNK = 1 << 20


def check_max_bytes(value: Any, owner: str = "glmbandits.load") -> int:
    """``max_bytes`` as an int >= 1 (``None``: :data:`DEFAULT_MAX_BYTES`)."""
    if value is None:
        return DEFAULT_MAX_BYTES
    return check_int(value, owner, "max_bytes", minimum=1)


def array_sha256(array: np.ndarray) -> str:
    """SHA-256 of the array's C-contiguous bytes."""
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def build_manifest(class_name: str, params: Mapping[str, Any], state: bytes,
                   arrays: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The manifest of a model file (see the module docstring)."""
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "policy": {"class": class_name, "params": dict(params)},
        "state": {"member": "state.json", "sha256": hashlib.sha256(state).hexdigest()},
        "arrays": [{"name": name, "shape": list(array.shape), "dtype": array.dtype.str,
                    "sha256": array_sha256(array)} for name, array in arrays.items()],
    }


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """The arrays as an uncompressed ``.npz`` (no pickled members)."""
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    return buffer.getvalue()


def pack(manifest: Mapping[str, Any], state: bytes, npz: bytes) -> bytes:
    """The bytes of a model file, signed by its trailing SHA-256 (the zip comment)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.comment = b"0" * _DIGEST_LENGTH
        for name, data, method in (("manifest.json", dumps_json(manifest), zipfile.ZIP_DEFLATED),
                                   ("state.json", state, zipfile.ZIP_DEFLATED),
                                   ("arrays.npz", npz, zipfile.ZIP_STORED)):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    body = buffer.getvalue()[:-_DIGEST_LENGTH]
    return body + hashlib.sha256(body).hexdigest().encode("ascii")


def _fsync_directory(directory: str) -> None:
    """Make a rename durable; skipped where a folder cannot be opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new, never a mix.

    A temporary file in the same folder is written, flushed and fsynced, then
    renamed over ``path`` (``os.replace``, atomic on POSIX and Windows), and the
    folder is fsynced. On any error the temporary file is removed and ``path``
    is left as it was. A new file gets the permissions ``0o666`` minus the
    umask; a replaced one keeps its permissions.
    """
    target = Path(os.fspath(path))
    directory = os.path.dirname(os.path.abspath(target))
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    _fsync_directory(directory)
    return target


def _refuse(path: Any, reason: str) -> ModelFileError:
    return ModelFileError(f"glmbandits.load: {os.fspath(path)} cannot be loaded: {reason}")


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "fifo"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "special file"


def _read_file(path: Any, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them.

    A folder, FIFO, socket or device is refused from its ``stat``, without reading
    (opening a FIFO would wait for a writer); the file is opened non-blocking and checked
    again, so a path swapped in between is refused too.
    """
    name = os.fspath(path)
    mode = os.stat(name).st_mode  # FileNotFoundError for a missing path (documented)
    if not stat.S_ISREG(mode):
        raise _refuse(path, f"it is not a regular file (a {_file_kind(mode)})")
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
    descriptor = os.open(name, flags)
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise _refuse(path, f"it is not a regular file (a {_file_kind(status.st_mode)})")
        if status.st_size > max_bytes:
            raise _refuse(path, f"the file has {status.st_size} bytes, more than max_bytes = "
                          f"{max_bytes}")
        data = handle.read(status.st_size + 1)  # + 1: a file that grew since is noticed
    if len(data) > max_bytes:
        raise _refuse(path, f"the file has more than max_bytes = {max_bytes} bytes")
    return data


def _zip_entry_count(data: bytes | bytearray, comment_length: int) -> int | None:
    """The entry count of the end-of-central-directory record that ends ``data`` just before
    a comment of ``comment_length`` bytes (None if that record is not there)."""
    start = len(data) - comment_length - _EOCD_SIZE
    if start < 0 or data[start:start + 4] != b"PK\x05\x06":
        return None
    on_disk = int.from_bytes(data[start + 8:start + 10], "little")
    total = int.from_bytes(data[start + 10:start + 12], "little")
    return total if on_disk == total else None


def _inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int, max_bytes: int,
             path: Any) -> bytearray:
    """A member's bytes, inflated as a stream that stops at its limit (headers not trusted)."""
    name = info.filename
    if info.compress_type not in _METHODS[name]:
        if _METHODS[name] == (zipfile.ZIP_STORED,):
            raise _refuse(path, f"{name} must be stored uncompressed (as glmbandits writes it), "
                          f"got zip method {info.compress_type}")
        raise _refuse(path, f"{name} must be stored or deflated, got zip method "
                      f"{info.compress_type}")
    ratio_cap = (max(MAX_INFLATE_RATIO * info.compress_size, INFLATE_FLOOR)
                 if info.compress_type != zipfile.ZIP_STORED else math.inf)
    cap = min(budget, ratio_cap)
    if info.file_size > cap:  # the declared size, refused before inflating anything
        if info.file_size > budget:
            raise _refuse(path, f"{name} inflates to {info.file_size} bytes, more than max_bytes"
                          f" = {max_bytes}" + (f" with the {max_bytes - budget} bytes before it"
                                               if budget < max_bytes else ""))
        raise _refuse(path, f"{name} inflates to {info.file_size} bytes from "
                      f"{info.compress_size} compressed bytes, more than {MAX_INFLATE_RATIO} "
                      "times its compressed size (a compression bomb?)")
    content = bytearray(info.file_size)
    filled = 0
    with archive.open(info) as member, memoryview(content) as view:
        while True:  # the bytes themselves: never more than the declared size (within the cap)
            chunk = member.read(min(_CHUNK, info.file_size - filled + 1))
            if not chunk:
                break
            if filled + len(chunk) > info.file_size:
                raise _refuse(path, f"{name} inflates to more than the {info.file_size} bytes "
                              "its header declares")
            view[filled:filled + len(chunk)] = chunk
            filled += len(chunk)
    if filled != info.file_size:
        raise _refuse(path, f"{name} inflates to {filled} bytes, its header declares "
                      f"{info.file_size}")
    return content


def _check_json_size(path: Any, name: str, data: bytes | bytearray, max_bytes: int) -> None:
    """Refuse JSON with more arrays and objects than ``max_bytes`` allows, before parsing it.

    Counting ``[`` and ``{`` bytes (those inside strings too) bounds the containers the
    parser would build; nesting depth is bounded by the parser and the decoder.
    """
    limit = max(JSON_MIN_CONTAINERS, max_bytes // JSON_BYTES_PER_CONTAINER)
    count = data.count(b"[") + data.count(b"{")
    if count > limit:
        raise _refuse(path, f"{name} holds {count} JSON arrays and objects, more than {limit} "
                      f"(the larger of {JSON_MIN_CONTAINERS} and max_bytes // "
                      f"{JSON_BYTES_PER_CONTAINER}, max_bytes = {max_bytes})")


def unpack(path: str | os.PathLike[str], max_bytes: int | None = None
           ) -> tuple[dict[str, Any], bytearray, bytearray]:
    """Read and verify a model file: its manifest (checked), state bytes and npz bytes.

    Parameters
    ----------
    path : str or path-like
        The model file.
    max_bytes : int, optional
        The most bytes the file, and its members inflated together, may have (default
        :data:`DEFAULT_MAX_BYTES`); see the module docstring for the other bounds.

    Raises
    ------
    FileNotFoundError
        No such file.
    ModelFileError
        Not a regular file, not a model file, damaged, truncated, over a size bound, or of
        a newer or unknown format.
    """
    max_bytes = check_max_bytes(max_bytes)
    data = _read_file(path, max_bytes)
    if not data.startswith(b"PK\x03\x04"):
        raise _refuse(path, "it is not a zip archive, so not a glmbandits model file"
                      + (" (it is empty)" if not data else ""))
    digest = hashlib.sha256(data[:-_DIGEST_LENGTH]).hexdigest().encode("ascii")
    if len(data) < _MIN_SIZE or data[-_DIGEST_LENGTH:] != digest:
        raise _refuse(path, f"the file is damaged or truncated ({len(data)} bytes): the SHA-256 "
                      "of its contents does not match the one written at its end")
    count = _zip_entry_count(data, _DIGEST_LENGTH)
    if count is None or count > 2 * len(MEMBERS):  # before zipfile reads a directory of any size
        raise _refuse(path, f"it must hold exactly the members {list(MEMBERS)}, its zip directory "
                      + (f"lists {count} members" if count is not None else "cannot be read"))
    contents: dict[str, bytearray] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            missing = [name for name in MEMBERS if name not in names]
            if not missing and len(names) == len(MEMBERS):
                budget = max_bytes
                for name in MEMBERS:
                    contents[name] = _inflate(archive, archive.getinfo(name), budget, max_bytes,
                                              path)
                    budget -= len(contents[name])
    except ModelFileError:
        raise
    except Exception as error:  # BadZipFile (bad CRC, bad header), zlib.error, EOFError...
        raise _refuse(path, f"its zip structure is damaged ({error})") from None
    if missing or len(names) != len(MEMBERS):
        raise _refuse(path, f"it must hold exactly the members {list(MEMBERS)}, got {names}"
                      + (f" (missing {missing})" if missing else ""))
    del data
    manifest_bytes, state, npz = (contents[name] for name in MEMBERS)
    _check_json_size(path, "manifest.json", manifest_bytes, max_bytes)
    try:
        manifest = loads_json(manifest_bytes)
    except ValueError as error:
        raise _refuse(path, f"manifest.json is not valid JSON ({error})") from None
    check_manifest(path, manifest)
    if hashlib.sha256(state).hexdigest() != manifest["state"]["sha256"]:
        raise _refuse(path, "the SHA-256 of state.json does not match the manifest")
    _check_json_size(path, "state.json", state, max_bytes)
    return manifest, state, npz


def _is_int(value: Any) -> bool:
    return type(value) is int


def check_manifest(path: Any, manifest: Any) -> None:
    """Refuse a manifest of another format, a newer or unknown version, or malformed fields."""
    if type(manifest) is not dict or manifest.get("format") != FORMAT_NAME:
        found = manifest.get("format") if type(manifest) is dict else type(manifest).__name__
        raise _refuse(path, f"manifest format must be {FORMAT_NAME!r}, got {found!r}")
    version = manifest.get("format_version")
    if not _is_int(version):
        raise _refuse(path, f"format_version must be an int, got {version!r}")
    if version > FORMAT_VERSION:
        raise _refuse(path, f"format_version {version} is newer than this glmbandits "
                      f"({__version__}) reads (up to {FORMAT_VERSION}); upgrade glmbandits")
    if version != FORMAT_VERSION:
        raise _refuse(path, f"unknown format_version {version} (this glmbandits reads "
                      f"{FORMAT_VERSION})")
    policy, state, arrays = manifest.get("policy"), manifest.get("state"), manifest.get("arrays")
    if (type(policy) is not dict or type(policy.get("class")) is not str
            or type(policy.get("params")) is not dict):
        raise _refuse(path, "the manifest's policy must be {class: str, params: {...}}")
    if (type(state) is not dict or state.get("member") != "state.json"
            or type(state.get("sha256")) is not str):
        raise _refuse(path, "the manifest's state must be {member: 'state.json', sha256: str}")
    if type(arrays) is not list:
        raise _refuse(path, "the manifest's arrays must be a list")
    if len(arrays) > MAX_ARRAYS:
        raise _refuse(path, f"the manifest lists {len(arrays)} arrays, more than {MAX_ARRAYS}")
    names = set()
    for entry in arrays:
        if (type(entry) is not dict or set(entry) != {"name", "shape", "dtype", "sha256"}
                or type(entry["name"]) is not str or type(entry["dtype"]) is not str
                or type(entry["sha256"]) is not str or type(entry["shape"]) is not list
                or not all(_is_int(n) and n >= 0 for n in entry["shape"])):
            raise _refuse(path, f"bad array entry in the manifest: {entry!r}")
        if entry["name"] in names:
            raise _refuse(path, f"array {entry['name']!r} is listed twice in the manifest")
        names.add(entry["name"])


def _npy_header(member: Any, name: str, path: Any) -> tuple[tuple[int, ...], bool, np.dtype]:
    """The shape, Fortran order and dtype an ``.npy`` member announces (dtype checked)."""
    try:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise ValueError(f".npy format version {version} (glmbandits writes 1.0)")
    except ValueError as error:
        raise _refuse(path, f"arrays.npz member {name!r} has a bad .npy header ({error})"
                      ) from None
    try:
        check_dtype(dtype, f"array {name[:-4]!r}")
    except TypeError as error:
        raise _refuse(path, f"{error} (it cannot be read without pickle)") from None
    return tuple(shape), bool(fortran), dtype


def load_arrays(npz: bytes | bytearray, manifest: Mapping[str, Any], path: Any = "<bytes>",
                max_bytes: int | None = None) -> dict[str, np.ndarray]:
    """The arrays of ``arrays.npz``, each checked against the manifest (never unpickled).

    Every size is checked before the array is allocated: the npz lists exactly the
    manifest's arrays, each stored uncompressed, and each ``.npy`` header announces the
    manifest's shape and dtype and exactly the bytes stored after it (at most
    ``max_bytes`` in all).
    """
    max_bytes = check_max_bytes(max_bytes)
    expected = {entry["name"]: entry for entry in manifest["arrays"]}
    if len(expected) > MAX_ARRAYS:
        raise _refuse(path, f"the manifest lists {len(expected)} arrays, more than {MAX_ARRAYS}")
    count = _zip_entry_count(npz, 0)
    if count is None or count > len(expected):  # before zipfile reads a directory of any size
        raise _refuse(path, "arrays.npz " + (f"holds {count} arrays" if count is not None
                                             else "has no readable zip directory")
                      + f", the manifest lists {len(expected)}")
    arrays: dict[str, np.ndarray] = {}
    total = 0
    try:
        with zipfile.ZipFile(io.BytesIO(npz)) as archive:
            files = [name[:-4] if name.endswith(".npy") else name for name in archive.namelist()]
            if sorted(files) != sorted(expected):
                raise _refuse(path, f"arrays.npz holds {sorted(files)}, the manifest lists "
                              f"{sorted(expected)}")
            for info in archive.infolist():
                name, entry = info.filename, expected[info.filename[:-4]]
                if info.compress_type != zipfile.ZIP_STORED:
                    raise _refuse(path, f"arrays.npz member {name!r} must be stored uncompressed "
                                  f"(as numpy.savez writes it), got zip method "
                                  f"{info.compress_type}")
                with archive.open(info) as member:
                    shape, fortran, dtype = _npy_header(member, name, path)
                    size = math.prod(shape) * dtype.itemsize
                    stored = info.file_size - member.tell()
                    if size != stored:
                        raise _refuse(path, f"array {entry['name']!r} declares shape {shape} of "
                                      f"{dtype.str}, {size} bytes, but holds {stored}")
                if dtype.str != entry["dtype"] or list(shape) != entry["shape"]:
                    raise _refuse(path, f"array {entry['name']!r} has dtype {dtype.str} and "
                                  f"shape {list(shape)}, the manifest says {entry['dtype']} and "
                                  f"{entry['shape']}")
                total += size
                if total > max_bytes:
                    raise _refuse(path, f"the arrays hold more than max_bytes = {max_bytes} "
                                  "bytes")
                with archive.open(info) as member:
                    array = np.lib.format.read_array(member, allow_pickle=False)
                arrays[entry["name"]] = array
    except ModelFileError:
        raise
    except Exception as error:  # bad zip, bad CRC, a short member
        raise _refuse(path, f"arrays.npz cannot be read ({error})") from None
    for name, array in arrays.items():
        if array_sha256(array) != expected[name]["sha256"]:
            raise _refuse(path, f"the SHA-256 of array {name!r} does not match the manifest")
    return arrays
