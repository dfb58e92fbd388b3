"""Issue 13 items 4-6 at the command line: progress on a terminal only, optional extras
checked before any work (with the pip line that fixes them), `run` then `results`, and
`--version`."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time

import pytest

import glmbandits.experiments.benchmark as benchmark_module
import glmbandits.experiments.reproduce as reproduce_module
from glmbandits._version import __version__
from glmbandits.cli import common
from glmbandits.cli.main import main

QUICK_RUN = ["run", "-T", "40", "--seeds", "2", "-d", "2", "-K", "3",
             "--algorithms", "linucb,random", "--jobs", "1", "--no-plot"]


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Run the command in an empty folder, where the default store would be written."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _missing(monkeypatch, *names):
    """Make importlib.util.find_spec report ``names`` (and their submodules) as absent."""
    real = importlib.util.find_spec

    def find_spec(name, package=None):
        if name.split(".")[0] in names:
            return None
        return real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def _forbid(monkeypatch, module, name):
    def fail(*args, **kwargs):
        raise AssertionError(f"{name} started although an extra is missing")

    monkeypatch.setattr(module, name, fail)


# -- item 6 -----------------------------------------------------------------------------
def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"glmbandits {__version__}"


def test_run_then_results_shows_the_run(in_tmp, capsys):
    assert main([*QUICK_RUN, "--out", str(in_tmp / "out")]) == 0
    printed = capsys.readouterr().out
    assert "glmbandits-results.sqlite" in printed  # it says where the runs went
    assert (in_tmp / "glmbandits-results.sqlite").is_file()
    assert main(["results"]) == 0
    table = capsys.readouterr().out
    assert "linucb" in table and "random" in table
    assert sum(" | 2 | 0 | " in line for line in table.splitlines()) == 2  # 2 ok runs each


def test_run_twice_replaces_its_runs_in_the_store(in_tmp, capsys):
    assert main([*QUICK_RUN, "--out", "out"]) == 0
    assert main([*QUICK_RUN, "--seeds", "1", "--out", "out"]) == 0
    capsys.readouterr()
    assert main(["results", "--format", "csv"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines()[1:] if line]
    assert len(lines) == 2 and all(",1,0," in line for line in lines)


def test_run_and_results_help_say_where_the_runs_go(capsys):
    for command in ("run", "results"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "glmbandits-results.sqlite" in "".join(capsys.readouterr().out.split())


# -- item 5 -----------------------------------------------------------------------------
def test_plot_without_matplotlib_exits_2_with_the_pip_line(in_tmp, monkeypatch, capsys):
    _missing(monkeypatch, "matplotlib")
    assert main(["plot", "missing.sqlite"]) == 2  # checked before the store is even opened
    err = capsys.readouterr().err
    assert "matplotlib" in err and "pip install 'glmbandits[plot]'" in err


def test_reproduce_without_matplotlib_exits_2_before_any_work(in_tmp, monkeypatch, capsys):
    _missing(monkeypatch, "matplotlib")
    _forbid(monkeypatch, reproduce_module, "reproduce")
    start = time.perf_counter()
    assert main(["reproduce", "--out", "rep"]) == 2
    assert time.perf_counter() - start < 1.0
    assert "pip install 'glmbandits[plot]'" in capsys.readouterr().err
    assert not (in_tmp / "rep").exists()


def test_run_with_scheduler_without_distributed_exits_2(in_tmp, monkeypatch, capsys):
    _missing(monkeypatch, "distributed")
    config = in_tmp / "c.toml"
    config.write_text('name = "x"\nhorizon = 20\nseeds = 1\n[environment]\nn_features = 2\n'
                      '[[policies]]\nname = "random"\n')
    assert main(["run", str(config), "--scheduler", "tcp://127.0.0.1:1", "--no-plot"]) == 2
    assert "pip install 'glmbandits[cluster]'" in capsys.readouterr().err
    assert not (in_tmp / "glmbandits-results.sqlite").exists()


def test_run_without_matplotlib_warns_up_front_and_skips_the_plot(in_tmp, monkeypatch,
                                                                    capsys):
    _missing(monkeypatch, "matplotlib")
    args = [a for a in QUICK_RUN if a != "--no-plot"]
    assert main([*args, "--out", "out"]) == 0
    captured = capsys.readouterr()
    assert "pip install 'glmbandits[plot]'" in captured.err and "--no-plot" in captured.err
    assert (in_tmp / "out" / "runs.csv").is_file()
    assert not (in_tmp / "out" / "regret.png").exists()


@pytest.mark.parametrize("dataset, module, line", [
    ("iris", "sklearn", "pip install 'glmbandits[data]'"),
    ("modechoice", "statsmodels", "pip install 'glmbandits[data]'"),
    ("obd-random", "obp", "pip install --no-deps obp==0.4.1"),
])
def test_replay_dataset_without_its_extra_exits_2(monkeypatch, capsys, dataset, module, line):
    _missing(monkeypatch, module)
    assert main(["replay", "--dataset", dataset]) == 2
    assert line in capsys.readouterr().err


def test_missing_extras_helper_names_every_missing_module(monkeypatch):
    _missing(monkeypatch, "pandas", "obp")
    assert common.missing_extra("data") == ["pandas"]
    assert common.missing_extra("plot") == []
    with pytest.raises(ValueError):
        common.missing_extra("no-such-extra")


@pytest.mark.slow
def test_reproduce_in_a_subprocess_where_matplotlib_cannot_be_imported(tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from glmbandits.cli.main import main\n"
            "sys.exit(main(['reproduce', '--out', 'rep']))")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "pip install 'glmbandits[plot]'" in done.stderr
    assert time.perf_counter() - start < 20 and not (tmp_path / "rep").exists()


# -- item 4 -----------------------------------------------------------------------------
def test_run_shows_progress_on_a_terminal_and_not_with_quiet(in_tmp, monkeypatch, capsys):
    monkeypatch.setattr(common, "stderr_is_terminal", lambda: True)
    assert main([*QUICK_RUN, "--out", "out"]) == 0
    captured = capsys.readouterr()
    assert "4/4" in captured.err and "4/4" not in captured.out
    assert main([*QUICK_RUN, "--out", "out", "--quiet"]) == 0
    assert "4/4" not in capsys.readouterr().err


def test_run_shows_no_progress_when_stderr_is_not_a_terminal(in_tmp, monkeypatch, capsys):
    monkeypatch.setattr(common, "stderr_is_terminal", lambda: False)
    assert main([*QUICK_RUN, "--out", "out"]) == 0
    assert "4/4" not in capsys.readouterr().err


def test_run_config_progress_follows_the_terminal_and_quiet(in_tmp, monkeypatch, capsys):
    config = in_tmp / "c.toml"
    config.write_text('name = "x"\nhorizon = 20\nseeds = 2\n[environment]\nn_features = 2\n'
                      'n_actions = 3\n[[policies]]\nname = "random"\n')
    monkeypatch.setattr(common, "stderr_is_terminal", lambda: True)
    assert main(["run", str(config), "--jobs", "1", "--no-plot", "--store", "a.sqlite"]) == 0
    assert "2/2" in capsys.readouterr().err
    assert main(["run", str(config), "--jobs", "1", "--no-plot", "--store", "b.sqlite",
                 "-q"]) == 0
    assert "2/2" not in capsys.readouterr().err


@pytest.mark.parametrize("command, module, name", [
    (["bench", "-T", "10", "--seeds", "1", "--replicates", "0"], benchmark_module,
     "run_benchmark"),
    (["reproduce", "--out", "rep"], reproduce_module, "reproduce"),
])
def test_bench_and_reproduce_pass_the_progress_decision(in_tmp, monkeypatch, capsys, command,
                                                       module, name):
    seen = []

    def fake(*args, progress=None, **kwargs):
        seen.append(progress)
        return "table" if name == "run_benchmark" else in_tmp / "REPORT.md"

    monkeypatch.setattr(module, name, fake)
    monkeypatch.setattr(common, "stderr_is_terminal", lambda: True)
    assert main(command) == 0
    assert main([*command, "--quiet"]) == 0
    monkeypatch.setattr(common, "stderr_is_terminal", lambda: False)
    assert main(command) == 0
    assert seen == [True, False, False]


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_run_draws_a_bar_on_a_real_pseudo_terminal(tmp_path):
    import pty  # noqa: F401  (POSIX only)

    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    try:
        done = subprocess.run([sys.executable, "-m", "glmbandits", *QUICK_RUN, "--out", "out"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=slave, env=env,
                              timeout=60)
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
    assert done.returncode == 0
    assert b"4/4" in b"".join(chunks) and b"4/4" not in done.stdout


def test_run_refuses_a_foreign_default_store_before_the_work(in_tmp, monkeypatch, capsys):
    import glmbandits.experiments.runner as runner

    (in_tmp / "glmbandits-results.sqlite").write_text("not a results store")
    _forbid(monkeypatch, runner, "run_experiment")
    assert main([*QUICK_RUN, "--out", "out"]) == 2
    assert "error:" in capsys.readouterr().err
    assert (in_tmp / "glmbandits-results.sqlite").read_text() == "not a results store"
