"""Does RL help? SFT warm start on solver demos, then RL, evaluated on held-out seeds.

For each seed: write oracle demonstrations (``vagen demos``), SFT the tiny model on
them, evaluate (sampled and greedy) on held-out levels, run ``vagen train <env>
preset=demo`` from the SFT checkpoint, evaluate again. Prints one JSON line with start
vs end per seed, the mean gain and wall times; RESULTS.md records it.

    .venv/bin/python benchmarks/learning_demo.py --env frozenlake --seeds 0 1 2 --advantage grpo
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VAGEN = [str(Path(sys.executable).with_name("vagen"))]


def sh(args: list[str]) -> str:
    r = subprocess.run(VAGEN + args, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout + r.stderr)
        raise SystemExit(f"failed: vagen {' '.join(args)}")
    return r.stdout


def evaluate(env: str, model: str, episodes: int, extra: list[str]) -> dict[str, float]:
    from vagen.config import load_config
    from vagen.train.rl import RLTrainer

    cfg = load_config(f"train/{env}-demo", [f"model.path={model}", "trainer.out_dir=/tmp/vagen-eval",
                                            "trainer.tensorboard=false", *extra])
    tr = RLTrainer(cfg)
    return {"sampled": tr.evaluate(episodes, greedy=False), "greedy": tr.evaluate(episodes, greedy=True)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--env", default="frozenlake")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--advantage", default=None, help="default: the demo preset's algo.advantage")
    ap.add_argument("--demos", type=int, default=None, help="default: 300 (frozenlake), 1500 (sokoban)")
    ap.add_argument("--sft-steps", type=int, default=None, help="default: 600 (frozenlake), 1000 (sokoban)")
    ap.add_argument("--rl-steps", type=int, default=None, help="default: the demo preset's trainer.steps")
    ap.add_argument("--episodes", type=int, default=800)
    ap.add_argument("--out", default="runs/learning_demo")
    ap.add_argument("--rl", nargs="*", default=[], help="extra overrides for vagen train")
    ap.add_argument("--observation", default="text", choices=["text", "image"],
                    help="what the agent sees (image: the rendered frame through the vision tower)")
    ap.add_argument("--hidden", type=int, default=None, help="a wider tiny model (text width; default: tiny's 64)")
    ap.add_argument("--layers", type=int, default=None, help="a deeper tiny model (default: tiny's 2)")
    ap.add_argument("--env-params", nargs="*", default=[], metavar="KEY=VALUE",
                    help="env options for demos, training and evaluation, e.g. max_solution_length=5 max_turns=8")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sokoban = args.env == "sokoban"
    if args.advantage is None or args.rl_steps is None:
        from vagen.config import load_config

        preset = load_config(f"train/{args.env}-demo", [])
        args.advantage = args.advantage or preset.algo.advantage
        args.rl_steps = args.rl_steps or preset.trainer.steps
    args.demos = args.demos or (1500 if sokoban else 300)
    args.sft_steps = args.sft_steps or (1000 if sokoban else 600)
    base = ROOT / args.out / (args.env if args.observation == "text" else f"{args.env}-{args.observation}")
    model, tag = "tiny", ""
    if args.hidden or args.layers:  # a wider/deeper tiny model, built once (same tokenizer and processor)
        from vagen.models import build_tiny_model

        hidden, layers = args.hidden or 64, args.layers or 2
        tag = f"-h{hidden}-l{layers}"
        model_dir = base / f"model{tag}"
        if not (model_dir / "vagen_tiny.json").exists():
            build_tiny_model(model_dir, hidden=hidden, layers=layers)
        model = str(model_dir)
    # Images: 28 px cells, so each cell is one merged 2x2-patch visual token of the Qwen-VL processor.
    obs = [] if args.observation == "text" else [f"env.params.observation={args.observation}", "env.params.cell_px=28"]
    out = base / f"{args.advantage}{tag}"
    # Env options change the levels: their demos and SFT starts get their own directories.
    etag = "-" + hashlib.sha1(" ".join(args.env_params).encode()).hexdigest()[:6] if args.env_params else ""
    demos = base / f"demos-n{args.demos}{etag}"
    env_opts = {"frozenlake": [f"observation={args.observation}", "max_actions_per_turn=1", "max_turns=8"],
                "sokoban": [f"observation={args.observation}", "max_actions_per_turn=1", "max_turns=8", "dim_room=[6,6]",
                            "min_solution_length=1", "max_solution_length=5", "reward=sparse"]}[args.env]
    env_opts += ["cell_px=28"] if args.observation == "image" else []
    # Extra env options reach the demos (last one wins) and every train/eval config; a turn
    # limit also sets the rollout's.
    env_opts += args.env_params
    obs += [f"env.params.{kv}" for kv in args.env_params]
    obs += [f"rollout.{kv}" for kv in args.env_params if kv.startswith("max_turns=")]
    t0 = time.perf_counter()
    if not (demos / "samples.jsonl").exists():
        sh(["demos", args.env, "--n", str(args.demos), "--out", str(demos), "--format", "no_think",
            "--system-prompt", "minimal", *env_opts])
    rows = []
    for seed in args.seeds:
        ts = time.perf_counter()
        # The SFT start (and its evaluation) is shared by every estimator run on this seed.
        sft_dir = base / f"sft-s{seed}-n{args.demos}-k{args.sft_steps}{tag}{etag}"
        if not (sft_dir / "start_eval.json").exists():
            sh(["sft", f"data={demos}", "prompt.history=none", "prompt.format=no_think", f"steps={args.sft_steps}",
                "batch_size=32", "lr=1e-3", f"out_dir={sft_dir}", f"model.path={model}", "model.device=cpu", f"seed={seed}", "log_every=100"])
            start = evaluate(args.env, str(sft_dir / "final"), args.episodes, obs)
            (sft_dir / "start_eval.json").write_text(json.dumps({**start, "sft_s": time.perf_counter() - ts}))
        start = json.loads((sft_dir / "start_eval.json").read_text())
        t_sft = start.pop("sft_s")
        tr0 = time.perf_counter()
        run_dir = out / f"rl-s{seed}"
        shutil.rmtree(run_dir, ignore_errors=True)  # a fresh run, never a resumed one
        sh(["train", args.env, "preset=demo", f"model.path={sft_dir / 'final'}", f"trainer.out_dir={run_dir}",
            f"trainer.steps={args.rl_steps}", f"trainer.seed={seed}", f"algo.advantage={args.advantage}",
            "trainer.tensorboard=false", *obs, *args.rl])
        t_rl = time.perf_counter() - tr0
        final = sorted((run_dir / "checkpoints").glob("step_*"))[-1] / "model"
        end = evaluate(args.env, str(final), args.episodes, obs)
        rows.append({"seed": seed, "start": start, "end": end, "gain_sampled": end["sampled"] - start["sampled"],
                     "gain_greedy": end["greedy"] - start["greedy"], "sft_s": round(t_sft, 1), "rl_s": round(t_rl, 1)})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    mean = lambda k: sum(r[k] for r in rows) / len(rows)  # noqa: E731
    print(json.dumps({"env": args.env, "advantage": args.advantage, "episodes": args.episodes, "rl_steps": args.rl_steps,
                      "rows": rows, "mean_gain_sampled": mean("gain_sampled"), "mean_gain_greedy": mean("gain_greedy"),
                      "wall_s": round(time.perf_counter() - t0, 1)}))


if __name__ == "__main__":
    main()
