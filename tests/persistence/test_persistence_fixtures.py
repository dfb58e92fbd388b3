"""Files written by format version 1 still load, and equal the same recipe rebuilt now.

The fixtures are made by ``make_fixtures.py`` (its docstring has the recipe).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import glmbandits
import policy_catalogue
from persistence_play import assert_same_policies, assert_same_runs, play, recipe

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "v1"


def test_there_is_a_fixture_for_every_policy_class():
    assert sorted(p.stem for p in FIXTURES.glob("*.glmb")) == sorted(policy_catalogue.POLICY_IDS)


@pytest.mark.parametrize("cls", policy_catalogue.POLICY_CLASSES, ids=policy_catalogue.POLICY_IDS)
def test_a_v1_file_loads_and_equals_the_recipe_rebuilt_now(cls):
    loaded = cls.load(FIXTURES / f"{cls.__name__}.glmb")
    rebuilt = recipe(cls)
    assert_same_policies(loaded, rebuilt, exact_pickle=True)
    assert_same_runs(play(loaded, 20, seed=101), play(rebuilt, 20, seed=101))
    assert_same_policies(loaded, rebuilt, exact_pickle=True)
    assert glmbandits.persistence.FORMAT_VERSION == 1
