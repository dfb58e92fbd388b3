"""Issue 21, section 5 at the command line: what a newcomer meets.

* ``glmbandits --version`` imports neither scipy nor numpy (it only prints a string);
* a mistyped flag of a subcommand shows that subcommand's usage, not the top-level one;
* the output paths of the main job are ignored by git.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from glmbandits.cli.main import SUBCOMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def test_version_imports_neither_scipy_nor_numpy():
    code = ("import sys\n"
            "from glmbandits.cli.main import main\n"
            "try:\n"
            "    main(['--version'])\n"
            "except SystemExit as stop:\n"
            "    assert stop.code in (0, None), stop.code\n"
            "heavy = sorted(m for m in ('scipy', 'numpy') if m in sys.modules)\n"
            "print('heavy:', ','.join(heavy) or 'none')\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("glmbandits ")
    assert result.stdout.splitlines()[-1] == "heavy: none", result.stdout


def test_python_m_glmbandits_version_too():
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "glmbandits",
                             "--version"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines()
                if line.startswith("import time:")}
    assert "glmbandits" in imported and "scipy" not in imported, sorted(imported)


def _required(command: str) -> list[str]:
    """Values for the arguments ``command`` requires (argparse checks them first)."""
    import argparse

    parser = build_parser()
    (choices,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    sub = choices.choices[command]
    sub.format_usage()  # adds the subcommand's arguments
    out = []
    for action in sub._actions:
        if not action.option_strings and action.nargs is None:
            out.append("x")
        elif action.required:
            out += [action.option_strings[0], "x"]
    return out


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_a_mistyped_flag_shows_the_subcommands_usage(capsys, command):
    with pytest.raises(SystemExit) as stop:
        main([command, *_required(command), "--no-such-flag"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: glmbandits {command} "), err
    assert f"glmbandits {command}: error: unrecognized arguments: --no-such-flag" in err


def test_a_near_miss_names_the_flag_meant(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--seed", "1", "--horizn=50"])
    err = capsys.readouterr().err
    assert err.startswith("usage: glmbandits run ")
    assert "unrecognized arguments: --horizn=50 (--horizn: did you mean --horizon?)" in err


def test_subcommand_help_still_lists_its_flags(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: glmbandits run ") and "--horizon" in out


def test_the_main_jobs_outputs_are_ignored_by_git(tmp_path):
    git = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--is-inside-work-tree"],
                         capture_output=True, text=True)
    if git.returncode != 0:
        pytest.skip("not a git checkout")
    paths = ["glmbandits-results/runs.csv", "glmbandits-results/regret.png",
             "glmbandits-results.sqlite", "glmbandits-results.sqlite-wal",
             "glmbandits-results.sqlite-shm", "glmbandits-results.sqlite-journal",
             "glmbandits-plots/regret_curves.png"]
    result = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", *paths],
                            capture_output=True, text=True)
    assert sorted(result.stdout.split()) == sorted(paths), result.stdout + result.stderr
