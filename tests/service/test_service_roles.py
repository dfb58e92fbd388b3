"""One commit worker, roles as strategies, every HTTP refusal in one module."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import time
from pathlib import Path

import numpy as np
import pytest

import glmbandits.service
import policy_catalogue
from glmbandits.service.config import load_config
from glmbandits.service.core import DecisionService
from glmbandits.service.errors import ServiceError
from glmbandits.service.store import open_store
from servicekit import write_config


def _service_modules() -> list:
    modules = []
    for info in pkgutil.iter_modules(glmbandits.service.__path__):
        try:
            modules.append(importlib.import_module(f"glmbandits.service.{info.name}"))
        except ImportError:  # an optional driver that is not installed
            continue
    return modules


def test_every_http_refusal_is_defined_in_errors_and_authorize_in_auth():
    from glmbandits.service import auth

    for module in _service_modules():
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, ServiceError):
                assert value.__module__ == "glmbandits.service.errors", (module.__name__, name)
    assert auth.authorize.__module__ == "glmbandits.service.auth"
    keys = auth.KeyChecker([__import__("hashlib").sha256(b"k").hexdigest()])
    auth.authorize(keys, "Bearer k")
    with pytest.raises(ServiceError) as refused:
        auth.authorize(keys, "Bearer nope")
    assert refused.value.status == 401


def test_the_worker_is_one_class_and_the_roles_are_strategies():
    from glmbandits.service.api_role import ApiRole
    from glmbandits.service.learner_role import LearnerRole
    from glmbandits.service.roles import AllRole, Role

    for module in _service_modules():
        for name, value in vars(module).items():
            if inspect.isclass(value) and value is not DecisionService:
                assert not issubclass(value, DecisionService), (module.__name__, name)
    for role in (AllRole, ApiRole, LearnerRole):
        assert not issubclass(role, DecisionService)
        missing = [name for name in vars(Role) if not name.startswith("_")
                   and not hasattr(role, name)]
        assert missing == [], (role, missing)
    for role in (ApiRole, LearnerRole):
        with pytest.raises(TypeError, match="PostgresStore"):
            role(object())  # type: ignore[arg-type]


def test_a_role_decides_what_the_operations_do(tmp_path: Path):
    from glmbandits.service.roles import AllRole

    class Counting(AllRole):
        decides = 0

        def decide_operation(self, service, X, decision_id, rows, requested, shown):
            Counting.decides += 1
            return super().decide_operation(service, X, decision_id, rows, requested, shown)

    config = load_config(write_config(tmp_path))
    service = DecisionService(config, open_store(f"sqlite:///{tmp_path / 'log.db'}"),
                              clock=time.time, role=Counting()).start()
    try:
        assert service.decide(np.eye(3), "a")["decision_id"] == "a"
        assert Counting.decides == 1 and service.totals()["decisions"] == 1
        assert service.role.name == "all"
    finally:
        service.stop()


@pytest.mark.parametrize("cls", policy_catalogue.POLICY_CLASSES, ids=policy_catalogue.POLICY_IDS)
def test_every_policy_is_what_the_service_serves(cls):
    from glmbandits.service.roles import ServedPolicy

    assert isinstance(cls(n_features=3, seed=0), ServedPolicy)


def test_only_errors_writes_a_refusals_body():
    import re

    from glmbandits.service.errors import refusal_body

    folder = Path(glmbandits.service.__file__).parent
    writers = [path.name for path in sorted(folder.glob("*.py"))
               if path.name != "errors.py" and re.search(r'"detail"\s*:', path.read_text())]
    assert writers == []
    assert refusal_body(405, "GET /v1/decide: Method Not Allowed") == (
        b'{"error":"method not allowed","detail":"GET /v1/decide: Method Not Allowed",'
        b'"field":null}')
