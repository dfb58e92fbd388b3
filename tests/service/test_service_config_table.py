"""The service config is checked from one table of fields (type, range, conversion) by one
small checker; the messages are those the long parser gave."""

from __future__ import annotations

import inspect
import math

import pytest

from glmbandits.service import config as service_config
from glmbandits.service.config import (CONFIG_FIELDS, ConfigError, example_config, parse_config,
                                       tomllib)


def _minimal() -> dict:
    return {"policy": {"name": "ucb-glm", "n_features": 3}}


#: (table, key, bad value, the message after "config '<config>': ")
RANGES = [
    ("policy", "n_features", 0, "[policy] n_features must be an integer >= 1, got 0"),
    ("policy", "seed", -1, "[policy] seed must be an integer >= 0, got -1"),
    ("policy", "horizon", 0, "[policy] horizon must be an integer >= 1, got 0"),
    ("decisions", "max_actions", 0, "[decisions] max_actions must be an integer >= 1, got 0"),
    ("decisions", "max_pending", 0, "[decisions] max_pending must be an integer >= 1, got 0"),
    ("decisions", "max_resolved", 0, "[decisions] max_resolved must be an integer >= 1, got 0"),
    ("decisions", "reward_wait", -1.0,
     "[decisions] reward_wait must be a finite number of seconds >= 0, got -1.0"),
    ("decisions", "reward_wait", math.inf,
     "[decisions] reward_wait must be a finite number of seconds >= 0, got inf"),
    ("decisions", "expire_every", 0,
     "[decisions] expire_every must be a finite number of seconds >= 0.001, got 0"),
    ("decisions", "mode", "dark", "[decisions] mode must be 'live' or 'shadow', got 'dark'"),
    ("decisions", "missing_reward", "keep",
     "[decisions] missing_reward must be 'drop' or 'default', got 'keep'"),
    ("decisions", "default_reward", math.nan,
     "[decisions] default_reward must be a finite number, got nan"),
    ("decisions", "duplicate_rewards", "max",
     "[decisions] duplicate_rewards must be 'ignore' or 'sum', got 'max'"),
    ("service", "port", 0, "[service] port must be a port 1-65535, got 0"),
    ("service", "port", 65536, "[service] port must be a port 1-65535, got 65536"),
    ("service", "max_body_bytes", 1023,
     "[service] max_body_bytes must be an integer >= 1024, got 1023"),
    ("service", "snapshot_every", 0, "[service] snapshot_every must be an integer >= 1, got 0"),
    ("service", "synchronous", "OFF",
     "[service] synchronous must be 'FULL' or 'NORMAL', got 'OFF'"),
    ("service", "max_header_bytes", 10,
     "[service] max_header_bytes must be an integer >= 1024, got 10"),
    ("service", "max_headers", 0, "[service] max_headers must be an integer >= 1, got 0"),
    ("service", "header_timeout", 0.001,
     "[service] header_timeout must be a finite number of seconds >= 0.01, got 0.001"),
    ("service", "body_timeout", math.inf,
     "[service] body_timeout must be a finite number of seconds >= 0.01, got inf"),
]


@pytest.mark.parametrize("table, key, value, message", RANGES)
def test_a_value_out_of_range_is_refused_naming_the_key(table, key, value, message):
    data = _minimal()
    data.setdefault(table, {})[key] = value
    with pytest.raises(ConfigError) as error:
        parse_config(data)
    assert str(error.value) == f"config '<config>': {message}"
    assert CONFIG_FIELDS[table][key].valid is not None  # the range is declared in the table


@pytest.mark.parametrize("table, key", [(table, key) for table, fields in CONFIG_FIELDS.items()
                                        for key in fields])
def test_a_value_of_the_wrong_type_is_refused_with_the_tables_words(table, key):
    field = CONFIG_FIELDS[table][key]
    data = _minimal()
    wrong = [] if field.kinds is str else "text"
    data.setdefault(table, {})[key] = wrong
    with pytest.raises(ConfigError) as error:
        parse_config(data)
    assert str(error.value) == (f"config '<config>': [{table}] {key} must be {field.expected}, "
                                f"got {wrong!r} ({type(wrong).__name__})")


def test_the_table_declares_every_key_of_the_example_config_and_floats_are_floats():
    data = tomllib.loads(example_config())
    for table, section in data.items():
        assert set(section) <= set(CONFIG_FIELDS[table]), table
    data = _minimal()
    data["decisions"] = {"reward_wait": 3, "expire_every": 2, "default_reward": 1}
    data["service"] = {"header_timeout": 5, "body_timeout": 6}
    config = parse_config(data)
    for value in (config.decisions.reward_wait, config.decisions.expire_every,
                  config.decisions.default_reward, config.header_timeout, config.body_timeout):
        assert type(value) is float


def test_the_checker_is_small():
    """One table and one checker, not one long function of hand-written checks."""
    for function in (parse_config, service_config.check_table_values):
        assert len(inspect.getsource(function).splitlines()) <= 45, function.__name__
