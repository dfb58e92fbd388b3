"""Save a screenshot of the dashboard to docs/dashboard.png.

The dashboard is served by the test suite's stub of the service's read API
(tests/dashboard_stub.py: canned model, a stream of decisions and rewards over the last
ten minutes, and a real shadow-mode evaluation) and drawn by the distribution's headless
Chromium (tests/fixtures_system.py). Run from the repository root:

    PYTHONPATH=src python scripts/dashboard_screenshot.py [OUTPUT.png]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from dashboard_stub import DashboardStub, shadow_evaluation_json  # noqa: E402
from fixtures_system import console_errors, start_chromium  # noqa: E402


def main(output: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    with DashboardStub(evaluation=shadow_evaluation_json()) as stub, \
            tempfile.TemporaryDirectory() as folder:
        stub.model.update({"class": "UCBGLM", "n_features": 50, "max_actions": 100,
                           "model_version": 41_873})
        for n, spread, rate, seed in ((1800, 600, 0.5, 1), (900, 300, 0.33, 2),
                                      (600, 120, 0.25, 3), (150, 30, 0.5, 4)):
            stub.add_decisions(n, seed=seed, spread=spread, K=8, reward_rate=rate)
        stub.model["counts"].update(decisions=183_402, rewards=181_977, pending=1_311,
                                    expired=114)
        driver = start_chromium(Path(folder) / "profile", Path(folder) / "driver.log",
                                width=1400, height=1480)
        try:
            driver.get(stub.url + "?poll=500")
            driver.find_element("id", "api-key").send_keys(stub.key)
            driver.find_element("id", "connect").click()
            WebDriverWait(driver, 15).until(
                lambda d: d.find_element("id", "model-class").text == "UCBGLM")
            stub.model["model_version"] = 41_902  # a new version while the page watches
            WebDriverWait(driver, 15).until(
                lambda d: "changed at" in d.find_element("id", "version-changed").text)
            time.sleep(0.5)
            output.parent.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(output))
            errors = console_errors(driver)
            if errors:
                raise SystemExit(f"console errors on the page: {errors}")
        finally:
            driver.quit()
    print(f"wrote {output}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "dashboard.png")
