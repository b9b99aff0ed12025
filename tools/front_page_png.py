"""docs/front-page.png from the built book: `make front-page` (headless Chromium, a 1280-px window).

Builds the published book (the runs in published/, never training), serves it locally, opens its front page
in headless Chromium at 1280 x HEIGHT px and saves the visible window: what a reader sees first (the title and
the bottom line). Also says, in one line, whether any table of the front page is wider than the window.
Needs the optional parts of the browser test: Debian's chromium and chromium-driver, and selenium (the
package's `test` extra).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import logging
import shutil
import sys
import threading
from pathlib import Path

from repro.book import build as book

log = logging.getLogger("front-page")
WIDTH = 1280
# the tables and code blocks of the page that scroll sideways or stick out of the window
WIDE = ("return Array.from(document.querySelectorAll('article table, article pre, article .table-wrapper')).filter("
        "e => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > window.innerWidth + 1).length")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def browser(height: int):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        sys.exit("front-page: needs chromium and chromedriver on PATH (apt-get install chromium chromium-driver)")
    opts = Options()
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
                "--hide-scrollbars", f"--window-size={WIDTH},{height}"):
        opts.add_argument(arg)
    opts.binary_location = chromium
    return webdriver.Chrome(service=Service(driver), options=opts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/front-page.png")
    ap.add_argument("--height", type=int, default=1600)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[front-page] %(message)s")
    profile = book.default_published_profile()
    log.info("building the published book (profile %s)", profile)
    index = book.build(profile, out=Path("_build") / "published", results_dir=book.published_root(), quiet=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(_Quiet, directory=str(index.parent)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    driver = browser(args.height)
    try:
        driver.get(f"http://127.0.0.1:{server.server_address[1]}/book/intro.html")
        wide = driver.execute_script(WIDE)
        driver.save_screenshot(args.out)
    finally:
        driver.quit()
        server.shutdown()
    log.info("saved %s (%d px wide); tables wider than the window: %d", args.out, WIDTH, wide)
    return 1 if wide else 0


if __name__ == "__main__":
    sys.exit(main())
