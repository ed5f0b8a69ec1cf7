"""One thread owns every MuJoCo offscreen GL context (navigation, primitive_skill).

An EGL/OSMesa context is current in at most one thread, and ``mujoco.Renderer`` makes its
context current in the thread that created it. Rollouts step envs from a thread pool, so a
renderer made in one thread and used from another fails (``EGLError: EGL_BAD_ACCESS``).
Every renderer is therefore created, used and closed through :func:`gl_call`, which runs the
function on a single daemon thread. Rendering is serialised across the envs of a process, which
costs little on the CPU: mesa's llvmpipe already spreads one frame over the cores.

``MUJOCO_GL`` defaults to ``egl`` (mesa's software rasteriser when there is no GPU); set it to
``osmesa`` before the first env is made to use OSMesa instead.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

os.environ.setdefault("MUJOCO_GL", "egl")

T = TypeVar("T")
_LOCK = threading.Lock()
_EXECUTOR: ThreadPoolExecutor | None = None


def _executor() -> ThreadPoolExecutor:
    global _EXECUTOR
    with _LOCK:
        if _EXECUTOR is None:
            _EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vagen-gl")
        return _EXECUTOR


def on_gl_thread() -> bool:
    return threading.current_thread().name.startswith("vagen-gl")


def _preload_torchvision() -> None:
    """Load torchvision's native ops before mesa's GL libraries enter the process.

    Measured here: once an EGL context (mesa llvmpipe) exists, a first ``import torchvision.ops``
    (transformers' VLM processors import it) dies with a segmentation fault; loaded first, both
    work. Without torchvision installed this is a no-op.
    """
    try:
        import torchvision.ops  # noqa: F401
    except Exception:  # noqa: BLE001 - not installed / broken: nothing to protect
        pass


def gl_call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, **kwargs)`` on the GL thread and return its result (exceptions propagate)."""
    if _EXECUTOR is None:
        _preload_torchvision()
    if on_gl_thread():
        return fn(*args, **kwargs)
    return _executor().submit(fn, *args, **kwargs).result()


def renderer_error(env: str, exc: BaseException) -> RuntimeError:
    """The error an env raises when no offscreen renderer can be created."""
    return RuntimeError(
        f"{env}: could not create a MuJoCo offscreen renderer (MUJOCO_GL={os.environ.get('MUJOCO_GL')!r}): "
        f"{exc}. Install the Debian packages libegl1 libegl-mesa0 libgl1-mesa-dri (software rendering works), "
        "or libosmesa6 and set MUJOCO_GL=osmesa.")
