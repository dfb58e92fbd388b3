"""A damaged, truncated, crafted or newer model file is refused with ModelFileError, never loaded."""

from __future__ import annotations

import hashlib
import inspect
import io
import os
import re
import threading
import tracemalloc
import zipfile

import numpy as np
import pytest

import glmbandits
import glmbandits.estimation.history
import policy_catalogue
from glmbandits.exceptions import ModelFileError
from glmbandits.persistence import archive, checks, codec
from persistence_play import assert_same_policies, play


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A UCB-GLM after 40 rounds, saved (the file's bytes and path)."""
    policy = glmbandits.UCBGLM(n_features=3, seed=0)
    play(policy, 40, seed=1)
    path = glmbandits.save(policy, tmp_path_factory.mktemp("saved") / "ucb.glmb")
    return path, path.read_bytes()


def _members(data: bytes) -> tuple[dict, bytes, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return codec.loads_json(z.read("manifest.json")), z.read("state.json"), z.read("arrays.npz")


def _craft(tmp_path, data, manifest=None, state=None, npz=None, rehash=True):
    """Re-pack (and re-sign) a file with some members replaced: only the semantic checks
    can then catch the change."""
    old_manifest, old_state, old_npz = _members(data)
    manifest = old_manifest if manifest is None else manifest
    state = old_state if state is None else state
    npz = old_npz if npz is None else npz
    if rehash:
        manifest["state"]["sha256"] = hashlib.sha256(state).hexdigest()
    path = tmp_path / "crafted.glmb"
    path.write_bytes(archive.pack(manifest, state, npz))
    return path


def _refused(path, match):
    with pytest.raises(ModelFileError, match=match) as info:
        glmbandits.load(path)
    assert str(path) in str(info.value)
    return info.value


def test_the_unmodified_file_loads(saved):
    assert isinstance(glmbandits.load(saved[0]), glmbandits.UCBGLM)


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        glmbandits.load(tmp_path / "nothing.glmb")


@pytest.mark.parametrize("content", [b"", b"hello", b"PK\x05\x06" + bytes(18)])
def test_not_a_model_file(tmp_path, content):
    path = tmp_path / "x.glmb"
    path.write_bytes(content)
    _refused(path, "not a zip archive|damaged or truncated")


def test_truncation_at_any_length_is_refused(saved, tmp_path):
    _, data = saved
    n = len(data)
    lengths = sorted({1, 4, 21, 22, 30, 64, 100, n // 3, n // 2, n - 200, n - 65, n - 64,
                      n - 63, n - 22, n - 1})
    for length in lengths:
        path = tmp_path / f"cut{length}.glmb"
        path.write_bytes(data[:length])
        _refused(path, "cannot be loaded")


def test_a_flipped_bit_anywhere_is_refused(saved, tmp_path):
    _, data = saved
    n = len(data)
    offsets = sorted(set(range(0, 120)) | set(range(0, n, max(1, n // 400)))
                     | set(range(n - 200, n)))
    path = tmp_path / "flipped.glmb"
    for offset in offsets:
        damaged = bytearray(data)
        damaged[offset] ^= 1 << (offset % 8)
        path.write_bytes(bytes(damaged))
        with pytest.raises(ModelFileError, match="cannot be loaded"):
            glmbandits.load(path)


@pytest.mark.parametrize("version, match", [(2, "newer than this glmbandits"),
                                            (99, "newer"),
                                            (0, "unknown format_version 0"),
                                            ("1", "format_version must be an int"),
                                            (True, "format_version must be an int")])
def test_unknown_or_newer_format_version(saved, tmp_path, version, match):
    manifest = _members(saved[1])[0]
    manifest["format_version"] = version
    _refused(_craft(tmp_path, saved[1], manifest=manifest), match)


def test_another_format_name(saved, tmp_path):
    manifest = _members(saved[1])[0]
    manifest["format"] = "skops"
    _refused(_craft(tmp_path, saved[1], manifest=manifest), "manifest format must be")


@pytest.mark.parametrize("module, qualname", [("os", "system"), ("builtins", "eval"),
                                              ("glmbandits.cli.main", "main"),
                                              ("subprocess", "Popen"),
                                              ("glmbandits", "simulate"),
                                              ("glmbandits.policies.base", "Policy")])
def test_a_class_that_is_not_allowed_is_refused_and_never_run(saved, tmp_path, monkeypatch,
                                                              module, qualname):
    calls = []
    monkeypatch.setattr(os, "system", lambda *args: calls.append(args))
    manifest, state, _ = _members(saved[1])
    tree = codec.loads_json(state)
    # as the root (the manifest names it too) ...
    tree["module"], tree["qualname"] = module, qualname
    manifest["policy"]["class"] = f"{module}.{qualname}"
    _refused(_craft(tmp_path, saved[1], manifest=manifest, state=codec.dumps_json(tree)),
             "not allowed|cannot be loaded")
    # ... and nested (the family object of a genuine policy)
    manifest, state, _ = _members(saved[1])
    text = state.replace(b'"module":"glmbandits.families","qualname":"LogisticFamily"',
                         f'"module":"{module}","qualname":"{qualname}"'.encode())
    assert text != state
    _refused(_craft(tmp_path, saved[1], state=text), "not allowed")
    assert calls == []


def test_the_manifest_class_must_match_the_state(saved, tmp_path):
    manifest = _members(saved[1])[0]
    manifest["policy"]["class"] = "glmbandits.policies.linucb.LinUCB"
    _refused(_craft(tmp_path, saved[1], manifest=manifest), "not an instance of the manifest")


def test_policy_load_refuses_another_class(saved):
    with pytest.raises(ModelFileError, match="not a glmbandits.policies.linucb.LinUCB"):
        glmbandits.LinUCB.load(saved[0])


def test_an_array_shape_or_dtype_contradicting_the_manifest(saved, tmp_path):
    manifest = _members(saved[1])[0]
    manifest["arrays"][0]["shape"] = [7, 7]
    _refused(_craft(tmp_path, saved[1], manifest=manifest), "the manifest says")
    manifest = _members(saved[1])[0]
    manifest["arrays"][0]["dtype"] = "<f4"
    _refused(_craft(tmp_path, saved[1], manifest=manifest), "the manifest says")


def test_an_array_whose_bytes_do_not_match_its_sha256(saved, tmp_path):
    manifest = _members(saved[1])[0]
    manifest["arrays"][0]["sha256"] = "0" * 64
    _refused(_craft(tmp_path, saved[1], manifest=manifest), "SHA-256 of array")


def test_a_state_whose_sha256_does_not_match(saved, tmp_path):
    state = _members(saved[1])[1].replace(b'"alpha",1.0', b'"alpha",2.0')
    _refused(_craft(tmp_path, saved[1], state=state, rehash=False), "SHA-256 of state.json")


def test_an_object_array_is_refused_without_unpickling(saved, tmp_path):
    manifest, _, _ = _members(saved[1])
    buffer = io.BytesIO()
    arrays = {entry["name"]: np.zeros(entry["shape"]) for entry in manifest["arrays"]}
    arrays["a0"] = np.array([os.system, "x"], dtype=object)
    np.savez(buffer, allow_pickle=True, **arrays)
    manifest["arrays"][0].update(shape=[2], dtype="|O")
    _refused(_craft(tmp_path, saved[1], manifest=manifest, npz=buffer.getvalue()),
             "cannot be read without pickle")


@pytest.mark.parametrize("member", archive.MEMBERS)
def test_a_missing_member(saved, tmp_path, member):
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(saved[1])) as source, \
            zipfile.ZipFile(buffer, "w") as target:
        for name in source.namelist():
            if name != member:
                target.writestr(name, source.read(name))
        target.comment = b"0" * 64
    body = buffer.getvalue()[:-64]
    path = tmp_path / "missing.glmb"
    path.write_bytes(body + hashlib.sha256(body).hexdigest().encode())
    _refused(path, f"missing \\['{member}'\\]")


def test_a_dangling_array_name_or_ref_or_an_unused_array(saved, tmp_path):
    _, state, _ = _members(saved[1])
    _refused(_craft(tmp_path, saved[1], state=state.replace(b'"array":"a0"', b'"array":"a999"')),
             "dangling array name")
    _refused(_craft(tmp_path, saved[1], state=state.replace(b'"array":"a0"', b'"array":"a1"')),
             "used twice")
    tree = codec.loads_json(state)
    tree["state"]["items"].append(["extra", {"$": "ref", "id": 10 ** 6}])
    _refused(_craft(tmp_path, saved[1], state=codec.dumps_json(tree)), "dangling ref")
    tree = codec.loads_json(state)
    tree["state"]["items"].append(["extra", {"$": "pickle", "data": "gASVAA=="}])
    _refused(_craft(tmp_path, saved[1], state=codec.dumps_json(tree)), "unknown node type")


def test_an_unused_array_is_refused(saved, tmp_path):
    manifest, state, npz = _members(saved[1])
    with np.load(io.BytesIO(npz)) as archive_arrays:
        arrays = dict(archive_arrays)
    arrays["extra"] = np.zeros(2)
    manifest["arrays"].append({"name": "extra", "shape": [2], "dtype": "<f8",
                               "sha256": archive.array_sha256(arrays["extra"])})
    _refused(_craft(tmp_path, saved[1], manifest=manifest, npz=archive.npz_bytes(arrays)),
             "not used by the state")


def test_params_contradicting_the_state(saved, tmp_path):
    manifest = _members(saved[1])[0]
    manifest["policy"]["params"]["alpha"] = 5.0
    _refused(_craft(tmp_path, saved[1], manifest=manifest), r"parameters \['alpha'\]")
    manifest = _members(saved[1])[0]
    del manifest["policy"]["params"]["seed"]
    _refused(_craft(tmp_path, saved[1], manifest=manifest), r"parameters \['seed'\]")


def test_a_parameter_added_after_the_file_was_written_may_be_absent_at_its_default(
        saved, tmp_path):
    """A file written before a constructor parameter existed has no entry for it: it loads
    when the restored value is the parameter's default (what the class had before)."""
    manifest = _members(saved[1])[0]
    del manifest["policy"]["params"]["refit_tol"]  # 0.03 in the state, the default
    assert glmbandits.load(_craft(tmp_path, saved[1], manifest=manifest)).refit_tol == 0.03
    manifest = _members(saved[1])[0]
    manifest["policy"]["params"]["refit_tol"] = 0.05
    _refused(_craft(tmp_path, saved[1], manifest=manifest), r"parameters \['refit_tol'\]")


def test_a_nan_token_in_the_json_is_refused(saved, tmp_path):
    _, state, _ = _members(saved[1])
    _refused(_craft(tmp_path, saved[1], state=state.replace(b'"alpha",1.0', b'"alpha",NaN')),
             "NaN is not allowed")


def test_the_manifest_says_what_the_file_holds(saved):
    manifest, state, npz = _members(saved[1])
    assert manifest["format"] == "glmbandits-model" and manifest["format_version"] == 1
    assert manifest["library_version"] == glmbandits.__version__
    assert manifest["created"].endswith("+00:00")
    assert manifest["policy"]["class"] == "glmbandits.policies.ucb_glm.UCBGLM"
    params = manifest["policy"]["params"]
    assert params["n_features"] == 3 and params["alpha"] == 1.0 and params["seed"] == 0
    assert params["refit"] == "every_round" and params["family"]["qualname"] == "LogisticFamily"
    assert manifest["state"] == {"member": "state.json",
                                 "sha256": hashlib.sha256(state).hexdigest()}
    with np.load(io.BytesIO(npz), allow_pickle=False) as arrays:
        for entry in manifest["arrays"]:
            array = arrays[entry["name"]]
            assert entry["shape"] == list(array.shape) and entry["dtype"] == array.dtype.str
            assert entry["sha256"] == hashlib.sha256(np.ascontiguousarray(array)).hexdigest()


def test_a_generator_seed_is_a_tagged_value_in_the_params(tmp_path):
    policy = glmbandits.LinUCB(n_features=2, seed=np.random.default_rng(5))
    path = policy.save(tmp_path / "g.glmb")
    manifest = _members(path.read_bytes())[0]
    seed = manifest["policy"]["params"]["seed"]
    assert seed["$"] == "generator" and seed["bit_generator"] == "PCG64"


# -- hostile files: sizes bounded before allocating (issue 21) ------------------------------

MiB = 1 << 20


def _signed(tmp_path, members, name="hostile.glmb"):
    """A signed model file from ``members``: name -> (a function giving the member's byte
    chunks, zip method), written in ``archive.MEMBERS`` order and streamed, so that a member
    of 100 MB inflated never exists in the test's memory."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as target:
        target.comment = b"0" * 64
        for member in archive.MEMBERS:
            chunks, method = members[member]
            info = zipfile.ZipInfo(member, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            with target.open(info, "w") as out:
                for chunk in chunks():
                    out.write(chunk)
    body = buffer.getvalue()[:-64]
    path = tmp_path / name
    path.write_bytes(body + hashlib.sha256(body).hexdigest().encode())
    return path


def _sha256(chunks) -> str:
    digest = hashlib.sha256()
    for chunk in chunks():
        digest.update(chunk)
    return digest.hexdigest()


def _peak_of_refusal(path, match, **options) -> int:
    """Load ``path``, expect a refusal matching ``match``; the peak of traced memory (bytes)."""
    tracemalloc.start()
    try:
        with pytest.raises(ModelFileError, match=match) as info:
            glmbandits.load(path, **options)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(path) in str(info.value)
    return peak


def _zeros(n_mib: int):
    return lambda: (bytes(MiB) for _ in range(n_mib))


def test_a_compression_bomb_in_state_json_is_refused_before_inflating(saved, tmp_path):
    """100 MB of JSON whitespace before the real state: valid JSON, deflated to ~100 kB."""
    manifest, state, npz = _members(saved[1])

    def bomb():
        yield from (b" " * MiB for _ in range(100))
        yield state
    manifest["state"]["sha256"] = _sha256(bomb)
    path = _signed(tmp_path, {
        "manifest.json": (lambda: [codec.dumps_json(manifest)], zipfile.ZIP_DEFLATED),
        "state.json": (bomb, zipfile.ZIP_DEFLATED),
        "arrays.npz": (lambda: [npz], zipfile.ZIP_STORED)})
    assert path.stat().st_size < MiB
    peak = _peak_of_refusal(path, r"state\.json inflates to .* more than 250 times")
    assert peak < 8 * MiB, f"{peak} bytes allocated before the refusal"


def test_a_compressed_arrays_member_is_refused_before_inflating(saved, tmp_path):
    """arrays.npz deflated with 100 MB of zeros after the real npz."""
    manifest, state, npz = _members(saved[1])
    path = _signed(tmp_path, {
        "manifest.json": (lambda: [codec.dumps_json(manifest)], zipfile.ZIP_DEFLATED),
        "state.json": (lambda: [state], zipfile.ZIP_DEFLATED),
        "arrays.npz": (lambda: [npz, *_zeros(100)()], zipfile.ZIP_DEFLATED)})
    peak = _peak_of_refusal(path, "arrays.npz must be stored uncompressed")
    assert peak < 8 * MiB, f"{peak} bytes allocated before the refusal"


def _npz_with(npz: bytes, name: str, header: dict, data, method: int) -> bytes:
    """``npz`` plus one member ``name.npy`` with the given .npy header and data chunks."""
    buffer = io.BytesIO(npz)
    with zipfile.ZipFile(buffer, "a") as target:
        info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = method
        with target.open(info, "w", force_zip64=True) as out:
            np.lib.format.write_array_header_1_0(out, header)
            for chunk in data():
                out.write(chunk)
    return buffer.getvalue()


def test_a_compression_bomb_inside_the_npz_is_refused_before_inflating(saved, tmp_path):
    """One more array, deflated inside the npz: 100 MB of zeros, listed in the manifest."""
    manifest, state, npz = _members(saved[1])
    shape = [100 * MiB // 8]
    header = {"descr": "<f8", "fortran_order": False, "shape": tuple(shape)}
    inner = _npz_with(npz, "big", header, _zeros(100), zipfile.ZIP_DEFLATED)
    manifest["arrays"].append({"name": "big", "shape": shape, "dtype": "<f8",
                               "sha256": _sha256(_zeros(100))})
    path = _signed(tmp_path, {
        "manifest.json": (lambda: [codec.dumps_json(manifest)], zipfile.ZIP_DEFLATED),
        "state.json": (lambda: [state], zipfile.ZIP_DEFLATED),
        "arrays.npz": (lambda: [inner], zipfile.ZIP_STORED)})
    assert path.stat().st_size < MiB
    peak = _peak_of_refusal(path, "arrays.npz member 'big.npy' must be stored uncompressed")
    assert peak < 8 * MiB, f"{peak} bytes allocated before the refusal"


def test_an_npy_header_larger_than_its_data_is_refused_before_allocating(saved, tmp_path):
    """A header announcing 2 GB of float64 in front of 8 bytes."""
    manifest, state, npz = _members(saved[1])
    shape = [250_000_000]
    header = {"descr": "<f8", "fortran_order": False, "shape": tuple(shape)}
    inner = _npz_with(npz, "big", header, lambda: [bytes(8)], zipfile.ZIP_STORED)
    manifest["arrays"].append({"name": "big", "shape": shape, "dtype": "<f8",
                               "sha256": "0" * 64})
    path = _craft(tmp_path, saved[1], manifest=manifest, npz=inner)
    peak = _peak_of_refusal(path, r"array 'big' declares shape \(250000000,\) of <f8, "
                                  r"2000000000 bytes, but holds 8")
    assert peak < 8 * MiB, f"{peak} bytes allocated before the refusal"


def test_max_bytes_bounds_the_file_and_what_it_inflates_to(saved, tmp_path):
    path, data = saved
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        inflated = sum(info.file_size for info in z.infolist())
    assert inflated > len(data)
    assert isinstance(glmbandits.load(path, max_bytes=inflated), glmbandits.UCBGLM)
    _refused_with(path, f"the file has {len(data)} bytes, more than max_bytes = {len(data) - 1}",
                  max_bytes=len(data) - 1)
    _refused_with(path, f"more than max_bytes = {inflated - 1}", max_bytes=inflated - 1)
    with pytest.raises(TypeError, match="max_bytes must be an int, got float"):
        glmbandits.load(path, max_bytes=1e9)
    with pytest.raises(ValueError, match="max_bytes must be >= 1, got 0"):
        glmbandits.load(path, max_bytes=0)


def _refused_with(path, match, **options):
    with pytest.raises(ModelFileError, match=re.escape(match)) as info:
        glmbandits.load(path, **options)
    assert str(path) in str(info.value)
    return info.value


def test_json_with_too_many_arrays_and_objects_is_refused_before_parsing(saved, tmp_path):
    _, state, _ = _members(saved[1])
    tree = codec.loads_json(state)
    tree["state"]["items"].append(["extra_", [[] for _ in range(70_000)]])
    path = _craft(tmp_path, saved[1], state=codec.dumps_json(tree))
    _refused_with(path, "state.json holds 70", max_bytes=64 * MiB)
    _refused_with(path, "JSON arrays and objects, more than 65536 (the larger of 65536 and "
                        "max_bytes // 2048, max_bytes = 67108864)", max_bytes=64 * MiB)
    assert len(glmbandits.load(path, max_bytes=256 * MiB).extra_) == 70_000  # limit 131072


def test_more_arrays_than_a_model_file_holds_is_refused(saved, tmp_path):
    manifest = _members(saved[1])[0]
    manifest["arrays"] += [{"name": f"x{i}", "shape": [0], "dtype": "<f8", "sha256": "0" * 64}
                           for i in range(archive.MAX_ARRAYS)]
    _refused(_craft(tmp_path, saved[1], manifest=manifest),
             f"the manifest lists {archive.MAX_ARRAYS + len(_members(saved[1])[0]['arrays'])} "
             f"arrays, more than {archive.MAX_ARRAYS}")


def _first_node(tree, tag):
    """The first node tagged ``tag`` in ``tree`` (depth first)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("$") == tag:
                return node
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
    raise LookupError(tag)


@pytest.mark.parametrize("field, value, match", [
    ("pool_size", 1 << 15, "pool_size must lie in [4, 1024], got 32768"),
    ("pool_size", 2, "pool_size must lie in [4, 1024], got 2"),
    ("n_children_spawned", -1, "n_children_spawned must lie in [0, 2**64), got -1"),
    ("spawn_key", {"$": "tuple", "items": list(range(5000))},
     "entropy and spawn_key hold 5001 32-bit words, more than 4096"),
])
def test_a_seed_sequence_is_bounded_before_numpy_builds_it(saved, tmp_path, field, value, match):
    """A huge pool_size made SeedSequence run for hours (its cost grows as pool_size²)."""
    _, state, _ = _members(saved[1])
    tree = codec.loads_json(state)
    _first_node(tree, "seedseq")[field] = value
    _refused_with(_craft(tmp_path, saved[1], state=codec.dumps_json(tree)), match)


def test_an_int_of_more_than_65536_bits_is_refused(saved, tmp_path):
    _, state, _ = _members(saved[1])
    tree = codec.loads_json(state)
    tree["state"]["items"].append(["extra_", {"$": "int", "v": "0x" + "f" * 16_385}])
    _refused_with(_craft(tmp_path, saved[1], state=codec.dumps_json(tree)),
                  "an int of 65540 bits, more than 65536")
    policy = glmbandits.LinUCB(n_features=2)
    policy.extra_ = 1 << 65_536
    with pytest.raises(ValueError, match=r"save: policy.*\['extra_'\] is an int of 65537 bits, "
                                         r"more than a model file holds \(65536\)"):
        policy.save(tmp_path / "big-int.glmb")
    assert not (tmp_path / "big-int.glmb").exists()


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_path_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    """A folder gave IsADirectoryError; a FIFO blocked the caller until someone wrote to it."""
    path = tmp_path / "model.glmb"
    if kind == "directory":
        path.mkdir()
    else:
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(path)
    outcome: list[BaseException] = []

    def attempt():
        try:
            glmbandits.load(path)
        except BaseException as error:  # noqa: BLE001 (handed to the test thread)
            outcome.append(error)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=60)
    if worker.is_alive() and kind == "fifo":  # unblock the reader before failing
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(timeout=60)
    assert outcome and isinstance(outcome[0], ModelFileError), outcome
    assert f"it is not a regular file (a {kind})" in str(outcome[0])
    assert str(path) in str(outcome[0])


# -- hostile files: the decoded state passes the constructor's checks (issue 21) -------------

def _played(cls, **options):
    policy = cls(n_features=3, seed=0, **options)
    play(policy, 12, seed=1)
    return policy


def _set(obj, name, value):
    obj.__dict__[name] = value  # as a crafted file would, past any setter


def _family_attribute(policy, name, value):
    _set(policy.family, name, value)


HOSTILE_STATES = {
    # hyperparameters: the constructor's own checks, naming the parameter
    "alpha NaN": (glmbandits.UCBGLM, {}, lambda p: _set(p, "alpha", float("nan")),
                  "UCBGLM: alpha must be finite, got nan"),
    "alpha -1": (glmbandits.LinUCB, {}, lambda p: _set(p, "alpha", -1.0),
                 "LinUCB: alpha must be > 0, got -1.0"),
    "kappa 0 (GLOC)": (glmbandits.GLOC, {}, lambda p: _set(p, "kappa", 0.0),
                       "GLOC: kappa must be > 0, got 0.0"),
    "kappa 0 (RS-GLinCB)": (glmbandits.RSGLinCB, {}, lambda p: _set(p, "kappa", 0.0),
                            "RSGLinCB: kappa must be >= 1 (1/κ of Assumption 1), got 0.0"),
    "tau -3": (glmbandits.EpsilonGreedy, {}, lambda p: _set(p, "tau", -3),
               "EpsilonGreedy: tau must be >= 0, got -3"),
    "seed -1": (glmbandits.LaplaceTS, {}, lambda p: _set(p, "seed", -1),
                "LaplaceTS: seed must be a non-negative int, got -1"),
    "a derived constant": (glmbandits.RSGLinCB, {}, lambda p: _set(p, "warmup_threshold", 5.0),
                           "RSGLinCB.warmup_threshold is 5.0, the constructor makes"),
    "n_stages": (glmbandits.SupCBGLM, {}, lambda p: _set(p, "n_stages", 40),
                 "SupCBGLM.n_stages is 40, the constructor makes 13"),
    "max_pending 0": (glmbandits.UCBGLM, {}, lambda p: _set(p.decisions_, "max_pending", 0),
                      "UCBGLM.decisions_: max_pending must be >= 1, got 0"),
    "default_reward 2": (glmbandits.UCBGLM, {},
                         lambda p: _set(p.decisions_, "default_reward", 2.0),
                         "UCBGLM.decisions_: default_reward: reward must lie in the logistic "
                         "reward domain [0, 1], got 2.0"),
    # learned arrays: finite, real float64, of the expected shapes
    "NaN in theta": (glmbandits.UCBGLM, {},
                     lambda p: p.estimate_.theta_.__setitem__(0, np.nan),
                     "UCBGLM.estimate_.theta_ must be finite, got 1 NaN or inf value"),
    "inf in V_inv": (glmbandits.LinUCB, {},
                     lambda p: p.estimate_.V_inv_.__setitem__((1, 1), np.inf),
                     "LinUCB.estimate_.V_inv_ must be finite, got 1 NaN or inf value"),
    "NaN in the history": (glmbandits.GLMUCB, {},
                           lambda p: p.estimate_.history._X.__setitem__((2, 1), np.nan),
                           "GLMUCB.estimate_.history.X must be finite"),
    "NaN in W": (glmbandits.ECOLog, {}, lambda p: p.W_.__setitem__((0, 0), np.nan),
                 "ECOLog.W_ must be finite"),
    "complex V_inv": (glmbandits.GLOC, {},
                      lambda p: _set(p, "V_inv_", p.V_inv_.astype(complex)),
                      "GLOC.V_inv_ must hold real numbers, got complex128"),
    "float32 q": (glmbandits.LaplaceTS, {}, lambda p: _set(p, "q_", p.q_.astype(np.float32)),
                  "LaplaceTS.q_ must be float64, got float32"),
    "theta of d + 1": (glmbandits.UCBGLM, {},
                       lambda p: _set(p.estimate_, "theta_", np.zeros(4)),
                       "UCBGLM.estimate_.theta_ must have shape (3,), got (4,)"),
    "V_inv not square": (glmbandits.RSGLinCB, {},
                         lambda p: _set(p, "H_inv_", np.eye(3)[:2]),
                         "RSGLinCB.H_inv_ must have shape (3, 3), got (2, 3)"),
    "NaN in a learned scalar": (glmbandits.ECOLog, {}, lambda p: _set(p, "loss_gap_", np.nan),
                                "ECOLog.loss_gap_ must be finite, got nan"),
    "inf in a learned scalar": (glmbandits.RSGLinCB, {},
                                lambda p: _set(p, "logdet_H_", float("inf")),
                                "RSGLinCB.logdet_H_ must be finite, got inf"),
    "NaN in a nested hyperparameter": (glmbandits.UCBGLM, {},
                                       lambda p: _set(p.estimate_, "l2", float("nan")),
                                       "UCBGLM.estimate_.l2 must be finite, got nan"),
    "NaN in a pending decision": (glmbandits.LinUCB, {}, None,
                                  "LinUCB.decisions_.pending['d'].x must be finite"),
    # families: the library's own, as their constructor builds them, the policy's everywhere
    "family not a family": (glmbandits.UCBGLM, {},
                            lambda p: _set(p.estimate_, "family",
                                           glmbandits.estimation.history.SampleHistory(3)),
                            "UCBGLM.estimate_.family must be a GLMFamily or None, got "
                            "glmbandits.estimation.history.SampleHistory"),
    "family a name": (glmbandits.GLMTSL, {}, lambda p: _set(p, "family", "logistic"),
                      "GLMTSL.family is 'logistic', the constructor makes LogisticFamily()"),
    "another family": (glmbandits.UCBGLM, {},
                       lambda p: _set(p.estimate_, "family",
                                      glmbandits.families.ProbitFamily()),
                       "UCBGLM.estimate_.family is ProbitFamily(), the policy's family is "
                       "LogisticFamily()"),
    "noise_sd NaN": (glmbandits.OFUGLB, {"family": "linear"},
                     lambda p: _family_attribute(p, "noise_sd", float("nan")),
                     "LinearFamily: noise_sd must be finite, got nan"),
    "a family method replaced": (glmbandits.UCBGLM, {},
                                 lambda p: _family_attribute(p, "mean", 0.5),
                                 "UCBGLM.family.mean shadows the method LogisticFamily.mean"),
    "a family attribute added": (glmbandits.UCBGLM, {},
                                 lambda p: _family_attribute(p, "saturation", 1.0),
                                 "UCBGLM.family: a LogisticFamily with {'saturation': 1.0}, "
                                 "its constructor makes one with {}"),
    # no instance attribute hides a method or property of its class
    "a method replaced": (glmbandits.UCBGLM, {}, lambda p: _set(p, "select", 1),
                          "UCBGLM.select shadows the method UCBGLM.select"),
    "a property replaced": (glmbandits.UCBGLM, {}, lambda p: _set(p, "theta_", np.zeros(3)),
                            "UCBGLM.theta_ shadows the property UCBGLM.theta_"),
}


@pytest.mark.parametrize("case", list(HOSTILE_STATES))
def test_a_state_that_fails_the_constructor_checks_is_refused(tmp_path, case):
    """Each of these loaded before and failed later (or never: a NaN estimate scores NaN)."""
    cls, options, mutate, match = HOSTILE_STATES[case]
    policy = _played(cls, **options)
    if mutate is None:  # a pending decision whose row is NaN
        policy.decide(np.eye(3)[:2] / 2, "d", now=1.0)
        policy.decisions_.pending["d"].x[0] = np.nan
    else:
        mutate(policy)
    path = glmbandits.save(policy, tmp_path / "hostile.glmb")
    error = _refused_with(path, match)
    assert "fails the checks of its class" in str(error)


def test_n_features_is_bounded_by_max_bytes_before_the_constructor_runs(tmp_path):
    """RandomPolicy holds no d-sized array, so only the bound keeps a crafted n_features from
    making the constructor check allocate d×d matrices (8 of them: 64·d² <= max_bytes)."""
    policy = glmbandits.RandomPolicy(n_features=3, seed=0)
    _set(policy, "n_features", 10 ** 6)
    path = glmbandits.save(policy, tmp_path / "wide.glmb")
    _refused_with(path, "RandomPolicy: n_features = 1000000 needs d×d matrices of "
                        "64000000000000 bytes (8 of 8000000000000), more than max_bytes = "
                        "4294967296")
    _set(policy, "n_features", 1000)
    path = glmbandits.save(policy, tmp_path / "wide.glmb")
    assert glmbandits.load(path).n_features == 1000
    _refused_with(path, "more than max_bytes = 7999999", max_bytes=7_999_999)


@pytest.mark.parametrize("options", [{}, {"refit": "lazy"}, {"l2": 0.0}, {"family": "poisson"},
                                     {"family": "linear"}, {"exploration_floor": 0.3}])
@pytest.mark.parametrize("cls", policy_catalogue.POLICY_CLASSES,
                         ids=policy_catalogue.POLICY_IDS)
def test_genuine_states_pass_the_checks(tmp_path, cls, options):
    """The checks refuse nothing a policy makes: fresh, mid-run, with pending, shadow and
    registered decisions (whose unknown scores are NaN), in several configurations (the sentinels -inf/inf of log det and of the
    Hessian's sample count included)."""
    accepted = inspect.signature(cls.__init__).parameters
    if any(name not in accepted for name in options):
        pytest.skip(f"{cls.__name__} has no {sorted(options)}")
    try:
        policy = cls(n_features=4, seed=0, **options)
    except ValueError as error:
        pytest.skip(str(error))
    for rounds in (0, 25):
        play(policy, rounds, seed=2)
        contexts = policy_catalogue.unit_ball_contexts(np.random.default_rng(rounds), 5, 4)
        policy.decide(contexts, f"live-{rounds}", excluded=[1], now=1.0)
        policy.decide(contexts, f"shadow-{rounds}", default_action=0, now=2.0)
        # a decision logged by a scale-out API process: its scores are unknown (NaN)
        policy.register_decision(f"registered-{rounds}", contexts, 2, np.full(5, 0.2),
                                 model_version=0, timestamp=3.0, propensity=0.2)
        loaded = glmbandits.load(glmbandits.save(policy, tmp_path / f"{rounds}.glmb"))
        assert_same_policies(loaded, policy)


def test_a_history_whose_rewards_and_rows_differ_in_number_is_refused(tmp_path):
    """Restoring 12 rows with 5 rewards kept uninitialised memory as the 7 missing rewards."""
    policy = _played(glmbandits.UCBGLM)
    history = policy.estimate_.history
    history._y = history._y[:5]
    path = glmbandits.save(policy, tmp_path / "short-y.glmb")
    _refused_with(path, "SampleHistory: X must have shape (n, d) and y shape (n,), got "
                        "(12, 3) and (5,)")


def test_policy_load_takes_max_bytes_too(saved):
    path, data = saved
    assert isinstance(glmbandits.UCBGLM.load(path, max_bytes=len(data) * 4), glmbandits.UCBGLM)
    _refused_with(path, f"more than max_bytes = {len(data) - 1}", max_bytes=len(data) - 1)
    with pytest.raises(ModelFileError, match=f"more than max_bytes = {len(data) - 1}"):
        glmbandits.UCBGLM.load(path, max_bytes=len(data) - 1)


def _array_attributes(policy):
    """(class, attribute) of every array held directly by an object of a glmbandits class."""
    found, seen, stack = set(), set(), [policy]
    while stack:
        value = stack.pop()
        if id(value) in seen or isinstance(value, (str, bytes, np.ndarray, np.generic)):
            continue
        seen.add(id(value))
        if isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif hasattr(value, "__dict__") and type(value).__module__.startswith("glmbandits."):
            for name, item in vars(value).items():
                if isinstance(item, np.ndarray):
                    found.add((type(value), name))
                stack.append(item)
    return found


def test_every_array_of_a_policy_state_has_a_declared_shape(tmp_path):
    """checks.ARRAY_SHAPES is complete: a new learned array must declare its shape."""
    undeclared = set()
    for cls in policy_catalogue.POLICY_CLASSES:
        for options in ({}, {"refit": "lazy"}, {"family": "linear"}):
            if any(name not in inspect.signature(cls.__init__).parameters for name in options):
                continue
            try:
                policy = cls(n_features=3, seed=0, **options)
            except ValueError:  # ECOLog's Bernoulli families only
                continue
            play(policy, 25, seed=3)
            policy.decide(np.eye(3) / 2, "pending", now=1.0)
            loaded = glmbandits.load(glmbandits.save(policy, tmp_path / "p.glmb"))
            for owner, name in _array_attributes(loaded):
                buffers = [n for names in checks._lookup(checks._BUFFERS, owner) for n in names]
                declared = any(name in shapes
                               for shapes in checks._lookup(checks.ARRAY_SHAPES, owner))
                if not declared and name not in buffers:
                    undeclared.add(f"{owner.__qualname__}.{name}")
    assert undeclared == set()


def test_compact_lists_are_bounded_before_they_become_python_numbers(tmp_path):
    """A list stored as an int64 array becomes Python ints of about 36 bytes each (4.5 times
    the array): together at most max_bytes // 36 items."""
    policy = glmbandits.LinUCB(n_features=2, seed=0)
    policy.extra_ = list(range(100_000))
    path = glmbandits.save(policy, tmp_path / "list.glmb")
    assert glmbandits.load(path).extra_ == list(range(100_000))
    _refused_with(path, "compact lists hold 100000 items, more than 55555 (max_bytes // 36, "
                        "max_bytes = 2000000: each item becomes a Python number)",
                  max_bytes=2_000_000)
