"""`docker` tier: every osworld-lite task in desktop containers (host networking, loopback only)."""

from __future__ import annotations

import os

import pytest

import envs
from sandboxes.pool import SandboxPool
from sandboxes.providers import make_provider
from tests.envs.osworld.suite_runner import check_suite, play
from tests.sandboxes.test_docker import _base_image

pytestmark = [pytest.mark.docker, pytest.mark.timeout(2400)]


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    from sandboxes.providers.docker import build_image

    os.environ["VAGEN_SANDBOX_STATE_DIR"] = str(tmp_path_factory.mktemp("state"))
    image = build_image("desktop", base_image=_base_image())
    p = SandboxPool(make_provider("docker", image=image, network="host", mem_limit="2g", cpus=1.0), size=1)
    yield p
    p.close()


def test_every_task_oracle_one_noop_zero_fail_inverted_in_containers(pool):
    # three containers play a third of the suite each, side by side (most of an episode is waiting
    # for the screen to settle; each container has its own CPU limit)
    provider = make_provider("docker", image=pool.provider.image, network="host", mem_limit="2g", cpus=1.0)
    with SandboxPool(provider, size=3) as pool3:
        pairs = [(envs.make("osworld", pool=pool3), envs.make("osworld", pool=pool3, max_steps=1)) for _ in range(3)]
        try:
            scores = check_suite(pairs)
        finally:
            for env, noop in pairs:
                env.close()
                noop.close()
    assert len(scores) >= 40


def test_container_home_and_user_are_the_sandbox_users(pool):
    env = envs.make("osworld", pool=pool, task_ids=["os-write-hello"])
    try:
        ret, info = play(env, "os-write-hello")
        assert ret == 1.0
        env.reset(seed=0)
        assert env.vm.home == "/home/agent"
        assert env.vm.client.execute("id -un", timeout=10).output.strip() == "agent"
        assert env.vm.has_wrapper  # vagen-chromium: CDP on the container's own port
    finally:
        env.close()
