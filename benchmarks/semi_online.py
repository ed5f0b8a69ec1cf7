"""Does semi-online RL beat SFT alone (and offline RL) on held-out synthetic trajectories? (issue 11)

1. ``vagen synth gui``: training trajectories (scene seed ``--train-seed``) and held-out ones
   (another seed: other scenes).
2. ``vagen demos replay`` writes the training trajectories as chats in the agent format RL and
   the SOP eval use (the expert replayed by ``scripted:oracle``); ``vagen sft`` the tiny model
   on them; SOP on the held-out set
   (``vagen eval replay``: own history, no patch, stop at the first mismatch; greedy).
3. From that SFT checkpoint, the same RL budget twice: **semi-online** (own history, patches
   up to ``--patch-budget``) and **offline** (teacher-forced: expert history, every step
   played); SOP of each on the held-out set.

Prints one JSON line: SOP progress and success of each model, wall times.

    .venv/bin/python benchmarks/semi_online.py --train 600 --test 150 --sft-steps 600 --rl-steps 30
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VAGEN = str(Path(sys.executable).with_name("vagen"))


def sh(args: list[str]) -> str:
    r = subprocess.run([VAGEN, *args], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-3000:] + r.stderr[-5000:])
        raise SystemExit(f"failed: vagen {' '.join(args)}")
    return r.stdout


def sop(model: str, test: Path, out: Path, limit: int | None) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    args = ["eval", "replay", "--policy", f"hf:{model}", "--out", str(out), "--max-steps", "12", "--temperature", "0",
            f"env.params.data={test}", "env.params.split=all", "model.device=cpu"]
    stats = json.loads(sh(args + (["--limit", str(limit)] if limit else [])).strip().splitlines()[-1])["stats"]
    return {"progress": stats["mean_score"], "success": stats["rate"], "episodes": stats["n"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", type=int, default=600, help="kept training steps to synthesize")
    ap.add_argument("--test", type=int, default=150, help="kept held-out steps to synthesize")
    ap.add_argument("--train-seed", type=int, default=0)
    ap.add_argument("--test-seed", type=int, default=1)
    ap.add_argument("--sft-steps", type=int, default=600)
    ap.add_argument("--rl-steps", type=int, default=30)
    ap.add_argument("--patch-budget", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0, help="RL seed")
    ap.add_argument("--sft-seed", type=int, default=None, help="SFT seed (default: --seed); its checkpoint is reused")
    ap.add_argument("--limit", type=int, default=None, help="held-out trajectories to evaluate (default all)")
    ap.add_argument("--out", default="runs/semi_online")
    ap.add_argument("--rl", nargs="*", default=[], help="extra overrides for vagen train semi-online")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    base = ROOT / args.out
    train, test = base / f"train-s{args.train_seed}-n{args.train}", base / f"test-s{args.test_seed}-n{args.test}"
    t0 = time.perf_counter()
    for d, n, s in ((train, args.train, args.train_seed), (test, args.test, args.test_seed)):
        if not (d / "report.json").exists():
            sh(["synth", "gui", "--n", str(n), "--seed", str(s), "--out", str(d)])
    # SFT data in the agent format RL and SOP use: the expert replayed through the replay env
    demos = train / "agent-demos"
    if not (demos / "samples.jsonl").exists():
        from envs.replay.data import load_trajectories

        n_traj = len(load_trajectories(train))
        sh(["demos", "replay", "--n", str(n_traj), "--out", str(demos), "--format", "no_think", "--system-prompt",
            "minimal", f"data={train}", "split=all"])
    sft_seed = args.seed if args.sft_seed is None else args.sft_seed
    sft = base / f"sft-s{sft_seed}-k{args.sft_steps}"
    if not (sft / "final").exists():
        sh(["sft", f"data={demos}", "prompt.history=none", "prompt.format=no_think", f"steps={args.sft_steps}",
            "batch_size=16", "lr=1e-3", f"out_dir={sft}", "model.device=cpu", f"seed={sft_seed}", "log_every=100"])
    t_sft = time.perf_counter() - t0
    sop_sft = base / f"sop-sft-s{sft_seed}"
    if (sop_sft / "summary.json").exists():  # the SFT model's SOP does not depend on the RL seed
        rows = {"sft": json.loads((sop_sft / "summary.json").read_text())}
    else:
        rows = {"sft": sop(str(sft / "final"), test, sop_sft, args.limit)}
        (sop_sft / "summary.json").write_text(json.dumps(rows["sft"]))
    times = {"sft_s": round(t_sft, 1)}
    for name, extra in (("semi_online", [f"env.params.patch_budget={args.patch_budget}"]),
                        ("offline", ["env.params.patch_budget=-1", "env.params.expert_history=true"])):
        run = base / f"rl-{name}-s{args.seed}"
        shutil.rmtree(run, ignore_errors=True)
        tr = time.perf_counter()
        sh(["train", "semi-online", f"data={train}", "env.params.split=all", f"model.path={sft / 'final'}",
            f"trainer.steps={args.rl_steps}", f"trainer.seed={args.seed}", f"trainer.out_dir={run}",
            "trainer.tensorboard=false", "model.device=cpu", *extra, *args.rl])
        times[f"{name}_rl_s"] = round(time.perf_counter() - tr, 1)
        final = sorted((run / "checkpoints").glob("step_*"))[-1] / "model"
        rows[name] = sop(str(final), test, base / f"sop-{name}-s{args.seed}", args.limit)
    print(json.dumps({"sop": rows, **times, "args": vars(args), "wall_s": round(time.perf_counter() - t0, 1)}))


if __name__ == "__main__":
    main()
