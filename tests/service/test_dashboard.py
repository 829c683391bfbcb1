"""The web dashboard in a real browser: headless Chromium driven by Selenium through the
system chromedriver (Debian's ``chromium`` and ``chromium-driver``), against a real
``svmsvc serve`` with an API key, entered once through the page like a user would.

Skipped, saying why, where Selenium, Chromium or chromedriver is missing.  With
``SVMSVC_SCREENSHOTS=DIR`` the tests save a screenshot of every page to ``DIR`` (the ones in
``docs/dashboard.md`` come from ``SVMSVC_SCREENSHOTS=docs/img/dashboard``).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import httpx
import pytest
from conftest import SQLiteBackend
from servicetools import (
    LONG_PARAMS,
    MEDIUM_PARAMS,
    PATIENCE_S,
    QUICK_PARAMS,
    ServerProcess,
    data_path,
    wait_for,
)

from solvers.distributed import split_svmlight

pytestmark = pytest.mark.browser

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))
                 if p), None)
CHROMEDRIVER = shutil.which("chromedriver")
if CHROMIUM is None or CHROMEDRIVER is None:
    pytest.skip("no Chromium or chromedriver on PATH (apt-get install chromium "
                "chromium-driver)", allow_module_level=True)

ADMIN_KEY = "dashboard-admin-key"
DESKTOP = (1280, 800)
PHONE = (390, 844)
SCREENSHOTS = os.environ.get("SVMSVC_SCREENSHOTS")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("dashboard")
    shards = directory / "shards"  # where the service allows a sharded dataset's shards
    split_svmlight(data_path("heart_scale"), shards, fractions=[1, 2, 3])
    server = ServerProcess(directory, SQLiteBackend().database_url(directory), workers=2,
                           api_keys=f"admin:{ADMIN_KEY}", shard_roots=shards)
    try:
        server.wait_ready()
        server.client.headers["X-API-Key"] = ADMIN_KEY
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser(server):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", f"--window-size={DESKTOP[0]},{DESKTOP[1]}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(options=options,
                                  service=webdriver.ChromeService(CHROMEDRIVER))
    except WebDriverException as exc:
        pytest.skip(f"Chromium does not start here: {exc.msg}")
    driver.set_window_size(*DESKTOP)
    driver.get(f"{server.url}/ui/jobs")
    driver.find_element(By.ID, "api-key").send_keys(ADMIN_KEY)  # once, kept for the session
    driver.find_element(By.CSS_SELECTOR, "#key-form button").click()
    wait_for(lambda: driver.find_element(By.ID, "key-state").text == "key set", PATIENCE_S,
             what="the key to be kept")
    driver.get_log("browser")  # start the console log afresh
    yield driver
    driver.quit()


class Page:
    """The browser on one page of the dashboard."""

    def __init__(self, driver, server):
        self.driver, self.server = driver, server

    def open(self, path: str) -> None:
        self.driver.get(f"{self.server.url}{path}")

    def find(self, selector: str):
        return self.driver.find_element(By.CSS_SELECTOR, selector)

    def all(self, selector: str):
        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def wait(self, condition, what: str, timeout: float = PATIENCE_S):
        def check():
            try:
                return condition()
            except WebDriverException:  # not there yet, or replaced while read
                return None
        return wait_for(check, timeout, interval=0.1, what=what)

    def wait_text(self, selector: str, text: str, timeout: float = PATIENCE_S):
        return self.wait(lambda: text in self.find(selector).text,
                         f"{text!r} in {selector}", timeout)

    def console_errors(self) -> list[dict]:
        return [e for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]

    def screenshot(self, name: str, at: str | None = None) -> None:
        """Save the window (scrolled to the element ``at``) when SVMSVC_SCREENSHOTS says where."""
        if SCREENSHOTS:
            if at is not None:
                self.driver.execute_script("arguments[0].scrollIntoView()", self.find(at))
            Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
            self.driver.save_screenshot(str(Path(SCREENSHOTS) / f"{name}.png"))


@pytest.fixture
def page(browser, server):
    return Page(browser, server)


def _upload(server, path: Path) -> str:
    with path.open("rb") as file:
        response = server.client.post("/api/v1/datasets",
                                       files={"file": (path.name, file, "text/plain")})
    assert response.status_code in (200, 201), response.text
    return response.json()["id"]


def _job(server, dataset_id: str, params: dict) -> dict:
    response = server.client.post("/api/v1/jobs", json={"dataset_id": dataset_id,
                                                        "params": params})
    assert response.status_code == 202, response.text
    return response.json()


def _finished(server, job_id: str) -> dict:
    def done():
        job = server.client.get(f"/api/v1/jobs/{job_id}").json()
        return job if job["status"] in ("succeeded", "failed", "cancelled") else None
    return wait_for(done, PATIENCE_S, interval=0.1, what=f"job {job_id}")


def test_a_file_uploaded_through_the_page_is_listed(page):
    page.open("/ui/datasets")
    page.wait(lambda: page.find("#dropzone"), "the drop zone")
    page.find("#upload-file").send_keys(str(data_path("heart_scale")))
    page.wait_text("#upload-status", "heart_scale")
    page.wait_text("#dataset-list", "heart_scale")
    row = next(r for r in page.all("#dataset-list tbody tr") if "heart_scale" in r.text)
    assert "270" in row.text and ": 120" in row.text and ": 150" in row.text  # class counts
    page.screenshot("datasets")


def test_a_sharded_dataset_is_listed_with_its_shards_and_offered_for_training(page, server):
    """Registered from shard paths (nothing uploaded), it is listed as sharded with its shard
    count, its statistics not read yet; the train form offers it, saying so."""
    paths = sorted(str(p) for p in (server.data_dir / "shards").iterdir())
    response = server.client.post("/api/v1/datasets/sharded",
                                  json={"shards": paths, "name": "heart in shards"})
    assert response.status_code in (200, 201), response.text
    page.open("/ui/datasets")
    page.wait_text("#dataset-list", "heart in shards")
    row = next(r for r in page.all("#dataset-list tbody tr") if "heart in shards" in r.text)
    assert "sharded (3 shards)" in row.text and "not read yet" in row.text
    # the list carries no shard list (issue 49: its bytes stay bounded): the title says where
    assert row.find_element(By.CSS_SELECTOR, ".dataset-kind").get_attribute("title") == \
        f"its shards: GET /api/v1/datasets/{response.json()['id']}"
    page.open(f"/ui/train?dataset={response.json()['id']}")
    page.wait(lambda: page.find("#train-dataset option:checked").text ==
              "heart in shards (sharded in 3, not read yet)", "the sharded dataset offered")


def test_a_malformed_file_dropped_on_the_page_shows_its_line(page):
    page.open("/ui/datasets")
    page.wait(lambda: page.find("#dropzone"), "the drop zone")
    # a real drop event, carrying a file made in the page (line 3 has a bad value)
    page.driver.execute_script("""
        const file = new File(["+1 1:0.5 2:1\\n-1 1:0.25\\n+1 1:abc\\n"], "broken.svm");
        const data = new DataTransfer();
        data.items.add(file);
        const zone = document.getElementById("dropzone");
        const init = {dataTransfer: data, bubbles: true, cancelable: true};
        zone.dispatchEvent(new DragEvent("dragover", init));
        zone.dispatchEvent(new DragEvent("drop", init));
    """)
    error = page.wait(lambda: page.find("#upload-error"), "the upload error")
    assert error.get_attribute("data-line") == "3"
    assert "line 3" in error.text and "abc" in error.text
    page.screenshot("datasets-malformed")


def test_the_job_page_plots_records_as_they_stream_in_and_cancels(page, server):
    a9a = _upload(server, data_path("a9a"))
    job = _job(server, a9a, LONG_PARAMS)
    page.open(f"/ui/jobs/{job['id']}")

    def records() -> int:
        return int(page.find("body").get_attribute("data-records") or 0)

    first = page.wait(lambda: records() >= 3 and records(), "the first records")
    page.wait(lambda: records() >= first + 5, "more records, live")
    assert len(page.all("#plot-gap canvas")) == 1 and len(page.all("#plot-objective canvas")) == 1
    assert "live" in page.find("#plot-note").text
    legend = page.find("#plot-gap .u-legend").text
    assert "relative gap" in legend and "optimality" in legend
    page.screenshot("job-running", at="#convergence")
    page.find("#cancel").click()
    page.wait_text("[data-fact=status]", "cancelled")
    assert _finished(server, job["id"])["status"] == "cancelled"
    page.find("input[name=x][value=iterations]").click()
    page.wait(lambda: "iteration" in page.find("#plot-gap").text, "the iteration axis")


def test_a_prediction_job_page_shows_its_rows_and_downloads_the_result(page, server):
    heart = _upload(server, data_path("heart_scale"))
    trained = _finished(server, _job(server, heart, QUICK_PARAMS)["id"])
    response = server.client.post("/api/v1/jobs/predict", json={
        "model_id": trained["model_id"], "dataset_id": heart})
    assert response.status_code == 202, response.text
    job = _finished(server, response.json()["id"])
    assert job["status"] == "succeeded", job
    page.open(f"/ui/jobs/{job['id']}")
    page.wait_text("[data-fact=rows]", "270 of 270")
    button = page.find("#download-predictions")
    assert button.text == "Download predictions (.csv)"
    assert button.get_attribute("href").endswith(f"/api/v1/jobs/{job['id']}/predictions")
    assert page.find(f"a[href='/ui/models/{trained['model_id']}']").text == "Model"


def test_a_tuning_job_page_shows_the_cross_validation_curve_and_table(page, server):
    """The job's stored table, drawn: one point per C on the curve, one row per C in the
    table with the best point (the API's best_C) marked."""
    heart = _upload(server, data_path("heart_scale"))
    grid = [0.25, 1.0, 4.0]
    response = server.client.post("/api/v1/jobs", json={
        "dataset_id": heart, "params": {"solver": "mfn"},
        "tuning": {"C": grid, "folds": 3, "seed": 0}})
    assert response.status_code == 202, response.text
    job = _finished(server, response.json()["id"])
    assert job["status"] == "succeeded", job
    cv = job["cross_validation"]
    page.console_errors()  # the browser's log so far (earlier tests' pages) is read and gone
    page.open(f"/ui/jobs/{job['id']}")
    page.wait(lambda: page.find("#plot-cv").get_attribute("data-points") == str(len(grid)),
              "the cross-validation curve")
    assert len(page.all("#plot-cv canvas")) == 1
    assert "mean accuracy" in page.find("#plot-cv .u-legend").text
    rows = page.all("#cv-table tbody tr")
    assert len(rows) == len(grid)
    best = [row for row in rows if row.text.startswith("best")]
    assert len(best) == 1
    best_row = cv["table"][[r["C"] for r in cv["table"]].index(cv["best_C"])]
    assert f"{best_row['mean']:.4g}" in best[0].text  # the page's fmt: 4 significant digits
    assert "3 folds" in page.find("#cv-note").text and "best C" in page.find("#cv-note").text
    assert page.console_errors() == []
    page.screenshot("job-tuning", at="#cross-validation")


def _evaluated_on_page(page, server, model_id: str, dataset_id: str, plot: str,
                       attribute: str, what: str) -> dict:
    """Open the model's page, evaluate it on ``dataset_id`` there and wait until ``plot``
    carries ``attribute`` (``what`` names it); the API's own evaluation, to compare with."""
    page.open(f"/ui/models/{model_id}")
    page.wait(lambda: page.find("#evaluate-dataset"), "the model page").submit()
    page.wait(lambda: page.find(plot).get_attribute(attribute), what)
    return server.client.post(f"/api/v1/models/{model_id}/evaluate",
                              json={"dataset_id": dataset_id}).json()


def _shown_metrics(page) -> dict[str, str]:
    """The evaluation's metrics as the page shows them, by their ``data-metric``."""
    return {dd.get_attribute("data-metric"): dd.text
            for dd in page.all("#evaluation-metrics dd")}


def _log(server, job_id: str) -> list[dict]:
    records, after = [], 0
    while True:
        page = server.client.get(f"/api/v1/jobs/{job_id}/log", params={"after": after}).json()
        if not page["data"]:
            return records
        records += page["data"]
        after = records[-1]["iteration"]


def _fact(page, name: str) -> str:
    return page.find(f"[data-fact={name}]").text


def test_a_one_vs_rest_job_page_says_class_k_of_K_and_plots_one_class(page, server):
    """letter's 26 classes: while the job runs the page says which class it is in; once it
    has run, the View selector offers each class, the latest by default, and plots the chosen
    class's records only."""
    letter = _upload(server, data_path("letter.scale"))
    running = _job(server, letter, LONG_PARAMS)  # a class takes seconds, the job a while
    page.console_errors()  # earlier pages' log: read and gone
    page.open(f"/ui/jobs/{running['id']}")
    page.wait(lambda: re.fullmatch(r"class (\d+) of 26 \(label \1\)",
                                _fact(page, "stage")), "class k of 26, live")
    assert "running" in _fact(page, "status")
    page.wait(lambda: int(page.find("#plot-gap").get_attribute("data-points")) >= 1,
              "the class's records plotted")
    assert page.find("#view-select").get_attribute("value").startswith("run:")
    page.find("#cancel").click()
    page.wait_text("[data-fact=status]", "cancelled")

    done = _finished(server, _job(server, letter, {"solver": "dual_cd", "C": 1.0,
                                                   "tol": 0.1})["id"])
    assert done["status"] == "succeeded", done
    log = _log(server, done["id"])
    page.open(f"/ui/jobs/{done['id']}")
    page.wait(lambda: len(page.all("#view-select option")) == 26, "a view per class")
    labels = [o.text for o in page.all("#view-select option")]
    assert labels[0] == "class 1 of 26 (label 1)" and labels[25] == "class 26 of 26 (label 26)"
    assert page.find("body").get_attribute("data-view") == "run:25"  # the last class
    assert page.find("#view-select").get_attribute("value") == "run:25"
    assert _fact(page, "stage") == "class 26 of 26 (label 26)"
    page.find("#view-select option[value='run:2']").click()
    in_class_3 = sum(r["extras"]["class_index"] == 2 for r in log)
    page.wait(lambda: page.find("body").get_attribute("data-view") == "run:2" and
              page.find("#plot-gap").get_attribute("data-points") == str(in_class_3),
              "class 3's records alone")
    assert page.find("#plot-note").text.startswith(
        f"class 3 of 26 (label 3): {in_class_3} of {len(log)} records")
    legend = page.find("#plot-gap .u-legend").text
    assert "relative gap" in legend and "optimality" in legend
    page.find("input[name=x][value=iterations]").click()  # the class's own iterations
    page.wait(lambda: "iteration" in page.find("#plot-gap").text, "the iteration axis")
    assert page.find("#view-select").get_attribute("value") == "run:2"  # the choice stays
    assert page.console_errors() == []
    page.screenshot("job-multiclass", at="#convergence")


@pytest.mark.slow  # ~10 s: uploads a9a and watches a search slowed down to be seen running
def test_a_tuning_job_page_plots_one_grid_point_at_a_time(page, server):
    """A running search says where it is ("C 2 of 3, fold 1 of 5"); a finished one offers a
    view per grid point (its fold fits: score and objective against the fold) and the refit's
    convergence, the refit by default."""
    a9a = _upload(server, data_path("a9a"))
    slow = server.client.post("/api/v1/jobs", json={  # a second or so a fit: seen running
        "dataset_id": a9a, "params": {**MEDIUM_PARAMS, "max_iter": 20},
        "tuning": {"C": [0.5, 1.0, 2.0], "folds": 5, "fit_gap": None}})
    assert slow.status_code == 202, slow.text
    page.console_errors()
    page.open(f"/ui/jobs/{slow.json()['id']}")
    stage = page.wait(lambda: (text := _fact(page, "stage")).startswith("C ") and text,
                      "the search's place")
    assert "running" in _fact(page, "status")
    assert re.fullmatch(r"C [1-3] of 3, fold [1-5] of 5", stage), stage
    page.find("#cancel").click()
    page.wait_text("[data-fact=status]", "cancelled")

    heart = _upload(server, data_path("heart_scale"))
    response = server.client.post("/api/v1/jobs", json={
        "dataset_id": heart, "params": {"solver": "mfn"},
        "tuning": {"C": [0.25, 1.0, 4.0], "folds": 3, "seed": 0}})
    assert response.status_code == 202, response.text
    job = _finished(server, response.json()["id"])
    assert job["status"] == "succeeded", job
    page.open(f"/ui/jobs/{job['id']}")
    page.wait(lambda: len(page.all("#view-select option")) == 4, "a view per grid point")
    labels = [o.text for o in page.all("#view-select option")]
    assert labels == ["C = 0.25 (C 1 of 3)", "C = 1 (C 2 of 3)", "C = 4 (C 3 of 3)",
                      "refit at the best point"]
    assert page.find("body").get_attribute("data-view") == "refit"
    assert _fact(page, "stage") == "refit at the best point"
    page.find("#view-select option[value='grid:1:null']").click()
    page.wait(lambda: page.find("body").get_attribute("data-view") == "grid:1:null" and
              page.find("#plot-gap").get_attribute("data-points") == "3", "C = 1's folds")
    assert not page.find("#x-axis").is_displayed()  # folds, not time
    assert "fold accuracy" in page.find("#plot-gap .u-legend").text
    assert "Fold scores (accuracy) at C = 1" in page.find("#plot-gap-title").text
    assert page.find("#plot-note").text.startswith("C = 1 (C 2 of 3): 3 of 3 fold fits")
    assert page.console_errors() == []
    page.screenshot("job-tuning-grid-point", at="#convergence")


def test_a_race_of_the_solvers_draws_one_curve_each(page, server):
    heart = _upload(server, data_path("heart_scale"))
    job = _job(server, heart, {"solver": "mfn", "loss": "hinge"})
    _finished(server, job["id"])
    page.open(f"/ui/jobs/{job['id']}")
    page.wait(lambda: page.find("#race"), "the race button").click()
    page.wait(lambda: "/ui/compare?jobs=" in page.driver.current_url, "the comparison")
    ids = page.driver.current_url.split("jobs=")[1].split(",")
    # mfn, cutting_plane, interior_point and alm solve the hinge loss with a regularized bias
    raced = [_finished(server, job_id)["solver"] for job_id in ids]
    assert len(set(raced)) == len(ids) >= 4, raced  # each solver once, the first one too
    for job_id in ids:
        finished = _finished(server, job_id)
        assert finished["status"] == "succeeded", (finished["solver"], finished["error"])
    box = "#plot-compare"
    page.wait(lambda: page.find(box).get_attribute("data-series") == str(len(ids)) and
              all("succeeded" in r.text for r in page.all("#compare-summary tbody tr")),
              "every job finished on the page")
    assert int(page.find(box).get_attribute("data-curves")) >= 3
    legend_rows = page.all(f"{box} .u-legend .u-series")
    assert len(legend_rows) == len(ids) + 1  # the x series, then one per job
    assert "same problem" in page.find("#compare-note").text
    # every row says what it solved and where it stopped: one loss, one bias, one tol
    heads = [th.text for th in page.all("#compare-summary thead th")]
    rows = [[td.text for td in row.find_elements("css selector", "td")]
            for row in page.all("#compare-summary tbody tr")]
    for column, value in (("Loss", "hinge"), ("Bias", "regularized"), ("tol", "1.0e-6")):
        assert {row[heads.index(column)] for row in rows} == {value}, (column, rows)
    page.screenshot("compare")
    # the jobs page's solver filter offers every solver that ran, and filters by it
    page.open("/ui/jobs")
    page.wait(lambda: {"mfn", "cutting_plane"} <= {o.get_attribute("value") for o in
                                                   page.all("#filter-solver option")},
              "the raced solvers in the filter")
    page.find("#filter-solver option[value=cutting_plane]").click()
    page.wait(lambda: page.all("tbody tr") and all(
        "cutting_plane" in row.text for row in page.all("tbody tr")), "only cutting_plane rows")
    # the picker names each problem's dataset, not its UUID
    page.open("/ui/compare")
    page.wait(lambda: any(p.text.startswith("heart_scale: ") and "loss hinge" in p.text
                          for p in page.all(".group .problem")), "the problem by its dataset")


def test_the_comparison_of_one_vs_rest_jobs_plots_one_class_at_a_time(page, server):
    """Two solvers' one-vs-rest jobs on dna (3 classes): the View selector offers the whole run
    and each class; a class's curves are its records in each job, against that class's lowest
    objective among the jobs."""
    dna = _upload(server, data_path("dna.scale"))
    jobs = [_finished(server, _job(server, dna, {"solver": solver, "C": 1.0})["id"])
            for solver in ("mfn", "dual_cd")]
    assert [j["status"] for j in jobs] == ["succeeded", "succeeded"], jobs
    page.console_errors()  # earlier pages' log: read and gone
    page.open(f"/ui/compare?jobs={jobs[0]['id']},{jobs[1]['id']}")
    page.wait(lambda: len(page.all("#compare-view-select option")) == 4, "a view per class")
    labels = [o.text for o in page.all("#compare-view-select option")]
    assert labels[0] == "the whole run" and labels[1].startswith("class 1 of 3")
    assert "pick one in View" in page.find("#compare-note").text
    page.find("#compare-view-select option[value='run:1']").click()
    box = "#plot-compare"
    page.wait(lambda: page.find(box).get_attribute("data-view") == "run:1" and
              page.find(box).get_attribute("data-curves") == "2", "class 2's curves")
    note = page.find("#compare-note").text
    assert "class 2 of 3" in note and "the lowest objective of this part" in note
    assert "class 2 of 3" in page.find("#compare-title").text
    best = min(min(r["objective"] for r in _log(server, j["id"])
                   if r["extras"].get("class_index") == 1) for j in jobs)
    assert f"f* = {best:.12g}," in note  # the class's own optimum, from all of its records
    assert page.console_errors() == []
    page.screenshot("compare-class", at="#plot-compare")


def test_the_train_form_from_the_schemas_queues_a_job_whose_model_evaluates(page, server):
    heart = _upload(server, data_path("heart_scale"))
    page.open(f"/ui/train?dataset={heart}")
    page.wait(lambda: page.find("#param-C"), "the generated form")
    assert page.find("#param-C").get_attribute("value") == "1"
    assert "Weight of the loss term" in page.find("#param-C-help").text
    page.find("#train-solver option[value=cutting_plane]").click()
    page.wait(lambda: page.find("#param-method"), "the cutting-plane form")
    assert page.find("#param-method").get_attribute("value") == "ocas"
    page.screenshot("train")
    page.find("#param-C").clear()
    page.find("#param-C").send_keys("2")
    page.find("#train-submit").click()
    page.wait(lambda: "/ui/jobs/" in page.driver.current_url, "the job page")
    job_id = page.driver.current_url.rsplit("/", 1)[1]
    job = _finished(server, job_id)
    assert job["status"] == "succeeded" and job["params"]["C"] == 2.0
    assert job["params"]["solver"] == "cutting_plane"
    page.open(f"/ui/models/{job['model_id']}")
    page.wait(lambda: page.find("#evaluate-dataset"), "the model page").submit()
    onnx = page.find('a.button[href$="format=onnx"]')
    assert onnx.text == "Export as ONNX"
    href = onnx.get_attribute("href")
    exported = server.client.get(href[href.index("/api/v1"):])
    assert exported.status_code == 200 and exported.content[:2] == b"\x08\x08"  # ir_version 8
    page.wait_text("#evaluation", "Accuracy")  # fails the test when it never shows
    assert "Confusion matrix" in page.find("#evaluation").text
    page.find("#predict-x").send_keys("1:0.5 3:-1")
    page.find("#predict-x").submit()
    page.wait_text("#prediction", "Label")
    page.screenshot("model-evaluated", at="#evaluation-heading")


def test_a_tuning_job_from_the_form_scores_by_roc_auc_and_its_model_shows_metrics(page,
                                                                                server):
    """The Train form's tuning fields (a 2^a .. 2^b grid, folds, the scoring choices read
    from the API's schema) queue a tuning job scored by ROC AUC, whose page says so; the
    refitted, calibrated model's page shows the evaluate endpoint's metrics (log loss
    included) and its ROC curve, one point per point the API sent."""
    heart = _upload(server, data_path("heart_scale"))
    page.console_errors()  # earlier pages' log: read and gone
    page.open(f"/ui/train?dataset={heart}")
    page.wait(lambda: page.find("#param-C"), "the generated form")
    choices = [o.get_attribute("value") for o in page.all("#tune-scoring option")]
    assert choices[:3] == ["accuracy", "balanced_accuracy", "f1_macro"] and "roc_auc" in choices
    page.find("#param-probability").click()
    page.find("#tune").click()
    page.find("#tune-C").clear()
    page.find("#tune-C").send_keys("2^-2 .. 2^2")
    page.find("#tune-folds").clear()
    page.find("#tune-folds").send_keys("3")
    page.find("#tune-scoring option[value=roc_auc]").click()
    page.screenshot("train-tuning", at="#tuning")
    page.find("#train-submit").click()
    page.wait(lambda: "/ui/jobs/" in page.driver.current_url, "the job page")
    job = _finished(server, page.driver.current_url.rsplit("/", 1)[1])
    assert job["status"] == "succeeded", job
    assert job["tuning"]["C"] == [0.25, 0.5, 1.0, 2.0, 4.0] and job["tuning"]["folds"] == 3
    assert job["tuning"]["scoring"] == "roc_auc" and job["params"]["probability"] is True
    assert job["cross_validation"]["metric"] == "roc_auc"
    page.wait(lambda: page.find("#plot-cv").get_attribute("data-points") == "5",
              "the cross-validation curve")
    assert "mean roc auc" in page.find("#plot-cv .u-legend").text
    assert "scored by roc_auc (highest is best)" in page.find("#cv-note").text
    expected = _evaluated_on_page(page, server, job["model_id"], heart, "#evaluation-roc",
                                  "data-points", "the ROC curve")
    shown = _shown_metrics(page)
    assert shown["accuracy"] == f"{100 * expected['accuracy']:.2f} %"
    assert shown["balanced_accuracy"] == f"{100 * expected['balanced_accuracy']:.2f} %"
    for key in ("f1_macro", "roc_auc", "average_precision", "log_loss"):
        assert expected[key] is not None and shown[key] == f"{expected[key]:.4g}", key
    assert page.find("#evaluation-roc").get_attribute("data-points") == str(
        len(expected["roc_curve"]["fpr"]))
    assert len(page.all("#evaluation-roc canvas")) == 1
    assert "ROC" in page.find("#evaluation-roc .u-legend").text
    assert page.console_errors() == []
    page.screenshot("model-metrics", at="#evaluation-heading")


def test_the_train_form_lists_smos_kernel_fields_and_queues_a_kernel_job(page, server):
    """The form is generated from smo's schema: its kernel choices, gamma as a number or
    'scale' / 'auto' (left at 'scale'), the cache and the stopping rule; the job it queues
    trains a kernel model."""
    heart = _upload(server, data_path("heart_scale"))
    page.open(f"/ui/train?dataset={heart}")
    page.wait(lambda: page.find("#param-C"), "the generated form")
    page.find("#train-solver option[value=smo]").click()
    # every solver's form has a kernel field now (the low-rank path's); smo's alone has
    # shrinking, so its form is the one on the page once that field is
    page.wait(lambda: page.find("#param-shrinking"), "the smo form")
    kernels = [o.get_attribute("value") for o in
               page.find("#param-kernel").find_elements(By.TAG_NAME, "option")]
    assert kernels == ["linear", "rbf", "polynomial", "sigmoid"]
    assert page.find("#param-kernel").get_attribute("value") == "rbf"
    assert page.find("#param-gamma").get_attribute("value") == "scale"
    assert "scale | auto" in page.find("#param-gamma").get_attribute("placeholder")
    for name in ("degree", "coef0", "cache_mb", "shrinking", "stop_rule", "kkt_tol", "tol"):
        assert page.find(f"#param-{name}"), name
    # a number or one of two words (an enum beside the integer in its schema), left at 'auto':
    # read back as the word, not refused as "not a number"
    assert page.find("#param-working_set").get_attribute("value") == "auto"
    assert page.find("#param-working_set").get_attribute("placeholder") == "auto | pair"
    page.find("#train-submit").click()
    page.wait(lambda: "/ui/jobs/" in page.driver.current_url, "the job page")
    job = _finished(server, page.driver.current_url.rsplit("/", 1)[1])
    assert job["status"] == "succeeded", job
    assert job["params"]["solver"] == "smo" and job["params"]["gamma"] == "scale"
    model = server.client.get(f"/api/v1/models/{job['model_id']}").json()
    assert model["kind"] == "kernel"


def test_the_train_form_queues_a_regression_tuned_over_epsilon_whose_model_plots_residuals(
        page, server):
    """The form offers the task (dual_cd's schema: classification or regression) and epsilon,
    and the tuning's epsilon grid; the job tunes C x epsilon by the mean squared error, and
    its model's page shows the regression's errors (those of the evaluate endpoint), the
    predicted-vs-true and residual plots (one point per pair the API sent) and a predicted
    value."""
    housing = _upload(server, data_path("regression/housing_scale"))
    page.console_errors()
    page.open(f"/ui/train?dataset={housing}")
    page.wait(lambda: page.find("#param-C"), "the generated form")
    page.find("#train-solver option[value=dual_cd]").click()
    page.wait(lambda: page.find("#param-task option[value=regression]"), "dual_cd's task")
    page.find("#param-task option[value=regression]").click()
    page.find("#param-loss option[value=epsilon_insensitive]").click()
    assert "insensitive tube" in page.find("#param-epsilon-help").text
    page.find("#tune").click()
    page.find("#tune-C").clear()
    page.find("#tune-C").send_keys("2^-2 .. 2^1")
    page.find("#tune-folds").clear()
    page.find("#tune-folds").send_keys("3")
    page.find("#tune-epsilon").send_keys("0 0.5 2")
    page.screenshot("train-regression", at="#tuning")
    page.find("#train-submit").click()
    page.wait(lambda: "/ui/jobs/" in page.driver.current_url, "the job page")
    job = _finished(server, page.driver.current_url.rsplit("/", 1)[1])
    assert job["status"] == "succeeded", job
    assert job["tuning"]["epsilon"] == [0.0, 0.5, 2.0] and job["params"]["task"] == "regression"
    cv = job["cross_validation"]
    assert cv["metric"] == "mean_squared_error" and len(cv["table"]) == 12
    page.wait(lambda: page.find("#plot-cv").get_attribute("data-points") == "4",
              "the cross-validation curves")
    assert "(lowest is best)" in page.find("#cv-note").text
    assert f"epsilon = {cv['best_epsilon']:g}" in page.find("#cv-note").text
    page.screenshot("job-tuning-regression", at="#cross-validation")
    expected = _evaluated_on_page(page, server, job["model_id"], housing,
                                  "#evaluation-residuals", "data-points", "the residual plot")
    shown = _shown_metrics(page)
    for key in ("mean_squared_error", "mean_absolute_error", "r2", "squared_correlation"):
        assert shown[key] == f"{expected[key]:.6g}", key
    assert page.find("#evaluation-pvt").get_attribute("data-points") == \
        page.find("#evaluation-residuals").get_attribute("data-points") == \
        str(len(expected["predicted_vs_true"]["true"]))
    assert len(page.all("#evaluation-pvt canvas")) == 1
    assert len(page.all("#evaluation-residuals canvas")) == 1
    assert "Task" in page.find("dl.facts").text and "regression" in page.find("dl.facts").text
    page.find("#predict-x").send_keys("1:0.5 6:-0.2")
    page.find("#predict-x").submit()
    page.wait_text("#prediction", "Value")
    assert page.console_errors() == []
    page.screenshot("model-regression", at="#evaluation-heading")


def test_a_one_class_model_page_shows_its_decision_value_distribution(page, server):
    """smo's one-class SVM (svm_type from the form's schema); its model page shows the
    outlier fraction, the AUC of the +1 rows as inliers and the histogram of the decision
    values, one bar per bin the API sent; an example predicted says inlier or outlier."""
    heart = _upload(server, data_path("heart_scale"))
    job = _finished(server, _job(server, heart, {"solver": "smo", "svm_type": "one_class",
                                                 "nu": 0.2, "gamma": 0.1})["id"])
    assert job["status"] == "succeeded", job
    page.console_errors()
    expected = _evaluated_on_page(page, server, job["model_id"], heart,
                                  "#evaluation-histogram", "data-bins", "the histogram")
    assert page.find("#evaluation-histogram").get_attribute("data-bins") == str(
        len(expected["decision_histogram"]["counts"]))
    assert f"{100 * expected['outlier_fraction']:.2f} %" in page.find("#evaluation").text
    assert f"{expected['roc_auc']:.4g} (inliers: label 1)" in page.find("#evaluation").text
    assert "label -1" in page.find("#evaluation-histogram .u-legend").text
    page.find("#predict-x").send_keys("1:0.7 3:1")
    page.find("#predict-x").submit()
    page.wait(lambda: "lier" in page.find("#prediction").text, "the prediction")
    assert page.console_errors() == []
    page.screenshot("model-one-class", at="#evaluation-heading")


def test_a_model_page_shows_autos_choice_and_the_chosen_rank_as_lists_and_tables(page, server):
    """An ``auto`` job on a Nystrom factor whose rank it chose: the model page's details say
    what auto chose (its runs as a table, one row a candidate run) and how the rank was chosen
    (the landmarks tried and their residual traces as "m: residual" pairs), not JSON text."""
    heart = _upload(server, data_path("heart_scale"))
    job = _finished(server, _job(server, heart, {"solver": "auto", "loss": "hinge",
                                                 "approximation": "nystrom", "gamma": 0.1,
                                                 "rank_tol": 0.05})["id"])
    assert job["status"] == "succeeded", job
    model = server.client.get(f"/api/v1/models/{job['model_id']}").json()
    search = model["details"]["approximation"]["rank_search"]
    page.console_errors()
    page.open(f"/ui/models/{job['model_id']}")
    page.wait(lambda: page.find("#model-details"), "the details")
    details = page.find("#model-details")
    text = details.text
    assert "{" not in text and "[" not in text, text
    first_m, first_r = search["residuals"][0]
    assert f"{first_m}: " in text and "rank_search" in text
    runs = model["details"]["auto"]["runs"]
    rows = details.find_elements("css selector", "table tbody tr")
    assert len(rows) >= len(runs)
    assert model["details"]["auto"]["runs"][0]["candidate"] in text
    assert page.console_errors() == []
    page.screenshot("model-details", at="#model-details")


def test_no_console_errors_at_desktop_and_phone_width(page, server):
    heart = _upload(server, data_path("heart_scale"))
    jobs = [_job(server, heart, {"solver": solver, "C": 0.5})
            for solver in ("mfn", "cutting_plane")]
    done = [_finished(server, j["id"]) for j in jobs]
    model = next(j["model_id"] for j in done if j["model_id"])
    pages = {"datasets": "/ui/datasets", "jobs": "/ui/jobs", "job": f"/ui/jobs/{jobs[0]['id']}",
             "compare-pick": "/ui/compare",
             "compare-two": f"/ui/compare?jobs={jobs[0]['id']},{jobs[1]['id']}",
             "models": "/ui/models", "model": f"/ui/models/{model}", "train": "/ui/train"}
    page.console_errors()
    for width, height in (DESKTOP, PHONE):
        page.driver.set_window_size(width, height)
        for name, path in pages.items():
            page.open(path)
            page.wait(lambda: "Loading" not in page.find("#content").text, f"{path} loaded")
            assert page.find("#notice").get_attribute("hidden") is not None, \
                page.find("#notice").text
            errors = page.console_errors()
            assert not errors, f"{path}: {errors}"
            overflow = page.driver.execute_script(
                "return document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 1, f"{path} is wider than a {width} px window"
            page.screenshot(name if width == DESKTOP[0] else f"{name}-phone")
    page.driver.set_window_size(*DESKTOP)


def test_pages_ask_for_the_key_they_lack(server):
    response = httpx.get(f"{server.url}/ui/datasets")
    assert response.status_code == 200 and "<main" in response.text
    api_without_key = httpx.get(f"{server.url}/api/v1/datasets")
    assert api_without_key.status_code == 401
    assert httpx.get(f"{server.url}/ui/jobs/not-a-uuid").status_code == 422
    assert httpx.get(f"{server.url}/ui/static/vendor/uPlot.LICENSE").status_code == 200


@pytest.mark.parametrize(("path", "rendered"), [
    ("/docs", ".swagger-ui .info .title"),   # Swagger UI drew the spec's title
    ("/redoc", "#redoc-container h1, redoc h1, h1"),  # ReDoc drew it too
])
def test_the_api_docs_render_with_nothing_from_another_host(page, server, path, rendered):
    """The docs bundles are served by the service itself: the page renders the spec and every
    resource it loaded came from the service (its policy forbids any other origin)."""
    page.open(path)
    page.wait(lambda: "svmsvc" in page.find(rendered).text, f"the API title on {path}")
    loaded = page.driver.execute_script(
        "return performance.getEntriesByType('resource').map((e) => e.name)")
    assert loaded and all(url.startswith(server.url) for url in loaded), loaded
    assert not page.console_errors()
    page.screenshot(path.strip("/"))


def test_the_root_leads_to_the_dashboard(page, server):
    page.open("/")
    page.wait(lambda: page.driver.current_url.rstrip("/").endswith("/ui/jobs"), "the jobs page")


@pytest.mark.slow
@pytest.mark.dask
def test_a_data_parallel_job_page_shows_what_its_iterations_cost(browser, tmp_path_factory):
    """A service on a Dask cluster (a ``LocalCluster`` of 2 worker processes): a job on a
    sharded dataset trains data-parallel, and its page says its mean reductions, bytes and
    communication time per iteration, and names the dataset as sharded with its shape."""
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed")
    directory = tmp_path_factory.mktemp("dashboard-dask")
    shards = split_svmlight(data_path("heart_scale"), directory / "shards", n_shards=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, resources={"threads": 1},
                                  dashboard_address=":0",
                                  env={"NUMBA_NUM_THREADS": "1"}) as cluster:
        server = ServerProcess(directory, SQLiteBackend().database_url(directory), workers=2,
                               api_keys=f"admin:{ADMIN_KEY}", executor="dask",
                               dask_scheduler=cluster.scheduler_address, single_machine=True,
                               dask_threads_per_job=1, shard_roots=directory / "shards")
        try:
            server.wait_ready()
            server.client.headers["X-API-Key"] = ADMIN_KEY
            dataset = server.client.post("/api/v1/datasets/sharded",
                                         json={"shards": [str(p) for p in shards]}).json()
            job = _finished(server, _job(server, dataset["id"], {"solver": "mfn"})["id"])
            assert job["status"] == "succeeded", job
            page = Page(browser, server)
            page.open("/ui/jobs")  # another origin: the key is entered again
            page.find("#api-key").send_keys(ADMIN_KEY)
            page.find("#key-form button").click()
            page.open(f"/ui/jobs/{job['id']}")
            text = page.wait_text("#communication", "Data-parallel on the Dask cluster") and \
                page.find("#communication").text
            assert re.search(r"per iteration [\d.]+ reductions, [\d.]+ (B|KiB|MiB) moved", text)
            assert page.find("[data-fact=dataset]").text == \
                "heart_scale.0 (sharded in 2, 270 × 13)"
        finally:
            server.stop()


def test_the_registry_page_lists_versions_side_by_side_and_moves_an_alias(page, server):
    """A job queued from the form with "Register as" is version 1 of the name, a second one
    version 2; the registry page lists the name, its page shows both versions with their
    metrics, and its form moves ``production`` (created, then moved back and forth): the
    history says each move, and the API predicts with the version the page moved to."""
    heart = _upload(server, data_path("heart_scale"))
    name = "dash-churn"
    page.open(f"/ui/train?dataset={heart}")
    page.wait(lambda: page.find("#param-C"), "the generated form")
    page.find("#train-model-name").send_keys(name)
    page.find("#train-submit").click()
    page.wait(lambda: "/ui/jobs/" in page.driver.current_url, "the job page")
    first = _finished(server, page.driver.current_url.rsplit("/", 1)[1])
    assert first["status"] == "succeeded" and first["model_version"] == 1, first
    response = server.client.post("/api/v1/jobs", json={
        "dataset_id": heart, "params": {"solver": "mfn", "C": 0.01}, "model_name": name,
        "validation_dataset_id": heart})
    second = _finished(server, response.json()["id"])
    assert second["model_version"] == 2

    page.open("/ui/registry")
    page.wait(lambda: page.find(f'a[href="/ui/registry/{name}"]'), "the name listed").click()
    page.wait(lambda: page.find("#move-form"), "the registered model's page")
    rows = page.all("#content table")[0].find_elements(By.CSS_SELECTOR, "tbody tr")
    assert [r.find_elements(By.TAG_NAME, "td")[0].text for r in rows] == ["2", "1"]
    assert "%" not in rows[0].text and re.search(r"0\.\d+", rows[0].text)  # val. accuracy
    assert "No alias yet" in page.find("#content").text
    for version in ("1", "2", "1"):
        alias = page.find("#move-alias")
        alias.clear()
        alias.send_keys("production")
        page.find(f'#move-version option[value="{version}"]').click()
        page.find("#move-form button").click()
        page.wait_text("#notice", f"{name}@production now points at version {version}")
        page.wait(lambda v=version: page.find(
            'section[data-alias="production"] [data-version]').get_attribute("data-version")
            == v, f"the alias at version {version}")
    history = page.find('section[data-alias="production"] table').text
    assert "(created)" in history and history.count("\n") >= 3
    page.screenshot("registry")
    by_alias = server.client.get(f"/api/v1/registry/{name}@production/predict",
                                 params={"x": "1:0.5 3:-1"})
    by_id = server.client.get(f"/api/v1/models/{first['model_id']}/predict",
                              params={"x": "1:0.5 3:-1"})
    assert by_alias.content == by_id.content
    page.find('section[data-alias="production"] button.danger').click()
    page.wait_text("#notice", "Alias production deleted")
    page.wait_text('section[data-alias="production"] h3', "deleted")
    page.console_errors()
    for width, height in (DESKTOP, PHONE):
        page.driver.set_window_size(width, height)
        for path in ("/ui/registry", f"/ui/registry/{name}"):
            page.open(path)
            page.wait(lambda: "Loading" not in page.find("#content").text, f"{path} loaded")
            assert not page.console_errors(), path
            overflow = page.driver.execute_script(
                "return document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 1, f"{path} is wider than a {width} px window"
    page.driver.set_window_size(*DESKTOP)
