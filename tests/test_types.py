"""The package's static types, checked: mypy reports no error on ``src/glmbandits``.

The profile is declared once, in ``[tool.mypy]`` of ``pyproject.toml`` (``mypy`` with no
arguments, from the repository root, runs the same check). One mypy run checks the package
together with a small module that breaks each rule of the profile, so the test also shows
that the profile is in force (a configuration mypy no longer read would pass anything).
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import glmbandits

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PACKAGE = Path(glmbandits.__file__).resolve().parent
ROOT = PACKAGE.parent.parent
PYPROJECT = ROOT / "pyproject.toml"

#: The strict-leaning profile issue 22 asks for; weakening one of them is a visible change here.
REQUIRED_FLAGS = ("disallow_untyped_defs", "disallow_incomplete_defs", "check_untyped_defs",
                  "no_implicit_optional", "strict_equality", "warn_return_any",
                  "warn_unused_ignores", "warn_redundant_casts")

#: A module with one breach of each rule above, and the error code mypy gives it.
_BREACHES = textwrap.dedent('''
    from typing import Any

    def untyped(x):  # no-untyped-def
        return x

    def partly(x: int, y) -> int:  # no-untyped-def (incomplete)
        return x

    def implicit_optional(x: int = None) -> int:  # assignment (no implicit Optional)
        return 0

    def compares(x: int, y: str) -> bool:
        return x == y  # comparison-overlap (strict equality)

    def returns_any(x: Any) -> int:
        return x.value  # no-any-return

    def needless(x: int) -> int:  # an ignore with nothing to ignore: unused-ignore
        return x  # type: ignore[arg-type]

    def checked_body():  # no-untyped-def; its body is checked all the same
        return 1 + ""  # operator
''')
_BREACH_CODES = {"no-untyped-def", "assignment", "comparison-overlap", "no-any-return",
                 "unused-ignore", "operator"}


def _mypy(*paths: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """Run mypy with the project's configuration, as a fresh process, on ``paths``."""
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(PYPROJECT), "--cache-dir",
         str(cache), "--no-error-summary", "--show-error-codes", *map(str, paths)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_the_profile_is_strict_leaning() -> None:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config["files"] == ["src/glmbandits"]
    missing = [flag for flag in REQUIRED_FLAGS if config.get(flag) is not True]
    assert not missing, f"[tool.mypy] must set {missing} = true"


@pytest.mark.slow
def test_mypy_reports_no_error_on_the_package(tmp_path: Path) -> None:
    breaches = tmp_path / "breaches.py"
    breaches.write_text(_BREACHES, encoding="utf-8")
    result = _mypy(PACKAGE, breaches, cache=tmp_path / "mypy-cache")
    output = result.stdout + result.stderr
    errors = [line for line in output.splitlines() if ": error:" in line]
    in_package = [line for line in errors if not line.startswith(str(breaches))]
    assert not in_package, f"mypy found {len(in_package)} errors in glmbandits:\n" + "\n".join(
        in_package)
    codes = {match.group(1) for line in errors if (match := re.search(r"\[([a-z-]+)\]$", line))}
    assert codes == _BREACH_CODES, output  # every rule of the profile is in force
    assert result.returncode == 1, output  # the breaches, and nothing worse (a crash is 2)
