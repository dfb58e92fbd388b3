"""Decision ids: one legal alphabet and length, checked at every door, round-tripped exactly.

Before the rule, an id ending in ``"\\x00"`` lost its NUL on save/load, pickle and deepcopy
(NumPy's fixed-width unicode arrays strip trailing NULs), so two pending decisions merged
into one; a lone surrogate (``"\\ud800"``) was accepted and then made ``save`` fail. The
rule (:func:`glmbandits.data.event_records.check_decision_id`): 1 to 256 characters, none
of them a control character (U+0000-U+001F, U+007F-U+009F) or a surrogate (U+D800-U+DFFF).
"""

from __future__ import annotations

import copy
import pickle
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glmbandits import EventLog, LinUCB, UCBGLM, load
from glmbandits.data.event_records import MAX_ID_LENGTH, check_decision_id

D = 2
X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])

#: Ids refused, each with what the message says about it.
ILLEGAL = [
    ("a\x00", "U+0000"),            # the NUL that save/pickle/deepcopy dropped
    ("\x00", "U+0000"),
    ("a\x00b", "U+0000"),           # PostgreSQL text cannot hold a NUL anywhere
    ("\ud800", "U+D800"),           # a lone surrogate: no UTF-8 for it, save failed
    ("ok\udfff", "U+DFFF"),
    ("tab\there", "U+0009"),
    ("line\n", "U+000A"),
    ("del\x7f", "U+007F"),
    ("nel\x85", "U+0085"),          # a C1 control character
    ("", "1 to 256 characters"),
    ("x" * (MAX_ID_LENGTH + 1), "1 to 256 characters"),
]
ILLEGAL_IDS = [value for value, _ in ILLEGAL]

#: Legal characters a naive rule might get wrong (spaces, format characters, non-characters,
#: the first and last code points around the refused ranges, astral planes).
EDGE_CHARACTERS = [" ", "~", "\xa0", "\xad", "\u200b", "\u2028", "\ufeff", "\ud7ff",
                   "\ue000", "\ufffd", "\ufffe", "\uffff", "\U0001f600", "\U0010ffff", "é",
                   "\u0301", "'", '"', "\\", "%", "&", "=", "?", "/", "#", "+"]
LEGAL_CHARACTERS = st.characters(min_codepoint=0x20, exclude_categories=("Cs",)).filter(
    lambda c: not "\x7f" <= c <= "\x9f")
LEGAL_IDS = st.text(st.one_of(LEGAL_CHARACTERS, st.sampled_from(EDGE_CHARACTERS)),
                    min_size=1, max_size=MAX_ID_LENGTH)
#: Fixed legal ids for the slower round trips (databases, Parquet).
EDGE_IDS = ["a", "x" * MAX_ID_LENGTH, "\U0010ffff" * MAX_ID_LENGTH, "ends in space ",
            " ", "a\xa0", "nbsp\u200b", "\ufeffbom", "\ufffe\uffff", "\ud7ff\ue000",
            "emoji \U0001f600", "e\u0301", "'; DROP TABLE events; --", "%00", "\\x00",
            "".join(EDGE_CHARACTERS)]


def _pending_ids(policy) -> list[str]:
    return list(policy.decisions_.pending)


def _resolved_ids(policy) -> list[str]:
    return list(policy.decisions_.resolved)


# -- the rule ---------------------------------------------------------------------------
@pytest.mark.parametrize("value, named", ILLEGAL, ids=repr)
def test_the_rule_refuses_controls_surrogates_and_bad_lengths(value, named):
    with pytest.raises(ValueError, match="decision_id") as caught:
        check_decision_id(value, "owner")
    message = str(caught.value)
    assert message.startswith("owner: decision_id must")
    assert named in message
    assert "control" in message and "surrogate" in message


def test_the_rule_names_the_type_of_a_non_str():
    for value in (b"abc", 12, None, ["a"]):
        with pytest.raises(TypeError, match=f"owner: decision_id must be a str, got "
                                            f"{type(value).__name__}"):
            check_decision_id(value, "owner")


def test_a_str_subclass_is_kept_as_a_plain_str():
    """np.str_ (a column of ids read with NumPy) is a str subclass: stored as a plain str,
    so that the saved state holds only plain strings."""
    checked = check_decision_id(np.str_("abc"), "owner")
    assert type(checked) is str and checked == "abc"
    policy = LinUCB(n_features=D, seed=0)
    policy.decide(X, np.str_("n1"), now=0.0)
    assert [type(key) for key in policy.decisions_.pending] == [str]


@given(LEGAL_IDS)
def test_every_legal_id_passes_the_rule_unchanged(value):
    assert check_decision_id(value, "owner") == value


# -- the policy's doors ------------------------------------------------------------------
@pytest.mark.parametrize("value", ILLEGAL_IDS, ids=repr)
def test_every_policy_door_refuses_an_illegal_id_and_changes_nothing(value):
    policy = UCBGLM(n_features=D, seed=0).configure_decisions(default_reward=0.0)
    policy.decide(X, "known", now=0.0)
    before = pickle.dumps(policy)
    rng_state = policy.rng_.bit_generator.state
    doors = {
        "decide": lambda: policy.decide(X, value, now=1.0),
        "reward": lambda: policy.reward(value, 1.0, now=1.0),
        "reward_batch": lambda: policy.reward_batch(["known", value], [1.0, 1.0], now=1.0),
        "register_decision": lambda: policy.register_decision(
            value, X, 0, [1 / 3] * 3, model_version=0, timestamp=1.0),
        "pending_decision": lambda: policy.pending_decision(value),
    }
    for name, call in doors.items():
        with pytest.raises(ValueError, match=f"UCBGLM.{name}: decision_id must") as caught:
            call()
        assert "control" in str(caught.value), name
        assert pickle.dumps(policy) == before, name
        assert policy.rng_.bit_generator.state == rng_state, name


def test_a_nul_ended_id_can_no_longer_merge_two_pending_decisions(tmp_path):
    """The reported loss: "a" and "a\\x00" were two pending decisions before save and one
    after (and after pickle and deepcopy); now the second is refused when decided."""
    policy = LinUCB(n_features=D, seed=0)
    policy.decide(X, "a", now=0.0)
    with pytest.raises(ValueError, match=r"decision_id must .*U\+0000"):
        policy.decide(X, "a\x00", now=0.0)
    assert _pending_ids(policy) == ["a"]
    for clone in (load(policy.save(tmp_path / "p.glmb")), pickle.loads(pickle.dumps(policy)),
                  copy.deepcopy(policy)):
        assert _pending_ids(clone) == ["a"]


def test_a_lone_surrogate_is_refused_before_it_can_break_save(tmp_path):
    policy = LinUCB(n_features=D, seed=0)
    with pytest.raises(ValueError, match=r"decision_id must .*U\+D800"):
        policy.decide(X, "\ud800", now=0.0)
    assert load(policy.save(tmp_path / "p.glmb")).decisions_.pending == {}


# -- the event log's doors ---------------------------------------------------------------
@pytest.mark.parametrize("value", ILLEGAL_IDS, ids=repr)
def test_the_event_log_refuses_an_illegal_id_and_writes_nothing(tmp_path, value):
    with EventLog(tmp_path / "log.db") as log:
        writers = {
            "record_decision": lambda: log.record_decision(value, 0.0, X, [1 / 3] * 3, 0,
                                                           1 / 3, 0),
            "record_reward": lambda: log.record_reward(value, 0.0, 1.0, "learned"),
            "record_expiry": lambda: log.record_expiry(value, 0.0, "dropped", None),
        }
        for name, write in writers.items():
            with pytest.raises(ValueError, match=f"EventLog.{name}: decision_id must"):
                write()
        assert len(log) == 0


# -- the service's parsers (JSON and .npy) -----------------------------------------------
@pytest.mark.parametrize("value", [v for v in ILLEGAL_IDS if not "\ud800" <= v[-1:] <= "\udfff"],
                         ids=repr)
def test_the_service_parsers_refuse_an_illegal_id_naming_the_field(value):
    import json

    from glmbandits.service.errors import Invalid
    from glmbandits.service.npy_body import parse_decide_npy
    from glmbandits.service.schemas import parse_decide, parse_reward

    body = json.dumps({"decision_id": value, "reward": 1.0}).encode()
    with pytest.raises(Invalid, match="decision_id") as caught:
        parse_reward(body)
    assert caught.value.field == "decision_id"
    body = json.dumps({"decision_id": value, "contexts": X.tolist()}).encode()
    with pytest.raises(Invalid, match="decision_id") as caught:
        parse_decide(body, D, 10)
    assert caught.value.field == "decision_id"
    npy = _npy(X)
    with pytest.raises(Invalid, match="decision_id") as caught:
        parse_decide_npy(npy, [("decision_id", value)], D, 10)
    assert caught.value.field == "decision_id"


def _npy(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


# -- every legal id round-trips exactly ----------------------------------------------------
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LEGAL_IDS, min_size=2, max_size=6, unique=True))
def test_legal_ids_round_trip_through_save_load_pickle_and_deepcopy(ids):
    """Pending and closed ids (and their order) come back exactly, and every pending one
    still takes its reward."""
    policy = UCBGLM(n_features=D, seed=0)
    for t, decision_id in enumerate(ids):
        policy.decide(X, decision_id, now=float(t))
    closed = ids[0]
    policy.reward(closed, 1.0, now=10.0)
    with tempfile.TemporaryDirectory() as folder:
        loaded = load(policy.save(Path(folder) / "p.glmb"))
    for clone in (loaded, pickle.loads(pickle.dumps(policy)), copy.deepcopy(policy)):
        assert _pending_ids(clone) == ids[1:]
        assert _resolved_ids(clone) == [closed]
        for decision_id in ids[1:]:
            assert clone.pending_decision(decision_id).decision_id == decision_id
        assert clone.reward(closed, 1.0, now=11.0) == "duplicate"
        assert clone.reward_batch(ids[1:], [0.0] * (len(ids) - 1), now=11.0) == \
            ["learned"] * (len(ids) - 1)


@settings(max_examples=40, deadline=None)
@given(st.lists(LEGAL_IDS, min_size=1, max_size=4, unique=True))
def test_legal_ids_round_trip_through_the_sqlite_event_log(ids):
    with tempfile.TemporaryDirectory() as folder:
        with EventLog(Path(folder) / "log.db", durability="normal") as log:
            _write_events(log, ids)
            _assert_read_back(log, ids)


def _write_events(log, ids: list[str]) -> None:
    for t, decision_id in enumerate(ids):
        log.record_decision(decision_id, float(t), X, [1 / 3] * 3, 0, 1 / 3, 0)
        log.record_reward(decision_id, t + 0.5, 1.0, "learned")


def _assert_read_back(log, ids: list[str]) -> None:
    events = list(log.events())
    assert [event.decision_id for event in events] == [i for i in ids for _ in range(2)]
    assert all(type(event.decision_id) is str for event in events)


def test_edge_ids_round_trip_through_sqlite_and_the_parquet_export(tmp_path):
    pytest.importorskip("pyarrow")
    from glmbandits.data import export_parquet
    from glmbandits.data.event_export import read_parquet_columns

    with EventLog(tmp_path / "log.db") as log:
        _write_events(log, EDGE_IDS)
        _assert_read_back(log, EDGE_IDS)
        export_parquet(log, tmp_path / "log.parquet")
    columns = read_parquet_columns(tmp_path / "log.parquet", "test")
    assert columns["decision_id"] == EDGE_IDS


@pytest.mark.slow
def test_edge_ids_round_trip_through_the_postgres_event_log(postgres_url):
    from glmbandits.data import PostgresEventLog

    with PostgresEventLog(postgres_url) as log:
        _write_events(log, EDGE_IDS)
        _assert_read_back(log, EDGE_IDS)
