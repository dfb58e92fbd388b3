"""The system fixtures themselves: a real PostgreSQL keeps committed data over a restart
and a crash, and the real headless Chromium loads pages and reports console errors."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path
from typing import Iterator

import pytest

from fixtures_system import PostgresServer, console_errors


def test_postgres_listens_on_loopback_with_fsync_and_its_socket_in_the_temp_folder(
        postgres_server: PostgresServer, postgres_url: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    assert postgres_url.startswith(f"postgresql://{postgres_server.user}@127.0.0.1:"
                                   f"{postgres_server.port}/")
    with psycopg.connect(postgres_url, connect_timeout=60) as conn:
        settings = dict(conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN "
            "('listen_addresses', 'fsync', 'unix_socket_directories', 'port')").fetchall())
    assert settings == {"listen_addresses": "127.0.0.1", "fsync": "on",
                        "unix_socket_directories": str(postgres_server.socket_dir),
                        "port": str(postgres_server.port)}
    assert postgres_server.data_dir.is_relative_to(postgres_server.root)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["restart", "kill"])
def test_committed_rows_survive_a_restart_and_a_kill(postgres_server: PostgresServer,
                                                     postgres_url: str, how: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    conn = psycopg.connect(postgres_url, connect_timeout=60)
    try:
        conn.execute("CREATE TABLE kept (id bigserial PRIMARY KEY, note text NOT NULL)")
        conn.execute("INSERT INTO kept (note) VALUES ('committed')")
        conn.commit()
        conn.execute("INSERT INTO kept (note) VALUES ('never committed')")
        if how == "restart":
            postgres_server.restart()
        else:
            postgres_server.kill()
            assert not postgres_server.running()
            postgres_server.start()
        with pytest.raises(psycopg.OperationalError):  # the server closed this connection
            conn.execute("SELECT 1")
    finally:
        conn.close()
    with psycopg.connect(postgres_url, connect_timeout=60) as conn:
        assert conn.execute("SELECT note FROM kept ORDER BY id").fetchall() == [("committed",)]


def test_postgres_url_gives_every_test_its_own_schema(postgres_server: PostgresServer,
                                                      postgres_url: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    other = postgres_server.create_schema()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE mine (x int)")
    with psycopg.connect(other, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('mine')").fetchone() == (None,)
    postgres_server.drop_schema(other)
    database = postgres_server.create_database()
    assert database.startswith(postgres_server.url_for("test_"))
    with psycopg.connect(database, connect_timeout=60) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                            ).fetchone() == (0,)


@pytest.fixture
def loopback_site(tmp_path: Path) -> Iterator[str]:
    """A tiny http.server on 127.0.0.1 serving one page from tmp_path; stopped after the test."""
    (tmp_path / "index.html").write_text(
        "<!doctype html><title>fixture</title><link rel='icon' href='data:,'>"
        "<p id='greeting'>static</p>"
        "<script>document.getElementById('greeting').textContent = 'from script';</script>")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(tmp_path), **kwargs)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=60)


def test_chromium_runs_the_page_script_from_a_loopback_server(chromium_driver,
                                                               loopback_site: str) -> None:
    chromium_driver.get(loopback_site)
    assert chromium_driver.title == "fixture"
    assert chromium_driver.find_element("id", "greeting").text == "from script"
    assert console_errors(chromium_driver) == []


def test_chromium_reports_console_errors(chromium_driver) -> None:
    console_errors(chromium_driver)  # drain what earlier tests left
    chromium_driver.get("data:text/html,<p id='x'>data url</p>"
                        "<script>console.error('broken on purpose')</script>")
    assert chromium_driver.find_element("id", "x").text == "data url"
    errors = console_errors(chromium_driver)
    assert any("broken on purpose" in entry["message"] for entry in errors), errors


def test_a_missing_component_fails_under_ci_and_skips_locally(monkeypatch) -> None:
    from fixtures_system import require_system_component
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set and chromium is missing"):
        require_system_component("chromium is missing")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="install-test-system-deps"):
        require_system_component("chromium is missing")
