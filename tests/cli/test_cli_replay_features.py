"""``glmbandits replay --log FILE.parquet --features SCHEMA``: a service's exported named
requests featurised again by another schema, and its policies evaluated (issue 24 item 2)."""

from __future__ import annotations

import json
import re

import pytest

from glmbandits.cli.main import main

pytest.importorskip("pyarrow")
pytest.importorskip("starlette")


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """A service with a schema, named decides by catalogue id and inline, rewards, then
    ``glmbandits export`` (the command line)."""
    from named_log_kit import named_service_log

    folder = tmp_path_factory.mktemp("features")
    config, db, _ = named_service_log(folder / "serve", rounds=40, dense=False)
    out = folder / "decisions.parquet"
    assert main(["export", "--db", db, str(out)]) == 0
    return folder, config, out


def _declaration(config) -> dict:
    from glmbandits.service.config import load_config

    return load_config(config).features.declaration()


def test_replay_with_the_service_schema_and_with_another(export, capsys) -> None:
    from glmbandits.service.config import load_config

    folder, config, out = export
    service_schema = load_config(config).features
    capsys.readouterr()
    assert main(["replay", "--log", str(out), "--features", str(config),
                 "--algorithms", "linucb,random", "--estimators", "ips"]) == 0
    text = capsys.readouterr().out
    assert f"fingerprint {service_schema.fingerprint_[:12]}" in text
    assert f"d={service_schema.n_features_out_}" in text and "40 with a reward" in text
    assert re.search(r"linucb\s", text) and "ips" in text
    # another schema (JSON declaration): one more interaction, fitted on the log
    declaration = _declaration(config)
    declaration["interactions"] = [["context", "action"], ["topic", "words"]]
    other = folder / "other.json"
    other.write_text(json.dumps(declaration))
    assert main(["replay", "--log", str(out), "--features", str(other),
                 "--algorithms", "linucb", "--estimators", "ips"]) == 0
    text = capsys.readouterr().out
    d = int(re.search(r"fingerprint [0-9a-f]{12}, d=(\d+)", text).group(1))
    assert d > service_schema.n_features_out_
    assert f"d={d}," in text.split("\n")[1]  # the evaluated policies' width
    assert service_schema.fingerprint_[:12] not in text
    # a declaration with a fitted vocabulary and no norm_bound: both fitted on the log
    declaration = _declaration(config)
    declaration["action"][0]["vocabulary"] = "fit"
    fitted = folder / "fitted.json"
    fitted.write_text(json.dumps(declaration))
    assert main(["replay", "--log", str(out), "--features", str(fitted),
                 "--algorithms", "random", "--estimators", "ips"]) == 0
    assert f"d={service_schema.n_features_out_}" in capsys.readouterr().out
    # the same in a TOML table is refused: a .toml file is a service's table, all declared
    toml = folder / "fitted.toml"
    toml.write_text(config.read_text().replace('vocabulary = ["news", "sport", "tech"]',
                                               'vocabulary = "fit"'))
    assert main(["replay", "--log", str(out), "--features", str(toml)]) == 2
    err = capsys.readouterr().err
    assert "[features] action[0] vocabulary" in err and "give a JSON declaration" in err


@pytest.mark.parametrize("content, suffix, message", [
    ("[policy]\nname = 'ucb-glm'\n", ".toml", r"--features \S+: the file has no \[features\]"),
    ("[features]\nintercept = 3\n", ".toml", r"--features \S+: .*\[features\] intercept"),
    ("[features]\nunit_ball = true\n[[features.context]]\nkind = 'numerical'\nname = 'x'\n",
     ".toml", r"--features \S+: \[features\] context\[0\]"),
    ("[features\n", ".toml", r"--features \S+: not a TOML file"),
    ("[1, 2]", ".json", r"--features \S+: the JSON must be an object"),
    ('{"context": [{"kind": "numeric", "name": "age"}], "norm_bound": "x"}', ".json",
     r"--features \S+: norm_bound must be a number"),
])
def test_bad_schema_files_name_the_flag(export, capsys, tmp_path, content, suffix,
                                        message) -> None:
    _, _, out = export
    schema = tmp_path / f"schema{suffix}"
    schema.write_text(content)
    capsys.readouterr()
    assert main(["replay", "--log", str(out), "--features", str(schema),
                 "--algorithms", "random"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    assert re.search(message, err), err


def test_features_needs_an_exported_parquet_log(export, capsys, tmp_path) -> None:
    folder, config, out = export
    assert main(["replay", "--dataset", "synthetic", "--features", str(config)]) == 2
    assert "--features" in capsys.readouterr().err
    assert main(["replay", "--log", str(tmp_path / "x.npz"), "--features", str(config)]) == 2
    err = capsys.readouterr().err
    assert "needs --log FILE.parquet" in err and "x.npz" in err
    # a schema the logged requests do not fit: the row, the decision and the feature
    declaration = _declaration(config)
    declaration["context"] = declaration["context"][1:]  # no "country" field
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps(declaration))
    assert main(["replay", "--log", str(out), "--features", str(strict)]) == 2
    err = capsys.readouterr().err
    assert "decision 'd0'" in err and "'country'" in err
