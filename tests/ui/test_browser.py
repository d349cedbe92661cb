"""The inspector in a real browser: headless Debian Chromium driven by Selenium.

The real ``agentzero ui --no-browser`` runs in a subprocess; the browser opens the URL
it printed, searches, sees the memory, forgets it, undoes that, runs a polled job, and
saves screenshots of the timeline and of a fact's history to
``bench-out/ui-screenshots/`` (git-ignored) for a person to look at.
Selenium Manager never runs: the driver and the browser are the system's, by path.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import NEEDLE, SCRIPT, running_ui, seed

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SHOTS = Path(__file__).resolve().parents[2] / "bench-out" / "ui-screenshots"

pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason="needs /usr/bin/chromium and /usr/bin/chromedriver "
    "(apt-get install chromium chromium-driver)",
)

if CHROMIUM.exists() and CHROMEDRIVER.exists():
    from selenium import webdriver
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,1000",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(flag)
    os.environ.setdefault("SE_OFFLINE", "true")  # belt and braces: no Selenium Manager
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _text(driver: webdriver.Chrome) -> str:
    return str(driver.find_element(By.TAG_NAME, "main").text)


def _full_page_screenshot(driver: webdriver.Chrome, path: Path) -> int:
    """Save the whole page, not only the viewport (Chromium's DevTools capture beyond
    the viewport); the saved image's height in CSS pixels."""
    width, height = driver.execute_script(
        "const e = document.documentElement; return [e.scrollWidth, e.scrollHeight];"
    )
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        },
    )
    png = base64.b64decode(shot["data"])
    path.write_bytes(png)
    return int.from_bytes(png[20:24], "big")  # the IHDR chunk's height


def test_search_forget_undo_in_a_real_browser(data_dir: Path, browser: webdriver.Chrome) -> None:
    ids = seed(data_dir)
    SHOTS.mkdir(parents=True, exist_ok=True)
    wait = WebDriverWait(browser, 60)
    with running_ui(data_dir) as url:
        base = url.split("/?", 1)[0]
        browser.get(url)
        assert browser.current_url == base + "/"  # the token left the address bar
        assert NEEDLE in _text(browser)
        # The <script> a memory holds is shown as text and never runs.
        assert SCRIPT in _text(browser)
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text  # noqa: B018
        browser.save_screenshot(str(SHOTS / "timeline.png"))

        browser.get(base + "/search")
        browser.find_element(By.ID, "q").send_keys(f"{NEEDLE} tea")
        browser.find_element(By.ID, "search-button").click()
        hit = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "tr.hit"))
        assert hit.get_attribute("data-id") == ids.tea
        assert "keyword #1" in hit.text
        # The hit's type and date sit right under its text, not a blank line below.
        text = hit.find_element(By.CSS_SELECTOR, "td.content > a").rect
        meta = hit.find_element(By.CSS_SELECTOR, "td.content .meta").rect
        assert 0 <= meta["y"] - (text["y"] + text["height"]) < 6, (text, meta)
        browser.save_screenshot(str(SHOTS / "search.png"))

        hit.find_element(By.CSS_SELECTOR, "button.forget").click()
        token = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "code.undo-token"))
        assert len(token.text) > 8
        assert not browser.find_elements(By.CSS_SELECTOR, f'tr.hit[data-id="{ids.tea}"]')
        browser.get(base + "/")
        assert NEEDLE not in _text(browser)
        browser.save_screenshot(str(SHOTS / "forgotten-with-undo.png"))

        browser.find_element(By.CSS_SELECTOR, "button.undo").click()
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, "code.undo-token"))
        assert NEEDLE in _text(browser)

        browser.get(f"{base}/facts/{ids.porto}")
        rows = browser.find_elements(By.CSS_SELECTOR, "table.facts tbody tr")
        assert [r.text.split()[0] for r in rows] == ["Porto", "Lisbon"]
        assert "replaced" in rows[0].text and "believed now" in rows[1].text
        browser.save_screenshot(str(SHOTS / "fact-history.png"))

        browser.get(f"{base}/memory/{ids.tea}")
        assert browser.find_elements(By.CSS_SELECTOR, "svg.curve polyline")
        graph = browser.find_element(By.CSS_SELECTOR, "svg.graph").rect
        assert browser.find_elements(By.CSS_SELECTOR, "svg.graph line.edge")
        # The graph is below the fold: the screenshot holds the whole page.
        assert graph["y"] + graph["height"] > browser.execute_script("return innerHeight")
        shot_height = _full_page_screenshot(browser, SHOTS / "memory.png")
        assert shot_height >= graph["y"] + graph["height"]

        # The job page's script (allowed by the CSP: same origin) polls until done.
        browser.get(base + "/health")
        browser.find_element(By.ID, "verify-button").click()
        wait.until(lambda d: d.find_element(By.ID, "job-state").text != "running")
        assert browser.find_element(By.ID, "job-state").text == "done"
        assert '"clean": true' in browser.find_element(By.ID, "job-result").text
    print(f"screenshots in {SHOTS}")
