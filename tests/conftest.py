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


def pytest_collection_modifyitems(config, items):
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
