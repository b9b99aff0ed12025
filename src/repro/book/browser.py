"""The built book in headless Chromium, as a reader sees it: served locally and opened in a window of a given
width. Used by ``make front-page`` (``tools/front_page_png.py``) and the browser test (``tests/book``).

Needs the optional parts of the browser check: Debian's ``chromium`` and ``chromium-driver`` on PATH and
``selenium`` (the package's ``test`` extra); :func:`missing` says which is absent, in one line.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from contextlib import contextmanager
from pathlib import Path

READER_WIDTH = 1280  # the window a reader's laptop gives the book: nothing may scroll sideways in it
ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--hide-scrollbars",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage")
# the page's tables and code blocks that scroll sideways or stick out of the window
WIDE = ("return Array.from(document.querySelectorAll('article table, article pre, article .table-wrapper')).filter("
        "e => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > window.innerWidth + 1).length")


def missing() -> str:
    """What is missing for :func:`chromium` ('' where nothing is), with how to install it."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium (pip install selenium)"
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        return "chromium and chromedriver on PATH (apt-get install chromium chromium-driver)"
    return ""


def chromium(width: int = READER_WIDTH, height: int = 2200):
    """A headless Chromium driver with a ``width`` x ``height`` window (:func:`missing` first)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    for arg in (*ARGS, f"--window-size={width},{height}"):
        opts.add_argument(arg)
    opts.binary_location = shutil.which("chromium") or "chromium"
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "chromedriver"), options=opts)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextmanager
def served(directory: Path):
    """``directory`` served over HTTP on a free local port for the ``with`` block; yields its base URL."""
    handler = functools.partial(_Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()


def wide_elements(driver) -> int:
    """How many tables and code blocks of the open page scroll sideways or stick out of the window."""
    return int(driver.execute_script(WIDE))
