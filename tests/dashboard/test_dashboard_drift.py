"""The dashboard's drift panel in a real headless Chromium against the stub of the read API:
without a monitor it says so; with one (a real ``DriftMonitor`` status, as ``GET /v1/model``
serves it) it shows the alarm state, the latest statistic and the observed vs predicted
chart, and follows a new alarm without a reload."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dashboard_stub import DashboardStub
from fixtures_system import console_errors
from glmbandits.evaluation import DriftMonitor

WAIT = 60  # seconds, every wait below is bounded by it


def _wait_for_text(driver, element_id: str, expected: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT).until(lambda d: d.find_element("id", element_id).text == expected,
                                      message=f"#{element_id} never showed {expected!r}")


def _drift_json(flip_at: int | None, n: int = 1600) -> dict:
    """A monitor's status after ``n`` rewards whose rate drops from 0.8 to 0.3 at ``flip_at``
    while the model keeps predicting 0.8."""
    rng = np.random.default_rng(0)
    monitor = DriftMonitor(window=100, alpha=0.01, family="logistic", action="restart")
    for t in range(n):
        p = 0.8 if flip_at is None or t < flip_at else 0.3
        monitor.observe(0.8, float(rng.random() < p))
    return monitor.status().as_dict()


def test_the_drift_panel_shows_the_monitor_and_follows_an_alarm(chromium_driver, tmp_path):
    driver = chromium_driver
    console_errors(driver)
    with DashboardStub() as stub:
        driver.get(stub.url + "?poll=300")
        driver.find_element("id", "api-key").send_keys(stub.key)
        driver.find_element("id", "connect").click()
        _wait_for_text(driver, "model-class", "UCBGLM")
        text = lambda element_id: driver.find_element("id", element_id).text  # noqa: E731
        assert "No drift monitor" in text("drift-empty")  # the service's body without one
        assert not driver.find_element("id", "drift-body").is_displayed()

        calm = _drift_json(None)
        assert calm["alarms"] == 0 and calm["statistic"] is not None
        stub.model["drift"] = calm
        _wait_for_text(driver, "drift-state", "no drift detected")
        assert text("drift-z") == f"{abs(calm['statistic']):.2f}"
        assert text("drift-threshold") == f"{calm['threshold']:.2f}"
        assert text("drift-observed") == "1,600" and text("drift-alarms") == "0"
        assert text("drift-last-alarm") == "no alarm yet"
        assert driver.find_elements("css selector", "#chart-drift canvas")
        assert not driver.find_element("id", "drift-empty").is_displayed()

        alarmed = _drift_json(1500)
        assert alarmed["alarm"] and alarmed["alarms"] == 1
        stub.model["drift"] = alarmed
        _wait_for_text(driver, "drift-state", "drift detected")
        assert "verdict-bad" in driver.find_element("id", "drift-state").get_attribute("class")
        assert text("drift-alarms") == "1"
        assert text("drift-last-alarm") == ("last alarm after 1,600 rewards (the estimate "
                                            "restarted)")
        shot = os.environ.get("GLMBANDITS_DRIFT_SCREENSHOT", str(tmp_path / "drift.png"))
        driver.set_window_size(1280, 1400)
        driver.find_element("id", "drift").screenshot(shot)
        driver.get("about:blank")
        assert console_errors(driver) == []
