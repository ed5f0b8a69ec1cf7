"""Runs tests/train/test_ray.py inside a private network namespace (``unshare --net``, only
loopback up), so the local Ray cluster's servers and all its traffic stay on 127.0.0.1 (on
the host network Ray would listen on the machine's address). Needs root, as CI runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parents[2]


def _in_netns(marker: str) -> None:
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        pytest.skip("needs root with unshare and ip (CI runs as root)")
    inner = (f"ip link set lo up && exec env VAGEN_TEST_NETNS=1 {sys.executable} -m pytest -q -p no:cacheprovider "
             f"-m '{marker}' tests/train/test_ray.py")
    proc = subprocess.run(["unshare", "--net", "--", "sh", "-c", inner], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    tail = proc.stdout[-6000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, tail
    assert " passed" in proc.stdout and " skipped" not in proc.stdout.splitlines()[-1], tail


def test_ray_suite_in_a_private_network_namespace(request):
    # One inner session (one local Ray cluster) for all of test_ray.py, or for its quick tests
    # only when this session deselects the slow tier (`-m "not slow"`).
    outer = request.config.getoption("markexpr") or ""
    _in_netns("not slow" if "not slow" in outer else "not gpu")
