"""The event vocabulary (kinds, statuses, the decision-id rule) has one home:
:mod:`glmbandits.data.vocabulary`; every other module imports it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import glmbandits

SRC = Path(glmbandits.__file__).resolve().parent
HOME = SRC / "data" / "vocabulary.py"


def test_every_layer_uses_the_one_vocabulary() -> None:
    from glmbandits.data import event_records, vocabulary
    from glmbandits.policies import decisions
    from glmbandits.service import events, replay

    for module in (event_records, decisions):
        assert module.REWARD_STATUSES is vocabulary.REWARD_STATUSES
        assert module.EXPIRY_OUTCOMES is vocabulary.EXPIRY_OUTCOMES
        assert module.check_decision_id is vocabulary.check_decision_id
        assert module.MAX_ID_LENGTH is vocabulary.MAX_ID_LENGTH
    assert events.EVENT_KINDS is vocabulary.EVENT_KINDS
    assert events.total_keys is vocabulary.total_keys
    assert replay.expected_totals({"decided": 1, "expired_default": 2, "late": 1}) == {
        "decisions": 1, "rewards_late": 1, "expiries_default": 2, "rewards": 1}


def _declarations(path: Path, root: Path = SRC) -> list[str]:
    """Literal tuples, lists or sets of a vocabulary (all its words, nothing else) and
    assignments to its names, in one module."""
    from glmbandits.data import vocabulary

    words = {frozenset(vocabulary.REWARD_STATUSES): "REWARD_STATUSES",
             frozenset(vocabulary.EXPIRY_OUTCOMES): "EXPIRY_OUTCOMES",
             frozenset(vocabulary.EVENT_KINDS): "EVENT_KINDS",
             frozenset(vocabulary.RECORD_KINDS): "RECORD_KINDS"}
    names = set(words.values()) | {"MAX_ID_LENGTH", "DECISION_ID_RULE", "DECISION_ID_PATTERN"}
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            declared = words.get(frozenset(e.value for e in node.elts))
            if declared is not None:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {declared} written out")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id in names:
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {target.id} assigned")
        elif isinstance(node, ast.FunctionDef) and node.name == "total_keys":
            found.append(f"{path.relative_to(root)}:{node.lineno}: {node.name} defined")
    return sorted(found, key=lambda line: int(line.split(":")[1]))


def test_no_module_declares_the_vocabulary_again() -> None:
    found = [line for path in sorted(SRC.rglob("*.py")) if path != HOME
             for line in _declarations(path)]
    assert found == []


def test_a_second_declaration_is_found(tmp_path: Path) -> None:
    sample = tmp_path / "event_records.py"
    sample.write_text('STATUSES = ("late", "held", "learned", "duplicate")\n'
                      "MAX_ID_LENGTH = 9\n"
                      "def total_keys(kind, status):\n    return ()\n"
                      'OTHER = ("late", "held")\n')
    assert _declarations(sample, tmp_path) == [
        "event_records.py:1: REWARD_STATUSES written out",
        "event_records.py:2: MAX_ID_LENGTH assigned",
        "event_records.py:3: total_keys defined"]
