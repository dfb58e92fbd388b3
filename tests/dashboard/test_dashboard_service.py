"""The dashboard served by the real service (a ``glmbandits serve`` process in shadow mode)
in a real headless Chromium: the page loads without console errors, shows what the API
returns, follows new decisions made through the API, shows no data with a wrong key, and
fills the evaluation panel once shadow decisions have rewards."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fixtures_system import console_errors

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))
from servicekit import KEY, ServerProcess, unit_rows, write_config  # noqa: E402

pytestmark = pytest.mark.slow
WAIT = 60  # seconds, every wait below is bounded by it (generous: two busy CPUs may sit beside)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dashboard-serve")
    process = ServerProcess(write_config(folder, n_features=3, max_actions=8,
                                         decisions='mode = "shadow"\n'),
                            f"sqlite:///{folder / 'log.db'}")
    yield process
    assert process.terminate() == 0, process.output()


def _wait(driver, condition, message: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT).until(condition, message=message)


def _text(driver, element_id: str) -> str:
    return driver.find_element("id", element_id).text


def _wait_for_text(driver, element_id: str, expected: str) -> None:
    _wait(driver, lambda d: _text(d, element_id) == expected,
          f"#{element_id} never showed {expected!r}")


def _connect(driver, server: ServerProcess, key: str) -> None:
    driver.get(server.url + "/?poll=300")
    driver.find_element("id", "api-key").send_keys(key)
    driver.find_element("id", "connect").click()


def _traffic(server: ServerProcess, n: int, seed: int, *, rewarded: bool = True) -> None:
    rng = np.random.default_rng(seed)
    for t in range(n):
        X = unit_rows(rng, 5, 3)
        decision_id = f"page-{seed}-{t}"
        answer = server.client.post("/v1/decide", json={
            "decision_id": decision_id, "contexts": X.tolist(),
            "default_action": int(np.argmax(X[:, 0]))})
        assert answer.status_code == 200, answer.text
        if rewarded:
            reward = float(rng.random() < (0.7 if X[answer.json()["action"], 1] > 0 else 0.3))
            assert server.client.post("/v1/reward", json={
                "decision_id": decision_id, "reward": reward}).status_code == 200


def test_the_page_shows_the_services_numbers_and_follows_them(chromium_driver, server):
    driver = chromium_driver
    console_errors(driver)  # drain what earlier tests left
    _traffic(server, 4, seed=1, rewarded=False)
    model = server.client.get("/v1/model").json()
    _connect(driver, server, KEY)
    _wait_for_text(driver, "model-class", model["class"])
    assert _text(driver, "model-version") == str(model["model_version"])
    assert _text(driver, "count-decisions") == str(model["counts"]["decisions"]) == "4"
    assert _text(driver, "count-pending") == "4"
    assert _text(driver, "model-shape") == "d = 3 · K ≤ 8 · shadow mode"
    assert not driver.find_element("id", "login").is_displayed()
    # the latest decisions, newest first, with the default shown and the policy's choice
    rows = driver.execute_script(
        "return [...document.querySelectorAll('#latest-decisions tbody tr')]"
        ".map(row => row.innerText)")
    assert len(rows) == 4 and "page-1-3" in rows[0] and "(policy: " in rows[0]
    # nothing to evaluate yet: the panel says why (a 200, not an error)
    _wait(driver, lambda d: "No shadow-mode evaluation" in _text(d, "evaluation-empty"),
          "the evaluation panel never said it had nothing")
    assert not driver.find_element("id", "evaluation-body").is_displayed()

    # decisions and rewards through the API: the page follows without a reload
    _traffic(server, 30, seed=2)
    model = server.client.get("/v1/model").json()
    assert model["model_version"] == 30
    _wait_for_text(driver, "count-decisions", "34")
    _wait_for_text(driver, "model-version", "30")
    _wait(driver, lambda d: "changed at" in _text(d, "version-changed"),
          "the version change was never shown")
    assert _text(driver, "count-rewards") == "30" and _text(driver, "count-pending") == "4"
    assert float(_text(driver, "decisions-per-second")) > 0
    assert driver.find_elements("css selector", "#chart-rate canvas")

    # the evaluation panel shows what GET /v1/evaluation returns
    deadline = time.monotonic() + WAIT  # the service reuses a result for up to 1 s
    while not ((evaluation := server.client.get("/v1/evaluation").json())["available"]
               and evaluation["n_rounds"] == 30):
        assert time.monotonic() < deadline, evaluation
        time.sleep(0.3)
    assert evaluation["available"] and evaluation["n_rounds"] == 30, evaluation
    _wait_for_text(driver, "eval-dr", f"{evaluation['policy_dr']['value']:.3f}")
    assert driver.find_element("id", "evaluation-body").is_displayed()
    assert _text(driver, "eval-default") == f"{evaluation['default']['value']:.3f}"
    assert _text(driver, "eval-lift") == f"{evaluation['lift_dr']['value']:.3f}"
    assert _text(driver, "eval-rounds") == "30"
    assert len(driver.find_elements("css selector", "#eval-notes li")) == \
        len(evaluation["notes"])
    driver.get("about:blank")  # stop polling
    assert console_errors(driver) == []


def test_a_wrong_key_shows_an_error_and_no_numbers(chromium_driver, server):
    driver = chromium_driver
    _traffic(server, 2, seed=3, rewarded=False)
    console_errors(driver)
    _connect(driver, server, "not-the-key")
    _wait_for_text(driver, "status", "wrong key")
    assert driver.find_element("id", "auth-error").is_displayed()
    assert not driver.find_element("id", "dashboard").is_displayed()
    source = driver.page_source
    assert "UCBGLM" not in source and "page-3-" not in source
    for element_id in ("model-version", "count-decisions"):
        assert driver.find_element("id", element_id).get_attribute("textContent") == "–"
    assert driver.execute_script("return window.localStorage.length + "
                                 "window.sessionStorage.length") == 0
    assert driver.get_cookies() == []
    console_errors(driver)  # the 401s were logged by the browser, as expected
    driver.find_element("id", "api-key").send_keys(KEY)  # the right key then works
    driver.find_element("id", "connect").click()
    _wait_for_text(driver, "model-class", "UCBGLM")
    assert not driver.find_element("id", "auth-error").is_displayed()
    driver.get("about:blank")
    assert console_errors(driver) == []
