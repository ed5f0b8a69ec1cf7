"""Sandbox latencies and footprint, local and docker providers, side by side with the goals.

Measures per provider: cold start (start -> healthy and first screenshot), reset (in-place;
docker also `docker restart` and remove+run), screenshot latency, structured-action
latency (one click through /input), screenshot + action, memory per idle sandbox, and how
many fit on this machine (memory-bound estimate, checked by running N at once and timing
screenshot + action on all of them concurrently).

    .venv/bin/python benchmarks/sandbox.py --providers local docker --n 4

Goals (issue): reset <= 2 s, screenshot + action <= 150 ms. OSWorld resets by reverting a
VM snapshot and waits >= 60 s; we print that as the baseline for the reset ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandboxes.providers import make_provider  # noqa: E402
from sandboxes.server.desktop import display_pids, parent_pid  # noqa: E402

GOAL_RESET_S = 2.0
GOAL_STEP_MS = 150.0
OSWORLD_RESET_S = 60.0


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def local_sandbox_rss(server_pid: int, display: str) -> int:
    """RSS (bytes) of a local sandbox: the server's process tree plus every process whose
    environment names its display (apps the agent daemonised), each process counted once."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            ppid = parent_pid(int(entry))
            if ppid is not None:
                children.setdefault(ppid, []).append(int(entry))
    tree, stack = set(), [server_pid]
    while stack:
        p = stack.pop()
        if p not in tree:
            tree.add(p)
            stack.extend(children.get(p, []))
    return sum(rss(p) for p in tree | set(display_pids(display)))


def step_latencies(client, n: int) -> tuple[list[float], list[float], list[float]]:
    shots, acts, both = [], [], []
    for i in range(n):
        t0 = time.perf_counter()
        client.screenshot()
        t1 = time.perf_counter()
        client.input([{"type": "click", "x": 600 + (i % 5) * 10, "y": 700}])
        t2 = time.perf_counter()
        shots.append((t1 - t0) * 1000)
        acts.append((t2 - t1) * 1000)
        both.append((t2 - t0) * 1000)
    return shots, acts, both


def bench(provider_name: str, n: int, steps: int, resets: int) -> dict:
    kwargs = {"image": os.environ.get("VAGEN_BENCH_IMAGE", "vagen/desktop:latest")} if provider_name == "docker" else {}
    prov = make_provider(provider_name, **kwargs)
    out: dict = {"provider": provider_name}
    try:
        t0 = time.perf_counter()
        (h,) = prov.start(1)
        c = h.client()
        c.screenshot()
        out["cold_start_s"] = round(time.perf_counter() - t0, 3)
        shots, acts, both = step_latencies(c, steps)
        out.update(screenshot_ms_p50=round(pct(shots, .5), 1), screenshot_ms_p90=round(pct(shots, .9), 1),
                   action_ms_p50=round(pct(acts, .5), 1), action_ms_p90=round(pct(acts, .9), 1),
                   step_ms_p50=round(pct(both, .5), 1), step_ms_p90=round(pct(both, .9), 1))
        times = []
        for _ in range(resets):
            c.execute("echo litter > ~/x.txt", shell=True)
            t0 = time.perf_counter()
            h = prov.reset(h)
            times.append(time.perf_counter() - t0)
        out.update(reset_inplace_s_p50=round(statistics.median(times), 3), reset_inplace_s_max=round(max(times), 3))
        time.sleep(1.0)
        if provider_name == "local":
            out["memory_mib"] = round(local_sandbox_rss(int(h.meta["pid"]), h.meta["display"]) / 2**20, 1)
        else:
            out["memory_mib"] = round(prov.stats(h)["memory_bytes"] / 2**20, 1)
            # Snapshot/commit: committing keeps files only (no processes, no X state), so a
            # snapshot reset would be commit once + recreate from it each time; time the commit.
            t0 = time.perf_counter()
            snap = prov._container(h).commit()
            out["docker_commit_s"] = round(time.perf_counter() - t0, 3)
            prov.client.images.remove(snap.id, force=True)
            for mode in ("restart", "recreate"):
                prov.reset_mode = mode
                ts = []
                for _ in range(3):
                    t0 = time.perf_counter()
                    h = prov.reset(h)
                    with h.client() as c2:
                        c2.screenshot()
                    ts.append(time.perf_counter() - t0)
                out[f"reset_{mode}_s_p50"] = round(statistics.median(ts), 3)
            prov.reset_mode = "inplace"
        c.close()
        prov.stop(h)
        # N at once: start together, then screenshot + action on all of them concurrently.
        t0 = time.perf_counter()
        hs = prov.start(n)
        out[f"start_{n}_s"] = round(time.perf_counter() - t0, 3)
        clients = [x.client() for x in hs]
        with ThreadPoolExecutor(n) as ex:
            res = list(ex.map(lambda cl: step_latencies(cl, steps // 2), clients))
        allboth = [v for _, _, b in res for v in b]
        out[f"step_ms_p50_with_{n}_concurrent"] = round(pct(allboth, .5), 1)
        out[f"step_ms_p90_with_{n}_concurrent"] = round(pct(allboth, .9), 1)
        for cl in clients:
            cl.close()
        for x in hs:
            prov.stop(x)
    finally:
        prov.close()
    mem_total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    out["fit_by_memory"] = int(0.8 * mem_total / (out["memory_mib"] * 2**20)) if out.get("memory_mib") else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--providers", nargs="+", default=["local", "docker"])
    ap.add_argument("--n", type=int, default=4, help="sandboxes run at once for the concurrency check")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--resets", type=int, default=10)
    args = ap.parse_args()
    os.environ.setdefault("VAGEN_SANDBOX_STATE_DIR", "/tmp/vagen-bench-sandboxes")
    rows = [bench(p, args.n, args.steps, args.resets) for p in args.providers]
    cols = ["cold_start_s", "reset_inplace_s_p50", "reset_inplace_s_max", "screenshot_ms_p50", "action_ms_p50",
            "step_ms_p50", "step_ms_p90", f"step_ms_p90_with_{args.n}_concurrent", "memory_mib", "fit_by_memory"]
    print("| provider | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for r in rows:
        print(f"| {r['provider']} | " + " | ".join(str(r.get(k, "")) for k in cols) + " |")
    for r in rows:
        print(f"{r['provider']}: reset p50 {r['reset_inplace_s_p50']} s vs goal {GOAL_RESET_S} s "
              f"(x{GOAL_RESET_S / max(r['reset_inplace_s_p50'], 1e-6):.1f} under) vs OSWorld >= {OSWORLD_RESET_S:.0f} s "
              f"(x{OSWORLD_RESET_S / max(r['reset_inplace_s_p50'], 1e-6):.0f} faster); screenshot+action p90 "
              f"{r['step_ms_p90']} ms vs goal {GOAL_STEP_MS:.0f} ms (x{GOAL_STEP_MS / max(r['step_ms_p90'], 1e-6):.1f} under)")
    print(json.dumps({"machine": {"cpus": os.cpu_count(), "load": os.getloadavg()}, "rows": rows}))


if __name__ == "__main__":
    main()
