"""A damaged, truncated, crafted or newer model file is refused with ModelFileError, never loaded."""

from __future__ import annotations

import hashlib
import io
import os
import zipfile

import numpy as np
import pytest

import glmbandits
from glmbandits.exceptions import ModelFileError
from glmbandits.persistence import archive, codec
from persistence_play import play


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
