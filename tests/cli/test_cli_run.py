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
