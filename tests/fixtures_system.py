"""Real system components for the tests: a PostgreSQL server and a headless Chromium.

Both are real processes on loopback, started once per test session and stopped at its
end (servers, databases and browsers in tests are never mocks: see DESIGN.md). The
binaries come from the distribution's packages, which ``scripts/install-test-system-deps.sh``
installs (the README's test command and ``.ci/run`` call it). When a binary is missing a
test that needs it is skipped locally with the reason, and **fails** when the environment
variable ``CI`` is set, so CI never passes by skipping.

Fixtures (imported into ``tests/conftest.py``, so any test can ask for them):

* ``postgres_server`` (session): a :class:`PostgresServer` in a temporary folder; its
  ``url`` is ``postgresql://USER@127.0.0.1:PORT/DB`` (trust authentication on loopback),
  ``restart()``, ``stop()``, ``start()`` and ``kill()`` control the server, and
  ``create_database()`` makes a fresh empty database.
* ``postgres_url`` (function): a URL on that server whose tables land in a fresh empty
  schema (``?options=-csearch_path%3DNAME``), so tests do not see each other's tables.
* ``chromium_driver`` (session): a Selenium ``WebDriver`` driving ``/usr/bin/chromium``
  headless through ``/usr/bin/chromedriver``, with the browser console captured;
  :func:`console_errors` returns (and drains) the console's errors.

``initdb`` refuses to run as root, and CI runs as root: the server then runs as the
unprivileged user ``nobody`` (through ``runuser``), in a folder that user owns.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

__all__ = ["PostgresServer", "find_postgres_bindir", "postgres_server", "postgres_url",
           "chromium_driver", "start_chromium", "console_errors", "CHROMIUM", "CHROMEDRIVER", "free_port",
           "require_system_component"]

#: Where Debian's ``chromium`` and ``chromium-driver`` packages put the browser and its driver.
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: The unprivileged user the server runs as when the tests run as root.
SERVER_USER = "nobody"
#: Bounds on every wait of the fixtures, in seconds.
START_TIMEOUT = 60
STOP_TIMEOUT = 30


def require_system_component(missing: str) -> None:
    """Skip the test (locally) or fail it (when ``CI`` is set) because ``missing`` is absent."""
    message = (f"{missing}; run `bash scripts/install-test-system-deps.sh` (Debian packages) "
               "to install it")
    if os.environ.get("CI"):
        pytest.fail(f"CI is set and {message}", pytrace=False)
    pytest.skip(message)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def find_postgres_bindir() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl``, ``postgres``, ``createdb`` and ``psql``, or ``None``.

    ``initdb`` on ``PATH`` (links followed, so Debian's ``/usr/lib/postgresql/N/bin``
    is found behind a link in ``/usr/local/bin``) comes first, then the newest
    ``/usr/lib/postgresql/*/bin``.
    """
    candidates = []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    candidates += sorted((Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin")),
                         key=lambda p: _version_key(p.parent.name), reverse=True)
    for folder in candidates:
        if all(os.access(folder / name, os.X_OK)
               for name in ("initdb", "pg_ctl", "postgres", "createdb", "psql")):
            return folder
    return None


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


@dataclass
class PostgresServer:
    """A PostgreSQL server in its own temporary folder, listening on 127.0.0.1 only.

    Attributes
    ----------
    bindir : Path
        The folder of ``initdb``/``pg_ctl``/``postgres``.
    root : Path
        The temporary folder: ``data/`` (the cluster), ``socket/`` (the unix socket)
        and ``server.log``.
    port : int
    database : str
        The database created at start; :attr:`url` points at it.
    user : str
        The database superuser (trust authentication on loopback).
    """

    bindir: Path
    root: Path
    port: int
    database: str = "glmbandits_test"
    user: str = "glmbandits"
    _run_as: list[str] = field(default_factory=list)
    _process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    @property
    def log_file(self) -> Path:
        return self.root / "server.log"

    @property
    def url(self) -> str:
        """``postgresql://USER@127.0.0.1:PORT/DATABASE``."""
        return self.url_for(self.database)

    def url_for(self, database: str) -> str:
        """The URL of another database on this server."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    # -- lifecycle -----------------------------------------------------------------------
    @classmethod
    def create(cls, bindir: Path) -> "PostgresServer":
        """``initdb`` a cluster in a new temporary folder and start it (as ``nobody`` under root)."""
        root = Path(tempfile.mkdtemp(prefix="glmbandits-pg-"))
        run_as: list[str] = []
        if os.geteuid() == 0:  # initdb refuses root: the server belongs to an unprivileged user
            run_as = ["runuser", "-u", SERVER_USER, "--"]
        server = cls(bindir=bindir, root=root, port=free_port(), _run_as=run_as)
        server.socket_dir.mkdir()
        if run_as:
            for path in (root, server.socket_dir):
                shutil.chown(path, user=SERVER_USER, group=None)
        server._run(["initdb", "-D", str(server.data_dir), "-U", server.user, "--auth=trust",
                     "--encoding=UTF8", "--no-locale", "--no-instructions"], START_TIMEOUT)
        server.start()
        server._run(["createdb", "-h", "127.0.0.1", "-p", str(server.port), "-U", server.user,
                     server.database], START_TIMEOUT)
        return server

    def _run(self, command: list[str], timeout: float) -> subprocess.CompletedProcess:
        argv = self._run_as + [str(self.bindir / command[0])] + command[1:]
        result = subprocess.run(argv, cwd=self.root, capture_output=True, text=True,
                                timeout=timeout, env={**os.environ, "LC_ALL": "C"})
        if result.returncode != 0:
            log = self.log_file.read_text() if self.log_file.exists() else ""
            raise RuntimeError(f"PostgresServer: {' '.join(command[:2])} failed with exit code "
                               f"{result.returncode}:\n{result.stdout}{result.stderr}{log[-4000:]}")
        return result

    def start(self) -> None:
        """Start the server and wait (at most ``START_TIMEOUT`` s) until it accepts connections.

        ``fsync=on`` (the default, stated so that durability tests mean something); TCP on
        127.0.0.1 only; the unix socket in :attr:`socket_dir`, not in /var/run. The
        postmaster is a child of this process (not daemonised by ``pg_ctl start``), so that
        after :meth:`kill` it is reaped at once and never lingers as a zombie that a new
        postmaster would take for a running server.
        """
        if self._process is not None and self._process.poll() is None:
            raise RuntimeError("PostgresServer.start: the server is already running")
        with open(self.log_file, "ab") as log:
            self._process = subprocess.Popen(
                self._run_as + [str(self.bindir / "postgres"), "-D", str(self.data_dir),
                                "-p", str(self.port), "-c", "listen_addresses=127.0.0.1",
                                "-c", f"unix_socket_directories={self.socket_dir}",
                                "-c", "fsync=on"],
                cwd=self.root, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "LC_ALL": "C"})
        deadline = time.monotonic() + START_TIMEOUT
        while not self._ready():
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"PostgresServer.start: the server did not become ready in "
                                   f"{START_TIMEOUT} s:\n{self.log_file.read_text()[-4000:]}")
            time.sleep(0.05)

    def _ready(self) -> bool:
        """``postmaster.pid`` says ready (its 8th line) and the port accepts connections."""
        try:
            lines = (self.data_dir / "postmaster.pid").read_text().splitlines()
        except OSError:
            return False
        return len(lines) >= 8 and lines[7].strip() == "ready" and self._port_open()

    def stop(self) -> None:
        """``pg_ctl stop -m fast`` (bounded); the server is killed if it does not stop in time."""
        if not self.running():
            return
        try:
            self._run(["pg_ctl", "stop", "-D", str(self.data_dir), "-m", "fast", "-w", "-t",
                       str(STOP_TIMEOUT)], STOP_TIMEOUT + 10)
            self._process.wait(timeout=STOP_TIMEOUT)
        except (RuntimeError, subprocess.TimeoutExpired):
            self.kill()

    def restart(self) -> None:
        """Stop (fast: open connections are closed) and start again on the same port and data."""
        self.stop()
        self.start()

    def kill(self) -> None:
        """``kill -9`` of the postmaster (a crash); :meth:`start` recovers from the WAL.

        Its backends exit by themselves when they notice the postmaster is gone; this waits
        (bounded) until nothing listens on the port any more.
        """
        pid = self.pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        elif self._process is not None and self._process.poll() is None:
            self._process.kill()  # started, but not (yet) the postmaster of a pid file
        if self._process is not None:
            try:
                self._process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=STOP_TIMEOUT)
        deadline = time.monotonic() + STOP_TIMEOUT
        while self._port_open() and time.monotonic() < deadline:
            time.sleep(0.05)

    def pid(self) -> int | None:
        """The postmaster's process id from ``postmaster.pid`` (``None`` when not running)."""
        pid_file = self.data_dir / "postmaster.pid"
        try:
            pid = int(pid_file.read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None
        return pid if self._alive(pid) else None

    def running(self) -> bool:
        """Whether the postmaster this object started is alive."""
        return self._process is not None and self._process.poll() is None and \
            self.pid() is not None

    @staticmethod
    def _alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        try:  # a zombie is not alive
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def _port_open(self) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.settimeout(0.5)
            return probe.connect_ex(("127.0.0.1", self.port)) == 0

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database (a new unique name by default) and return its URL."""
        name = name or f"test_{uuid.uuid4().hex[:12]}"
        self._run(["createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, name],
                  START_TIMEOUT)
        return self.url_for(name)

    def create_schema(self) -> str:
        """Create an empty schema (a new unique name) in :attr:`database`; a URL that uses it.

        The URL carries ``options=-csearch_path=NAME``, so every unqualified table a
        client creates or reads is in that schema: as good as a fresh database for one
        test, and it costs milliseconds where ``createdb`` costs a copy of the template
        (and a slow shutdown checkpoint later).
        """
        name = f"test_{uuid.uuid4().hex[:12]}"
        self.psql(f"CREATE SCHEMA {name}")
        return f"{self.url}?options=-csearch_path%3D{name}"

    def drop_schema(self, url: str) -> None:
        """Drop the schema of a :meth:`create_schema` URL with what it holds (5 s lock timeout)."""
        name = url.rsplit("%3D", 1)[1]
        self.psql(f"DROP SCHEMA IF EXISTS {name} CASCADE", lock_timeout="5s")

    def psql(self, sql: str, *, lock_timeout: str = "0") -> str:
        """Run one SQL command with ``psql`` in :attr:`database`; its output."""
        argv = self._run_as + [str(self.bindir / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
                               "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user,
                               "-d", self.database, "-c", sql]
        result = subprocess.run(argv, cwd=self.root, capture_output=True, text=True,
                                timeout=START_TIMEOUT,
                                env={**os.environ, "PGOPTIONS": f"-c lock_timeout={lock_timeout}"})
        if result.returncode != 0:
            raise RuntimeError(f"PostgresServer.psql: {sql!r} failed: {result.stderr}")
        return result.stdout

    def close(self) -> None:
        """Stop the server and remove its folder."""
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the session (see the module docstring)."""
    bindir = find_postgres_bindir()
    if bindir is None:
        require_system_component("the PostgreSQL server binaries (initdb, pg_ctl, postgres) "
                                 "are not on PATH nor under /usr/lib/postgresql/*/bin")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        require_system_component("runuser (util-linux) is missing, and initdb refuses root")
    server = PostgresServer.create(bindir)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A URL whose tables land in a fresh empty schema of the session's server (one per test).

    See :meth:`PostgresServer.create_schema`; the schema is dropped after the test. A
    test that needs a whole database of its own calls ``postgres_server.create_database()``.
    """
    if not postgres_server.running():  # a test that stopped or killed it leaves it for the next
        postgres_server.start()
    url = postgres_server.create_schema()
    yield url
    if not postgres_server.running():
        postgres_server.start()
    try:
        postgres_server.drop_schema(url)
    except RuntimeError:
        pass  # a connection the test left open still holds a lock: the schema stays


@pytest.fixture(scope="session")
def chromium_driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator["object"]:
    """Selenium driving the distribution's headless Chromium, with the console captured."""
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    if missing:
        require_system_component(f"{' and '.join(missing)} missing (Debian packages chromium, "
                                 "chromium-driver)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        require_system_component("selenium is not installed (pip install -e '.[test]')")
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"),
                            tmp_path_factory.mktemp("chromedriver") / "driver.log")
    try:
        yield driver
    finally:
        driver.quit()


def start_chromium(profile: Path, driver_log: Path, *, width: int = 1280,
                   height: int = 1000) -> "object":
    """A Selenium ``WebDriver`` on the distribution's headless Chromium (the fixture's setup).

    ``--no-sandbox`` because CI runs as root; the console is captured
    (``goog:loggingPrefs``: browser ALL) for :func:`console_errors`. The caller quits it.
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--disable-background-networking",
                     "--disable-extensions", "--no-first-run", f"--window-size={width},{height}",
                     f"--user-data-dir={profile}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=str(CHROMEDRIVER), log_output=str(driver_log))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(30)
    return driver


def console_errors(driver: object) -> list[dict]:
    """The browser console's entries of level SEVERE since the last call (this drains the log)."""
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
