"""Every policy class, in several configurations, continues bit for bit after save/load,
pickle and deepcopy: actions, scores, distributions, estimates and the final pickled state."""

from __future__ import annotations

import copy
import inspect
import pickle

import numpy as np
import pytest

import glmbandits
import policy_catalogue
from persistence_play import assert_same_policies, assert_same_runs, play

D = 4
CLASSES, IDS = policy_catalogue.POLICY_CLASSES, policy_catalogue.POLICY_IDS

#: name -> (constructor keywords, number of actions per round)
CONFIGS = {
    "default": ({}, 5),
    "lazy": ({"refit": "lazy"}, 5),
    "l2_0": ({"l2": 0.0}, 5),
    "floor": ({"exploration_floor": 0.2}, 5),
    "generator_seed": ({"seed": "generator"}, 5),
    "changing_K": ({}, (1, 8)),
}


def _make(cls: type, config: str):
    keywords, k = CONFIGS[config]
    keywords = dict(keywords)
    accepted = inspect.signature(cls.__init__).parameters
    if any(name not in accepted for name in keywords if name != "seed"):
        pytest.skip(f"{cls.__name__} has no {sorted(keywords)}")
    keywords["seed"] = np.random.default_rng(7) if keywords.get("seed") == "generator" else 0
    try:
        policy = cls(n_features=D, **keywords)
    except ValueError as error:
        pytest.skip(f"{cls.__name__} refuses {keywords}: {error}")
    return policy, k


def _save_load(policy, tmp_path):
    return glmbandits.load(glmbandits.save(policy, tmp_path / "policy.glmb"))


ROUND_TRIPS = {
    "save_load": _save_load,
    "pickle": lambda policy, tmp_path: pickle.loads(pickle.dumps(policy)),
    "deepcopy": lambda policy, tmp_path: copy.deepcopy(policy),
}


@pytest.mark.parametrize("trip", sorted(ROUND_TRIPS))
@pytest.mark.parametrize("played", [0, 30], ids=["t0", "t30"])
@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_a_copy_continues_bit_for_bit(cls, config, played, trip, tmp_path):
    policy, k = _make(cls, config)
    play(policy, played, seed=11, k=k)
    clone = ROUND_TRIPS[trip](policy, tmp_path)
    assert clone is not policy
    exact = trip == "save_load"  # load interns strings as the original's are interned
    assert_same_policies(policy, clone, exact)
    if config == "generator_seed":
        assert clone.seed is clone.rng_  # the shared Generator stays one object
    assert_same_runs(play(policy, 30, seed=12, k=k), play(clone, 30, seed=12, k=k))
    assert_same_policies(policy, clone, exact)


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_saving_changes_nothing_and_is_deterministic(cls, tmp_path):
    policy, _ = _make(cls, "default")
    play(policy, 25, seed=3)
    before = pickle.dumps(policy)
    first = glmbandits.save(policy, tmp_path / "a.glmb")
    assert pickle.dumps(policy) == before
    loaded = cls.load(first)
    assert_same_policies(policy, loaded)
    # saving the loaded copy again gives the same state member and arrays
    second = loaded.save(tmp_path / "b.glmb")
    import zipfile
    with zipfile.ZipFile(first) as a, zipfile.ZipFile(second) as b:
        assert a.read("state.json") == b.read("state.json")
        assert a.read("arrays.npz") == b.read("arrays.npz")


def test_save_returns_a_path_and_policy_methods_agree(tmp_path):
    policy = glmbandits.UCBGLM(n_features=3, seed=1)
    path = policy.save(str(tmp_path / "u.glmb"))
    assert path == tmp_path / "u.glmb" and path.is_file()
    assert isinstance(glmbandits.UCBGLM.load(path), glmbandits.UCBGLM)
    assert isinstance(glmbandits.Policy.load(path), glmbandits.UCBGLM)
    assert isinstance(glmbandits.persistence.load(path, expected_class=glmbandits.Policy),
                      glmbandits.UCBGLM)


def test_save_refuses_what_is_not_a_policy(tmp_path):
    with pytest.raises(TypeError, match="save: policy must be a glmbandits Policy, got dict"):
        glmbandits.save({}, tmp_path / "x.glmb")
    assert not (tmp_path / "x.glmb").exists()
