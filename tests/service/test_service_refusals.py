"""The core maps a policy's typed refusals to HTTP refusals by type, never by message text."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from glmbandits.service.config import load_config
from glmbandits.service.core import Conflict, DecisionService, Invalid, NotFound
from glmbandits.service.store import open_store
from servicekit import write_config


def _start(tmp_path: Path) -> DecisionService:
    config = load_config(write_config(tmp_path))
    store = open_store(f"sqlite:///{tmp_path / 'log.db'}")
    return DecisionService(config, store, clock=time.time).start()


def test_the_field_of_a_refusal_comes_from_its_type_not_its_message(tmp_path):
    service = _start(tmp_path)
    try:
        X = np.eye(3)
        # an id too long whose text names another field: the refusal is the id's
        with pytest.raises(Invalid) as long_id:
            service.decide(X, decision_id="x" * 300 + "contexts")
        assert long_id.value.field == "decision_id"
        with pytest.raises(Invalid) as bad_id:
            service.reward("\x00excluded", 1.0)
        assert bad_id.value.field == "decision_id"
        service.decide(X, decision_id="a")
        with pytest.raises(Invalid) as bad_reward:
            service.reward("a", 7.0)
        assert bad_reward.value.field == "reward" and bad_reward.value.status == 422
        with pytest.raises(Conflict, match="pending for another request") as other:
            service.decide(X * 0.5, decision_id="a")
        assert other.value.status == 409 and other.value.field == "decision_id"
        assert service.reward("a", 1.0)["status"] == "learned"
        with pytest.raises(Conflict, match=r"'a' was already closed \(rewarded\)"):
            service.decide(X, decision_id="a")
        with pytest.raises(NotFound, match="'never' is unknown") as unknown:
            service.reward("never", 1.0)
        assert unknown.value.status == 404 and unknown.value.field == "decision_id"
    finally:
        service.stop()
