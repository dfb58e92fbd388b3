"""Every code block and command of ``README.md`` and ``docs/`` runs here, or says why not.

A newcomer copies the examples of the README and the guides; each one is run as written (in
a temporary folder), so an example that no longer works fails the suite.

Markers (HTML comments: visible in the raw Markdown only), on the line right before a fence:

``<!-- not run: REASON -->``
    The block is not run, for the reason given (a config file for another program, a
    benchmark that takes minutes, a command that needs a machine the tests do not have).
    A marker without a reason, or a marker that is not right before a block, fails.
``<!-- output of the block above -->``
    The block shows what the block before it prints: it is compared with that output.

How blocks run (one test per page; the blocks of a page run in order, in one temporary
folder that links the checkout's ``benchmarks``, ``experiments``, ``scripts``, ``src`` and
``tests`` folders, so commands written from the checkout's root work):

* ``python``: the blocks of a page share one namespace. A block with ``>>>`` prompts is a
  doctest (its printed results are checked, ELLIPSIS and NORMALIZE_WHITESPACE on).
* ``bash``/``sh`` (and unlabelled blocks): one bash session per page (variables carry from
  block to block) with ``set -e -o pipefail``. Three substitutions, and only these:

  - ``pip install`` lines are not run (the test environment is installed already); they
    are checked instead: every extra they name exists in ``pyproject.toml``, and the
    ``obp`` line is the one ``.ci/run`` installs.
  - ``glmbandits serve CONFIG`` (a server that runs until stopped) is started by the test
    (``tests/service/servicekit.py``'s ``ServerProcess``: the same command with the
    environment the line sets, on 127.0.0.1 and a free port) and stopped at the end of
    the page; ``localhost:PORT`` (and ``127.0.0.1:PORT``) in the commands after it becomes
    the address of the server the page started with ``--port PORT`` (8000 when the line
    gives no port: the CLI's default), so a page can run two services side by side.
  - ``curl`` fails on an HTTP error status (``--fail-with-body``), so an example the server
    refuses fails the test.
* ``console``: a ``$ `` line is a command and the lines after it are what it prints; the
  command is run and its output compared with them (see :func:`same_output`).
* ``toml``: parsed.

Tables of numbers in ``console`` blocks are regenerated this way: a changed column or a
changed value fails, so the tables cannot go stale.
"""

from __future__ import annotations

import contextlib
import dataclasses
import doctest
import io
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", *DOCS.rglob("*.md")])
#: What a page's temporary folder links from the checkout (commands are written from its root).
LINKED = ("benchmarks", "experiments", "scripts", "src", "tests", "pyproject.toml")
#: Seconds one block (or one console command) may take before the test fails.
BLOCK_DEADLINE_S = 600.0
SHELL_LANGS = {"bash", "sh", "shell", ""}
#: A number as printed: sign, digits (thousands separated by commas), decimals, exponent.
NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")
#: Numbers may differ by this many units of their last printed digit (see same_output).
TOLERANCE_UNITS = 2

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)\s*$")
_MARKER = re.compile(r"<!--\s*(?P<body>.*?)\s*-->", re.S)


# -- the pages' blocks -------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Block:
    page: Path
    line: int  #: 1-based line of the opening fence
    lang: str
    text: str
    marker: str | None  #: "not run", "output" or None
    reason: str = ""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _marker_before(lines: list[str], fence: int) -> tuple[str | None, str, int | None]:
    """The marker ending on the line right before the fence (blank lines allowed between)."""
    i = fence - 1
    while i >= 0 and not lines[i].strip():
        i -= 1
    if i < 0 or not lines[i].rstrip().endswith("-->"):
        return None, "", None
    start = i
    while start >= 0 and "<!--" not in lines[start]:
        start -= 1
    match = _MARKER.search("\n".join(lines[start:i + 1]))
    if match is None:
        return None, "", None
    body = " ".join(match.group("body").split())
    if body.startswith("not run:"):
        return "not run", body[len("not run:"):].strip(), start
    if body == "output of the block above":
        return "output", "", start
    return None, "", None


def parse_blocks(page: Path) -> tuple[list[Block], list[str]]:
    """The fenced blocks of ``page`` with their markers, and the problems found (a marker
    with no reason, a marker that precedes no block)."""
    lines = page.read_text(encoding="utf-8").split("\n")
    blocks, problems, used_markers = [], [], set()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = len(opening.group("indent")), opening.group("fence")
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        body = "\n".join(line[indent:] if line[:indent].strip() == "" else line
                         for line in lines[i + 1:j])
        where = f"{page.relative_to(ROOT)}:{i + 1}"
        marker, reason, marker_line = _marker_before(lines, i)
        if marker_line is not None:
            used_markers.add(marker_line)
        if marker == "not run" and not reason:
            problems.append(f"{where}: '<!-- not run: -->' needs a reason")
        blocks.append(Block(page, i + 1, opening.group("lang").lower(), body, marker, reason))
        i = j + 1
    for k, line in enumerate(lines):
        if re.match(r"\s*<!--\s*(not run:|output of the block above)", line) \
                and k not in used_markers:
            problems.append(f"{page.relative_to(ROOT)}:{k + 1}: a marker that is not right "
                            "before a code block")
    return blocks, problems


# -- comparing printed output ------------------------------------------------------------------
def _unit(number: str) -> float:
    """One unit of the last printed digit: 0.0001 for 0.0160, 1 for 916, 1e-6 for 3.5e-05."""
    mantissa, _, exponent = number.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** (int(exponent or 0) - decimals)


def _value(number: str) -> float:
    return float(number.replace(",", ""))


def same_output(expected: str, actual: str) -> str | None:
    """None when ``actual`` prints what ``expected`` shows; else the first difference.

    Lines are compared one by one. The text between numbers must be equal (runs of spaces
    count as one, so a wider number may shift a column); each number may differ by at most
    :data:`TOLERANCE_UNITS` units of its last printed digit (0.0160 and 0.0161 match,
    0.0160 and 0.0237 do not; 916 and 917 match), since BLAS kernels of other processors
    sum in other orders and can flip the last printed digit. Trailing blank lines are
    ignored.

    Examples
    --------
    >>> same_output("ips 0.0160 [0.0000, 0.0474] 79/5000", "ips 0.0161 [0.0000, 0.0474] 79/5000")
    >>> print(same_output("ips 0.0160", "ips 0.0237"))
    line 1: 0.0160 != 0.0237 (more than 2 units of the last digit apart)
      expected: ips 0.0160
      got:      ips 0.0237
    """
    want = expected.rstrip("\n").split("\n")
    got = actual.rstrip("\n").split("\n")
    for index, (line_want, line_got) in enumerate(zip(want, got), start=1):
        text_want = [" ".join(part.split()) for part in NUMBER.split(line_want)]
        text_got = [" ".join(part.split()) for part in NUMBER.split(line_got)]
        show = f"\n  expected: {line_want}\n  got:      {line_got}"
        if text_want != text_got:
            return f"line {index}: the text differs{show}"
        for a, b in zip(NUMBER.findall(line_want), NUMBER.findall(line_got)):
            if abs(_value(a) - _value(b)) > TOLERANCE_UNITS * _unit(a) * (1 + 1e-9):
                return (f"line {index}: {a} != {b} (more than {TOLERANCE_UNITS} units of the "
                        f"last digit apart){show}")
    if len(want) != len(got):
        return (f"{len(want)} lines expected, {len(got)} printed; the first extra line: "
                f"{(want + got)[min(len(want), len(got))]!r}")
    return None


# -- shell ------------------------------------------------------------------------------------
def _logical_lines(script: str) -> list[str]:
    """The script's lines with backslash continuations joined."""
    out, current = [], ""
    for line in script.split("\n"):
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        out.append(current + line)
        current = ""
    if current:
        out.append(current)
    return out


def _without_comment(line: str) -> str:
    return re.split(r"(?:^|\s)#", line, maxsplit=1)[0].rstrip()


def check_pip_line(line: str, where: str) -> None:
    """A ``pip install`` line of the docs names existing extras (or CI's obp line)."""
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                 ["optional-dependencies"])
    command = _without_comment(line).strip()
    for named in re.findall(r"\[([\w,\s-]+)\]", command):
        for extra in named.split(","):
            assert extra.strip() in extras, f"{where}: {command!r} names the extra " \
                                            f"{extra.strip()!r}, not in {sorted(extras)}"
    if "obp" in command:
        ci = (ROOT / ".ci" / "run").read_text()
        pin = re.search(r"pip install --no-deps obp==[\d.]+", ci)
        assert pin and pin.group(0) in command, f"{where}: {command!r} is not CI's obp line"


class Shell:
    """One bash session of a page: each block is written to a file and sourced, so the
    variables it sets carry over to the next block."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder = folder
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, cwd=folder, env=env, text=True, bufsize=1,
            start_new_session=True)  # its own process group: close() ends every command of it
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._count = 0
        self.run("set -e -o pipefail\n"
                 "curl() { command curl --fail-with-body \"$@\"; }", "the session's setup")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def run(self, script: str, where: str, stderr_apart: bool = False) -> str:
        """Run ``script`` in the session; its output (stdout only with ``stderr_apart``)."""
        self._count += 1
        path = self.folder / f".block-{self._count}.sh"
        path.write_text(script + "\n")
        token = f"--- block done {uuid.uuid4().hex} ---"
        err = self.folder / f".block-{self._count}.stderr"
        redirect = f" 2>{shlex.quote(str(err))}" if stderr_apart else ""
        assert self.process.stdin is not None
        self.process.stdin.write(f"source {shlex.quote(str(path))} </dev/null{redirect}\n"
                                 f"printf '\\n%s\\n' {shlex.quote(token)}\n")
        self.process.stdin.flush()
        output, deadline = [], time.monotonic() + BLOCK_DEADLINE_S
        while True:
            try:
                line = self._lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"{where}: still running after {BLOCK_DEADLINE_S:.0f} s:\n"
                            f"{''.join(output)[-3000:]}", pytrace=False)
            if line is None:
                self.process.wait(60)
                extra = err.read_text(errors="replace") if err.exists() else ""
                pytest.fail(f"{where}: a command failed (exit status {self.process.returncode})"
                            f":\n{script}\n--- output ---\n{''.join(output)[-3000:]}"
                            f"{extra[-3000:]}", pytrace=False)
            if line.rstrip("\n") == token:
                break
            output.append(line)
        text = "".join(output)
        return text[:-1] if text.endswith("\n") else text  # the printf's leading newline

    def evaluate(self, words: str) -> list[str]:
        """The shell words of ``words`` after the session's expansions."""
        out = self.folder / ".words"
        self.run(f"printf '%s\\0' {words} > {shlex.quote(str(out))}", "expanding " + words)
        return out.read_bytes().decode().split("\0")[:-1]

    def environment(self, assignments: str) -> dict[str, str]:
        """The session's exported environment with ``assignments`` (``A=1 B=2``) applied."""
        out = self.folder / ".env"
        self.run(f"{assignments} env -0 > {shlex.quote(str(out))}", "reading the environment")
        pairs = [item.split("=", 1) for item in out.read_bytes().decode().split("\0") if item]
        return {key: value for key, value in pairs}

    def close(self) -> None:
        """End the session and anything its commands left running (its process group)."""
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(60)


_SERVE = re.compile(r"^(?P<env>(?:[A-Za-z_]\w*=\S*\s+)*)glmbandits serve\s+(?P<args>.*)$")


# -- a page ------------------------------------------------------------------------------------
class PageRunner:
    """Runs one page's blocks in order (see the module's docstring)."""

    def __init__(self, page: Path, folder: Path) -> None:
        self.page, self.folder = page, folder
        for name in LINKED:
            (folder / name).symlink_to(ROOT / name)
        self.namespace: dict[str, Any] = {"__name__": f"docs:{page.name}"}
        self.servers: list[Any] = []
        #: the started services' host:port by the port their line gives ("8000" by default)
        self.addresses: dict[str, str] = {}
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"),
                                                          env.get("PYTHONPATH")]))
        env["MPLBACKEND"] = "Agg"
        # `python` and `glmbandits` in the commands are those of the interpreter under test
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        self.shell = Shell(folder, env)
        self.skipped: list[str] = []

    def close(self) -> None:
        for server in self.servers:
            server.terminate()
        self.shell.close()

    def run(self, blocks: list[Block]) -> None:
        last_output: str | None = None
        for block in blocks:
            if block.marker == "not run":
                continue
            if block.marker == "output":
                assert last_output is not None, f"{block.where}: no output above to compare"
                difference = same_output(block.text, last_output)
                assert difference is None, f"{block.where}: the block above printed " \
                                           f"something else: {difference}"
                continue
            if block.lang == "python":
                last_output = self.python(block)
            elif block.lang in SHELL_LANGS:
                last_output = self.shell_block(block)
            elif block.lang == "console":
                self.console(block)
                last_output = None
            elif block.lang == "toml":
                tomllib.loads(block.text)
                last_output = None
            else:
                pytest.fail(f"{block.where}: a {block.lang!r} block is neither run nor marked "
                            "'<!-- not run: REASON -->'", pytrace=False)

    # python
    def python(self, block: Block) -> str:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            if any(line.lstrip().startswith(">>>") for line in block.text.split("\n")):
                test = doctest.DocTestParser().get_doctest(
                    block.text, self.namespace, block.where, str(block.page), block.line)
                runner = doctest.DocTestRunner(
                    optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
                report = io.StringIO()
                runner.run(test, out=report.write, clear_globs=False)
                self.namespace.update(test.globs)
                assert runner.failures == 0, f"{block.where}:\n{report.getvalue()}"
            else:
                code = compile("\n" * block.line + block.text, str(block.page), "exec")
                exec(code, self.namespace)  # noqa: S102 - the docs' own example
        return buffer.getvalue()

    # shell
    def _prepare(self, block: Block, line: str) -> str | None:
        """The logical line as it runs, or None when the harness did it (pip, serve)."""
        command = _without_comment(line).strip()
        if command.startswith("pip install"):
            check_pip_line(command, block.where)
            return None
        if "pip install" in command and command.split("&&")[0].strip().startswith("pip install"):
            check_pip_line(command.split("&&")[0], block.where)
            line = "&&".join(command.split("&&")[1:]).strip()
            command = line
        if "--dataset obd-" in command and not _installed("obp"):
            self.skipped.append(f"{block.where}: {command} (obp is not installed)")
            return None
        serve = _SERVE.match(command)
        if serve and "--example-config" not in serve.group("args"):
            self.start_service(serve.group("env"), serve.group("args"), block.where)
            return None
        if self.addresses:
            line = re.sub(r"\b(?:localhost|127\.0\.0\.1):(\d+)(?!\d)",
                          lambda m: self.addresses.get(m.group(1), m.group(0)), line)
        return line

    def shell_block(self, block: Block) -> str:
        outputs, pending = [], []
        for line in _logical_lines(block.text):
            if re.match(r"^\s*(pip install|\S*=\S*\s+glmbandits serve|glmbandits serve)", line):
                if pending:
                    outputs.append(self.shell.run("\n".join(pending), block.where))
                    pending = []
            prepared = self._prepare(block, line)
            if prepared is not None:
                pending.append(prepared)
        if pending:
            outputs.append(self.shell.run("\n".join(pending), block.where))
        return "\n".join(outputs)

    def start_service(self, assignments: str, args: str, where: str) -> None:
        sys.path.insert(0, str(ROOT / "tests" / "service"))
        try:
            from servicekit import ServerProcess
        finally:
            sys.path.pop(0)
        env = self.shell.environment(assignments)
        words = self.shell.evaluate(args)
        config, db, role, port = None, None, "all", "8000"
        i = 0
        while i < len(words):
            if words[i] in ("--db", "--role", "--host", "--port", "--log-level"):
                if words[i] == "--db":
                    db = words[i + 1]
                elif words[i] == "--role":
                    role = words[i + 1]
                elif words[i] == "--port":
                    port = words[i + 1]
                i += 2
                continue
            if not words[i].startswith("-") and config is None:
                config = words[i]
            i += 1
        assert config is not None, f"{where}: 'glmbandits serve {args}' names no CONFIG"
        config_path = (self.folder / config).resolve()
        if db is None:  # the CLI's default: CONFIG's name with .db next to it
            db = f"sqlite:///{config_path.with_suffix('.db')}"
        elif db.startswith("sqlite:///") and not db.startswith("sqlite:////"):
            db = f"sqlite:///{self.folder / db[len('sqlite:///'):]}"
        server = ServerProcess(config_path, db, env=env, role=role)
        self.servers.append(server)
        self.addresses[port] = server.url.split("://", 1)[1].rstrip("/")

    # console
    def console(self, block: Block) -> None:
        lines = block.text.split("\n")
        commands = [i for i, line in enumerate(lines) if line.startswith("$ ")]
        assert commands and commands[0] == 0, f"{block.where}: a console block starts with '$ '"
        for k, start in enumerate(commands):
            end = commands[k + 1] if k + 1 < len(commands) else len(lines)
            command = lines[start][2:]
            if "--dataset obd-" in command and not _installed("obp"):
                self.skipped.append(f"{block.where}: {command} (obp is not installed)")
                continue
            printed = self.shell.run(command, f"{block.where}: {command}", stderr_apart=True)
            difference = same_output("\n".join(lines[start + 1:end]), printed)
            assert difference is None, (
                f"{block.where}: `{command}` prints something else than the page shows: "
                f"{difference}\n(regenerate the table with the command and paste its output)")


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


# -- the tests ---------------------------------------------------------------------------------
def test_pages_are_found():
    names = {str(page.relative_to(ROOT)) for page in PAGES}
    assert {"README.md", "docs/service.md", "docs/real-data.md", "docs/production.md"} <= names


def test_every_block_is_run_or_marked_with_a_reason():
    problems = []
    for page in PAGES:
        blocks, found = parse_blocks(page)
        problems += found
        for block in blocks:
            known = block.lang in SHELL_LANGS | {"python", "console", "toml"}
            if block.marker is None and not known:
                problems.append(f"{block.where}: a {block.lang!r} block is neither run nor "
                                "marked '<!-- not run: REASON -->'")
    assert not problems, "\n".join(problems)


def test_a_marker_without_a_reason_or_without_a_block_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    page = tmp_path / "page.md"
    page.write_text("<!-- not run: -->\n```sh\nrm -rf /\n```\n\n<!-- not run: stray -->\n\ntext\n"
                    "<!-- not run: a reason\n   on two lines -->\n```ini\n[x]\n```\n")
    blocks, problems = parse_blocks(page)
    assert [(b.line, b.marker, b.reason) for b in blocks] == [
        (2, "not run", ""), (11, "not run", "a reason on two lines")]
    assert problems == ["page.md:2: '<!-- not run: -->' needs a reason",
                        "page.md:6: a marker that is not right before a code block"]


@pytest.mark.parametrize("expected, actual, ok", [
    ("a 0.0160 [0.0000, 0.0474] 79/5000", "a 0.0161 [-0.0001, 0.0474] 80/5000", True),
    ("a 0.0160 ± 0.0314", "a 0.0160 ± 0.0237", False),  # a stale value
    ("value ± half", "value ± half ESS", False),  # a stale column
    ("x 1\ny 2", "x 1", False),  # a line missing
    ("x 10,292", "x 10,293", True),
    ("mean 3.5e-05", "mean 3.6e-05", True),
    ("mean 3.5e-05", "mean 3.9e-05", False),
])
def test_same_output_compares_text_exactly_and_numbers_to_their_last_digit(expected, actual, ok):
    assert (same_output(expected, actual) is None) == ok


def _runnable(page: Path) -> bool:
    return any(block.marker != "not run" for block in parse_blocks(page)[0])


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if _runnable(p)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_page_runs_as_written(page, tmp_path, monkeypatch):
    blocks, problems = parse_blocks(page)
    assert not problems, "\n".join(problems)
    if any(block.lang in SHELL_LANGS and "curl" in block.text and block.marker is None
           for block in blocks) and not _which("curl"):
        from fixtures_system import require_system_component
        require_system_component("curl is not installed")
    monkeypatch.chdir(tmp_path)
    runner = PageRunner(page, tmp_path)
    try:
        runner.run(blocks)
    finally:
        runner.close()
    if runner.skipped:
        pytest.skip("ran every other block; not run: " + "; ".join(runner.skipped))


def _which(program: str) -> bool:
    import shutil

    return shutil.which(program) is not None


@pytest.mark.slow
def test_the_readme_main_job_runs_as_written(tmp_path):
    """The README's Quick start runs ``glmbandits run`` (the main job, about 15 s): it is run
    here as written, in an empty folder, and what the README says it writes is there, and
    ``glmbandits results`` and ``glmbandits plot`` right after it show its runs."""
    (quick_start,) = [b for b in parse_blocks(ROOT / "README.md")[0]
                      if "glmbandits run" in b.text and b.lang == "bash"]
    first = quick_start.text.split("\n")[0]
    command = first.split("&&")[1].strip()
    assert command == "glmbandits run", first
    env = dict(os.environ, MPLBACKEND="Agg")
    done = subprocess.run(command.split(), cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=BLOCK_DEADLINE_S)
    assert done.returncode == 0, done.stderr
    assert "d=10, K=20, ||theta*||=3, T=3000, 5 seeds" in done.stdout
    assert "algorithms: ucb-glm, supcb-glm, linucb, random" in done.stdout
    for name in ("runs.csv", "curves.csv", "regret.png"):
        assert (tmp_path / "glmbandits-results" / name).stat().st_size > 0, name
    assert (tmp_path / "glmbandits-results.sqlite").is_file()
    results = subprocess.run(["glmbandits", "results"], cwd=tmp_path, capture_output=True,
                             text=True, env=env, timeout=BLOCK_DEADLINE_S)
    assert results.returncode == 0, results.stderr
    assert "| run-logistic-d10-K20-norm3-T3000 | ucb-glm |" in results.stdout
    plots = subprocess.run(["glmbandits", "plot", "--formats", "png"], cwd=tmp_path,
                           capture_output=True, text=True, env=env, timeout=BLOCK_DEADLINE_S)
    assert plots.returncode == 0, plots.stderr
    assert (tmp_path / "glmbandits-plots" / "run-logistic-d10-K20-norm3-T3000" /
            "regret_curves.png").is_file()
