"""A headless Chromium for the tests, driven through chromedriver (Debian's ``chromium`` and
``chromium-driver``; ``.ci/run`` installs them). Nothing is downloaded: the binaries are the
system's, and the pages opened are local files."""

from __future__ import annotations

import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

#: the flags that run Chromium headless in a container, without network side traffic
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,2000")
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
DRIVER = ("chromedriver",)

#: JavaScript: every element matching a selector, inside shadow roots too (bokeh draws its
#: widgets and canvases in shadow DOM)
DEEP_QUERY = """
const out = [], selector = arguments[0];
function walk(root) {
  root.querySelectorAll(selector).forEach((e) => out.push(e));
  root.querySelectorAll("*").forEach((e) => { if (e.shadowRoot) walk(e.shadowRoot); });
}
walk(document);
return out;
"""


def _which(names) -> str | None:
    for n in names:
        path = shutil.which(n) or (f"/usr/bin/{n}" if Path(f"/usr/bin/{n}").exists() else None)
        if path:
            return path
    return None


def missing() -> str:
    """Why no browser can run here ("" when one can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the selenium package is missing: python3 -m pip install '.[test]'"
    if not _which(CHROMIUM) or not _which(DRIVER):
        return ("Chromium and its driver are missing: apt-get install -y chromium "
                "chromium-driver (.ci/run installs them)")
    return ""


@contextmanager
def chromium():
    """A headless Chromium WebDriver with a fresh profile, its console log recorded."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    why = missing()
    if why:
        raise RuntimeError(why)
    profile = tempfile.mkdtemp(prefix="sweep-chromium-")
    opts = webdriver.ChromeOptions()
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    opts.binary_location = _which(CHROMIUM)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(_which(DRIVER)), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(driver, script: str, timeout: float = 60.0):
    """Poll ``script`` (JavaScript returning a value) until it is truthy; its value."""
    end = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script)
        if value:
            return value
        if time.monotonic() > end:
            raise TimeoutError(f"the page did not reach: {script}")
        time.sleep(0.1)


def console_errors(driver) -> list[dict]:
    """The console entries of level SEVERE (errors) since the last call."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def deep(driver, selector: str) -> list:
    """Elements matching ``selector`` anywhere in the page, shadow roots included."""
    return driver.execute_script(DEEP_QUERY, selector)


def choose(driver, value: str) -> None:
    """Choose ``value`` in the one select box (anywhere in the page) that offers it, as a user's
    click does: set the value and fire the ``change`` event the page listens to."""
    boxes = [s for s in deep(driver, "select") if value in driver.execute_script(
        "return Array.from(arguments[0].options).map(o => o.value)", s)]
    if len(boxes) != 1:
        raise LookupError(f"{len(boxes)} select boxes offer {value!r}")
    driver.execute_script("arguments[0].value = arguments[1];"
                          "arguments[0].dispatchEvent(new Event('change', {bubbles: true}))",
                          boxes[0], value)
