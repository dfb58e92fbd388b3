"""The CLI: `run CONFIG` (with --seeds, --store, resume), `results`, `plot`, and `run` without CONFIG."""

from __future__ import annotations

import json
import textwrap

import pytest

from glmbandits.cli.main import main

CONFIG = textwrap.dedent("""
    name = "cli-demo"
    horizon = 50
    seeds = 3
    [environment]
    n_features = 2
    n_actions = 3
    [[policies]]
    name = "ucb-glm"
    [[policies]]
    name = "random"
""")


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(CONFIG)
    return path


def test_run_config_stores_resumes_and_summarises(tmp_path, config, capsys):
    store = tmp_path / "r.sqlite"
    args = ["run", str(config), "--seeds", "2", "--store", str(store), "--jobs", "1",
            "--no-plot"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "2 cells x 2 seeds" in out and "4 runs done, 0 already in the store" in out
    assert "| cli-demo | ucb-glm |" in out and "| cli-demo | random |" in out
    assert main(args) == 0
    assert "0 runs done, 4 already in the store (skipped)" in capsys.readouterr().out
    assert main(["results", str(store), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["label"], r["n_ok"]) for r in rows] == [("ucb-glm", 2), ("random", 2)]
    assert main(["results", str(store), "--format", "csv", "--experiment", "nope"]) == 0
    assert capsys.readouterr().out.strip().startswith("experiment,label")


@pytest.mark.slow
def test_plot_command_writes_figures(tmp_path, config, capsys):
    pytest.importorskip("matplotlib")
    store = tmp_path / "r.sqlite"
    assert main(["run", str(config), "--store", str(store), "--jobs", "1", "--out",
                 str(tmp_path / "figs")]) == 0
    assert (tmp_path / "figs" / "regret_curves.png").stat().st_size > 0
    assert main(["plot", str(store), "--out", str(tmp_path / "plots"), "--formats", "png"]) == 0
    out = capsys.readouterr().out
    assert "regret_loglog.png" in out
    assert (tmp_path / "plots" / "cli-demo" / "time_per_round.png").is_file()


def test_bad_config_and_missing_store_are_clear_errors(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(CONFIG.replace('name = "random"', 'name = "nope"'))
    assert main(["run", str(bad), "--store", str(tmp_path / "r.sqlite")]) == 2
    assert "policies[1].name" in capsys.readouterr().err
    assert main(["results", str(tmp_path / "missing.sqlite")]) == 2
    assert "STORE must be an existing results file" in capsys.readouterr().err


def test_run_without_config_still_compares_on_one_problem(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", "-T", "40", "--seeds", "2", "-d", "2", "-K", "3",
                 "--algorithms", "ucb-glm,random", "--out", str(out), "--no-plot"]) == 0
    text = capsys.readouterr().out
    assert "2 seeds" in text and (out / "runs.csv").is_file()
