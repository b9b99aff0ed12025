"""docs/front-page.png from the built book: `make front-page` (headless Chromium, a 1280-px window).

Builds the published book (the runs in published/, never training), serves it locally, opens its front page
in headless Chromium at 1280 x HEIGHT px and saves the visible window: what a reader sees first (the title and
the bottom line). Exits 1 where a table or code block of the front page is wider than the window.
Needs the optional parts of the browser test (repro.book.browser.missing says which).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from repro.book import browser
from repro.book import build as book

log = logging.getLogger("front-page")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/front-page.png")
    ap.add_argument("--height", type=int, default=1600)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[front-page] %(message)s")
    if why := browser.missing():
        sys.exit(f"front-page: needs {why}")
    profile = book.default_published_profile()
    log.info("building the published book (profile %s)", profile)
    index = book.build(profile, out=Path("_build") / "published", results_dir=book.published_root(), quiet=True)
    driver = browser.chromium(browser.READER_WIDTH, args.height)
    try:
        with browser.served(index.parent) as base:
            driver.get(base + "book/intro.html")
            wide = browser.wide_elements(driver)
            driver.save_screenshot(args.out)
    finally:
        driver.quit()
    log.info("saved %s (%d px wide); tables wider than the window: %d", args.out, browser.READER_WIDTH, wide)
    return 1 if wide else 0


if __name__ == "__main__":
    sys.exit(main())
