"""Browser sandboxes (CDP on loopback) through the sandbox pool, driving the web envs.

`desktop` tier: ``local-browser`` (Chromium processes); `docker` tier: ``docker-browser``
(the vagen/browser image, unprivileged, limits)."""

from __future__ import annotations

import os
import time

import pytest

import envs
from envs.base import EnvInfraError
from sandboxes.pool import SandboxPool, pool_kind
from sandboxes.providers import make_provider
from sandboxes.providers.browser import cdp_version


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("VAGEN_SANDBOX_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def play(env, task, seed=0):
    obs, info = env.reset(seed=seed, options={"task_id": task})
    reward, done = 0.0, False
    for _ in range(8):
        plan = info["state"]["oracle"]
        _, reward, done, _, info = env.step(plan[0])
        if done:
            break
    return reward, done


def test_pool_kind_picks_browsers_only_when_asked():
    from vagen.config.schema import SandboxConfig

    web, osw = envs.env_class("miniwob"), envs.env_class("osworld")
    assert pool_kind(web, SandboxConfig()) is None  # launches its own Chromium
    assert pool_kind(web, SandboxConfig(kind="browser")) == "browser"
    assert pool_kind(osw, SandboxConfig()) == "desktop"
    with pytest.raises(ValueError, match="needs desktop sandboxes"):
        pool_kind(osw, SandboxConfig(kind="browser"))


@pytest.mark.desktop
def test_local_browser_pool_serves_web_envs_and_replaces_a_dead_browser(state_dir):
    pool = SandboxPool(make_provider("local-browser"), size=2, health_interval=1.0)
    try:
        handles = list(pool._idle)
        assert all(h.url.startswith("http://127.0.0.1:") and h.token == "" for h in handles)
        assert all("Browser" in cdp_version(h.url) for h in handles)
        a = envs.make("miniwob", pool=pool, observation="axtree")
        b = envs.make("web", pool=pool, observation="axtree")
        try:
            assert a.serve == "route"  # the pages travel through the env, not the browser's disk
            assert play(a, "click-checkboxes") == (1.0, True)
            assert play(b, "acme-login") == (1.0, True)
            assert a.browser.pid() is None  # not a child of ours: a sandbox over CDP
            assert pool.metrics()["leased"] == 2
            # the sandbox's browser dies mid-episode: an infra error, then a replacement
            a.reset(seed=1, options={"task_id": "click-button"})
            pool.provider.kill(a._lease.handle)
            with pytest.raises(EnvInfraError):
                a.step("noop(wait_ms=0)")
            deadline = time.monotonic() + 60
            while True:
                try:
                    assert play(a, "click-button", seed=2) == (1.0, True)
                    break
                except EnvInfraError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            assert pool.metrics()["lost"] + pool.metrics()["health_failures"] >= 1
            assert pool.metrics()["replacements"] >= 1
        finally:
            a.close()
            b.close()
        pool.wait_idle(2, timeout=60)  # released browsers were restarted (fresh profiles)
        assert pool.metrics()["resets"] >= 1
    finally:
        pool.close()
    assert not list(state_dir.glob("*.json"))  # records dropped


@pytest.mark.desktop
def test_local_browser_provider_reset_is_a_fresh_process_and_stop_cleans_up(state_dir):
    with make_provider("local-browser") as prov:
        (h,) = prov.start(1)
        pid, profile = h.meta["pid"], h.meta["profile"]
        assert os.path.isdir(profile) and prov.healthy(h)
        fresh = prov.reset(h)
        assert fresh.url == h.url and fresh.meta["pid"] != pid and not os.path.exists(profile)
        assert prov.healthy(fresh)
        prov.stop(fresh)
        assert not prov.alive(fresh) and cdp_version(fresh.url) is None
        assert not os.path.exists(fresh.meta["profile"])


@pytest.mark.docker
def test_docker_browser_sandbox_runs_unprivileged_and_serves_miniwob(state_dir):
    from sandboxes.providers.docker import build_image
    from tests.sandboxes.test_docker import _base_image

    build_image("browser", base_image=_base_image())
    pool = SandboxPool(make_provider("docker-browser", mem_limit="768m"), size=1)
    try:
        (h,) = list(pool._idle)
        c = pool.provider._container(h)
        attrs = c.attrs
        assert attrs["HostConfig"]["CapDrop"] == ["ALL"] and "no-new-privileges" in attrs["HostConfig"]["SecurityOpt"]
        assert attrs["HostConfig"]["Memory"] == 768 * 2**20 and attrs["Config"]["User"] == "agent"
        assert c.exec_run("id -u").output.decode().strip() != "0"
        env = envs.make("miniwob", pool=pool, observation="axtree")
        try:
            assert play(env, "enter-text") == (1.0, True)
            assert play(env, "click-tab", seed=3) == (1.0, True)
        finally:
            env.close()
        pool.wait_idle(1, timeout=120)  # docker restart: a fresh profile for the next lease
        assert pool.metrics()["resets"] == 1
    finally:
        pool.close()


@pytest.mark.desktop
def test_cli_up_ls_down_local_browsers_and_remote_browser_pool(state_dir):
    import json

    from tests.conftest import run_cli

    env = {"VAGEN_SANDBOX_STATE_DIR": str(state_dir)}
    r = run_cli("sandbox", "up", "--provider", "local-browser", "-n", "1", "--json", env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    (box,) = json.loads(r.stdout)
    try:
        assert box["provider"] == "local-browser" and box["token"] == ""
        assert "Browser" in cdp_version(box["url"])  # outlives the command that started it
        r = run_cli("sandbox", "ls", "--json", env=env)
        assert {x["id"]: x["status"] for x in json.loads(r.stdout)} == {box["id"]: "ok"}
        r = run_cli("sandbox", "exec", box["id"], "--", "true", env=env)
        assert r.returncode == 2 and "browser sandbox" in r.stderr
        # the running browser serves as a remote-browser pool (as compose browsers would)
        with SandboxPool(make_provider("remote-browser", urls=[box["url"]]), size=1) as pool:
            e = envs.make("web", pool=pool, observation="axtree")
            try:
                assert play(e, "acme-settings") == (1.0, True)
            finally:
                e.close()
            assert "Browser" in cdp_version(box["url"])  # disconnecting leaves the remote browser running
    finally:
        r = run_cli("sandbox", "down", "--all", env=env)
    assert r.returncode == 0 and box["id"] in r.stdout
    assert cdp_version(box["url"]) is None
