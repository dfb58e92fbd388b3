"""The common policy checks (:func:`glmbandits.testing.check_policy`) over every policy class
exported in ``glmbandits.__all__``, one test per class and check.

Each class must be constructible as ``cls(n_features=3, seed=0)``; the checks
(:data:`glmbandits.testing.CHECKS`): seeding is reproducible, K may change between rounds,
bad input raises and changes nothing, inputs are not mutated, a pickle round-trip and a
save/load round-trip continue bit for bit, scores and propensities are exposed and finite,
bad hyperparameters are refused, decide/reward are select/update plus the bookkeeping, and a
reward outside the family's domain is refused by every door.
"""

from __future__ import annotations

import pytest

import policy_catalogue
from glmbandits.testing import CHECKS, check_policy

POLICY_CLASSES, ids = policy_catalogue.POLICY_CLASSES, policy_catalogue.POLICY_IDS


def test_every_policy_class_is_found():
    names = set(ids)
    assert {"UCBGLM", "SupCBGLM", "LinUCB", "RandomPolicy"} <= names


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_every_policy_passes_the_common_checks(cls, check):
    check_policy(cls, checks=[check])
