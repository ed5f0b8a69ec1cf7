"""Untrusted SVG text -> a safe SVG document -> an RGB uint8 image.

``prepare_svg`` finds the ``<svg ...>...</svg>`` block in a model's answer (code fences and
surrounding prose are tolerated), enforces a length and an element cap, rejects characters
XML cannot hold and DTDs (entity tricks), and neutralises everything that could make the
renderer read a file or the network: ``<image>``/``<feImage>``/``<foreignObject>``/``<script>`` elements, ``href`` and
``xlink:href`` values that are not in-document fragments (``#id``), ``url(...)`` references
that are not fragments, CSS ``@import`` and processing instructions. ``render_svg``
rasterises with resvg (no system fonts unless asked) and returns an ``(H, W, 3)`` uint8
array; with a timeout it renders in a separate worker process (killed and restarted when a
pathological SVG runs too long, address space capped). Both raise :class:`SVGError` with a
message fit to show the agent.
"""

from __future__ import annotations

import atexit
import io
import os
import pickle
import re
import select
import struct
import subprocess
import sys
import threading
import time

import numpy as np

MAX_ERROR_CHARS = 200

_SVG_OPEN = re.compile(r"<svg(?=[\s>/])")
_SVG_CLOSE = re.compile(r"</svg\s*>")
_DANGEROUS_BLOCK = re.compile(
    r"<((?:[\w.-]+:)?(?:image|feImage|foreignObject|script|iframe|video|audio))\b[^>]*?(?:/>|>.*?</\1\s*>)",
    re.DOTALL | re.IGNORECASE)
_DANGEROUS_TAG = re.compile(
    r"</?(?:[\w.-]+:)?(?:image|feImage|foreignObject|script|iframe|video|audio)\b[^>]*>?", re.IGNORECASE)
_HREF = re.compile(r"""(?<![\w.:-])((?:[\w.-]+:)?href)\s*=\s*("[^"]*"|'[^']*')""", re.IGNORECASE)
_URL = re.compile(r"""url\(\s*(['"]?)\s*([^)'"]*)\1\s*\)""", re.IGNORECASE)
_IMPORT = re.compile(r"@import\b[^;]*;?", re.IGNORECASE)
_PI = re.compile(r"<\?.*?(?:\?>|$)", re.DOTALL)
_DTD = re.compile(r"<!(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_ELEMENT = re.compile(r"<[A-Za-z]")
# XML 1.0 forbids these; lone surrogates are what undecodable bytes become ("surrogateescape").
_BAD_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


class SVGError(ValueError):
    """The answer holds no usable SVG; the message explains why (shown to the agent)."""


def printable(text: str, limit: int = MAX_ERROR_CHARS, newlines: bool = False) -> str:
    """``text`` cut to ``limit`` characters of printable ASCII (observation texts must be)."""
    text = re.sub(r"[\t\r]" if newlines else r"[\t\r\n]", " ", str(text))
    out = "".join(ch if 32 <= ord(ch) < 127 or (newlines and ch == "\n") else "?" for ch in text)
    return out[:limit] + ("..." if len(out) > limit else "")


def extract_svg(answer: str) -> str:
    """The ``<svg ...>...</svg>`` block of ``answer`` (first opening to last closing tag).

    An unclosed document is returned as is (from ``<svg``) so the renderer reports it.
    """
    m = _SVG_OPEN.search(answer)
    if m is None:
        raise SVGError("no <svg ...> element found; answer with one SVG document '<svg ...>...</svg>'")
    closes = list(_SVG_CLOSE.finditer(answer, m.start()))
    end = closes[-1].end() if closes else len(answer)
    return answer[m.start():end]


def sanitize_svg(svg: str) -> tuple[str, int]:
    """``svg`` with external references removed, and how many things were removed."""
    removed = 0

    def drop_external_href(m: re.Match) -> str:
        nonlocal removed
        if m.group(2)[1:-1].strip().startswith("#"):
            return m.group(0)
        removed += 1
        return ""

    def drop_external_url(m: re.Match) -> str:
        nonlocal removed
        if m.group(2).strip().startswith("#"):
            return m.group(0)
        removed += 1
        return "none"

    # Repeat to a fixed point: a removal must not splice together a new dangerous tag.
    for _ in range(8):
        before = svg
        for pattern in (_PI, _DANGEROUS_BLOCK, _DANGEROUS_TAG, _IMPORT):
            svg, n = pattern.subn("", svg)
            removed += n
        svg = _HREF.sub(drop_external_href, svg)
        svg = _URL.sub(drop_external_url, svg)
        if svg == before:
            return svg, removed
    raise SVGError("the SVG keeps producing external references after sanitising; it was rejected")


def prepare_svg(answer: object, max_chars: int, max_elements: int, external_refs: str = "reject") -> str:
    """A safe SVG document from a model's answer, or :class:`SVGError`.

    ``external_refs="reject"`` refuses an SVG that needed sanitising (it tried to load an
    image, a file, a URL or a stylesheet); ``"strip"`` removes those parts and renders the rest.
    """
    if not isinstance(answer, str):
        raise SVGError(f"the answer must be text holding an SVG document, got {type(answer).__name__}")
    if not answer.strip():
        raise SVGError("empty answer; answer with one SVG document '<svg ...>...</svg>'")
    svg = extract_svg(answer)
    if len(svg) > max_chars:
        raise SVGError(f"SVG too long: {len(svg)} characters > {max_chars}; simplify the drawing")
    bad = _BAD_CHARS.search(svg)
    if bad is not None:
        raise SVGError(f"SVG holds a character XML does not allow (U+{ord(bad.group(0)):04X} at offset "
                       f"{bad.start()}); use plain UTF-8 text")
    if _DTD.search(svg):
        raise SVGError("DOCTYPE/ENTITY declarations are not allowed inside the SVG")
    svg, removed = sanitize_svg(svg)
    if removed and external_refs == "reject":
        raise SVGError(f"the SVG uses {removed} external reference(s) or embedded content (<image>, <feImage>, "
                       "<foreignObject>, <script>, href/url() outside the document, @import, <?...?>); these are "
                       "not allowed: draw with shapes only")
    n = len(_ELEMENT.findall(svg))
    if n > max_elements:
        raise SVGError(f"SVG has {n} elements > {max_elements} allowed; simplify the drawing")
    return svg


# The render worker: a separate Python process (only resvg_py imported) fed length-prefixed
# pickles on stdin. A render that runs past its timeout (huge blurs, turbulence with a million
# octaves, ...) gets the worker killed and restarted; an address-space limit stops memory bombs.
_WORKER_SRC = r"""
import os, pickle, struct, sys
try:
    import resource
    lim = int(os.environ.get("SVG_WORKER_MEMORY", "0"))
    if lim > 0:
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
except Exception:
    pass
import resvg_py
inp, out = sys.stdin.buffer, sys.stdout.buffer
while True:
    head = inp.read(4)
    if len(head) < 4:
        break
    kwargs = pickle.loads(inp.read(struct.unpack("<I", head)[0]))
    try:
        msg = (True, resvg_py.svg_to_bytes(**kwargs))
    except BaseException as e:
        msg = (False, f"{type(e).__name__}: {e}"[:500])
    data = pickle.dumps(msg)
    out.write(struct.pack("<I", len(data)) + data)
    out.flush()
"""


class RenderWorker:
    """One resvg worker process, restarted after a timeout or a crash; thread-safe."""

    def __init__(self, memory_bytes: int = 2 << 30):
        self.memory_bytes = memory_bytes
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        env = {**os.environ, "SVG_WORKER_MEMORY": str(self.memory_bytes)}
        self._proc = subprocess.Popen([sys.executable, "-u", "-c", _WORKER_SRC], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        return self._proc

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def _read(self, proc: subprocess.Popen, n: int, deadline: float) -> bytes:
        fd = proc.stdout.fileno()  # type: ignore[union-attr]
        buf = b""
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def render(self, kwargs: dict, timeout: float) -> bytes:
        with self._lock:
            proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
            data = pickle.dumps(kwargs)
            try:
                proc.stdin.write(struct.pack("<I", len(data)) + data)  # type: ignore[union-attr]
                proc.stdin.flush()  # type: ignore[union-attr]
                deadline = time.monotonic() + timeout
                size = struct.unpack("<I", self._read(proc, 4, deadline))[0]
                ok, payload = pickle.loads(self._read(proc, size, deadline))
            except TimeoutError:
                self.close()
                raise SVGError(f"rendering took longer than {timeout:g} s; simplify the drawing") from None
            except (EOFError, OSError, struct.error, pickle.UnpicklingError):
                self.close()
                raise SVGError("the renderer crashed on this SVG (too much memory?); simplify the drawing") from None
        if not ok:
            raise SVGError(f"the SVG could not be rendered: {printable(payload)}")
        return payload


_WORKER: RenderWorker | None = None
_WORKER_LOCK = threading.Lock()


def shared_worker() -> RenderWorker:
    """This process's render worker (started on first use, killed at exit)."""
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None:
            _WORKER = RenderWorker()
            atexit.register(_WORKER.close)
        return _WORKER


def render_svg(svg: str, height: int, width: int, background: str = "#ffffff", system_fonts: bool = False,
               timeout: float | None = None) -> np.ndarray:
    """Rasterise an SVG document to an ``(height, width, 3)`` uint8 array (stretched to fit).

    With ``timeout`` (seconds) resvg runs in the shared worker process and a slower render
    raises :class:`SVGError`; with None it runs in this process (no time limit).
    """
    from PIL import Image

    kwargs = {"svg_string": svg, "width": width, "height": height, "background": background,
              "skip_system_fonts": not system_fonts}
    if timeout is not None:
        png = shared_worker().render(kwargs, timeout)
    else:
        import resvg_py

        try:
            png = resvg_py.svg_to_bytes(**kwargs)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # resvg raises ValueError; a Rust panic arrives as a BaseException
            raise SVGError(f"the SVG could not be rendered: {printable(e)}") from None
    try:
        with Image.open(io.BytesIO(png)) as im:
            im = im.convert("RGB")
            if im.size != (width, height):
                im = im.resize((width, height), Image.BILINEAR)
            return np.asarray(im, dtype=np.uint8).copy()
    except Exception as e:
        raise SVGError(f"the rendered image could not be decoded: {printable(e)}") from None
