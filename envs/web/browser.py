"""One Chromium per env, driven by Playwright from a thread of its own.

Playwright's sync API is bound to the thread that started it, while our rollout manager
steps envs from a thread pool: every call therefore goes through :meth:`Browser.call`,
which runs it on the browser's own thread. The browser process is launched once (the
system Chromium, see MACHINE.md: Playwright cannot download browsers here; headless, Debian's
``chromium-headless-shell`` with :data:`LEAN_ARGS`, see :func:`find_chromium`) or reached over
CDP (``cdp_url``: a browser sandbox); each episode gets a fresh *context* (cookies,
storage, pages), which is clean and takes milliseconds instead of a new browser.

Element ids ("bids") are ``data-vagen-bid`` attributes the page script below assigns to
every element in document order (new elements get new ids; ids never change within an
episode). :data:`PAGE_SNAPSHOT_JS` returns the accessibility-tree text (role, name,
value, state per visible element, indented by depth) and each element's box in one
``evaluate`` call. States: checked / mixed, disabled, selected, pressed, focused, level=N,
and expanded / collapsed from ``aria-expanded``, a ``<details>``, or a list item whose nested
list is shown or hidden (tree widgets without ARIA, such as MiniWoB's navigate-tree: its
folders read ``collapsed``/``expanded``, its files carry no such state).
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from envs.base import EnvInfraError
from sandboxes.providers.browser import LEAN_ARGS, find_chromium

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-quic", "--disable-dev-shm-usage",
                 "--no-default-browser-check", "--hide-scrollbars", "--mute-audio"]
# The Playwright driver is a node process per browser: a small young generation saves ~18 MB.
DRIVER_NODE_OPTIONS = "--max-semi-space-size=1"
_ENV_LOCK = threading.Lock()


def start_playwright():
    """``sync_playwright().start()`` with the lean driver options (unless NODE_OPTIONS is set)."""
    from playwright.sync_api import sync_playwright

    with _ENV_LOCK:
        added = "NODE_OPTIONS" not in os.environ
        if added:
            os.environ["NODE_OPTIONS"] = DRIVER_NODE_OPTIONS
        try:
            return sync_playwright().start()
        finally:
            if added:
                os.environ.pop("NODE_OPTIONS", None)

# Assign bids, then describe the visible elements: one line per element, indented by depth.
PAGE_SNAPSHOT_JS = r"""
(maxNodes) => {
  const W = window;
  if (W.__vagenNextBid === undefined) W.__vagenNextBid = 0;
  const all = document.body ? [document.body, ...document.body.querySelectorAll('*')] : [];
  for (const el of all) {
    if (!el.hasAttribute('data-vagen-bid')) el.setAttribute('data-vagen-bid', String(W.__vagenNextBid++));
  }
  const skip = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'META', 'LINK', 'TEMPLATE', 'BR']);
  const roleOf = (el) => {
    const r = el.getAttribute('role'); if (r) return r;
    const t = el.tagName;
    if (t === 'A') return el.hasAttribute('href') ? 'link' : 'generic';
    if (t === 'BUTTON') return 'button';
    if (t === 'SELECT') return 'combobox';
    if (t === 'OPTION') return 'option';
    if (t === 'TEXTAREA') return 'textbox';
    if (t === 'IMG') return 'img';
    if (t === 'LABEL') return 'label';
    if (/^H[1-6]$/.test(t)) return 'heading';
    if (t === 'LI') return 'listitem';
    if (t === 'UL' || t === 'OL') return 'list';
    if (t === 'TABLE') return 'table'; if (t === 'TR') return 'row'; if (t === 'TD' || t === 'TH') return 'cell';
    if (t === 'INPUT') {
      const ty = (el.getAttribute('type') || 'text').toLowerCase();
      if (ty === 'checkbox') return 'checkbox'; if (ty === 'radio') return 'radio';
      if (ty === 'button' || ty === 'submit' || ty === 'reset') return 'button';
      if (ty === 'range') return 'slider'; if (ty === 'number') return 'spinbutton';
      return 'textbox';
    }
    if (t === 'SPAN' || t === 'DIV' || t === 'P' || t === 'TD') return 'generic';
    if (t === 'svg' || t === 'SVG' || t === 'CANVAS') return 'graphics';
    return t.toLowerCase();
  };
  const ownText = (el) => {
    let s = '';
    for (const n of el.childNodes) if (n.nodeType === 3) s += n.textContent;
    return s.replace(/\s+/g, ' ').trim();
  };
  const lines = [], boxes = {};
  let count = 0;
  const visit = (el, depth) => {
    if (count >= maxNodes || skip.has(el.tagName)) return;
    const st = W.getComputedStyle(el);
    if (st.display === 'none' || st.visibility === 'hidden') return;
    const r = el.getBoundingClientRect();
    const bid = el.getAttribute('data-vagen-bid');
    const role = roleOf(el);
    let name = el.getAttribute('aria-label') || el.getAttribute('title') || el.getAttribute('alt') || '';
    if (!name && el.labels && el.labels.length) name = el.labels[0].innerText.trim();
    const text = ownText(el);
    const parts = [];
    if (el.value !== undefined && el.tagName !== 'LI' && el.tagName !== 'BUTTON' && el.value !== '')
      parts.push('value=' + JSON.stringify(String(el.value).slice(0, 100)));
    if (el.placeholder) parts.push('placeholder=' + JSON.stringify(el.placeholder));
    const aria = (a) => el.getAttribute('aria-' + a);
    if (el.checked || aria('checked') === 'true') parts.push('checked');
    else if (aria('checked') === 'mixed') parts.push('mixed');
    if (el.disabled || aria('disabled') === 'true') parts.push('disabled');
    if ((el.tagName === 'OPTION' && el.selected) || aria('selected') === 'true') parts.push('selected');
    if (aria('pressed') === 'true') parts.push('pressed');
    // Open/closed: ARIA's aria-expanded, a <details>, or (a tree widget without ARIA) a list item
    // whose nested list is shown or hidden.
    const sub = el.tagName === 'LI' ? [...el.children].find((c) => c.tagName === 'UL' || c.tagName === 'OL') : null;
    if (aria('expanded') === 'true' || aria('expanded') === 'false') parts.push(aria('expanded') === 'true' ? 'expanded' : 'collapsed');
    else if (el.tagName === 'DETAILS') parts.push(el.open ? 'expanded' : 'collapsed');
    else if (sub) parts.push(W.getComputedStyle(sub).display === 'none' ? 'collapsed' : 'expanded');
    if (aria('level')) parts.push('level=' + aria('level'));
    if (document.activeElement === el) parts.push('focused');
    const interesting = role !== 'generic' || text || name || parts.length;
    let d = depth;
    if (interesting && r.width > 0 && r.height > 0) {
      count++;
      const label = (name || text).slice(0, 120);
      lines.push('  '.repeat(depth) + '[' + bid + '] ' + role + (label ? ' ' + JSON.stringify(label) : '')
                 + (parts.length ? ' ' + parts.join(' ') : ''));
      boxes[bid] = [r.left, r.top, r.width, r.height, role];
      d = depth + 1;
    }
    for (const c of el.children) visit(c, d);
  };
  if (document.body) visit(document.body, 0);
  return {lines: lines, boxes: boxes, title: document.title, url: location.href, truncated: count >= maxNodes};
}
"""


class Browser:
    """A Chromium process (or a CDP connection) and the thread that owns it."""

    def __init__(self, viewport: tuple[int, int] = (1280, 720), headless: bool = True, cdp_url: str | None = None,
                 executable: str | None = None, timeout_s: float = 30.0, lean: bool = True) -> None:
        self.viewport = viewport
        self.timeout_s = timeout_s
        self.broken = False  # a call timed out or the browser died: the env starts a new one
        self.marker = f"--vagen-browser={uuid.uuid4().hex}"  # finds our processes if we must kill them
        self._jobs: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._loop, args=(headless, cdp_url, executable, lean), daemon=True,
                                        name="vagen-browser")
        self._ready: Future = Future()
        self._thread.start()
        self._ready.result(timeout=timeout_s + 30)  # raises the launch error

    def _loop(self, headless: bool, cdp_url: str | None, executable: str | None, lean: bool) -> None:
        try:
            self._pw = start_playwright()
            if cdp_url:
                self.browser = self._pw.chromium.connect_over_cdp(cdp_url, timeout=self.timeout_s * 1000)
            else:
                exe = executable or find_chromium(headless)
                if exe is None:
                    raise EnvInfraError("no Chromium found (apt-get install chromium-headless-shell chromium; "
                                        "Playwright cannot download browsers here)")
                args = [*CHROMIUM_ARGS, *(LEAN_ARGS if lean else []), self.marker]
                self.browser = self._pw.chromium.launch(executable_path=exe, headless=headless, args=args,
                                                        timeout=self.timeout_s * 1000)
            self._ready.set_result(True)
        except BaseException as e:  # noqa: BLE001 - handed to the constructor
            self._ready.set_exception(e if isinstance(e, EnvInfraError) else EnvInfraError(f"browser launch: {e}"))
            return
        while True:
            job = self._jobs.get()
            if job is None:
                break
            fn, fut = job
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
                    fut.set_exception(e)
        try:
            self.browser.close()
        finally:
            self._pw.stop()

    def call(self, fn: Callable[[], Any], timeout: float | None = None) -> Any:
        """Run ``fn`` on the browser thread; its exception is re-raised here."""
        if not self._thread.is_alive():
            raise EnvInfraError("the browser thread is gone")
        fut: Future = Future()
        self._jobs.put((fn, fut))
        try:
            return fut.result(timeout=timeout or self.timeout_s)
        except TimeoutError as e:
            self.broken = True
            raise EnvInfraError(f"browser call timed out after {timeout or self.timeout_s} s") from e
        except Exception as e:
            if type(e).__name__ == "TargetClosedError" or "has been closed" in str(e):
                self.broken = True  # the page, context or browser crashed
                raise EnvInfraError(f"the browser or page crashed: {str(e).splitlines()[0]}") from e
            raise

    def new_context(self, previous: Any = None, viewport: tuple[int, int] | None = None) -> tuple[Any, Any]:
        """Close ``previous`` (the caller's last episode's context); open a fresh context with
        one page and return ``(context, page)``. Each env owns its contexts, so envs sharing
        a browser (``share_browser``) never touch each other's."""
        vw, vh = viewport or self.viewport

        def fresh():
            if previous is not None:
                try:
                    previous.close()
                except Exception:  # noqa: BLE001 - a crashed page must not block the next episode
                    pass
            context = self.browser.new_context(viewport={"width": vw, "height": vh})
            context.set_default_timeout(2000)
            return context, context.new_page()

        return self.call(fresh)

    def pid(self) -> int | None:
        proc = getattr(getattr(self.browser, "_impl_obj", None), "_browser_process", None)
        return getattr(proc, "pid", None)

    def kill(self) -> None:
        """SIGKILL our Chromium processes (found by the marker flag); for a browser that hangs."""
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if self.marker.encode() in f.read():
                        os.kill(int(entry), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                continue
        self._jobs.put(None)

    def close(self) -> None:
        if self.broken:
            self.kill()
            self._thread.join(timeout=5)
            return
        if self._thread.is_alive():
            self._jobs.put(None)  # the loop closes the browser (and every context in it)
            self._thread.join(timeout=15)


# -- browsers shared by the envs of a process (``share_browser=True``) ----------------------
_SHARED: dict[tuple, Browser] = {}  # key -> the browser new envs get for these arguments
_SHARED_LOCK = threading.Lock()


def acquire_shared(**browser_args: Any) -> Browser:
    """The process's browser for these arguments (started on first use); each env keeps its
    own contexts in it. One Chromium + one driver for many envs: less memory per env, at
    the price of the envs' browser calls taking turns on its thread and one crash hitting
    every env that shares it (each sees an infra error and moves to a fresh browser)."""
    key = tuple(sorted((k, str(v)) for k, v in browser_args.items() if k != "viewport"))
    with _SHARED_LOCK:
        b = _SHARED.get(key)
        if b is None or b.broken:
            b = _SHARED[key] = Browser(**browser_args)
            b._shared_key, b._shared_refs = key, 0
        b._shared_refs += 1
        return b


def release_shared(browser: Browser) -> None:
    """An env is done with a shared browser; the last one out closes it."""
    with _SHARED_LOCK:
        browser._shared_refs -= 1
        if browser._shared_refs > 0:
            return
        if _SHARED.get(browser._shared_key) is browser:
            del _SHARED[browser._shared_key]
    browser.close()
