"""OSWorld env step time without a model: action + readiness + screenshot, vs OSWorld's fixed waits.

Plays the stored oracle of a spread of osworld-lite tasks (terminal, editor, browser, X
settings) and times every ``env.step`` (parse -> /input -> wait until the screen settles ->
screenshot -> state), and every ``env.reset`` (lease a reset sandbox + the task's setup).

OSWorld's ``DesktopEnv.step`` sleeps a fixed ``pause`` of 2 s after every action before it
takes the screenshot (and its agents' run loop may add ``sleep_after_execution``), so 2 s
is the floor of one OSWorld step without the model; we print our step time beside it.

    .venv/bin/python benchmarks/osworld_step.py --provider local
    .venv/bin/python benchmarks/osworld_step.py --provider docker
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import envs  # noqa: E402

OSWORLD_PAUSE_S = 2.0
TASKS = ["os-write-hello", "os-sort-names", "os-archive-photos", "ed-append-milk", "ed-retitle", "ch-open-about",
         "ch-click-accept", "ch-single-tab", "set-key-repeat-rate", "os-infeasible-bluetooth"]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def kind(action: str) -> str:
    if action in ("DONE", "FAIL", "WAIT"):
        return "end (evaluate)" if action != "WAIT" else "wait"
    if "click" in action:
        return "click"
    if "typewrite" in action:
        return "type"
    return "key"


def run(provider: str, repeats: int) -> dict:
    env = envs.make("osworld", task_ids=TASKS, sandbox={"provider": provider})
    steps: dict[str, list[float]] = {}
    settle: list[float] = []
    settled: list[float] = []
    resets: list[float] = []
    scores: list[float] = []
    try:
        for _ in range(repeats):
            for tid in TASKS:
                t0 = time.perf_counter()
                _, info = env.reset(options={"task_id": tid})
                resets.append(time.perf_counter() - t0)
                for a in env.solve_state(info["state"]):
                    t0 = time.perf_counter()
                    _, r, term, trunc, info = env.step(a)
                    steps.setdefault(kind(a), []).append(time.perf_counter() - t0)
                    if "env/settle_s" in info["metrics"]:
                        settle.append(info["metrics"]["env/settle_s"])
                        settled.append(info["metrics"]["env/settled"])
                    if term or trunc:
                        scores.append(r)
                        break
    finally:
        env.close()
    acting = [x for k, v in steps.items() if k != "end (evaluate)" for x in v]
    return {
        "provider": provider, "episodes": len(scores), "oracle_success": sum(s == 1.0 for s in scores) / len(scores),
        "step_s_p50": round(pct(acting, 0.5), 3), "step_s_p90": round(pct(acting, 0.9), 3),
        "step_s_mean": round(statistics.fmean(acting), 3),
        "by_kind_p50": {k: round(pct(v, 0.5), 3) for k, v in sorted(steps.items())},
        "settle_s_p50": round(pct(settle, 0.5), 3), "settled_fraction": round(statistics.fmean(settled), 3),
        "reset_s_p50": round(pct(resets, 0.5), 3), "reset_s_p90": round(pct(resets, 0.9), 3),
        "osworld_fixed_pause_s": OSWORLD_PAUSE_S,
        "speedup_vs_osworld_pause_p50": round(OSWORLD_PAUSE_S / pct(acting, 0.5), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--provider", nargs="+", default=["local"], choices=["local", "docker"])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(Path(__file__).with_name("results_osworld_step.json")))
    args = ap.parse_args()
    rows = [run(p, args.repeats) for p in args.provider]
    print("| provider | episodes | oracle success | step p50 s | step p90 s | settle p50 s | settled | reset p50 s |"
          " OSWorld pause s | pause / our p50 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['provider']} | {r['episodes']} | {r['oracle_success']:.2f} | {r['step_s_p50']} | {r['step_s_p90']} | "
              f"{r['settle_s_p50']} | {r['settled_fraction']} | {r['reset_s_p50']} | {r['osworld_fixed_pause_s']} | "
              f"{r['speedup_vs_osworld_pause_p50']}x |")
        print(f"  {r['provider']} step p50 by kind: {r['by_kind_p50']}")
    out = {"machine": {"cpus": os.cpu_count(), "load": os.getloadavg()}, "rows": rows}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
