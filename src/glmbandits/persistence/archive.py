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

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "MEMBERS", "build_manifest", "npz_bytes", "pack",
           "write_atomic", "unpack", "check_manifest", "load_arrays", "array_sha256"]

FORMAT_NAME = "glmbandits-model"
#: The version of the file layout this glmbandits writes (and the newest it reads).
FORMAT_VERSION = 1
MEMBERS = ("manifest.json", "state.json", "arrays.npz")
_DIGEST_LENGTH = 64
#: The smallest possible zip is its 22-byte end-of-directory record.
_MIN_SIZE = 22 + _DIGEST_LENGTH


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


def unpack(path: str | os.PathLike[str]) -> tuple[dict[str, Any], bytes, bytes]:
    """Read and verify a model file: its manifest (checked), state bytes and npz bytes.

    Raises
    ------
    FileNotFoundError
        No such file.
    ModelFileError
        Not a model file, damaged, truncated, or of a newer or unknown format.
    """
    data = Path(os.fspath(path)).read_bytes()
    if not data.startswith(b"PK\x03\x04"):
        raise _refuse(path, "it is not a zip archive, so not a glmbandits model file"
                      + (" (it is empty)" if not data else ""))
    digest = hashlib.sha256(data[:-_DIGEST_LENGTH]).hexdigest().encode("ascii")
    if len(data) < _MIN_SIZE or data[-_DIGEST_LENGTH:] != digest:
        raise _refuse(path, f"the file is damaged or truncated ({len(data)} bytes): the SHA-256 "
                      "of its contents does not match the one written at its end")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            missing = [name for name in MEMBERS if name not in names]
            if not missing and len(names) == len(MEMBERS):
                manifest_bytes, state, npz = (archive.read(name) for name in MEMBERS)
    except Exception as error:  # BadZipFile (bad CRC, bad header), zlib.error, EOFError...
        raise _refuse(path, f"its zip structure is damaged ({error})") from None
    if missing or len(names) != len(MEMBERS):
        raise _refuse(path, f"it must hold exactly the members {list(MEMBERS)}, got {names}"
                      + (f" (missing {missing})" if missing else ""))
    try:
        manifest = loads_json(manifest_bytes)
    except ValueError as error:
        raise _refuse(path, f"manifest.json is not valid JSON ({error})") from None
    check_manifest(path, manifest)
    if hashlib.sha256(state).hexdigest() != manifest["state"]["sha256"]:
        raise _refuse(path, "the SHA-256 of state.json does not match the manifest")
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


def load_arrays(npz: bytes, manifest: Mapping[str, Any], path: Any = "<bytes>"
                ) -> dict[str, np.ndarray]:
    """The arrays of ``arrays.npz``, each checked against the manifest (never unpickled)."""
    expected = {entry["name"]: entry for entry in manifest["arrays"]}
    try:
        with np.load(io.BytesIO(npz), allow_pickle=False) as archive:
            files = list(archive.files)
            if sorted(files) != sorted(expected):
                raise _refuse(path, f"arrays.npz holds {sorted(files)}, the manifest lists "
                              f"{sorted(expected)}")
            arrays = {name: archive[name] for name in files}
    except ModelFileError:
        raise
    except Exception as error:  # bad zip, bad .npy header, an object array (needs pickle)
        raise _refuse(path, f"arrays.npz cannot be read without pickle ({error})") from None
    for name, array in arrays.items():
        entry = expected[name]
        try:
            check_dtype(array.dtype, f"array {name!r}")
        except TypeError as error:
            raise _refuse(path, str(error)) from None
        if array.dtype.str != entry["dtype"] or list(array.shape) != entry["shape"]:
            raise _refuse(path, f"array {name!r} has dtype {array.dtype.str} and shape "
                          f"{list(array.shape)}, the manifest says {entry['dtype']} and "
                          f"{entry['shape']}")
        if array_sha256(array) != entry["sha256"]:
            raise _refuse(path, f"the SHA-256 of array {name!r} does not match the manifest")
    return arrays
