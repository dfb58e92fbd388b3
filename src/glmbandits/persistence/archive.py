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

Reading bounds every size before allocating it (:mod:`.limits`, ``max_bytes``):
the file, each member as it inflates, the JSON, the number of arrays and each
array (its ``.npy`` header must announce exactly the bytes stored after it;
``arrays.npz`` and its members are stored, never compressed, as
:func:`npz_bytes` writes them).

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
>>> manifest2 == manifest, bytes(state), load_arrays(npz, manifest2)["a0"].tolist()
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
from ..exceptions import ModelFileError
from .codec import check_dtype, dumps_json, loads_json
from .limits import (DEFAULT_MAX_BYTES, INFLATE_FLOOR, JSON_BYTES_PER_CONTAINER,
                     JSON_MIN_CONTAINERS, MAX_ARRAYS, MAX_INFLATE_RATIO, check_json_size,
                     check_max_bytes, inflate, read_regular_file, zip_entry_count)
from .limits import refuse as _refuse

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
_MIN_SIZE = 22 + _DIGEST_LENGTH

#: How each member must be stored: the JSON members stored or deflated, the arrays stored.
_METHODS = {"manifest.json": (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED),
            "state.json": (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED),
            "arrays.npz": (zipfile.ZIP_STORED,)}


def array_sha256(array: np.ndarray) -> str:
    """SHA-256 of the array's C-contiguous bytes (hashed in place when it is C-contiguous)."""
    return hashlib.sha256(np.ascontiguousarray(array).reshape(-1).view(np.uint8).data).hexdigest()


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


def unpack(path: str | os.PathLike[str], max_bytes: int | None = None
           ) -> tuple[dict[str, Any], bytes | bytearray, bytes]:
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
    data = read_regular_file(path, max_bytes)
    if not data.startswith(b"PK\x03\x04"):
        raise _refuse(path, "it is not a zip archive, so not a glmbandits model file"
                      + (" (it is empty)" if not data else ""))
    digest = hashlib.sha256(data[:-_DIGEST_LENGTH]).hexdigest().encode("ascii")
    if len(data) < _MIN_SIZE or data[-_DIGEST_LENGTH:] != digest:
        raise _refuse(path, f"the file is damaged or truncated ({len(data)} bytes): the SHA-256 "
                      "of its contents does not match the one written at its end")
    count = zip_entry_count(data, _DIGEST_LENGTH)
    if count is None or count > 2 * len(MEMBERS):  # before zipfile reads a directory of any size
        raise _refuse(path, f"it must hold exactly the members {list(MEMBERS)}, its zip directory "
                      + (f"lists {count} members" if count is not None else "cannot be read"))
    contents: dict[str, Any] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            missing = [name for name in MEMBERS if name not in names]
            if not missing and len(names) == len(MEMBERS):
                budget = max_bytes
                for name in MEMBERS:
                    contents[name] = inflate(archive, archive.getinfo(name), _METHODS[name],
                                             budget, max_bytes, path)
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
    check_json_size(path, "manifest.json", manifest_bytes, max_bytes)
    try:
        manifest = loads_json(manifest_bytes)
    except ValueError as error:
        raise _refuse(path, f"manifest.json is not valid JSON ({error})") from None
    check_manifest(path, manifest)
    if hashlib.sha256(state).hexdigest() != manifest["state"]["sha256"]:
        raise _refuse(path, "the SHA-256 of state.json does not match the manifest")
    check_json_size(path, "state.json", state, max_bytes)
    return manifest, state, npz


def _is_int(value: Any) -> bool:
    return type(value) is int


def check_manifest(path: Any, manifest: Any) -> None:
    """Refuse a manifest of another format, a newer or unknown version, or malformed fields."""
    if type(manifest) is not dict or manifest.get("format") != FORMAT_NAME:
        found = manifest.get("format") if type(manifest) is dict else type(manifest).__name__
        raise _refuse(path, f"manifest format must be {FORMAT_NAME!r}, got {found!r}")
    version = manifest.get("format_version")
    if type(version) is not int:  # _is_int, spelled so that the type checker narrows it
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
    count = zip_entry_count(npz, 0)
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
