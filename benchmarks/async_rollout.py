#!/usr/bin/env python3
"""Sync vs asynchronous rollouts (trainer.rollout_mode=async, eta = 0, 1, 2) when envs are
slow: trajectories per second and the trainer's idle fraction, side by side in one run.

The env is ``envs.make("latency", env="frozenlake", ...)``: FrozenLake 4x4 (text map) whose
resets and steps are delayed like OSWorld's measured ones (step lognormal, median 0.37 s,
p90 ~0.55 s, plus a 1-3 s stall with probability 0.05; reset median 0.9 s, p90 ~2 s; see
envs/latency.py). The model is the tiny Qwen2.5-VL on the CPU; every config trains the same
number of steps of ``groups x group_size`` trajectories with the same seeds.

Per config, from the first step (the pipeline fill counts; model loading does not): wall time
of ``--steps`` steps,
trajectories/s (= steps x batch / wall), the trainer's idle fraction (time it waited for
rollouts / wall; for sync, the rollout time, since the trainer waits for all of it), the
mean staleness and weight-push time. Ratios are against sync.

    .venv/bin/python benchmarks/async_rollout.py                  # sync, eta 0/1/2, 10 steps each
    .venv/bin/python benchmarks/async_rollout.py --quick          # 3 steps, latency x0.3
    .venv/bin/python benchmarks/async_rollout.py --save           # also write results_async_rollout.json
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
SAVE_PATH = REPO_ROOT / "benchmarks" / "results_async_rollout.json"


def overrides(args, mode: str, eta: int, out: Path) -> list[str]:
    return [
        "env.name=latency", "env.params.env=frozenlake", "env.params.observation=text",
        "env.params.max_actions_per_turn=1", f"env.params.max_turns={args.turns}", f"env.params.scale={args.scale}",
        f"env.params.latency_seed={args.seed}",
        "prompt.format=no_think", "prompt.system_prompt=minimal", "prompt.history=none",
        "sampling.max_tokens=12", "model.device=cpu",
        f"rollout.groups={args.groups}", f"rollout.group_size={args.group_size}", f"rollout.max_turns={args.turns}",
        "algo.advantage=grpo", "algo.filter=none", "trainer.mini_batch_size=64", "trainer.micro_batch_size=16",
        "trainer.lr=1e-4", "trainer.tensorboard=false", "trainer.save_every=0", f"trainer.steps={args.steps}",
        f"trainer.seed={args.seed}", f"trainer.out_dir={out}",
        f"trainer.rollout_mode={mode}", f"trainer.max_staleness={eta}",
    ]


def measure(args, mode: str, eta: int) -> dict:
    from vagen.config import load_config
    from vagen.train.rl import RLTrainer

    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config("train/frozenlake", overrides(args, mode, eta, Path(tmp)))
        tr = RLTrainer(cfg)
        try:
            # Timed from the first step: async pays for filling its pipeline like sync pays for
            # every batch; model loading is outside the window for both.
            rows, t0 = [], time.perf_counter()
            while tr.step < args.steps:
                tr.step += 1
                rows.append(tr.train_step())
            wall = time.perf_counter() - t0
        finally:
            tr.close()
    n = sum(r["rollout/trajectories"] for r in rows)
    if mode == "sync":
        idle = sum(r["time/rollout_s"] for r in rows)
    else:
        idle = sum(r["async/trainer_wait_s"] for r in rows)
    mean = lambda k: sum(r.get(k, 0.0) for r in rows) / len(rows)  # noqa: E731
    return {"config": "sync" if mode == "sync" else f"async eta={eta}", "mode": mode, "eta": eta,
            "steps": len(rows), "trajectories": n, "wall_s": round(wall, 2), "traj_per_s": round(n / wall, 3),
            "trainer_idle_fraction": round(idle / wall, 3), "step_s": round(wall / len(rows), 2),
            "staleness_mean": round(mean("async/staleness"), 3), "sync_s_mean": round(mean("async/sync_s"), 4),
            "rollout_s_mean": round(mean("time/rollout_s"), 2), "success_mean": round(mean("success"), 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--groups", type=int, default=2)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every env delay")
    ap.add_argument("--etas", default="0,1,2")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.steps, args.scale = 3, 0.3
    results = [measure(args, "sync", 0)]
    for eta in [int(x) for x in args.etas.split(",") if x.strip()]:
        results.append(measure(args, "async", eta))
    base = results[0]
    for r in results:
        r["speedup_vs_sync"] = round(r["traj_per_s"] / base["traj_per_s"], 2)
    out = {"benchmark": "async_rollout", "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
           "command": " ".join([".venv/bin/python", "benchmarks/async_rollout.py", *sys.argv[1:]]),
           "host": {"cpus": os.cpu_count(), "load": list(os.getloadavg()), "python": platform.python_version()},
           "settings": {k: v for k, v in vars(args).items() if k not in ("save", "quick")}, "results": results}
    print(json.dumps(out))
    cols = ("config", "traj_per_s", "speedup_vs_sync", "trainer_idle_fraction", "step_s", "rollout_s_mean",
            "staleness_mean", "sync_s_mean", "success_mean")
    print(" | ".join(cols), file=sys.stderr)
    for r in results:
        print(" | ".join(str(r[c]) for c in cols), file=sys.stderr)
    if args.save:
        SAVE_PATH.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
