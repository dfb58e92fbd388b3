"""A decision service's log with named decides, for the export and feature-evaluation tests.

:func:`named_service_log` runs an in-process service with a ``[features]`` schema (no
HTTP: the service core and its named operations): a catalogue of articles, decides by
catalogue id and inline, a catalogue action whose features change half-way and one that
is retired, a dense decide, rewards; then it stops the service and returns the config and
the database URL (for ``glmbandits export``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np

FEATURES = '''
[features]
norm_bound = 4.0
interactions = [["context", "action"]]

[[features.context]]
kind = "categorical"
name = "country"
vocabulary = ["DE", "FR", "US"]

[[features.context]]
kind = "multi_categorical"
name = "segments"
vocabulary = ["politics", "sports", "science"]

[[features.action]]
kind = "categorical"
name = "topic"
vocabulary = ["news", "sport", "tech"]

[[features.action]]
kind = "numeric"
name = "words"
scale = [800.0, 400.0]
range = [400.0, 1200.0]
'''
ARTICLES = {"a1": {"topic": "news", "words": 900}, "a2": {"topic": "sport", "words": 450},
            "a3": {"topic": "tech", "words": 1200}, "a4": {"topic": "news", "words": 600}}
#: a1's features from the middle of the log on
CHANGED = {"topic": "sport", "words": 500}
KEY = "test-key-0123456789"


def write_named_config(folder: Path) -> Path:
    """A service config with the schema above (``n_features`` left to the schema)."""
    path = folder / "service.toml"
    path.write_text(f'[policy]\nname = "ucb-glm"\nseed = 7\n\n[decisions]\nmax_actions = 8\n\n'
                    f'[service]\nsnapshot_every = 25\n{FEATURES}')
    return path


def named_service_log(folder: Path, rounds: int = 40, seed: int = 0,
                      dense: bool = True) -> tuple[Path, str, Any]:
    """Run the service over ``rounds`` named decides; returns (config path, db URL, the
    policy's n_features). Decision ``d{t}``: by id for even t, inline for odd t; a1
    changes to :data:`CHANGED` and a4 is retired after round ``rounds // 2``; with
    ``dense``, one dense decide ``dense`` (rewarded) at the end."""
    from glmbandits.service.config import load_config
    from glmbandits.service.core import DecisionService
    from glmbandits.service.named_body import parse_named
    from glmbandits.service.named_operations import (delete_action_operation,
                                                     put_action_operation)
    from glmbandits.service.schemas import AnyDecideRequest
    from glmbandits.service.store import open_store

    folder.mkdir(parents=True, exist_ok=True)
    config_path = write_named_config(folder)
    config = load_config(config_path)
    db = f"sqlite:///{folder / 'log.db'}"
    clock = iter(range(1_000_000, 2_000_000))
    service = DecisionService(config, open_store(db), clock=lambda: float(next(clock))).start()
    rng = np.random.default_rng(seed)
    try:
        for action_id, features in ARTICLES.items():
            service.submit(put_action_operation(service, action_id, features)).result()
        for t in range(rounds):
            ids = [i for i in ARTICLES if i in service.catalogue]
            segments = ["politics", "sports", "science"]
            context = {"country": ["DE", "FR", "US"][int(rng.integers(3))],
                       "segments": [s for s in segments if rng.random() < 0.4]}
            body: dict[str, Any] = {"decision_id": f"d{t}", "context": context}
            if t % 2 == 0:
                body["action_ids"] = ids
            else:
                body["actions"] = [{"id": i, "features": service.catalogue.get(i)} for i in ids]
            if t % 5 == 0:
                body["excluded_ids"] = [ids[-1]]
            answer = service.decide_named(parse_named(msgspec.convert(body, AnyDecideRequest), 8))
            features = service.catalogue.get(answer["action_id"])
            service.reward(answer["decision_id"],
                           float(rng.random() < (0.8 if features["words"] < 800 else 0.3)))
            if t == rounds // 2:
                service.submit(put_action_operation(service, "a1", CHANGED)).result()
                service.submit(delete_action_operation(service, "a4")).result()
        if dense:
            d = config.policy.n_features
            X = np.eye(2, d) * 0.5
            service.decide(X, "dense")
            service.reward("dense", 1.0)
    finally:
        service.stop(snapshot=False)
    return config_path, db, config.policy.n_features
