"""Does SFT on html-synthetic GUI data teach the tiny model to click? Held-out loss and
click-in-box accuracy before and after, against a random-click baseline.

1. ``synth`` (html backend) a training set (seed 0) and a held-out set on other scenes (seed 1);
2. held-out mean NLL per assistant token and greedy click-in-box accuracy of the tiny model;
3. ``vagen sft data=TRAIN prompt.history=none ...``;
4. the same held-out figures for the SFT model.

Click-in-box: for held-out steps whose action is a click/double-click, the model's answer is
parsed (``pyautogui.click(x, y)`` / ``doubleClick``); a hit is a point inside the step's box.
Random-click baseline: a uniform point on the screen hits with probability box area / screen
area (its exact expectation is reported). Also reported: the "mean target" baseline, a click
at the training set's mean click point for the same action word.

    .venv/bin/python benchmarks/synth_sft.py --train 600 --test 150 --sft-steps 400
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
CLICK = re.compile(r"pyautogui\.(click|doubleClick)\((\d+),\s*(\d+)\)")


def held_out(model_path: str, test_dir: Path) -> dict:
    from vagen.policy import SamplingParams
    from vagen.policy.base import TokenContext
    from vagen.policy.hf import HFPolicy
    from vagen.rollout import ContextBuilder
    from vagen.train.batch import collate
    from vagen.train.model import forward_logprobs
    from vagen.train.sft import load_samples

    policy = HFPolicy(model_path, device="cpu")
    builder = ContextBuilder(policy.processor, history="none")
    samples = load_samples(test_dir, builder, max_length=4096)
    rows = [json.loads(line) for line in (test_dir / "samples.jsonl").read_text().splitlines()]
    policy.model.eval()
    nll, tokens = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(samples), 16):
            batch = collate(samples[i:i + 16], policy)
            lp, _ = forward_logprobs(policy.model, batch)
            mask = batch["loss_mask"]
            nll -= float((lp * mask).sum())
            tokens += int(mask.sum())
    clicks = [(s, r) for s, r in zip(samples, rows, strict=True) if r["action_kind"] in ("click", "double_click")]
    contexts = []
    for s, _ in clicks:  # the prompt part of the sample: everything before the first loss token
        first = s.loss_mask.index(1)
        contexts.append(TokenContext(input_ids=list(s.input_ids[:first]), images=list(s.images)))
    hits = parsed = 0
    greedy = SamplingParams(temperature=0.0, max_tokens=24, stop=())
    for i in range(0, len(contexts), 16):
        for g, (_, r) in zip(policy.generate_ids(contexts[i:i + 16], greedy), clicks[i:i + 16], strict=True):
            m = CLICK.search(g.text)
            if m:
                parsed += 1
                x, y = int(m.group(2)), int(m.group(3))
                bx, by, bw, bh = r["bbox"]
                hits += int(bx <= x < bx + bw and by <= y < by + bh)
    return {"nll_per_token": nll / max(1, tokens), "click_steps": len(clicks), "parsed": parsed / max(1, len(clicks)),
            "click_in_box": hits / max(1, len(clicks))}


def baselines(train_dir: Path, test_dir: Path) -> dict:
    test = [json.loads(x) for x in (test_dir / "samples.jsonl").read_text().splitlines()]
    train = [json.loads(x) for x in (train_dir / "samples.jsonl").read_text().splitlines()]
    clicks = [r for r in test if r["action_kind"] in ("click", "double_click")]
    rand = sum(r["bbox"][2] * r["bbox"][3] / (r["screen"][0] * r["screen"][1]) for r in clicks) / max(1, len(clicks))
    pts = [(int(m.group(2)), int(m.group(3))) for r in train if (m := CLICK.search(r["action"]))]
    mx, my = (sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)) if pts else (0, 0)
    mean_hit = sum(r["bbox"][0] <= mx < r["bbox"][0] + r["bbox"][2] and r["bbox"][1] <= my < r["bbox"][1] + r["bbox"][3]
                   for r in clicks) / max(1, len(clicks))
    return {"random_click": rand, "mean_click_point": mean_hit}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", type=int, default=600)
    ap.add_argument("--test", type=int, default=150)
    ap.add_argument("--sft-steps", type=int, default=400)
    ap.add_argument("--out", default="runs/synth_sft")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from worldgen.synth import synth

    out = ROOT / args.out
    train_dir, test_dir, sft_dir = out / "train", out / "test", out / "sft"
    t0 = time.perf_counter()
    rep_train = synth(args.train, train_dir, seed=0)
    rep_test = synth(args.test, test_dir, seed=1)
    t_synth = time.perf_counter() - t0
    before = held_out("tiny", test_dir)
    t1 = time.perf_counter()
    vagen = str(Path(sys.executable).with_name("vagen"))
    subprocess.run([vagen, "sft", f"data={train_dir}", "prompt.history=none", f"steps={args.sft_steps}",
                    "batch_size=16", "lr=1e-3", f"out_dir={sft_dir}", "model.device=cpu", "log_every=50"],
                   check=True, cwd=ROOT, capture_output=True)
    t_sft = time.perf_counter() - t1
    after = held_out(str(sft_dir / "final"), test_dir)
    result = {"train_steps": rep_train["kept"], "test_steps": rep_test["kept"],
              "synth_steps_per_min": round(60 * (rep_train["steps"] + rep_test["steps"]) / t_synth, 1),
              "synth_s": round(t_synth, 1), "sft_s": round(t_sft, 1), "before": before, "after": after,
              "baselines": baselines(train_dir, test_dir)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
