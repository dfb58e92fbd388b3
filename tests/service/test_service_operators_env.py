"""The service config from environment variables (issue 26 item 5): every key of
CONFIG_FIELDS is ``GLMBANDITS_<TABLE>_<KEY>``, read with its table's type, checked naming
the variable; a command line flag > the environment > the file > the default."""

from __future__ import annotations

import pytest

from glmbandits.service.config import CONFIG_FIELDS, ConfigError, hash_key, load_config
from glmbandits.service.env_config import env_variable
from servicekit import ServerProcess, environment, write_config

DIGEST = hash_key("an-operator-key-of-mine")

#: a value for every key: (the variable's text, what the checked config holds)
SAMPLES = {
    ("policy", "name"): ("linucb", "linucb"),
    ("policy", "n_features"): ("5", 5),
    ("policy", "family"): ("probit", "probit"),
    ("policy", "seed"): ("11", 11),
    ("policy", "horizon"): ("5000", 5000),
    ("policy", "params"): ("{alpha = 2.5}", {"alpha": 2.5}),
    ("decisions", "max_actions"): ("17", 17),
    ("decisions", "max_pending"): ("70", 70),
    ("decisions", "max_resolved"): ("80", 80),
    ("decisions", "max_catalogue"): ("70", 70),
    ("decisions", "reward_wait"): ("12", 12.0),
    ("decisions", "expire_every"): ("0.5", 0.5),
    ("decisions", "mode"): ("shadow", "shadow"),
    ("decisions", "missing_reward"): ("default", "default"),
    ("decisions", "default_reward"): ("0.25", 0.25),
    ("decisions", "duplicate_rewards"): ("sum", "sum"),
    ("service", "host"): ("0.0.0.0", "0.0.0.0"),
    ("service", "port"): ("9123", 9123),
    ("service", "db"): ("sqlite:///elsewhere.db", "sqlite:///elsewhere.db"),
    ("service", "max_body_bytes"): ("2048", 2048),
    ("service", "snapshot_every"): ("33", 33),
    ("service", "synchronous"): ("NORMAL", "NORMAL"),
    ("service", "max_header_bytes"): ("4096", 4096),
    ("service", "max_headers"): ("12", 12),
    ("service", "header_timeout"): ("2.5", 2.5),
    ("service", "body_timeout"): ("4", 4.0),
    ("service", "max_queue"): ("64", 64),
    ("service", "log_format"): ("json", "json"),
    ("auth", "api_key_sha256"): (DIGEST, (DIGEST,)),
    ("drift", "window"): ("50", 50),
    ("drift", "alpha"): ("0.05", 0.05),
    ("drift", "warmup"): ("7", 7),
    ("drift", "action"): ("restart", "restart"),
}


def _held(config, table: str, key: str):
    owner = {"policy": config.policy, "decisions": config.decisions,
             "drift": config.drift}.get(table, config)
    return getattr(owner, key)


def test_every_config_key_is_settable_from_the_environment(tmp_path):
    keys = {(table, key) for table, fields in CONFIG_FIELDS.items() for key in fields
            if table != "features"}  # (its keys: tests/service/test_config_features.py)
    assert keys == set(SAMPLES), "give each key of CONFIG_FIELDS a sample here"
    path = write_config(tmp_path)  # policy ucb-glm, d = 3, max_actions 8
    for table, fields in CONFIG_FIELDS.items():
        for key in fields if table != "features" else ():
            text, expected = SAMPLES[table, key]
            environ = {env_variable(table, key): text}
            if (table, key) == ("policy", "params"):  # linucb takes alpha
                environ[env_variable("policy", "name")] = "linucb"
            config = load_config(path, environ)
            assert _held(config, table, key) == expected, (table, key)
            without = load_config(path, {})  # (no [drift] in the file: the monitor is off)
            assert without.drift is None if table == "drift" else \
                _held(without, table, key) != expected, (table, key)


def test_the_environment_overrides_the_file_which_overrides_the_default(tmp_path):
    path = write_config(tmp_path, service="port = 1111\nmax_queue = 5")
    assert (load_config(path, {}).port, load_config(path, {}).max_queue) == (1111, 5)
    config = load_config(path, {"GLMBANDITS_SERVICE_PORT": "2222"})
    assert (config.port, config.max_queue, config.synchronous) == (2222, 5, "FULL")


@pytest.mark.parametrize("variable, text, message", [
    ("GLMBANDITS_SERVICE_PORT", "0", r"\[service\] port must be a port 1-65535, got 0"),
    ("GLMBANDITS_SERVICE_PORT", "eighty", r"\[service\] port must be a port 1-65535, got "
                                          "'eighty'"),
    ("GLMBANDITS_SERVICE_PORT", "'80'", r"\[service\] port must be a port 1-65535, got "
                                        r"'80' \(str\)"),
    ("GLMBANDITS_SERVICE_MAX_QUEUE", "1.5", r"\[service\] max_queue must be an integer "),
    ("GLMBANDITS_DECISIONS_MODE", "dark", r"\[decisions\] mode must be 'live' or 'shadow'"),
    ("GLMBANDITS_SERVICE_DB", "mysql://x", "db"),
    ("GLMBANDITS_AUTH_API_KEY_SHA256", "abc", r"api_key_sha256\[0\] must be a 64-digit"),
    ("GLMBANDITS_POLICY_PARAMS", "{alpha = ", r"\[policy\] params must be a table"),
])
def test_a_bad_variable_is_an_error_naming_it(tmp_path, variable, text, message):
    path = write_config(tmp_path)
    with pytest.raises(ConfigError, match=f"^environment variable {variable}: .*{message}"):
        load_config(path, {variable: text})


def test_a_real_server_reads_the_environment_below_its_flags(tmp_path):
    """GLMBANDITS_SERVICE_MAX_BODY_BYTES (env) beats the file's 65536; --port 0 and --db
    (flags) beat GLMBANDITS_SERVICE_PORT and GLMBANDITS_SERVICE_DB."""
    db = tmp_path / "log.db"
    env = environment(GLMBANDITS_SERVICE_MAX_BODY_BYTES="2048",
                      GLMBANDITS_SERVICE_PORT="1", GLMBANDITS_SERVICE_DB="sqlite:///"
                      + str(tmp_path / "not-this.db"))
    process = ServerProcess(write_config(tmp_path), f"sqlite:///{db}", env=env)
    try:
        assert not process.url.endswith(":1")
        small = process.client.post("/v1/decide", json={
            "decision_id": "a", "contexts": [[0.1, 0.2, 0.3]]})
        assert small.status_code == 200, small.text
        big = process.client.post("/v1/decide", json={
            "decision_id": "b", "contexts": [[0.1, 0.2, 0.3]] * 8, "pad": "x" * 3000})
        assert big.status_code == 413, big.text
        assert "max_body_bytes = 2048" in big.json()["detail"]
    finally:
        assert process.terminate() == 0, process.output()
    assert db.is_file() and not (tmp_path / "not-this.db").exists()
