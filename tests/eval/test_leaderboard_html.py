"""The leaderboard page in a real headless Chromium: numbers render, headers sort, no network needed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.eval.test_leaderboard import EXPECTED_RATE, make_runs
from vagen.eval.leaderboard import leaderboard

pytestmark = [pytest.mark.desktop]

try:
    from playwright.sync_api import sync_playwright
except ImportError:
    if os.environ.get("CI", "").lower() == "true":
        raise
    pytest.skip("playwright not installed (pip install -e '.[dev]')", allow_module_level=True)


@pytest.fixture
def page(tmp_path):
    out = leaderboard(make_runs(tmp_path / "runs"), tmp_path / "board")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 900})
            requests: list[str] = []
            pg.on("request", lambda r: requests.append(r.url))
            errors: list[str] = []
            pg.on("pageerror", lambda e: errors.append(str(e)))
            pg.goto(out["paths"]["html"].resolve().as_uri())
            pg.wait_for_load_state("load")
            yield pg
            assert not errors, f"JavaScript errors: {errors}"
            assert all(u.startswith("file://") for u in requests), f"non-local requests: {requests}"
        finally:
            browser.close()


def _column(pg, table: str, header: str) -> list[str]:
    headers = pg.locator(f"#{table} thead th").all_inner_texts()
    col = [h.strip() for h in headers].index(header) + 1
    return [t.strip() for t in pg.locator(f"#{table} tbody tr td:nth-child({col})").all_inner_texts()]


def test_overall_cells_render_expected_numbers(page):
    for suite in ("osworld", "sokoban", "frozenlake"):
        labels = _column(page, f"overall-{suite}", "label")
        steps = _column(page, f"overall-{suite}", "max_steps")
        rates = _column(page, f"overall-{suite}", "success %")
        got = {(suite, label, int(s)): float(r) for label, s, r in zip(labels, steps, rates, strict=True)}
        assert got == {k: pytest.approx(v) for k, v in EXPECTED_RATE.items() if k[0] == suite}
    assert _column(page, "overall-osworld", "95% CI (%)") == ["[30.1, 95.4]", "[4.6, 69.9]"]
    assert _column(page, "overall-sokoban", "success@50") == ["100.0", "100.0", "25.0", "25.0"]
    assert _column(page, "vagen-average", "average %") == ["62.5", "100.0", "12.5", "25.0"]
    # Every plot loaded from plots/ (naturalWidth is 0 for a broken image).
    widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.naturalWidth)")
    assert len(widths) == 4 and all(w > 0 for w in widths)


def test_header_click_sorts_numerically_and_toggles(page, tmp_path):
    before = _column(page, "overall-sokoban", "success %")
    assert before == ["50.0", "100.0", "0.0", "25.0"]
    header = page.locator("#overall-sokoban thead th", has_text="success %").first
    header.click()
    assert _column(page, "overall-sokoban", "success %") == ["0.0", "25.0", "50.0", "100.0"]
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert _column(page, "overall-sokoban", "success %") == ["100.0", "50.0", "25.0", "0.0"]
    assert header.get_attribute("aria-sort") == "descending"
    # Text columns sort alphabetically; the average table's blank cells stay last.
    page.locator("#domains thead th", has_text="domain").first.click()
    domains = _column(page, "domains", "domain")
    assert domains == sorted(domains)
    page.locator("#vagen-average thead th", has_text="frozenlake %").first.click()
    assert _column(page, "vagen-average", "frozenlake %") == ["25.0", "75.0", "", ""]

    shot = tmp_path / "leaderboard.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    artifacts = Path(os.environ.get("VAGEN_TEST_ARTIFACTS", tmp_path))
    artifacts.mkdir(parents=True, exist_ok=True)
    if artifacts.resolve() != tmp_path.resolve():
        shutil.copy(shot, artifacts / "leaderboard.png")
    assert (artifacts / "leaderboard.png").is_file()
