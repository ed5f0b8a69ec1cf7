"""Shared fixtures and the tier rules.

Tiers: default (no marker), `desktop`, `docker`, `slow`, `gpu`. A test whose
requirement is missing is skipped with the reason — except under CI=true, where only
`gpu` may skip: CI installs everything else, so a missing requirement there is a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

# A hidden hub download must fail loudly, never succeed on a developer's machine only.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").lower() == "true"

# Property tests: no per-example deadline anywhere (examples that drive a browser, desktop or
# subprocess vary with the machine's load), and under CI a derandomized run (the same examples
# every time, so a CI failure reproduces).
try:
    from hypothesis import settings as _hyp_settings

    _hyp_settings.register_profile("dev", deadline=None)
    _hyp_settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
    _hyp_settings.load_profile("ci" if IN_CI else "dev")
except ImportError:  # hypothesis is a dev dependency
    pass


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _has_desktop() -> str | None:
    missing = [b for b in ("Xvfb", "chromium") if shutil.which(b) is None]
    return f"missing {', '.join(missing)} (make test installs them as root)" if missing else None


def _has_docker() -> str | None:
    if shutil.which("docker") is None:
        return "docker CLI not installed"
    r = subprocess.run(["docker", "info"], capture_output=True, timeout=20)
    return None if r.returncode == 0 else "no running Docker engine (CI starts dockerd)"


def _xdist_group(item) -> str:
    """Which tests must share one pytest-xdist worker (`--dist loadgroup`, scripts/test.sh).

    Every `docker` test: they build the same images and some remove every container with our
    label (`vagen sandbox down --all`). Otherwise one file: module- and session-scoped fixtures
    (desktops, browsers, tiny models) are built once per file, not once per test."""
    return _group_key(item.keywords, item.nodeid)


def _group_key(keywords, nodeid: str) -> str:
    return "docker" if "docker" in keywords else nodeid.split("::", 1)[0]


GROUP_WEIGHTS = Path(__file__).with_name("group_weights.json")


def _group_weights() -> dict[str, float]:
    """Seconds each xdist group took in a measured CI run (tests/group_weights.json, refreshed
    from the `.ci/group-times.json` that `make ci` leaves); unknown groups weigh 0."""
    import json

    try:
        return {k: float(v) for k, v in json.loads(GROUP_WEIGHTS.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def pytest_collection_modifyitems(config, items):
    if config.pluginmanager.hasplugin("xdist") and getattr(config.option, "dist", "no") == "loadgroup":
        for item in items:
            if not item.get_closest_marker("xdist_group"):
                item.add_marker(pytest.mark.xdist_group(_xdist_group(item)))
        # Longest group first (LPT), so no long group starts last while the other worker idles:
        # scripts/test.sh turns off xdist's own order (by test count) with --no-loadscope-reorder.
        weights = _group_weights()
        items.sort(key=lambda it: -weights.get(_xdist_group(it), 0.0))
    reasons: dict[str, str | None] = {}
    for item in items:
        for marker, probe in (("gpu", None), ("desktop", _has_desktop), ("docker", _has_docker)):
            if marker not in item.keywords:
                continue
            if marker not in reasons:
                if marker == "gpu":
                    reasons[marker] = None if _has_cuda() else "needs a CUDA GPU"
                else:
                    reasons[marker] = probe()
            reason = reasons[marker]
            if reason and (marker == "gpu" or not IN_CI):
                item.add_marker(pytest.mark.skip(reason=f"{marker}: {reason}"))


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    """Tiny checkpoints built by tests go to a per-session cache, not the user's."""
    if "VAGEN_TEST_CACHE_DIR" in os.environ:
        os.environ["VAGEN_CACHE_DIR"] = os.environ["VAGEN_TEST_CACHE_DIR"]
    else:
        os.environ["VAGEN_CACHE_DIR"] = str(tmp_path_factory.mktemp("vagen-cache"))
    yield


@pytest.fixture(scope="session")
def tiny_path() -> Path:
    from vagen.models import tiny_model_path

    return tiny_model_path("qwen2_5_vl")


@pytest.fixture(scope="session")
def tiny_policy(tiny_path):
    from vagen.policy.hf import HFPolicy

    return HFPolicy(str(tiny_path), device="cpu")


@pytest.fixture
def rgb_image():
    import numpy as np

    return (np.random.RandomState(0).rand(72, 96, 3) * 255).astype("uint8")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ThreadServer:
    """A real uvicorn server on loopback, run in a thread for the test's duration."""

    def __init__(self, app):
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def thread_server():
    return ThreadServer


def run_cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the installed `vagen` console script (the real entry point) and capture output."""
    exe = Path(sys.executable).with_name("vagen")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "vagen.cli"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=REPO)


def synth_gui(out: Path, n: int, seed: int = 0) -> Path:
    """A small `vagen synth gui --backend html` dataset (needs Chromium: desktop tier)."""
    r = run_cli("synth", "gui", "--n", str(n), "--seed", str(seed), "--out", str(out), timeout=500)
    assert r.returncode == 0, r.stderr[-2000:]
    return out


# -- CI reporting: time per test group, and a failure summary scripts/test.sh prints last --------
_GROUP_TIME: dict[str, float] = {}
_XDIST_GROUP_TIME: dict[str, float] = {}
_WORKERS: dict[str, list[float]] = {}  # worker -> [first start, last stop, busy seconds]
_FAILED: dict[str, str] = {}


def _group_of(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return path.rsplit("/", 1)[0] if "/" in path else path


def _first_line(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    lines = [x for x in text.splitlines() if x.strip()]
    return lines[0][:300] if lines else ""


def pytest_runtest_logreport(report):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a worker: the controller aggregates what the workers send it
    _GROUP_TIME[_group_of(report.nodeid)] = _GROUP_TIME.get(_group_of(report.nodeid), 0.0) + report.duration
    node = getattr(report, "node", None)  # set by xdist on the controller
    if node is not None:
        group = _group_key(report.keywords, report.nodeid)
        _XDIST_GROUP_TIME[group] = _XDIST_GROUP_TIME.get(group, 0.0) + report.duration
        start, stop = getattr(report, "start", None), getattr(report, "stop", None)
        if start is not None and stop is not None:
            w = _WORKERS.setdefault(node.gateway.id, [start, stop, 0.0])
            w[0], w[1], w[2] = min(w[0], start), max(w[1], stop), w[2] + (stop - start)
    if report.failed and report.nodeid not in _FAILED:
        what = "" if report.when == "call" else f" (in {report.when})"
        _FAILED[report.nodeid] = _first_line(report) + what


def pytest_collectreport(report):
    if report.failed and not os.environ.get("PYTEST_XDIST_WORKER"):
        _FAILED[report.nodeid or "collection"] = _first_line(report) + " (collecting)"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if os.environ.get("PYTEST_XDIST_WORKER") or not _GROUP_TIME:
        return
    tr = terminalreporter
    tr.section("time per test group (summed over tests; workers run groups side by side)")
    for group, secs in sorted(_GROUP_TIME.items(), key=lambda kv: -kv[1]):
        tr.write_line(f"{secs:8.1f} s  {group}")
    if _WORKERS:  # a worker that finished long before the others points at a badly ordered group
        t0 = min(w[0] for w in _WORKERS.values())
        tr.write_line("workers: " + "; ".join(f"{wid} busy {w[2]:.0f} s, done at {w[1] - t0:.0f} s"
                                              for wid, w in sorted(_WORKERS.items())))
    times = os.environ.get("VAGEN_TEST_GROUP_TIMES")
    if times and _XDIST_GROUP_TIME:
        import json

        Path(times).write_text(json.dumps({k: round(v, 1) for k, v in sorted(
            _XDIST_GROUP_TIME.items(), key=lambda kv: -kv[1])}, indent=0) + "\n")
    out = os.environ.get("VAGEN_TEST_FAILURES")
    if out:
        Path(out).write_text("".join(f"{nodeid} - {msg}\n" for nodeid, msg in _FAILED.items()))
