"""Readiness of an opened app: its process group is idle (neither running nor waiting for a CPU)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sandboxes.server.desktop import Desktop

BUSY_THEN_SLEEP = "import time\nt = time.time()\nwhile time.time() - t < {busy}: pass\ntime.sleep(60)"


def _group(busy: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", BUSY_THEN_SLEEP.format(busy=busy)], start_new_session=True)


@pytest.fixture
def procs():
    started: list[subprocess.Popen] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def test_waits_out_a_busy_start_then_reports_idle(procs):
    procs.append(p := _group(1.0))
    assert Desktop.group_demand_ns(p.pid) is not None
    r = Desktop.wait_idle(p.pid, timeout=60)
    # idle only once the busy second is over (it used >= 1 s of CPU before sleeping)
    assert r["idle"] and r["waited"] >= 1.0
    assert Desktop.group_demand_ns(p.pid) >= 0.9e9


def test_a_group_that_never_settles_times_out_and_an_exited_one_says_so(procs):
    procs.append(p := _group(3600))
    r = Desktop.wait_idle(p.pid, timeout=1.0)
    assert not r["idle"] and not r.get("exited")
    p.kill()
    p.wait()
    assert Desktop.group_demand_ns(p.pid) is None
    r = Desktop.wait_idle(p.pid, timeout=5)
    assert r["exited"] and not r["idle"]
