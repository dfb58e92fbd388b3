"""Save a screenshot of the dashboard, served by the real service, to docs/dashboard.png.

Starts ``glmbandits serve`` (tests/service/servicekit.py: a real process on 127.0.0.1,
its own SQLite log in a temporary folder) in shadow mode, sends it about a minute of
traffic at a changing rate (decisions with the client's default action, rewards from a
logistic model in which the policy can do better than the client's rule), opens the page
in the distribution's headless Chromium (tests/fixtures_system.py) and saves it once the
shadow evaluation is shown. Run from the repository root:

    PYTHONPATH=src python scripts/dashboard_screenshot.py [OUTPUT.png] [--seconds 60]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "service"))

from fixtures_system import console_errors, start_chromium  # noqa: E402
from servicekit import KEY, ServerProcess, write_config  # noqa: E402

D, K = 6, 8


def traffic(server: ServerProcess, seconds: float, stop: threading.Event) -> int:
    """Shadow decisions and their rewards for ``seconds``, at a rate that rises and falls."""
    rng = np.random.default_rng(0)
    theta = rng.normal(size=D)
    theta *= 2.5 / np.linalg.norm(theta)
    start, n = time.monotonic(), 0
    while not stop.is_set() and (elapsed := time.monotonic() - start) < seconds:
        X = rng.normal(size=(K, D))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
        default = int(np.argmax(X[:, 0]))  # the client's rule: the first feature
        decision_id = f"req-{n:05d}"
        answer = server.client.post("/v1/decide", json={
            "decision_id": decision_id, "contexts": X.tolist(), "default_action": default})
        answer.raise_for_status()
        if rng.random() < 0.95:  # a few rewards never come: they stay pending
            mu = 1.0 / (1.0 + np.exp(-X[answer.json()["action"]] @ theta))
            server.client.post("/v1/reward", json={"decision_id": decision_id,
                                                   "reward": float(rng.random() < mu)})
        n += 1
        rate = 12.0 + 9.0 * np.sin(elapsed / 9.0)  # decisions per second
        time.sleep(1.0 / rate)
    return n


def main(output: Path, seconds: float) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    with tempfile.TemporaryDirectory() as folder:
        # a 10% exploration floor, so that the page shows distributions, not only 1.00
        config = write_config(Path(folder), n_features=D, max_actions=K,
                              policy="[policy.params]\nexploration_floor = 0.1\n",
                              decisions='mode = "shadow"\n')
        server = ServerProcess(config, f"sqlite:///{Path(folder) / 'log.db'}")
        stop = threading.Event()
        worker = threading.Thread(target=traffic, args=(server, seconds, stop))
        driver = None
        try:
            worker.start()
            driver = start_chromium(Path(folder) / "profile", Path(folder) / "driver.log",
                                    width=1400, height=1480)
            driver.get(server.url + "/?poll=1000")
            driver.find_element("id", "api-key").send_keys(KEY)
            driver.find_element("id", "connect").click()
            WebDriverWait(driver, 30).until(
                lambda d: d.find_element("id", "model-class").text == "UCBGLM")
            worker.join()
            WebDriverWait(driver, 30).until(
                lambda d: d.find_element("id", "evaluation-body").is_displayed())
            time.sleep(2.5)  # one more poll after the last decision
            output.parent.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(output))
            errors = console_errors(driver)
            if errors:
                raise SystemExit(f"console errors on the page: {errors}")
        finally:
            stop.set()
            worker.join()
            if driver is not None:
                driver.quit()
            server.terminate()
    print(f"wrote {output}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", type=Path, default=ROOT / "docs" / "dashboard.png")
    parser.add_argument("--seconds", type=float, default=60.0,
                        help="how long traffic is sent (the charts have 10-second buckets)")
    arguments = parser.parse_args()
    main(arguments.output, arguments.seconds)
