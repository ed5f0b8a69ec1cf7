"""The HTML world model: render a scene spec in headless Chromium, screenshot it, read every
targetable element's box from the DOM.

``HtmlWorld.capture(scene)`` returns a :class:`Frame`: the PNG, and per ``data-vid`` its box
``(x, y, w, h)`` in screen pixels and whether the element is *hit* at its box centre
(``document.elementFromPoint`` — False when another window, a dialog's backdrop or the
screen edge covers it; ``reachable``: the centre lands on it or one of its children), so a pointing action's box is known to contain what a click there
would reach. One Chromium (the web env's ``Browser``, lean flags, headless shell) serves
many captures; each capture replaces the page content (no network: the page is inline).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from worldgen.html.render import render_html
from worldgen.scene import Scene

BOXES_JS = """() => {
  const out = {};
  for (const el of document.querySelectorAll('[data-vid]')) {
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) continue;
    const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
    const top = document.elementFromPoint(cx, cy);
    const hit = !!top && top.closest('[data-vid]') === el;
    const inside = !!top && el.contains(top);
    out[el.dataset.vid] = [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height), hit, inside];
  }
  return out;
}"""


@dataclass
class Frame:
    png: bytes
    boxes: dict[str, tuple[int, int, int, int, bool, bool]] = field(default_factory=dict)
    width: int = 0
    height: int = 0

    def box(self, vid: str) -> tuple[int, int, int, int] | None:
        b = self.boxes.get(vid)
        return None if b is None else (b[0], b[1], b[2], b[3])

    def clickable(self, vid: str) -> bool:
        """On screen and reached by a click at its box centre."""
        b = self.boxes.get(vid)
        return bool(b and b[4])

    def reachable(self, vid: str) -> bool:
        """On screen and its box centre lands on it or inside it (a scroll over a grid of
        cells reaches the grid even though the centre is on one cell)."""
        b = self.boxes.get(vid)
        return bool(b and b[5])

    def image(self):
        from PIL import Image

        return Image.open(io.BytesIO(self.png)).convert("RGB")


class HtmlWorld:
    """Renders scenes with one headless Chromium (``close()`` when done)."""

    def __init__(self, browser=None) -> None:
        from envs.web.browser import Browser

        self._own = browser is None
        self.browser = browser or Browser(viewport=(1280, 800))
        self._context = self._page = None
        self._size: tuple[int, int] | None = None

    def _page_for(self, width: int, height: int):
        if self._size != (width, height):
            self._context, self._page = self.browser.new_context(self._context, viewport=(width, height))
            self._size = (width, height)
        return self._page

    def capture(self, scene: Scene) -> Frame:
        html = render_html(scene)

        page = self._page_for(scene.width, scene.height)  # (on this thread: it calls into the browser)

        def run():
            page.set_content(html, wait_until="load")
            boxes = page.evaluate(BOXES_JS)
            png = page.screenshot(type="png", full_page=False)
            return png, boxes

        png, boxes = self.browser.call(run, timeout=60)
        boxes = {k: (int(v[0]), int(v[1]), int(v[2]), int(v[3]), bool(v[4]), bool(v[5])) for k, v in boxes.items()}
        return Frame(png=png, boxes=boxes, width=scene.width, height=scene.height)

    def vids_at(self, scene: Scene, points: list[tuple[int, int]]) -> list[str | None]:
        """Which element (``data-vid``) a click at each point reaches in ``scene`` — an
        independent DOM check of a grounded box (``document.elementFromPoint``)."""
        html = render_html(scene)
        page = self._page_for(scene.width, scene.height)

        def run():
            page.set_content(html, wait_until="load")
            return page.evaluate("""(pts) => pts.map(([x, y]) => {
                const el = document.elementFromPoint(x, y);
                const v = el && el.closest('[data-vid]');
                return v ? v.dataset.vid : null; })""", [list(p) for p in points])

        return self.browser.call(run, timeout=60)

    def close(self) -> None:
        if self._own:
            self.browser.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


__all__ = ["BOXES_JS", "Frame", "HtmlWorld"]
