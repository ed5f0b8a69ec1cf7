import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from tests.conftest import REPO, run_cli
from vagen.config import load_config
from vagen.train.rl import RLTrainer

FAST = ["rollout.groups=2", "rollout.group_size=2", "rollout.max_turns=2", "sampling.max_tokens=8",
        "env.params.observation=text", "prompt.format=no_think", "prompt.system_prompt=minimal",
        "trainer.mini_batch_size=4", "trainer.micro_batch_size=2", "trainer.tensorboard=false",
        "model.device=cpu", "trainer.lr=1e-3", "reward.format_penalty=-0.1"]
REQUIRED = {"step", "success", "return", "reward/format", "reward/world_model", "loss"}


@pytest.mark.parametrize("advantage", ["grpo", "rloo", "reinforce_pp", "gae", "turn_gae", "bilevel_gae", "gigpo"])
def test_one_rl_step_per_estimator(tmp_path, advantage):
    cfg = load_config("train/frozenlake", FAST + [f"algo.advantage={advantage}", "algo.filter=none",
                                                  f"trainer.out_dir={tmp_path}", "trainer.steps=1"])
    tr = RLTrainer(cfg)
    before = {k: v.clone() for k, v in tr.actor.state_dict().items()}
    m = tr.train_step()
    assert REQUIRED - {"step", "loss"} <= set(m) and all(v == v for v in m.values() if isinstance(v, float))
    assert m["train/samples"] > 0 and tr.policy.policy_version == 1
    if tr.critic is not None:
        assert "loss/value" in m
    if m["actor/grad_norm"] > 0:
        assert any(not torch.equal(before[k], v) for k, v in tr.actor.state_dict().items())


def test_kl_reference_and_lora(tmp_path):
    cfg = load_config("train/frozenlake", FAST + ["algo.kl_coef=0.1", "model.lora_rank=4",
                                                  f"trainer.out_dir={tmp_path}", "trainer.steps=1"])
    tr = RLTrainer(cfg)
    m = tr.train_step()
    assert "actor/kl" in m
    trainable = [n for n, p in tr.actor.named_parameters() if p.requires_grad]
    assert trainable and all("lora" in n for n in trainable)


@pytest.mark.parametrize("prompt", [["prompt.history=none"], ["prompt.history=full", "prompt.max_images=2"]])
def test_bad_sample_mode_combination_is_refused_at_load(tmp_path, prompt):
    from vagen.config import ConfigError

    with pytest.raises((ConfigError, ValueError), match="history=full and prompt.max_images=0"):
        load_config("train/frozenlake", FAST + ["algo.advantage=bilevel_gae", "trainer.sample_mode=trajectory",
                                                *prompt, f"trainer.out_dir={tmp_path}"])


def test_vagen_train_cli_writes_the_run_dir(tmp_path):
    run = tmp_path / "run"
    r = run_cli("train", "frozenlake", *FAST, f"trainer.out_dir={run}", "trainer.steps=2", "trainer.val_every=2",
                "trainer.val_episodes=4", "algo.advantage=gigpo")
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    assert REQUIRED <= set(rows[0]) and "val/success_greedy" in rows[1]
    assert (run / "config.yaml").exists() and (run / "summary.json").exists()
    assert (run / "plots" / "overview.png").exists()
    ckpt = sorted((run / "checkpoints").glob("step_*"))[-1]
    from transformers import AutoModelForImageTextToText

    AutoModelForImageTextToText.from_pretrained(ckpt / "model")
    r = run_cli("plot", str(run))
    assert r.returncode == 0 and "success.png" in r.stdout


def test_vagen_train_rejects_bad_keys():
    r = run_cli("train", "frozenlake", "algo.advantag=grpo")
    assert r.returncode != 0 and "did you mean 'advantage'" in r.stderr
    r = run_cli("train", "frozenlake", "preset=nope")
    assert r.returncode != 0 and "no preset" in r.stderr


def _train_cmd(run, steps, *extra):
    exe = os.path.join(os.path.dirname(sys.executable), "vagen")
    return [exe, "train", "frozenlake", *FAST, f"trainer.out_dir={run}", f"trainer.steps={steps}",
            "algo.advantage=bilevel_gae", "trainer.save_every=1", "trainer.lr_schedule=cosine", *extra]


def _rows(run):
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: {k: v for k, v in r.items() if not k.startswith("time/")} for r in rows}


def test_kill_and_resume_matches_an_uninterrupted_run(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    full = tmp_path / "full"
    subprocess.run(_train_cmd(full, 4), cwd=REPO, env=env, check=True, capture_output=True, timeout=600)
    killed = tmp_path / "killed"
    proc = subprocess.Popen(_train_cmd(killed, 4), cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not (killed / "checkpoints" / "step_000002" / "trainer_state.json").exists():
        assert proc.poll() is None and time.time() < deadline, "run ended before it could be killed"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    subprocess.run(_train_cmd(killed, 4, "trainer.resume=auto"), cwd=REPO, env=env, check=True,
                   capture_output=True, timeout=600)
    a, b = _rows(full), _rows(killed)
    assert sorted(b) == [1, 2, 3, 4]
    for step in (3, 4):
        assert a[step].keys() == b[step].keys()
        for k in a[step]:
            assert a[step][k] == pytest.approx(b[step][k], rel=1e-6, abs=1e-7), (step, k)
