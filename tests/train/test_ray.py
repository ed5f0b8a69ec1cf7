"""Ray rollout workers (cluster.backend=ray) on a local Ray bound to 127.0.0.1: 2 rollout actors
+ the trainer, weight pushes through the object store, a worker killed mid-batch replaced with
its trajectories dropped and counted (never trained on), async mode on actor sets, and clear
errors for configurations that cannot run."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from tests.train.test_trainer import FAST
from vagen.cluster import RolloutWorker
from vagen.config import load_config
from vagen.train.rl import RLTrainer

ray = pytest.importorskip("ray")  # a dev dependency: installed by `make setup`

# Ray's servers listen on the machine's address, so these tests run inside a network namespace
# of their own (only loopback: Ray then binds 127.0.0.1), started by tests/train/test_ray_netns.py.
pytestmark = pytest.mark.skipif(os.environ.get("VAGEN_TEST_NETNS") != "1",
                                reason="runs inside a private network namespace via test_ray_netns.py")

RAY = ["cluster.backend=ray", "cluster.rollout_workers=2", "rollout.groups=3", "algo.advantage=grpo",
       "algo.filter=none"]


@pytest.fixture(scope="module")
def local_ray():
    from vagen.cluster import init_ray
    from vagen.config.schema import ClusterConfig

    started = init_ray(ClusterConfig(backend="ray", local_num_cpus=4))
    yield
    if started:
        ray.shutdown()


def test_two_ray_rollout_actors_feed_the_trainer(local_ray, tmp_path):
    cfg = load_config("train/frozenlake", FAST + RAY + [f"trainer.out_dir={tmp_path}", "trainer.steps=2"])
    tr = RLTrainer(cfg)
    try:
        infos = tr.remote_rollouts[0].info()
        assert len(infos) == 2 and len({i["pid"] for i in infos}) == 2 and os.getpid() not in {i["pid"] for i in infos}
        for step in (1, 2):
            tr.step = step
            m = tr.train_step()
            assert m["rollout/trajectories"] == 6 and m["rollout/dropped_worker"] == 0 and m["ray/workers"] == 2
            assert m["sync/weights_s"] > 0 and m["train/samples"] > 0
        # the workers hold the trainer's latest version and stamp it on every turn they play
        assert [i["version"] for i in tr.remote_rollouts[0].info()] == [1, 1]
        trajs, _ = tr.produce(3)
        assert [(t.group_id, t.traj_id) for t in trajs] == [(g, g * 2 + k) for g in range(3) for k in range(2)]
        assert {u.policy_version for t in trajs for u in t.turns} == {2}
        # the trainer's weights reached both workers exactly
        mine = RolloutWorker.digest_of(tr.actor)
        assert ray.get([w.digest.remote() for w in tr.remote_rollouts[0].workers]) == [mine, mine]
    finally:
        tr.close()


def test_ray_listens_on_loopback_only(local_ray):
    import subprocess

    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    ray_lines = [ln for ln in out.splitlines() if any(n in ln for n in ("gcs_server", "raylet", "ray::"))]
    assert ray_lines, out
    hosts = {ln.split()[3].rsplit(":", 1)[0] for ln in ray_lines}
    assert hosts <= {"127.0.0.1", "[::1]", "[::ffff:127.0.0.1]"}, hosts


def test_a_killed_worker_is_replaced_and_its_trajectories_are_dropped_not_trained(local_ray, tmp_path):
    # A 2.5 s reset (latency env): the kill lands while the workers are mid-batch.
    slow = ["env.name=latency", "env.params.env=frozenlake", "env.params.reset_median_s=2.5",
            "env.params.reset_sigma=0", "env.params.step_median_s=0.05", "env.params.stall_p=0"]
    cfg = load_config("train/frozenlake", FAST + RAY + slow + [f"trainer.out_dir={tmp_path}", "trainer.steps=2"])
    tr = RLTrainer(cfg)
    try:
        victim = tr.remote_rollouts[0].info()[1]["pid"]
        threading.Timer(1.5, os.kill, (victim, signal.SIGKILL)).start()
        tr.step = 1
        m = tr.train_step()
        # worker 1 played group 1 (of 0, 1, 2): its 2 trajectories are dropped and counted
        assert m["rollout/dropped_worker"] == 2 and m["rollout/dropped_infra"] == 2
        assert m["ray/workers_replaced"] == 1 and m["rollout/trajectories"] == 6
        kept_turns = m["rollout/turns"] * 4  # mean turns over the 4 kept trajectories
        assert m["train/samples"] == pytest.approx(kept_turns)  # per-turn samples of kept ones only
        infos = tr.remote_rollouts[0].info()
        assert infos[1]["pid"] != victim  # replaced, holding the weights the others hold (the last push)
        assert infos[1]["version"] == infos[0]["version"] == 0
        workers = tr.remote_rollouts[0].workers
        assert ray.get(workers[1].digest.remote()) == ray.get(workers[0].digest.remote())
        tr.step = 2
        m2 = tr.train_step()  # the next batch: new seeds, both workers, nothing replayed
        assert m2["rollout/dropped_worker"] == 0 and m2["ray/workers_replaced"] == 1
    finally:
        tr.close()


@pytest.mark.slow
def test_async_training_on_ray_actor_sets(local_ray, tmp_path):
    cfg = load_config("train/frozenlake", FAST + RAY + ["trainer.rollout_mode=async", "trainer.max_staleness=1",
                                                        f"trainer.out_dir={tmp_path}", "trainer.steps=3"])
    tr = RLTrainer(cfg)
    assert len(tr.remote_rollouts) == 2  # eta + 1 sets of 2 actors
    summary = tr.run()
    assert summary["steps"] == 3
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all('"async/staleness"' in ln for ln in lines)


def test_configs_that_cannot_run_fail_clearly(local_ray, tmp_path):
    with pytest.raises(Exception, match="strategy=fsdp2 is not supported"):
        load_config("train/frozenlake", FAST + RAY + ["trainer.strategy=fsdp2"])
    cfg = load_config("train/frozenlake", FAST + RAY + [f"trainer.out_dir={tmp_path}", "cluster.worker_gpus=1",
                                                        "cluster.placement_timeout_s=3"])
    with pytest.raises(RuntimeError, match="could not place 2 rollout workers"):
        RLTrainer(cfg)
