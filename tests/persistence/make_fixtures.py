"""Write the backward-compatibility fixtures of format version 1 (not a test module).

One file per policy class in ``tests/persistence/fixtures/v1/<ClassName>.glmb``:
``cls(n_features=3, seed=0)`` after 20 rounds of :func:`persistence_play.play`
on stream seed 100 (5 unit-ball actions a round, 0/1 rewards), i.e.
:func:`persistence_play.recipe`. ``test_persistence_fixtures.py`` loads each file
and checks it equals the recipe rebuilt by the current code, then 20 more rounds.

Run from the repository root, only when the format version changes (a new
``fixtures/vN`` folder) or a policy class is added::

    PYTHONPATH=src:tests:tests/persistence python tests/persistence/make_fixtures.py
"""

from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "fixtures" / "v1"


def main() -> None:
    import glmbandits
    import persistence_play
    import policy_catalogue

    FOLDER.mkdir(parents=True, exist_ok=True)
    for cls in policy_catalogue.POLICY_CLASSES:
        path = glmbandits.save(persistence_play.recipe(cls), FOLDER / f"{cls.__name__}.glmb")
        print(f"{path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
