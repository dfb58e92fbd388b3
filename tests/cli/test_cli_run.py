"""The `glmbandits` command line: the main job writes its table and files."""

from __future__ import annotations

import csv

import pytest

from glmbandits.cli.main import main


def test_run_prints_the_table_and_writes_results(tmp_path, capsys):
    out = tmp_path / "results"
    code = main(["run", "--horizon", "120", "--seeds", "2", "--jobs", "1", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    for name in ("ucb-glm", "supcb-glm", "linucb", "random"):
        assert f"| {name} |" in printed
    assert "regret at T=120 (mean ± sd)" in printed and "rounds/s" in printed
    with (out / "runs.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 8 and {row["policy"] for row in rows} == {
        "ucb-glm", "supcb-glm", "linucb", "random"}
    assert all(float(row["final_regret"]) >= 0 for row in rows)
    assert (out / "curves.csv").stat().st_size > 0
    png = out / "regret.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    matplotlib_image = pytest.importorskip("matplotlib.image")
    assert matplotlib_image.imread(png).shape[0] > 100


def test_run_accepts_family_dimension_and_algorithm_flags(tmp_path, capsys):
    code = main(["run", "-T", "60", "--seeds", "1", "-d", "3", "-K", "4", "--family", "probit",
                 "--algorithms", "linucb,random", "--no-plot", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert code == 0 and "probit, d=3, K=4" in printed and "| linucb |" in printed
    assert not (tmp_path / "regret.png").exists()


def test_unknown_algorithm_is_an_error(tmp_path, capsys):
    code = main(["run", "--algorithms", "ucb-glm,nope", "--out", str(tmp_path)])
    assert code == 2
    assert "nope" in capsys.readouterr().err


def test_help_explains_every_flag(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    for flag in ("--horizon", "--seeds", "--seed", "--n-features", "--n-actions", "--family",
                 "--theta-norm", "--algorithms", "--jobs", "--out", "--no-plot"):
        assert flag in text


def test_flags_and_the_equivalent_config_give_the_same_replicates(tmp_path, monkeypatch):
    """`glmbandits run` with flags is the experiment config they describe, run by the same
    runner with the same seeds: every replicate's final regret is equal bit for bit (one
    machine), in the store and in runs.csv, whatever the number of worker processes."""
    from glmbandits.experiments.store import ResultStore

    monkeypatch.chdir(tmp_path)
    algorithms = ["ucb-glm", "linucb", "epsilon-greedy", "random"]
    assert main(["run", "-T", "60", "--seeds", "3", "--seed", "7", "-d", "3", "-K", "4",
                 "--family", "probit", "--theta-norm", "2.5", "--algorithms",
                 ",".join(algorithms), "--jobs", "1", "--no-plot", "--quiet",
                 "--out", "out"]) == 0
    config = tmp_path / "same.toml"
    config.write_text('name = "same"\nhorizon = 60\nseeds = 3\nseed = 7\n[environment]\n'
                      'family = "probit"\nn_features = 3\nn_actions = 4\ntheta_norm = 2.5\n'
                      + "".join(f'[[policies]]\nname = "{name}"\n' for name in algorithms))
    assert main(["run", str(config), "--store", "config.sqlite", "--jobs", "2", "--no-plot",
                 "--quiet", "--out", "plots"]) == 0

    def finals(path):
        with ResultStore(path) as store:
            return {(run.policy, run.replicate): run.final_regret for run in store.runs()}

    from_flags, from_config = finals("glmbandits-results.sqlite"), finals("config.sqlite")
    assert len(from_config) == 12 and from_flags == from_config
    with (tmp_path / "out" / "runs.csv").open() as handle:
        written = {(row["policy"], int(row["replicate"])): float(row["final_regret"])
                   for row in csv.DictReader(handle)}
    assert written == from_config
    # the replicates are distinct draws (a random policy's regrets differ between them)
    assert len({from_config[("random", r)] for r in range(3)}) == 3


def test_a_flag_run_replaces_the_rows_an_earlier_version_wrote(tmp_path, monkeypatch, capsys):
    """Stores written before flags went through the runner keyed a run by its policy name;
    the next run of the same problem replaces those rows, so `glmbandits results` shows
    each policy once."""
    import numpy as np

    from glmbandits.experiments.store import ResultStore, StoredRun

    monkeypatch.chdir(tmp_path)
    name = "run-logistic-d2-K3-norm3-T40"
    environment = {"family": "logistic", "n_features": 2, "n_actions": 3, "theta_norm": 3.0}
    with ResultStore("glmbandits-results.sqlite") as store:
        store.save_experiment(name, {"name": name, "seed": 0, "seeds": 2, "horizon": 40,
                                     "environment": environment,
                                     "policies": [{"name": "random"}]})
        for r in range(2):
            store.add_run(StoredRun(name, "random", r, "random", "random", {}, environment, 40,
                                    {"entropy": 0, "environment": [r, 0], "policy": [r, 1]},
                                    "ok", 99.0, 0.1, np.array([1, 40]), np.array([1.0, 99.0])))
    assert main(["run", "-T", "40", "--seeds", "2", "-d", "2", "-K", "3", "--algorithms",
                 "random,linucb,random", "--jobs", "1", "--no-plot", "--quiet",
                 "--out", "out"]) == 0
    assert "algorithms: random, linucb" in capsys.readouterr().out
    assert main(["results", "--format", "csv"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines()[1:] if line]
    assert len(lines) == 2 and all(",2,0," in line for line in lines)
    with ResultStore("glmbandits-results.sqlite") as store:
        assert all(run.final_regret != 99.0 for run in store.runs(name))
