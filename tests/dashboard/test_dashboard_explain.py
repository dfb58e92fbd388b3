"""The dashboard's panel of the latest explained decision, in a real headless Chromium against
the stub of the read API: without one it says so; with one (a real explanation, in the body
``GET /v1/model`` serves) it shows the chosen action and the runner-up, their predicted
reward, interval, bonus and top features by the schema's names, and follows a newer one."""

from __future__ import annotations

import os

import numpy as np

from dashboard_stub import DashboardStub
from fixtures_system import console_errors
from glmbandits import LinUCB
from glmbandits.features import Categorical, FeatureSchema, Numeric, attach_schema

WAIT = 60  # seconds, every wait below is bounded by it


def _wait_for_text(driver, element_id: str, expected: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT).until(lambda d: d.find_element("id", element_id).text == expected,
                                      message=f"#{element_id} never showed {expected!r}")


def _latest(decision_id: str) -> dict:
    """What GET /v1/model's ``explanation`` holds after an explained decide (as roles'
    ``add_explanation`` writes it) for a LinUCB with a feature schema."""
    schema = FeatureSchema(context=[Numeric("age", scale=(40.0, 10.0))],
                           action=[Categorical("topic", vocabulary=["news", "sport"])],
                           interactions=[("context", "action")], unit_ball=False).fit()
    policy = attach_schema(LinUCB(n_features=schema.n_features_out_, seed=0), schema)
    rng = np.random.default_rng(2)
    actions = [{"topic": "news"}, {"topic": "sport"}, {"topic": "golf"}]
    for _ in range(40):
        X = schema.transform({"age": float(rng.uniform(20, 60))}, actions).copy()
        a = policy.select(X)
        policy.update(X[a], float(rng.random() < (0.7, 0.4, 0.2)[a]))
    X = schema.transform({"age": 35.0}, actions).copy()
    decision = policy.decide(X, decision_id, explain=True, now=0.0)
    return {"decision_id": decision_id, "model_version": decision.model_version,
            "action": decision.action, "explanation": decision.explanation.to_dict()}


def test_the_explanation_panel_shows_the_latest_explained_decision(chromium_driver, tmp_path):
    driver = chromium_driver
    console_errors(driver)
    with DashboardStub() as stub:
        driver.get(stub.url + "?poll=300")
        driver.find_element("id", "api-key").send_keys(stub.key)
        driver.find_element("id", "connect").click()
        _wait_for_text(driver, "model-class", "UCBGLM")
        text = lambda element_id: driver.find_element("id", element_id).text  # noqa: E731
        assert text("explanation-empty") == "No explained decision yet."
        assert not driver.find_element("id", "explanation-body").is_displayed()

        latest = _latest("req-42")
        e = latest["explanation"]
        stub.model["explanation"] = latest
        _wait_for_text(driver, "explanation-id", "req-42")
        assert text("explanation-version") == "40"
        assert text("explanation-summary") == "LinUCB · confidence interval"
        rows = driver.execute_script(  # read at once (a poll may redraw the table)
            "return Array.from(document.querySelectorAll('#explanation-table tbody tr'))"
            ".map(r => Array.from(r.children).map(c => c.textContent));")
        assert len(rows) == 2
        for cells, name in zip(rows, ("chosen", "runner_up")):
            part = e[name]
            assert cells[1] == str(part["action"])
            assert cells[2] == f"{part['predicted_reward']:.3f}"
            low, high = part["interval"]
            assert cells[3] == f"[{low:.3f}, {high:.3f}]"
            assert cells[4] == f"{part['bonus']:.3f} ({100 * part['bonus_share']:.1f}%)"
            top = part["contributions"][0]
            assert cells[6].startswith(f"{top['name']} ")
            assert {c["name"] for c in part["contributions"]} <= {"age", "topic", "age*topic"}
        assert not driver.find_element("id", "explanation-empty").is_displayed()
        shot = os.environ.get("GLMBANDITS_EXPLAIN_SCREENSHOT", str(tmp_path / "explain.png"))
        driver.set_window_size(1280, 1400)
        driver.find_element("id", "explanation").screenshot(shot)

        stub.model["explanation"] = {**latest, "decision_id": "req-43",
                                     "explanation": {**e, "kind": "unscored", "chosen": None,
                                                     "runner_up": None,
                                                     "reason": "a test reason"}}
        _wait_for_text(driver, "explanation-id", "req-43")
        assert text("explanation-summary") == "not scored: a test reason"
        assert driver.execute_script(
            "return document.querySelectorAll('#explanation-table tbody tr').length") == 0

        # a named decide's explanation names its candidates by id (the service adds action_id)
        named = {**e, "chosen": {**e["chosen"], "action_id": "cup-final"},
                 "runner_up": {**e["runner_up"], "action_id": "news/2026 é"}}
        stub.model["explanation"] = {**latest, "decision_id": "req-44", "explanation": named}
        _wait_for_text(driver, "explanation-id", "req-44")
        cells = driver.execute_script(
            "return Array.from(document.querySelectorAll('#explanation-table tbody tr'))"
            ".map(r => r.children[1].textContent);")
        assert cells == [f"cup-final (row {e['chosen']['action']})",
                         f"news/2026 é (row {e['runner_up']['action']})"]
        driver.find_element("id", "explanation").screenshot(os.environ.get(
            "GLMBANDITS_EXPLAIN_NAMED_SCREENSHOT", str(tmp_path / "explain-named.png")))
        driver.get("about:blank")
        assert console_errors(driver) == []
