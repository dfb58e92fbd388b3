"""The codec: exact round trips of every supported type, identity kept, the rest refused."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from glmbandits.persistence import codec, register_class
from glmbandits.persistence.codec import MalformedStateError, decode, encode
from glmbandits.policies.scores import ActionScores


def _round_trip(value):
    tree, arrays = encode(value)
    codec.loads_json(codec.dumps_json(tree))  # the tree is strict JSON
    return decode(codec.loads_json(codec.dumps_json(tree)), arrays)


class Slotted:
    __slots__ = ("a", "b")


class Stateful:
    def __init__(self, x):
        self.x = x

    def __getstate__(self):
        return {"doubled": 2 * self.x}

    def __setstate__(self, state):
        self.x = state["doubled"] // 2


register_class(Slotted)
register_class(Stateful)


def test_floats_and_ints_are_exact():
    values = [0.0, -0.0, math.nan, math.inf, -math.inf, 5e-324, 1.7976931348623157e308,
              0.1, 2 ** 53, 2 ** 53 + 1, -(2 ** 200), 10 ** 5000, True, False, None, "é"]
    back = _round_trip(values)
    assert pickle.dumps(back) == pickle.dumps(values)
    assert math.copysign(1.0, back[1]) == -1.0 and math.isnan(back[2])
    assert [type(v) for v in back] == [type(v) for v in values]


def test_containers_keep_types_order_and_keys():
    value = {3: "int key", (1, "t"): [1, 2], "z": {"nested": ()}, 2.5: None, None: True}
    back = _round_trip(value)
    assert back == value and list(back) == list(value)
    assert type(back[(1, "t")]) is list and type(back["z"]["nested"]) is tuple


def test_long_number_lists_are_one_array():
    ints, floats = list(range(1000)), [float(i) / 3 for i in range(1000)] + [math.nan, -0.0]
    tree, arrays = encode({"i": ints, "f": floats, "short": [1, 2, 3], "mixed": [1] * 9 + [1.0]})
    assert [node[1]["$"] for node in tree["items"][:2]] == ["ints", "floats"]
    assert arrays["a0"].dtype == np.int64 and arrays["a1"].dtype == np.float64
    back = decode(tree, arrays)
    assert pickle.dumps(back["f"]) == pickle.dumps(floats) and back["i"] == ints
    assert all(type(v) is int for v in back["i"])
    assert back["mixed"] == [1] * 9 + [1.0] and type(back["mixed"][-1]) is float
    big = [2 ** 70] * 10  # outside int64: stays a JSON list
    assert _round_trip(big) == big


@pytest.mark.parametrize("dtype", ["?", "i1", "<i8", ">i4", "u2", "<f2", "<f4", ">f8", "<c16",
                                   "<U5"])
def test_arrays_and_scalars_of_every_allowed_dtype(dtype):
    array = np.arange(6).reshape(2, 3).astype(dtype)
    back = _round_trip({"c": array, "f": np.asfortranarray(array), "s": array.flat[4],
                        "v": array[:, ::2]})
    for key in ("c", "f"):
        assert back[key].dtype == array.dtype and np.array_equal(back[key], array)
    assert back["f"].flags.f_contiguous
    assert type(back["s"]) is type(array.flat[4]) and back["s"] == array.flat[4]
    assert np.array_equal(back["v"], array[:, ::2])


def test_object_and_structured_arrays_are_refused():
    with pytest.raises(TypeError, match=r"policy\['x'\]: arrays must have a bool, int"):
        encode({"x": np.array([None])})
    with pytest.raises(TypeError, match="arrays must have"):
        encode(np.zeros(2, dtype=[("a", "f8")]))
    with pytest.raises(TypeError, match="arrays must have"):
        encode(np.datetime64("2020-01-01"))


def test_shared_references_and_cycles_are_kept():
    array, inner = np.zeros(3), [1]
    gen = np.random.default_rng(1)
    box = Stateful(4)
    value = {"a": array, "b": array, "l1": inner, "l2": inner, "g": gen, "g2": gen,
             "t": (inner, inner), "o": box, "o2": box}
    value["self"] = value
    back = _round_trip(value)
    assert back["a"] is back["b"] and back["l1"] is back["l2"] and back["g"] is back["g2"]
    assert back["t"][0] is back["t"][1] is back["l1"] and back["self"] is back
    assert back["o"] is back["o2"] and back["o"].x == 4


def test_a_tuple_that_contains_itself_is_refused():
    cell = []
    loop = (cell,)
    cell.append(loop)
    with pytest.raises(ValueError, match="refers back to a tuple"):
        encode(loop)


@pytest.mark.parametrize("name", codec.ALLOWED_BIT_GENERATORS)
def test_generators_continue_their_stream(name):
    seed_seq = np.random.SeedSequence(12345, spawn_key=(3,))
    gen = np.random.Generator(getattr(np.random, name)(seed_seq))
    gen.random(7)
    back = _round_trip(gen)
    assert back.bit_generator.seed_seq.entropy == 12345
    assert np.array_equal(back.random(50), gen.random(50))
    assert pickle.dumps(back) == pickle.dumps(gen)


def test_seed_sequences_round_trip():
    seq = np.random.SeedSequence([1, 2 ** 100], spawn_key=(1, 2), pool_size=8)
    seq.spawn(3)
    back = _round_trip(seq)
    assert back.n_children_spawned == 3 and back.pool_size == 8
    assert np.array_equal(back.generate_state(4), seq.generate_state(4))


def test_a_legacy_bit_generator_is_refused():
    class Custom(np.random.PCG64):
        pass
    with pytest.raises(TypeError, match="allowed bit generators"):
        encode(np.random.Generator(Custom(1)))


def test_frozen_dataclasses_slots_and_getstate_classes():
    scores = ActionScores(ucb=np.ones(2), mean=np.zeros(2), width=np.ones(2), scale="reward")
    back = _round_trip(scores)
    assert back.scale == "reward" and np.array_equal(back.ucb, scores.ucb)
    slotted = Slotted()
    slotted.a = [1.5]
    back = _round_trip(slotted)
    assert back.a == [1.5] and not hasattr(back, "b")
    assert _round_trip(Stateful(21)).x == 21


class NotRegistered:
    pass


def test_unregistered_classes_functions_and_modules_are_refused():
    for value, name in [(NotRegistered(), "NotRegistered"), (print, "builtin_function"),
                        (lambda: 0, "function"), (np, "module"), (b"bytes", "bytes"),
                        ({1, 2}, "set"), (Slotted, "type")]:
        with pytest.raises(TypeError, match=f"which a model file cannot hold"):
            encode({"k": value})


def test_decoding_refuses_malformed_trees():
    cases = [({"$": "ref", "id": 0}, "dangling ref"),
             ({"$": "ndarray", "array": "nope"}, "dangling array name"),
             ({"$": "object", "module": "os", "qualname": "system", "state": None}, "not allowed"),
             ({"$": "object", "module": "glmbandits.cli.main", "qualname": "main",
               "state": None}, "not allowed"),
             ({"$": "float", "v": "1.5"}, "nan, inf or -inf"),
             ({"$": "int", "v": "12"}, "hex string"),
             ({"$": "dict", "items": [[[1], 2]]}, "bad dict key"),
             ({"$": "tuple", "items": [{"$": "ref", "id": 0}]}, "under construction"),
             ({"$": "scalar", "dtype": "|O", "hex": "00"}, "arrays must have"),
             ({"$": "scalar", "dtype": "<f8", "hex": "00"}, "needs 8 bytes"),
             ({"$": "generator", "bit_generator": "RandomState", "state": None,
               "seed_seq": None}, "not allowed"),
             ({"$": "dict"}, "needs fields"),
             ({"$": "ndarray", "dtype": "<f8", "shape": [1], "b64": "AAAAAAAAAAA="},
              "must be named"),
             (1.5e400 if False else {"$": "nope"}, "unknown node type")]
    for tree, match in cases:
        with pytest.raises(MalformedStateError, match=match):
            decode(tree, {})
    with pytest.raises(MalformedStateError, match="not used by the state"):
        decode([], {"a0": np.zeros(1)})
    deep: list = []
    for _ in range(1000):
        deep = [deep]
    with pytest.raises(MalformedStateError, match="nested"):
        decode(deep, {})


def test_strict_json():
    with pytest.raises(MalformedStateError, match="NaN is not allowed"):
        codec.loads_json(b"[NaN]")
    with pytest.raises(MalformedStateError, match="repeats a key"):
        codec.loads_json(b'{"a": 1, "a": 2}')
    with pytest.raises(ValueError):
        codec.dumps_json([math.nan])
