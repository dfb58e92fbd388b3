"""The dashboard in a real headless Chromium against a stub of the service's read API (fast,
and able to fake ten minutes of history; ``test_dashboard_service.py`` runs the page
against the real service):
it loads without console errors, shows the numbers the API returns, follows them when
they change, and shows no data with a wrong key."""

from __future__ import annotations

import fnmatch
import time
import tomllib
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from dashboard_stub import DashboardStub, shadow_evaluation_json
from fixtures_system import console_errors
from glmbandits.dashboard import ASSET_FILES, asset_folder

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60  # seconds, every wait below is bounded by it (generous: the page polls every 0.3 s)
RATE_WINDOW_S = 60  # the page's headline rates cover the last minute (dashboard.js WINDOW_S)


def _wait_until(driver, condition, message: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT).until(condition, message=message)


def _wait_for_text(driver, element_id: str, expected: str) -> None:
    _wait_until(driver, lambda d: expected in d.find_element("id", element_id).text,
                f"#{element_id} never showed {expected!r}")


def _decision_rate(stub: DashboardStub, now: float) -> float:
    """Decisions per second over the page's window ending at ``now``, from the stub's events."""
    recent = sum(1 for event in stub.events
                 if event["kind"] == "decision" and event["timestamp"] > now - RATE_WINDOW_S)
    return recent / RATE_WINDOW_S


def _wait_for_rate(driver, stub: DashboardStub, added_at: float) -> None:
    """Wait until ``#decisions-per-second`` shows the rate of the stub's events.

    The page computes it at its own render time, somewhere between ``added_at`` (when the
    last events were added: the page cannot have drawn them earlier) and now; the rate of a
    fixed set of events only falls with time, so the shown value lies between the rates at
    those two instants. On a quiet machine both are the same number, so this is an exact
    check; on a loaded one it never depends on how long the steps took.
    """
    def shows_it(d) -> bool:
        shown = d.find_element("id", "decisions-per-second").text
        latest = _decision_rate(stub, time.time())
        try:
            value = float(shown)
        except ValueError:
            return False
        return round(latest, 2) <= value <= round(_decision_rate(stub, added_at), 2)

    _wait_until(driver, shows_it, "#decisions-per-second never showed the stub's rate")


def _row_texts(driver) -> list[str]:
    """The latest-decisions rows' texts, read in one go (the table is redrawn every poll)."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#latest-decisions tbody tr')]"
        ".map(row => row.innerText)")


def _connect(driver, stub: DashboardStub, key: str) -> None:
    driver.get(stub.url + "?poll=300")
    field = driver.find_element("id", "api-key")
    field.send_keys(key)
    driver.find_element("id", "connect").click()


@pytest.fixture(scope="module")
def evaluation() -> dict:
    return shadow_evaluation_json()


def test_the_page_shows_what_the_api_returns_and_follows_it(chromium_driver, evaluation
                                                            ) -> None:
    driver = chromium_driver
    console_errors(driver)  # drain what earlier tests left
    with DashboardStub(evaluation=evaluation) as stub:
        stub.add_decisions(30, seed=1, spread=10.0)
        added_at = time.time()
        stub.model["counts"].update(pending=7, expired=2)
        _connect(driver, stub, stub.key)
        _wait_for_text(driver, "model-class", "UCBGLM")
        _wait_for_rate(driver, stub, added_at)  # 30 decisions in the last minute: 0.50
        assert driver.find_element("id", "dashboard").is_displayed()
        assert not driver.find_element("id", "login").is_displayed()
        text = lambda element_id: driver.find_element("id", element_id).text  # noqa: E731
        assert text("model-version") == "3"
        assert text("model-shape") == "d = 10 · K ≤ 100"
        assert text("count-decisions") == "30"
        assert text("count-pending") == "7" and text("count-expired") == "2"
        assert text("reward-rate") == "0.500"
        assert text("version-changed").startswith("unchanged since")
        rows = _row_texts(driver)
        assert len(rows) == 10
        newest = stub.events[-2]
        assert newest["decision_id"] in rows[0]
        best = max(range(5), key=lambda a: newest["probabilities"][a])
        assert f"{best}: {newest['probabilities'][best]:.2f}" in rows[0]
        # the evaluation panel shows the estimates of the real evaluate_shadow JSON
        assert text("eval-default") == f"{evaluation['default']['value']:.3f}"
        assert text("eval-dr") == f"{evaluation['policy_dr']['value']:.3f}"
        assert text("eval-snips") == f"{evaluation['policy_snips']['value']:.3f}"
        assert text("eval-lift") == f"{evaluation['lift_dr']['value']:.3f}"
        assert "biased" in text("eval-snips-note")
        assert text("eval-overlap") == "poor"
        assert "going live would likely help (if the reward model holds)" == text("eval-verdict")
        assert len(driver.find_elements("css selector", "#eval-notes li")) == \
            len(evaluation["notes"])
        assert driver.find_elements("css selector", "#chart-rate canvas")
        assert driver.find_elements("css selector", "#chart-reward canvas")

        # new decisions, a new model version: the page follows without a reload
        stub.add_decisions(30, seed=2, spread=10.0)
        added_at = time.time()
        stub.model["model_version"] = 5
        _wait_for_text(driver, "count-decisions", "60")
        _wait_for_text(driver, "model-version", "5")
        _wait_for_text(driver, "version-changed", "changed at")
        assert "(was 3)" in text("version-changed")
        # the counts come from /v1/model and the rates from /v1/events, fetched side by
        # side: a poll can see the new counts before the new events, so wait for both
        _wait_for_rate(driver, stub, added_at)  # 60 decisions in the last minute: 1.00
        newest = stub.events[-2]["decision_id"]
        _wait_until(driver, lambda d: (_row_texts(d) or [""])[0].find(newest) >= 0,
                    f"the newest decision {newest} never topped the table")
        assert all(authorized for _, authorized in stub.requests)
        # after the first poll only new events are asked for, and none is shown twice (the
        # poll after the one that brought the newest events asks from the last seq; it
        # leaves up to one poll interval after the table shows them: wait for it)
        def afters() -> list[int]:
            return [int(parse_qs(urlsplit(path).query)["after"][0])
                    for path, _ in list(stub.requests) if path.startswith("/v1/events")]

        _wait_until(driver, lambda d: afters()[-1] == len(stub.events),
                    "the page never asked for the events after the last seq")
        assert afters()[0] == 0 and sorted(afters()) == afters()
        ids = driver.execute_script(
            "return [...document.querySelectorAll('#latest-decisions td.id')]"
            ".map(cell => cell.textContent)")
        assert len(ids) == 10
        assert len(set(ids)) == len(ids)
        driver.get("about:blank")  # stop polling before the stub goes away
        assert console_errors(driver) == []


def test_a_wrong_key_shows_no_data(chromium_driver, evaluation) -> None:
    driver = chromium_driver
    with DashboardStub(evaluation=evaluation) as stub:
        stub.add_decisions(12, seed=3)
        _connect(driver, stub, "not-the-key")
        _wait_for_text(driver, "status", "wrong key")
        assert driver.find_element("id", "auth-error").is_displayed()
        assert driver.find_element("id", "auth-error").text == "wrong key"
        assert not driver.find_element("id", "dashboard").is_displayed()
        source = driver.page_source
        assert "UCBGLM" not in source and "req-3-" not in source
        assert stub.requests and not any(authorized for _, authorized in stub.requests)
        # the key is nowhere but in memory
        assert driver.execute_script("return window.localStorage.length + "
                                     "window.sessionStorage.length") == 0
        assert driver.get_cookies() == []
        # the right key then works in the same page
        console_errors(driver)  # the 401s were logged by the browser, as expected
        field = driver.find_element("id", "api-key")
        field.send_keys(stub.key)
        driver.find_element("id", "connect").click()
        _wait_for_text(driver, "model-class", "UCBGLM")
        assert not driver.find_element("id", "auth-error").is_displayed()
        assert driver.find_element("id", "api-key").get_attribute("value") == ""
        driver.get("about:blank")
        assert console_errors(driver) == []


def test_without_an_evaluation_the_panel_says_so(chromium_driver) -> None:
    driver = chromium_driver
    with DashboardStub(evaluation=None) as stub:
        _connect(driver, stub, stub.key)
        _wait_for_text(driver, "model-class", "UCBGLM")
        _wait_for_text(driver, "evaluation-empty", "the policy is served live")
        assert not driver.find_element("id", "evaluation-body").is_displayed()
        assert driver.find_element("id", "no-decisions").is_displayed()
        assert driver.find_element("id", "decisions-per-second").text == "0.00"
        driver.get("about:blank")
        assert console_errors(driver) == []


def test_every_asset_is_package_data() -> None:
    """pyproject's package-data globs cover every file the page needs, and only the
    dashboard's ``__init__.py`` is Python."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["glmbandits.dashboard"]
    folder = asset_folder()
    files = [p.relative_to(folder).as_posix() for p in folder.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts]
    for name in ASSET_FILES:
        assert (folder / name).is_file(), name
        assert any(fnmatch.fnmatch(name, pattern) for pattern in patterns), name
    assert [name for name in files if name.endswith(".py")] == ["__init__.py"]
    html = (folder / "index.html").read_text()
    assert "http://" not in html and "https://" not in html  # no CDN
