"""The built book checked like a reader would: served locally, opened in headless Chromium.

Every page loads, no internal link or anchor is broken, no image is missing, no table or code block is wider
than a reader's 1280-px window, every chapter shows a figure and a verdict table, and the front page shows the
bottom line. Screenshots of
the front page and one chapter are saved under ``_build/screenshots/`` for review.
"""

from __future__ import annotations

import re
import urllib.parse
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import pytest

from repro.book import browser as browser_tools
from repro.book import build as book
from repro.core import params, results

pytestmark = pytest.mark.extras  # every test here needs an optional part (see tests/conftest.py)

SCREENSHOTS = (results.project_root() or Path.cwd()) / "_build" / "screenshots"


@pytest.fixture
def serve():
    with ExitStack() as stack:
        yield lambda directory: stack.enter_context(browser_tools.served(directory))


def _fetch(url: str, cache: dict) -> tuple[int, str]:
    if url not in cache:
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                cache[url] = (resp.status, resp.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as err:
            cache[url] = (err.code, "")
    return cache[url]


@pytest.fixture
def browser(need):
    """Headless Chromium in a reader's 1280-px window, asked for before a book is built (skips, or fails under
    .ci/run, when absent)."""
    why = browser_tools.missing()
    need("headless Chromium", not why, why)
    driver = browser_tools.chromium(browser_tools.READER_WIDTH, 2200)
    yield driver
    driver.quit()


def check_site(driver, html_dir: Path, base: str, shots: Path) -> dict:
    """Visit every page; returns counts. Fails with the list of every problem found."""
    pages = sorted(p.relative_to(html_dir).as_posix() for p in html_dir.rglob("*.html")
                   if not p.relative_to(html_dir).as_posix().startswith(("_", "genindex", "search")))
    problems, cache, links_checked = [], {}, 0
    for page in pages:
        driver.get(base + page)
        if not driver.title or "404" in driver.title:
            problems.append(f"{page}: did not load (title {driver.title!r})")
        for src in driver.execute_script(
                "return Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)"):
            problems.append(f"{page}: image not loaded: {src}")
        if wide := browser_tools.wide_elements(driver):  # a reader's 1280-px window: nothing scrolls sideways
            problems.append(f"{page}: {wide} tables or code blocks wider than a {browser_tools.READER_WIDTH}-px window")
        hrefs = driver.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
        for href in set(hrefs):
            if not href.startswith(base):
                continue  # external links are not followed from a machine without internet
            url, _, frag = href.partition("#")
            status, body = _fetch(url, cache)
            links_checked += 1
            if status != 200:
                problems.append(f"{page}: broken link {href} ({status})")
            elif frag and url.endswith(".html") and not re.search(
                    r'id="%s"' % re.escape(urllib.parse.unquote(frag)), body):
                problems.append(f"{page}: link to missing anchor {href}")
        if page.startswith("notebooks/"):
            n_img = driver.execute_script("return document.querySelectorAll('article img').length")
            verdict_tables = driver.execute_script(
                "return Array.from(document.querySelectorAll('table')).filter(t => "
                "Array.from(t.querySelectorAll('th')).some(h => /verdict/i.test(h.textContent))).length")
            if n_img == 0:
                problems.append(f"{page}: chapter shows no figure")
            if verdict_tables == 0:
                problems.append(f"{page}: chapter has no table with a verdict column")
            if "Claims of this chapter" not in driver.find_element("tag name", "article").text:
                problems.append(f"{page}: chapter shows no count of its claims per tier")
    driver.get(base + "book/intro.html")
    text = driver.find_element("tag name", "article").text
    if not re.search(r"\d+ statements of the papers are judged here", text):
        problems.append("front page: no bottom line")
    shots.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(shots / "front.png"))
    driver.get(base + "notebooks/03_optimizers.html")
    driver.save_screenshot(str(shots / "chapter.png"))
    assert not problems, "\n".join(problems)
    return {"pages": len(pages), "links": links_checked}


SCREEN_HEIGHT = 800  # a reader's 1280 x 800 laptop screen


def _summary_bottom(driver, url: str) -> float:
    """Where the front page's per-paper summary (the first table after the bottom line's heading) ends, in px from
    the top of the page at 1280 px wide: the bottom line and the summary are what a reader must see first."""
    driver.get(url)
    return driver.execute_script("""
        const h = Array.from(document.querySelectorAll('h2')).find(e => e.textContent.includes('The bottom line'));
        if (!h) return 1e9;
        const sec = h.closest('section') || h.parentElement;
        const t = sec.querySelector('table');
        return t ? t.getBoundingClientRect().bottom + window.scrollY : 1e9;""")


@pytest.mark.slow
def test_smoke_book_in_a_browser(browser, smoke_runs, tmp_path, serve):
    index = book.build("smoke", out=tmp_path / "book", results_dir=smoke_runs["root"], quiet=True)
    html_dir = index.parent
    counts = check_site(browser, html_dir, serve(html_dir), SCREENSHOTS / "smoke")
    chapters = {spec.notebook for spec in params.experiments().values()}
    assert counts["pages"] >= len(chapters) + 3  # intro, how to reproduce, bibliography, every chapter
    assert counts["links"] > 20
    assert (SCREENSHOTS / "smoke" / "front.png").stat().st_size > 10_000


@pytest.mark.slow
def test_published_book_in_a_browser(browser, tmp_path, serve):
    profile = book.default_published_profile()  # the repository carries published runs: none is a failure
    index = book.build(profile, out=tmp_path / "published", results_dir=book.published_root(), quiet=True)
    base = serve(index.parent)
    check_site(browser, index.parent, base, SCREENSHOTS / f"published-{profile}")
    assert _summary_bottom(browser, base + "book/intro.html") <= 2 * SCREEN_HEIGHT  # issue 55: two screens
    front = (index.parent / "book" / "intro.html").read_text(encoding="utf-8")
    total = int(re.search(r"<strong>(\d+) statements</strong> of the papers are judged here", front).group(1))
    assert total >= 40  # every chapter's statements, not a stub
    # the statements per tier end with a totals row, whose last cell is that count
    rows = re.findall(r"<strong>all</strong>.*?</tr>", front, re.S)
    assert len(rows) == 1 and re.findall(r"<td[^>]*>(?:<p>)?(\d+)(?:</p>)?</td>", rows[0])[-1] == str(total)
    assert "{cite:t}" not in front and "not decided here" in front
    assert "Convergent" in front and "illegible" not in front  # cloudcost2017 cited by its short title
    # every profile's chapters are in the published book, so that every row links to its evidence
    assert (index.parent / "notebooks" / "emulated" / "06_distributed.html").is_file()
    assert "../notebooks/emulated/06_distributed.html#" in front and "(not in this book)" not in front
