"""The package as users get it: ``python -m build`` makes an sdist and a wheel (the wheel built
from the sdist, so the sdist holds what a build needs), ``twine check`` passes, and the wheel,
installed into a fresh virtual environment (not editable, no source tree on the path), runs the
README's main job and ``glmbandits serve`` for a decide and a reward.

The install fetches the dependencies from the package registry (pip's cache makes it faster
the second time); the tests take a minute or two and are marked slow.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import glmbandits
from glmbandits.dashboard import ASSET_FILES

ROOT = Path(__file__).resolve().parents[1]
#: Seconds a build, an install or the main job may take (two busy CPUs beside them).
DEADLINE_S = 900


def _run(command: list[str], **keywords) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, timeout=DEADLINE_S,
                          **keywords)
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n" \
                                 f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel of the checkout, built the way a release is."""
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)])
    (sdist,) = out.glob("glmbandits-*.tar.gz")
    (wheel,) = out.glob("glmbandits-*.whl")
    return {"sdist": sdist, "wheel": wheel}


def _quick_start() -> tuple[str, str]:
    """The README's Quick start first line: the extras its install names and the main job."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1]
    first = section.split("```bash\n", 1)[1].split("\n", 1)[0]
    install, job = (part.strip() for part in first.split("&&"))
    extras = re.fullmatch(r'pip install -e "\.\[([\w,-]+)\]"', install)
    assert extras is not None and job.startswith("glmbandits "), first
    return extras.group(1), job


@pytest.mark.slow
def test_the_sdist_and_the_wheel_hold_what_they_should_and_pass_twine_check(dist):
    pytest.importorskip("twine")
    _run([sys.executable, "-m", "twine", "check", "--strict",
          str(dist["sdist"]), str(dist["wheel"])])
    version = glmbandits.__version__
    assert dist["wheel"].name == f"glmbandits-{version}-py3-none-any.whl"
    assert dist["sdist"].name == f"glmbandits-{version}.tar.gz"
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = set(wheel.namelist())
        metadata = Parser().parsestr(
            wheel.read(f"glmbandits-{version}.dist-info/METADATA").decode())
    for asset in ("glmbandits/py.typed", *(f"glmbandits/dashboard/{name}"
                                           for name in ASSET_FILES)):
        assert asset in names, asset
    assert not [name for name in names if name.startswith("tests/") or "__pycache__" in name]
    assert metadata["Version"] == version and metadata["License-Expression"] == "MIT"
    assert {"gym", "serve", "plot", "test"} <= set(metadata.get_all("Provides-Extra"))
    with tarfile.open(dist["sdist"]) as sdist:
        members = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    for needed in ("pyproject.toml", "README.md", "CHANGELOG.md", "src/glmbandits/__init__.py",
                   "src/glmbandits/py.typed", "src/glmbandits/dashboard/index.html"):
        assert needed in members, needed
    # the tests run from a checkout (they need the docs, the experiments and real servers)
    assert not [name for name in members if name.startswith("tests/")]


@pytest.mark.slow
def test_the_wheel_runs_the_main_job_and_serves_from_a_fresh_virtual_environment(
        dist, tmp_path):
    extras, job = _quick_start()
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python, command = venv / "bin" / "python", venv / "bin" / "glmbandits"
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(MPLBACKEND="Agg", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    _run([str(python), "-m", "pip", "install", "--quiet",
          f"{dist['wheel']}[{extras},serve]"], env=env)
    work = tmp_path / "work"  # outside the checkout: nothing of the source tree is importable
    work.mkdir()

    where = _run([str(python), "-c", "import glmbandits; print(glmbandits.__file__)"],
                 cwd=work, env=env).stdout.strip()
    assert Path(where).is_relative_to(venv) and not Path(where).is_relative_to(ROOT), where
    version = _run([str(command), "--version"], cwd=work, env=env).stdout.strip()
    assert version == f"glmbandits {glmbandits.__version__}"

    # the README's main job, as written
    done = _run([str(command), *job.split()[1:]], cwd=work, env=env)
    assert "d=10, K=20, ||theta*||=3, T=3000, 5 seeds" in done.stdout
    assert "| ucb-glm |" in done.stdout
    for name in ("runs.csv", "curves.csv", "regret.png"):
        assert (work / "glmbandits-results" / name).stat().st_size > 0, name

    # glmbandits serve: one decide and one reward over HTTP, and the dashboard's page
    sys.path.insert(0, str(ROOT / "tests" / "service"))
    try:
        from servicekit import KEY, ServerProcess
    finally:
        sys.path.pop(0)
    config = work / "service.toml"
    config.write_text(_run([str(command), "serve", "--example-config"], cwd=work,
                           env=env).stdout)
    server = ServerProcess(config, f"sqlite:///{work / 'service.db'}", python=str(python),
                           env={**env, "GLMBANDITS_API_KEYS": KEY})
    try:
        assert server.client is not None
        decide = server.client.post("/v1/decide", json={
            "decision_id": "packaged-1", "contexts": [[0.1] * 10, [0.0] * 9 + [0.2]]})
        assert decide.status_code == 200, decide.text
        assert decide.json()["action"] in (0, 1)
        reward = server.client.post("/v1/reward", json={"decision_id": "packaged-1",
                                                         "reward": 1.0})
        assert reward.status_code == 200, reward.text
        page = server.client.get("/")
        assert page.status_code == 200 and "<html" in page.text.lower()
        model = server.client.get("/v1/model").json()
        assert model["counts"]["decisions"] == 1 and model["counts"]["rewards"] == 1
    finally:
        code = server.terminate()
    assert code == 0, server.output()
    assert f"{venv}" in server.process.args[0]


# -- the version and the changelog --------------------------------------------------------------
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                    r"(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")
#: Keep a Changelog's kinds of change, in its order.
CHANGE_KINDS = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")


def changelog_problems(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The released versions of a Keep a Changelog file with their dates, newest first, and
    what breaks the format: the title, ``## [Unreleased]`` (optional, first),
    ``## [X.Y.Z] - YYYY-MM-DD`` headings (semantic versions, ISO dates, newest first),
    ``### Added``/``Changed``/... sections each holding at least one ``- `` item.

    Examples
    --------
    >>> changelog_problems("# Changelog\\n## [1.0.0] - 2026-01-02\\n### Added\\n- a\\n")
    ([('1.0.0', '2026-01-02')], [])
    >>> changelog_problems("# Changelog\\n## [1.0] - 2026-13-01\\n### New\\n")[1]
    ['not a version heading: ## [1.0] - 2026-13-01', 'a section outside a version: ### New']
    """
    import datetime

    lines = text.split("\n")
    problems = [] if lines[0] == "# Changelog" else [f"the first line is not '# Changelog': "
                                                     f"{lines[0]!r}"]
    versions: list[tuple[str, str]] = []
    current: str | None = None
    sections: dict[str, int] = {}  # "version kind" -> items
    section: str | None = None
    for line in lines[1:]:
        if line.startswith("## "):
            match = re.fullmatch(rf"## \[({SEMVER.pattern})\] - (\d{{4}}-\d{{2}}-\d{{2}})", line)
            section = None
            if line == "## [Unreleased]":
                current = "Unreleased"
                if versions:
                    problems.append("[Unreleased] is not the first section")
                continue
            valid_date = False
            if match is not None:
                try:
                    datetime.date.fromisoformat(match.group(5))
                    valid_date = True
                except ValueError:
                    pass
            if not valid_date:
                problems.append(f"not a version heading: {line}")
                current = None
                continue
            assert match is not None
            current = match.group(1)
            versions.append((current, match.group(5)))
        elif line.startswith("### "):
            kind = line[4:]
            if current is None:
                problems.append(f"a section outside a version: {line}")
            elif kind not in CHANGE_KINDS:
                problems.append(f"{current}: {kind!r} is none of {list(CHANGE_KINDS)}")
            else:
                section = f"{current} {kind}"
                if section in sections:
                    problems.append(f"{current}: two {kind} sections")
                sections[section] = 0
        elif line.startswith("#"):
            problems.append(f"a heading Keep a Changelog does not have: {line}")
        elif line.startswith("- ") and section is not None:
            sections[section] += 1
    problems += [f"{name}: no items" for name, count in sections.items() if count == 0]
    for version, _ in versions:
        if not any(name.startswith(f"{version} ") for name in sections):
            problems.append(f"{version}: no Added/Changed/... section")

    def key(version: str) -> tuple[int, ...]:
        return tuple(int(part) for part in re.split(r"[-+]", version)[0].split("."))

    for (newer, newer_date), (older, older_date) in zip(versions, versions[1:]):
        if key(newer) <= key(older) or newer_date < older_date:
            problems.append(f"{newer} ({newer_date}) is listed above {older} ({older_date})")
    return versions, problems


def test_the_changelog_keeps_the_format_and_its_newest_version_is_the_packages():
    versions, problems = changelog_problems((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)
    assert versions and versions[0][0] == glmbandits.__version__, versions[:1]


def test_a_changelog_out_of_format_is_found():
    good = ("# Changelog\n\n## [Unreleased]\n\n## [0.2.0] - 2026-11-26\n### Added\n- x\n"
            "### Fixed\n- y\n\n## [0.1.0] - 2026-11-21\n### Added\n- z\n")
    assert changelog_problems(good) == ([("0.2.0", "2026-11-26"), ("0.1.0", "2026-11-21")], [])
    for bad, problem in [
        (good.replace("2026-11-26", "26/11/2026"), "not a version heading"),
        (good.replace("2026-11-26", "2026-02-30"), "not a version heading"),
        (good.replace("[0.2.0]", "[0.2]"), "not a version heading"),
        (good.replace("### Fixed", "### Bugs"), "'Bugs' is none of"),
        (good.replace("- y\n", ""), "0.2.0 Fixed: no items"),
        (good.replace("[0.1.0] - 2026-11-21", "[0.3.0] - 2026-11-21"), "is listed above"),
        (good.replace("2026-11-21", "2026-11-27"), "is listed above"),
        (good.replace("# Changelog", "# Changes"), "first line"),
        (good.replace("## [Unreleased]\n", "") + "## [Unreleased]\n", "not the first"),
    ]:
        assert any(problem in found for found in changelog_problems(bad)[1]), (problem, bad)


def test_the_version_is_a_semantic_version_written_in_one_place():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    assert SEMVER.fullmatch(glmbandits.__version__), glmbandits.__version__
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in project["project"]["dynamic"] and "version" not in project["project"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "glmbandits._version.__version__"}
    # no other module writes a version string of its own: they import _version's
    for path in (ROOT / "src" / "glmbandits").rglob("*.py"):
        if path.name != "_version.py":
            assert not re.search(r"^__version__\s*=", path.read_text(encoding="utf-8"),
                                 re.M), path
