"""How long a weight sync takes: trainer -> rollout side, per mechanism, vs a checkpoint round trip.

Model: the tiny Qwen2.5-VL's architecture widened to ``--hidden`` x ``--layers`` (random
weights, float32), saved once with the tiny processor so Ray workers can load it by path.
Mechanisms (what ``trainer.rollout_mode`` / ``cluster.backend`` / ``trainer.strategy`` use):

* ``in-process copy`` — ``InProcessCopy``: every tensor ``copy_``'d into a replica (async, HF);
* ``ray push (2 actors)`` — ``RemotePush`` to ``RayRollouts``: CPU snapshot, ``ray.put`` once,
  both workers load it (``cluster.backend=ray``);
* ``fsdp2 gather (2 ranks)`` — ``GatheredCopy``: all-gather the shards (gloo) + copy into the
  replica, timed inside a 2-process torchrun job (``trainer.strategy=fsdp2``);
* baseline ``checkpoint round trip`` — save_pretrained-style safetensors file written by the
  trainer and loaded by the rollout side (what a rollout server restarted from checkpoints does).

Run inside a private network namespace so Ray stays on loopback (root):

    unshare --net -- sh -c 'ip link set lo up && .venv/bin/python benchmarks/weight_sync.py'
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.train.test_trainer.FAST


def build_model(out: Path, hidden: int, layers: int):
    from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor

    from vagen.models import resolve_model_path

    tiny = resolve_model_path("tiny")
    cfg = AutoConfig.from_pretrained(tiny)
    text = getattr(cfg, "text_config", cfg)
    text.hidden_size, text.num_hidden_layers, text.intermediate_size = hidden, layers, int(hidden * 2.75)
    text.num_attention_heads, text.num_key_value_heads = max(2, hidden // 128), max(1, hidden // 512)
    if getattr(text, "layer_types", None) is not None:
        text.layer_types = ["full_attention"] * layers
    cfg.vision_config.out_hidden_size = hidden
    torch.manual_seed(0)
    model = AutoModelForImageTextToText.from_config(cfg).float()
    model.save_pretrained(out)
    AutoProcessor.from_pretrained(tiny).save_pretrained(out)
    return model


def timed(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def bench_in_process(model, repeats):
    import copy

    from vagen.rollout.weight_sync import InProcessCopy

    replica = type("R", (), {})()
    replica.model, replica.policy_version = copy.deepcopy(model), 0
    sync = InProcessCopy(model, replica, threading.Lock())
    return timed(lambda: sync.push(1), repeats)


def bench_checkpoint(model, repeats, tmp: Path):
    import copy

    from safetensors.torch import load_file, save_file

    other = copy.deepcopy(model)
    path = tmp / "ckpt.safetensors"

    def roundtrip():
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
        other.load_state_dict(load_file(str(path)), strict=False)

    return timed(roundtrip, repeats)


def bench_ray(model, repeats, model_dir: Path):
    from tests.train.test_trainer import FAST
    from vagen.cluster import RayRollouts
    from vagen.config import load_config

    cfg = load_config("train/frozenlake", FAST + [f"model.path={model_dir}", "cluster.backend=ray",
                                                  "cluster.rollout_workers=2", "trainer.out_dir=/tmp/vagen-ws"])
    remote = RayRollouts(cfg)
    try:
        remote.info()  # wait until both actors have loaded their model (not part of a push)
        first = remote.push(model, 1)  # full (every tensor)
        later = timed(lambda: remote.push(model, 2), repeats)  # trainable tensors only
    finally:
        remote.close()
    return first, later


FSDP_SCRIPT = r"""
import json, sys, time, torch
from transformers import AutoModelForImageTextToText
from vagen.rollout.weight_sync import GatheredCopy
from vagen.train import distributed as D
ctx = D.init_distributed("cpu")
model = AutoModelForImageTextToText.from_pretrained(sys.argv[1]).float()
replica = type("R", (), {})()
import copy
replica.model, replica.policy_version = copy.deepcopy(model), 0
D.shard_model(model)
sync = GatheredCopy(model, replica)
times = [sync.push(i) for i in range(int(sys.argv[2]))]
if ctx.is_main:
    print("FSDP_TIMES", json.dumps(times))
"""


def bench_fsdp(model_dir: Path, repeats: int, tmp: Path) -> list[float]:
    script = tmp / "fsdp_sync.py"
    script.write_text(FSDP_SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                          str(script), str(model_dir), str(repeats)], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=900)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("FSDP_TIMES")), None)
    if line is None:
        raise SystemExit(out.stdout[-2000:] + out.stderr[-4000:])
    return json.loads(line.split(" ", 1)[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip", nargs="*", default=[], choices=["ray", "fsdp"])
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        model = build_model(tmp / "model", args.hidden, args.layers)
        n = sum(p.numel() for p in model.parameters())
        mb = sum(v.numel() * v.element_size() for v in model.state_dict().values()) / 2**20
        rows = {"checkpoint round trip (baseline)": bench_checkpoint(model, args.repeats, tmp),
                "in-process copy": bench_in_process(model, args.repeats)}
        if "ray" not in args.skip:
            first, later = bench_ray(model, args.repeats, tmp / "model")
            rows["ray push to 2 actors (first, all tensors)"] = [first]
            rows["ray push to 2 actors (trainable tensors)"] = later
        if "fsdp" not in args.skip:
            rows["fsdp2 gather + copy (2 gloo ranks)"] = bench_fsdp(tmp / "model", args.repeats, tmp)
    base = statistics.median(rows["checkpoint round trip (baseline)"])
    print(f"model: {n / 1e6:.1f} M params, {mb:.0f} MiB float32; median of {args.repeats}; 2 cores")
    print("| mechanism | median s | MiB/s | vs checkpoint round trip |\n|---|---:|---:|---:|")
    result = {"params_m": n / 1e6, "mib": mb, "rows": {}}
    for name, ts in rows.items():
        med = statistics.median(ts)
        result["rows"][name] = {"median_s": med, "all_s": ts}
        print(f"| {name} | {med:.3f} | {mb / med:,.0f} | x{base / med:.1f} faster |")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
