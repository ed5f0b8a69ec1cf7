#!/usr/bin/env python3
"""Render + step throughput on the CPU of the MuJoCo / SVG envs (issue 12), against a budget.

For each config (env + split/task): ``--episodes`` episodes of ``reset(seed=i)`` then actions until
done, timing ``reset`` (which renders the first observation), ``step`` (which renders the next
observation) and a bare ``render()``. Two policies: the oracle (``solve_state`` re-planned every
turn: success rate must be 1.0) and the random baseline (``random_actions``: the chance level).

The side-by-side ratio is against a *budget* rather than a peer (AI2-THOR and ManiSkill3 need a GPU
and downloads, so they cannot run here): an RL rollout step of a VLM on a GPU takes well over
100 ms, so an env that steps in under 200 ms per core and resets in under 2 s is not the
bottleneck of a rollout. ``step/budget`` > 1 means faster than needed.

Prints ONE JSON line on stdout and a Markdown table on stderr.

    .venv/bin/python benchmarks/embodied_throughput.py                       # all configs, 10 episodes
    .venv/bin/python benchmarks/embodied_throughput.py --configs svg --episodes 50
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STEP_BUDGET_S = 0.2
RESET_BUDGET_S = 2.0

CONFIGS: dict[str, tuple[str, dict]] = {
    "svg": ("svg", {}),
    **{f"navigation/{s}": ("navigation", {"split": s}) for s in
       ("base", "common_sense", "complex_instruction", "visual_appearance", "long_horizon")},
    **{f"primitive_skill/{t}": ("primitive_skill", {"task": t}) for t in ("align2", "place2", "stack3", "drawer")},
}


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run(config: str, episodes: int, policy: str) -> dict:
    import envs

    name, params = CONFIGS[config]
    env = envs.make(name, **params)
    cls = type(env)
    sep = env.prompt_pieces().action_separator
    k = env.prompt_pieces().max_actions_per_turn
    env.reset(seed=10**6)  # warm-up: lazy imports, renderer contexts
    resets, steps, renders, successes, scores, turns = [], [], [], 0, [], 0
    for i in range(episodes):
        rng = random.Random(i)
        t = time.perf_counter()
        _, info = env.reset(seed=i)
        resets.append(time.perf_counter() - t)
        t = time.perf_counter()
        env.render()
        renders.append(time.perf_counter() - t)
        done = False
        while not done:
            if policy == "oracle":
                acts = (cls.solve_state(info["state"]) or [])[:k] or list(cls.action_names[:1]) or [""]
            else:
                acts = cls.random_actions(rng, rng.randint(1, k), info["state"])
            t = time.perf_counter()
            _, _, term, trunc, info = env.step(f"{sep} ".join(acts) if len(acts) > 1 else acts[0])
            steps.append(time.perf_counter() - t)
            turns += 1
            done = term or trunc
        successes += bool(info["success"])
        scores.append(float(info["metrics"].get("episode/score", float(info["success"]))))
    env.close()
    step_med = statistics.median(steps)
    reset_med = statistics.median(resets)
    return {"config": config, "policy": policy, "episodes": episodes, "success": successes / episodes,
            "mean_score": round(statistics.fmean(scores), 4), "mean_turns": round(turns / episodes, 2),
            "turns_per_s": round(turns / sum(steps), 2), "step_median_ms": round(1000 * step_med, 1),
            "reset_median_ms": round(1000 * reset_med, 1), "reset_max_ms": round(1000 * max(resets), 1),
            "render_median_ms": round(1000 * statistics.median(renders), 1),
            "step_vs_budget": round(STEP_BUDGET_S / step_med, 2), "reset_vs_budget": round(RESET_BUDGET_S / reset_med, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", nargs="*", default=list(CONFIGS), help=f"any of {', '.join(CONFIGS)}; "
                    "a bare env name selects all its configs")
    ap.add_argument("--episodes", type=int, default=10)
    ap.add_argument("--policies", nargs="*", default=["oracle", "random"])
    args = ap.parse_args()
    chosen = [c for c in CONFIGS if c in args.configs or c.split("/")[0] in args.configs]
    rows = [run(c, args.episodes, p) for c in chosen for p in args.policies]
    meta = {"date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"), "cpu": _cpu(),
            "cores": os.cpu_count(), "load": list(os.getloadavg()), "mujoco_gl": os.environ.get("MUJOCO_GL", "egl"),
            "budget": {"step_s": STEP_BUDGET_S, "reset_s": RESET_BUDGET_S}}
    print(json.dumps({"meta": meta, "rows": rows}))
    cols = ("config", "policy", "success", "mean_score", "mean_turns", "step_median_ms", "turns_per_s",
            "reset_median_ms", "reset_max_ms", "render_median_ms", "step_vs_budget", "reset_vs_budget")
    print("| " + " | ".join(cols) + " |", file=sys.stderr)
    print("|" + "---|" * len(cols), file=sys.stderr)
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |", file=sys.stderr)


if __name__ == "__main__":
    main()
