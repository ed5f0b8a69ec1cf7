"""`docker` tier: real images and containers (host networking, loopback only).

CI starts dockerd and builds the registry-free base image (scripts/build-base-image.sh);
these tests build the desktop and browser images from dockerfiles/ on top of it (the
layer cache makes a rebuild of an unchanged image take seconds).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import threading
import time

import httpx
import pytest

from sandboxes.client import SandboxClient, SandboxLost, SandboxUnavailable
from tests.conftest import REPO

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]
BASE = os.environ.get("VAGEN_TEST_BASE_IMAGE", "vagen/debian:bookworm")


def _base_image() -> str:
    r = subprocess.run(["docker", "image", "inspect", BASE], capture_output=True)
    if r.returncode != 0:
        subprocess.run(["bash", str(REPO / "scripts" / "build-base-image.sh"), BASE], check=True, timeout=900)
    return BASE


@pytest.fixture(scope="module")
def desktop_image():
    from sandboxes.providers.docker import build_image

    return build_image("desktop", base_image=_base_image())


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("VAGEN_SANDBOX_STATE_DIR", str(tmp_path / "state"))


def wait_for(pred, timeout=15.0, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(interval)
    return bool(pred())


def scenario(client: SandboxClient, word: str) -> None:
    client.input([{"type": "click", "x": 400, "y": 300}, {"type": "type", "text": f"echo {word} > ~/note.txt"},
                  {"type": "key", "keys": "enter"}])
    assert wait_for(lambda: client.execute("cat ~/note.txt 2>/dev/null", shell=True).output.strip() == word)
    assert word in (client.terminal() or "")
    img = client.screenshot_array(cursor=False)
    assert img.shape == (800, 1280, 3) and img.std() > 10


def test_desktop_container_is_unprivileged_and_limited(desktop_image, state_dir):
    from sandboxes.providers import make_provider

    with make_provider("docker", image=desktop_image) as prov:
        (h,) = prov.start(1)
        with h.client() as c:
            assert c.health()["user"] == "agent"
            assert c.execute(["id", "-u"]).output.strip() == "1000"
            # The agent cannot kill the control server (root) or the X server.
            c.execute("pkill -KILL -f sandboxes.server; pkill -KILL Xvfb; kill -9 1", shell=True)
            assert c.health()["status"] == "ok"
            assert "token" not in c.execute("env", shell=True).output.lower()
            r = c.execute(["cat", "/run/vagen/token"])
            assert r.returncode != 0  # the healthcheck's copy is root-only
            scenario(c, "docker-hello")
            c.launch(["xterm", "-title", "stray", "-e", "sleep", "600"])
            assert wait_for(lambda: any(w["title"] == "stray" for w in c.windows()))
            prov.reset(h)  # its latency is a figure: benchmarks/sandbox.py
            assert c.execute("ls ~/note.txt 2>/dev/null; true", shell=True).output == ""
            assert not any(w["title"] == "stray" for w in c.windows())
            assert "docker-hello" not in (c.terminal() or "")
        from sandboxes.providers.docker import server_hash

        assert prov.client.images.get(desktop_image).labels["org.vagen.server-hash"] == server_hash()
        hc = prov.client.api.inspect_container(h.meta["container"])["HostConfig"]
        assert hc["CapDrop"] == ["ALL"] and "no-new-privileges" in hc["SecurityOpt"][0]
        assert hc["Memory"] == 2 * 1024**3 and hc["PidsLimit"] == 1024 and hc["NanoCpus"] == 10**9
        assert hc["NetworkMode"] == "host" and hc["Init"] is True


def test_two_sandboxes_in_parallel_and_one_dies_mid_episode(desktop_image, state_dir):
    from sandboxes.pool import SandboxPool
    from sandboxes.providers import make_provider

    prov = make_provider("docker", image=desktop_image)
    pool = SandboxPool(prov, size=2, health_interval=1.0)
    try:
        a, b = pool.lease(), pool.lease()
        # The same scenario in both, concurrently.
        errors: list[BaseException] = []

        def run(lease, word):
            try:
                scenario(lease.client, word)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=run, args=(x, w)) for x, w in ((a, "alpha"), (b, "beta"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        # Kill a's container mid-episode while b keeps going.
        survivor = threading.Thread(target=run, args=(b, "beta-two"))
        survivor.start()
        prov.kill(a.handle)
        with pytest.raises(SandboxLost):
            a.client.screenshot()
        survivor.join(120)
        assert not errors, errors
        a.release()
        b.release()
        pool.wait_idle(2, timeout=120)
        m = pool.metrics()
        assert m["lost"] == 1 and m["replacements"] == 1 and m["idle"] == 2
        with pool.lease() as x, pool.lease() as y:
            for lease in (x, y):
                assert lease.client.execute("ls ~/note.txt 2>/dev/null; true", shell=True).output == ""
            scenario(x.client, "after")
    finally:
        pool.close()
        prov.close()
    from sandboxes.providers.docker import list_containers

    assert [c for c in list_containers() if c["status"] == "running" and c["id"] in {a.handle.id, b.handle.id}] == []


def test_reset_modes_all_restore_a_clean_state(desktop_image, state_dir):
    from sandboxes.providers import make_provider

    for mode in ("restart", "recreate"):
        with make_provider("docker", image=desktop_image, reset_mode=mode) as prov:
            (h,) = prov.start(1)
            with h.client() as c:
                c.execute("echo x > ~/litter.txt", shell=True)
            h2 = prov.reset(h)
            with h2.client() as c:
                assert c.health()["status"] == "ok"
                assert c.execute("ls ~/litter.txt 2>/dev/null; true", shell=True).output == "", mode


def test_cli_up_and_down_with_docker(desktop_image, state_dir, tmp_path):
    import json

    from tests.conftest import run_cli

    env = {"VAGEN_SANDBOX_STATE_DIR": os.environ["VAGEN_SANDBOX_STATE_DIR"]}
    other = {"VAGEN_SANDBOX_STATE_DIR": str(tmp_path / "other-state")}  # another session's records
    r = run_cli("sandbox", "up", "--provider", "docker", "-n", "1", "--json", "--image", desktop_image, env=other)
    assert r.returncode == 0, r.stderr
    (theirs,) = json.loads(r.stdout)
    r = run_cli("sandbox", "up", "--provider", "docker", "-n", "1", "--json", "--image", desktop_image, env=env)
    assert r.returncode == 0, r.stderr
    (box,) = json.loads(r.stdout)
    with SandboxClient(box["url"], box["token"]) as c:
        assert c.health()["status"] == "ok"
    r = run_cli("sandbox", "exec", box["id"], "--", "whoami", env=env)
    assert r.stdout.strip() == "agent"
    r = run_cli("sandbox", "down", "--all", env=env)
    assert box["id"] in r.stdout and theirs["id"] not in r.stdout
    from sandboxes.providers.docker import list_containers

    assert any(c["id"] == theirs["id"] for c in list_containers())  # --all: this records folder only
    r = run_cli("sandbox", "down", "--all", env=other)
    assert theirs["id"] in r.stdout

    assert all(c["id"] != box["id"] for c in list_containers())


def test_down_all_survives_containers_removed_while_it_runs(state_dir, monkeypatch):
    """`sandbox down --all` lists our containers, then inspects and removes each; one that another
    process removes in between (a pool replacing a dead sandbox, a second `down`) must not stop it
    (it once failed with 'No such container' and left the rest running)."""
    from sandboxes.providers import docker as dp
    from sandboxes.providers.base import state_dir as records_dir

    client = dp.docker_client()
    labels = {dp.LABEL: "1", dp.STATE_LABEL: str(records_dir())}
    boxes = [client.containers.create(_base_image(), "true", labels={**labels, "vagen.id": f"docker-race{i}"})
             for i in range(3)]
    try:
        from docker.models.containers import ContainerCollection

        real_get, real_remove = ContainerCollection.get, client.api.remove_container
        state = {"inspected": 0, "removed": 0}

        ours = {b.id for b in boxes}

        def get_after_another_removed_it(self, cid, *a, **kw):  # the first one vanishes before its inspect
            state["inspected"] += cid in ours
            if cid in ours and state["inspected"] == 1:
                real_remove(cid, force=True)
            return real_get(self, cid, *a, **kw)

        def remove_after_another_removed_it(cid, *a, **kw):  # the next one vanishes before its removal
            state["removed"] += cid in ours
            if cid in ours and state["removed"] == 1:
                real_remove(cid, force=True)
            return real_remove(cid, *a, **kw)

        monkeypatch.setattr(ContainerCollection, "get", get_after_another_removed_it)
        monkeypatch.setattr(client.api, "remove_container", remove_after_another_removed_it)
        monkeypatch.setattr(dp, "docker_client", lambda: client)
        removed = dp.remove_all(this_state_dir=True)
        assert state == {"inspected": 3, "removed": 2}
        # the one gone before its inspection is not listed; the one gone before its removal is
        assert len(removed) == 2 and set(removed) < {f"docker-race{i}" for i in range(3)}
        assert not [c for c in dp.list_containers() if c["id"] and c["id"].startswith("docker-race")]
    finally:
        for b in boxes:
            subprocess.run(["docker", "rm", "-f", b.id], capture_output=True)


@pytest.mark.skipif(shutil.which("docker-compose") is None and shutil.which("docker") is None, reason="no compose")
def test_compose_up_health_down(desktop_image):
    from sandboxes.providers.docker import build_image

    build_image("browser", base_image=_base_image())
    from tests.conftest import free_port

    compose = ["docker-compose"] if shutil.which("docker-compose") else ["docker", "compose"]
    token = secrets.token_urlsafe(16)
    # free ports instead of the file's defaults (45101, ...): with host networking a default that
    # another process on the machine happens to hold would keep a sandbox from starting
    ports = {name: free_port() for name in ("DESKTOP1", "DESKTOP1_CDP", "DESKTOP2", "DESKTOP2_CDP", "BROWSER1_CDP")}
    env = {**os.environ, "VAGEN_SANDBOX_TOKEN": token, "BASE_IMAGE": BASE,
           **{f"VAGEN_{name}_PORT": str(port) for name, port in ports.items()}}
    files = ["-f", str(REPO / "dockerfiles" / "docker-compose.yml"), "-f",
             str(REPO / "dockerfiles" / "docker-compose.host.yml")]
    project = ["-p", f"vagentest{secrets.token_hex(3)}"]
    up = subprocess.run(compose + project + files + ["up", "-d", "--no-build"], env=env, capture_output=True,
                        text=True, timeout=300)

    def logs() -> str:
        r = subprocess.run(compose + project + files + ["logs", "--tail", "30"], env=env, capture_output=True,
                           text=True, timeout=60)
        return r.stdout[-4000:] + r.stderr[-1000:]

    try:
        assert up.returncode == 0, up.stderr
        for port in (ports["DESKTOP1"], ports["DESKTOP2"]):
            with SandboxClient(f"http://127.0.0.1:{port}", token, timeout=5) as c:
                try:  # a loaded 2-core machine starts two desktops and a browser at once: be patient
                    assert c.wait_ready(timeout=180)["status"] == "ok"
                except SandboxUnavailable as e:
                    raise AssertionError(f"{e}\ncompose logs:\n{logs()}") from e
                assert c.execute(["whoami"]).output.strip() == "agent"
            assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 401
        assert wait_for(lambda: _cdp_ok(ports["BROWSER1_CDP"]), timeout=120, interval=0.5), logs()
    finally:
        down = subprocess.run(compose + project + files + ["down", "-t", "2"], env=env, capture_output=True,
                              text=True, timeout=300)
    assert down.returncode == 0, down.stderr


def _cdp_ok(port: int) -> bool:
    try:
        return "Browser" in httpx.get(f"http://127.0.0.1:{port}/json/version", timeout=2).json()
    except (httpx.HTTPError, ValueError):
        return False


def test_vnc_and_novnc_watchers(desktop_image, state_dir):
    import socket

    from sandboxes.providers import make_provider

    with make_provider("docker", image=desktop_image, vnc=True) as prov:
        (h,) = prov.start(1)
        ports = h.meta["ports"]

        def rfb_banner() -> bytes:
            try:
                with socket.create_connection(("127.0.0.1", ports["vnc"]), timeout=2) as s:
                    return s.recv(12)
            except OSError:
                return b""

        assert wait_for(lambda: rfb_banner().startswith(b"RFB "), timeout=30, interval=0.5)

        def novnc_page() -> bool:
            try:
                return "noVNC" in httpx.get(f"http://127.0.0.1:{ports['novnc']}/vnc.html", timeout=2).text
            except httpx.HTTPError:
                return False

        assert wait_for(novnc_page, timeout=30, interval=0.5)
