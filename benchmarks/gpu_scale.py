"""A Qwen2.5-VL-3B-sized policy on one GPU: generation throughput, RL step time and memory,
weight push — the GPU preset ``configs/train/sokoban-qwen2.5vl-3b.yaml`` with random weights.

No model hub here, so the checkpoint is Qwen2.5-VL-3B-Instruct's architecture (text: 36
layers x 2048, 16 heads / 2 KV heads, MLP 11008; vision: 32 blocks x 1280) with random bf16
weights and the tiny model's tokenizer and processor (vocabulary 1,024 instead of 151,936:
the embedding/head are ~0.3 B parameters smaller than the real model's). Random weights
rarely emit an end token, so every turn generates ``sampling.max_tokens`` tokens: the
rollout figures are a worst case for response length.

    python benchmarks/gpu_scale.py --out results_gpu_scale.json            # on a GPU host
    python benchmarks/gpu_scale.py --dims ci --device cpu --steps 1        # code-path check on a CPU

Phases (each guarded: a failure is recorded and the next phase runs): build, generate
(tokens/s at several batch sizes), train (``--steps`` RL steps of the preset with
``--overrides``; per-step rollout / update time and peak memory), push (in-process weight
push fp32 master -> bf16 rollout replica, the async path's ``InProcessCopy``).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DIMS = {
    # Qwen2.5-VL-3B-Instruct's config.json (text + vision towers)
    "3b": dict(text=dict(hidden_size=2048, intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16,
                         num_key_value_heads=2, mrope_section=[16, 24, 24], rope_theta=1e6),
               vision=dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, window_size=112,
                           fullatt_block_indexes=[7, 15, 23, 31])),
    # a small stand-in with the same code path (CPU check)
    "ci": dict(text=dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, mrope_section=[4, 6, 6], rope_theta=1e6),
               vision=dict(depth=2, hidden_size=64, intermediate_size=128, num_heads=2, window_size=112,
                           fullatt_block_indexes=[1])),
}


def build(out: Path, dims: str, device: str) -> dict:
    from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor

    from vagen.models import resolve_model_path

    tiny = resolve_model_path("tiny")
    cfg = AutoConfig.from_pretrained(tiny)
    d = DIMS[dims]
    text = cfg.text_config
    t = dict(d["text"])
    mrope, theta = t.pop("mrope_section"), t.pop("rope_theta")
    for k, v in t.items():
        setattr(text, k, v)
    text.rope_parameters = {"rope_type": "default", "rope_theta": theta, "mrope_section": mrope}
    if getattr(text, "layer_types", None) is not None:
        text.layer_types = ["full_attention"] * text.num_hidden_layers
    for k, v in d["vision"].items():
        setattr(cfg.vision_config, k, v)
    cfg.vision_config.out_hidden_size = text.hidden_size
    t0 = time.perf_counter()
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForImageTextToText.from_config(cfg, dtype=torch.bfloat16)
    init_s = time.perf_counter() - t0
    params = sum(p.numel() for p in model.parameters())
    t0 = time.perf_counter()
    model.save_pretrained(out)
    AutoProcessor.from_pretrained(tiny).save_pretrained(out)
    save_s = time.perf_counter() - t0
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return {"params_b": params / 1e9, "init_s": init_s, "save_s": save_s}


def generate(path: Path, device: str, batches: list[int], max_tokens: int) -> list[dict]:
    import numpy as np

    from vagen.policy import SamplingParams
    from vagen.policy.hf import HFPolicy

    rows = []
    policy = HFPolicy(path, device=device, dtype="bfloat16", max_batch_size=max(batches))
    rng = np.random.default_rng(0)
    img = rng.integers(0, 255, (192, 192, 3), dtype=np.uint8)  # a 6x6 Sokoban board at 32 px
    chat = [{"role": "user", "content": [{"type": "image", "image": img},
                                         {"type": "text", "text": "Push the box onto the target. " * 8}]}]
    sampling = SamplingParams(max_tokens=max_tokens, temperature=1.0, stop=(), seed=0)
    policy.generate([chat], SamplingParams(max_tokens=4, stop=()))  # warm-up (kernels, allocator)
    for b in batches:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        gens = policy.generate([chat] * b, sampling)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        toks = sum(len(g.token_ids) for g in gens)
        rows.append({"batch": b, "tokens": toks, "wall_s": wall, "tokens_per_s": toks / wall,
                     "prompt_tokens": len(gens[0].prompt_token_ids),
                     "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None})
        print(json.dumps({"generate": rows[-1]}), flush=True)
    del policy
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return rows


KEEP = ("time/step_s", "time/rollout_s", "time/generate_s", "time/env_s", "rollout/generated_tokens",
        "rollout/trajectories", "rollout/turns", "train/samples", "loss", "actor/grad_norm",
        "train/skipped_nonfinite", "perf/gpu_peak_gib", "success", "return")


def train(path: Path, device: str, steps: int, overrides: list[str], out_dir: Path) -> dict:
    from vagen.config import load_config
    from vagen.rollout.weight_sync import InProcessCopy
    from vagen.train.rl import RLTrainer

    cfg = load_config("train/sokoban-qwen2.5vl-3b", [f"model.path={path}", f"model.device={device}",
                                                     f"trainer.out_dir={out_dir}", "trainer.val_every=0",
                                                     "trainer.tensorboard=false", *overrides])
    t0 = time.perf_counter()
    tr = RLTrainer(cfg)
    res: dict = {"setup_s": time.perf_counter() - t0, "overrides": overrides, "steps": []}
    if device.startswith("cuda"):
        res["setup_peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
        torch.cuda.reset_peak_memory_stats()
    for _ in range(steps):
        tr.step += 1
        m = tr.train_step()
        row = {k: m[k] for k in KEEP if k in m}
        row["update_s"] = m["time/step_s"] - m.get("time/rollout_s", 0.0)
        row["gen_tokens_per_s"] = m.get("rollout/generated_tokens", 0.0) / max(m.get("time/generate_s", 0.0), 1e-9)
        res["steps"].append(row)
        print(json.dumps({"train_step": row}), flush=True)
    # The async path's push: fp32 master -> a bf16 replica (free the critic / optimizer first)
    tr.critic = tr.critic_opt = tr.ref = None
    tr.opt.state.clear()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    replica = tr.policy.replica()
    sync = InProcessCopy(tr.actor, replica, threading.Lock())
    times = [sync.push(i) for i in range(4)][1:]
    nbytes = sum(p.numel() * p.element_size() for p in replica.model.parameters())
    res["push"] = {"median_s": sorted(times)[len(times) // 2], "replica_gib": nbytes / 2**30,
                   "gib_per_s": nbytes / 2**30 / sorted(times)[len(times) // 2]}
    print(json.dumps({"push": res["push"]}), flush=True)
    tr.close()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dims", choices=sorted(DIMS), default="3b")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--model-dir", default="/tmp/vagen-gpu-scale/model")
    ap.add_argument("--batches", type=int, nargs="+", default=[16, 64, 128])
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--overrides", nargs="*", default=[
        "rollout.groups=4", "rollout.group_size=8", "policy.max_batch_size=128", "trainer.gradient_checkpointing=true"])
    ap.add_argument("--fallback-overrides", nargs="*", default=["algo.advantage=grpo"],
                    help="if the train phase fails (e.g. out of memory), run it once more with these added")
    ap.add_argument("--phases", nargs="+", default=["build", "generate", "train"])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    res: dict = {"dims": a.dims, "device": a.device, "torch": torch.__version__}
    import transformers

    res["transformers"] = transformers.__version__
    if a.device.startswith("cuda"):
        res["gpu"] = torch.cuda.get_device_name()
    path = Path(a.model_dir)
    for phase in a.phases:
        t0 = time.perf_counter()
        try:
            if phase == "build":
                res["build"] = build(path, a.dims, a.device)
            elif phase == "generate":
                res["generate"] = generate(path, a.device, a.batches, a.max_tokens)
            elif phase == "train":
                failed = False
                try:
                    res["train"] = train(path, a.device, a.steps, a.overrides, path.parent / "run")
                except Exception as e:  # noqa: BLE001
                    traceback.print_exc()
                    res["train_error"] = f"{type(e).__name__}: {e}"[:2000]
                    failed = bool(a.fallback_overrides)
                if failed:  # outside the except block: its traceback no longer pins the trainer
                    import gc

                    gc.collect()
                    if a.device.startswith("cuda"):
                        torch.cuda.empty_cache()
                    res["train_fallback"] = train(path, a.device, a.steps, a.overrides + a.fallback_overrides,
                                                  path.parent / "run-fallback")
        except Exception as e:  # noqa: BLE001 - record and go on to the next phase
            traceback.print_exc()
            res[f"{phase}_error" if f"{phase}_error" not in res else f"{phase}_error2"] = f"{type(e).__name__}: {e}"[:2000]
        res[f"{phase}_wall_s"] = time.perf_counter() - t0
        print(json.dumps({"phase": phase, "wall_s": res[f"{phase}_wall_s"]}), flush=True)
        if a.out:
            Path(a.out).write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
