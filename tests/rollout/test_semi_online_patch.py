"""The patch module: a mismatched turn is replaced in later turns' history by the expert's
action (thought-free, off-policy thought, on-policy thought), while the turn's own training
sample keeps the model's response — no expert token is ever trained on. Real pieces: the
tiny HF policy, the replay env on `vagen synth gui` data, the trainer's rollout side."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import synth_gui
from vagen.config import load_config

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(900)]
VAGEN = str(Path(sys.executable).with_name("vagen"))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = synth_gui(tmp_path_factory.mktemp("patch") / "synth", 20, seed=12)
    # give every step a stored thought (the off-policy variant replays it)
    rows = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    (out / "samples.jsonl").write_text("".join(json.dumps({**r, "thought": f"expert thought {r['step']}"}) + "\n"
                                               for r in rows))
    return out


def _collect(data, tmp_path, mode, fmt="free_think"):
    from vagen.train.rl import RLTrainer

    cfg = load_config("train/semi-online", [f"env.params.data={data}", "env.params.split=all",
                                             "env.params.patch_budget=-1", f"rollout.patch_mode={mode}",
                                             f"prompt.format={fmt}", "prompt.history=full", "prompt.max_images=0", "model.device=cpu",
                                             "sampling.max_tokens=16", "sampling.stop=[]", "rollout.max_turns=3",
                                             f"trainer.out_dir={tmp_path / mode}", "trainer.tensorboard=false"])
    tr = RLTrainer(cfg)
    trajs, metrics = tr.rollouts.collect([0, 1], 2, tr.sampling(), sample_seed=3)
    return tr, trajs


@pytest.mark.parametrize("mode", ["thought_free", "off_policy", "on_policy"])
def test_patched_history_and_own_samples(data, tmp_path, mode):
    tr, trajs = _collect(data, tmp_path, mode)
    tok = tr.builder.tokenizer
    patched = [(t, k) for t in trajs for k, u in enumerate(t.turns) if u.history_ids is not None]
    assert patched, "the random tiny model never matches an expert: every turn is patched"
    env = tr.rollouts._env(0).unwrapped
    for t, k in patched:
        u = t.turns[k]
        expert = env._by_id[env.trajectories[t.seed % len(env.trajectories)].id].steps[k].action
        text = tok.decode(u.history_ids)
        assert f"<answer>{expert}</answer>" in text and text.startswith("<think>")
        if mode == "thought_free":
            assert text.startswith("<think></think>")
        elif mode == "off_policy":
            assert text.startswith(f"<think>expert thought {k}</think>")
        else:  # on-policy: the current policy's words, whatever they are
            assert u.patch_text.startswith("<think>") and "expert thought" not in text
        if k + 1 < len(t.turns):  # the next turn's context holds the patch, not the model's answer
            ctx = tr.builder.turn_samples(t)[k + 1]
            ids = ctx.input_ids
            assert _contains(ids, u.history_ids)
            assert not _contains(ids, u.response_ids + u.close_ids) or u.response_ids == u.history_ids[:-2]
    for t in trajs:  # each turn's training tokens are exactly what the model generated
        for s, u in zip(tr.builder.turn_samples(t), t.turns, strict=True):
            trained = [i for i, m in zip(s.input_ids, s.loss_mask, strict=True) if m]
            assert trained == u.response_ids
    with pytest.raises(ValueError, match="patched trajectory"):
        tr.builder.trajectory_sample(next(t for t, _ in patched))


def _contains(seq: list[int], sub: list[int]) -> bool:
    n = len(sub)
    return any(seq[i:i + n] == sub for i in range(len(seq) - n + 1))


def test_vagen_train_semi_online_runs_two_steps(data, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([VAGEN, "train", "semi-online", f"data={data}", "env.params.split=all", "trainer.steps=2",
                           "rollout.groups=2", "rollout.group_size=2", "model.device=cpu", "algo.filter=uis1",
                           f"trainer.out_dir={out}", "trainer.tensorboard=false"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert all("filter/kept_fraction" in r and "train/samples" in r for r in rows)  # (random model: uis1 may drop all)
    shutil.rmtree(out)
