#!/usr/bin/env python3
"""Side-by-side web env benchmark: our MiniWoB env vs. BrowserGym's MiniWoB env.

Measures, per MiniWoB++ task and for both sides, in one run:

* warm reset latency (median, p90) over ``--episodes`` episodes (seeds 0..N-1);
* step latency (median, p90) of a no-op step (``noop(wait_ms=0)``) and of a real click
  (``click("<bid>")`` on the first button of the page's element tree, else the first tab,
  link, checkbox, ... — see ``pick_click_target``);
* memory of one live env after the episodes: PSS (and USS) summed over the driver and
  browser processes (descendants of the process hosting the env), the number of Chromium
  browsers (main processes: no ``--type=``) and of processes, and the Python process's own PSS.

ours:  ``envs.make("miniwob", task=T, observation="screenshot_axtree")`` in this interpreter;
peers: ``gym.make("browsergym/miniwob.T")`` (browsergym-miniwob from PyPI) in a throwaway venv
       that this script creates on demand under ``--peer-dir`` (never in the project venv),
       run as a subprocess; once at BrowserGym's defaults and once with its fixed waits off
       (``pre_observation_delay=0, slow_mo=0``).

Both sides run the *same* protocol function (``run_web_protocol``; its source is shipped to
the peer subprocess) on the same pages (the project's ``miniwob`` package) with the same
system Chromium. Prints ONE JSON line on stdout and a readable table on stderr.

    .venv/bin/python benchmarks/web_env.py                  # 5 tasks, 20 episodes, both peers
    .venv/bin/python benchmarks/web_env.py --quick          # smoke run: 2 tasks, 3 episodes
    .venv/bin/python benchmarks/web_env.py --no-peers       # ours only (no venv, no network)
    .venv/bin/python benchmarks/web_env.py --save           # also write benchmarks/results_web_env.json
"""

from __future__ import annotations

import argparse
import datetime as _dt
import inspect
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULT_MARKER = "@@VAGEN_BENCH_RESULT@@ "
DEFAULT_TASKS = "click-button,click-checkboxes,enter-text,choose-list,click-tab"
QUICK_TASKS = "click-button,enter-text"
NOOP_ACTION = "noop(wait_ms=0)"  # same string on both sides (BrowserGym: noop(wait_ms: float = 1000))
SAVE_PATH = REPO_ROOT / "benchmarks" / "results_web_env.json"

# --------------------------------------------------------------------------------------
# The measurement protocol. Stdlib only: its source is sent verbatim to the peer venv.
# --------------------------------------------------------------------------------------

#: Roles tried in this order for the click step; the first element of the tree with the
#: first role that occurs is clicked (the pages' Submit / task buttons, click-tab's tabs).
CLICK_ROLES = ("button", "tab", "link", "checkbox", "radio", "option", "textbox")


def pick_click_target(tree_text):
    """(bid, role, name) of the element to click, from an element tree in text form.

    Both trees print one element per line as ``[bid] role name...`` (ours: ``[6] button
    "Ok"``, BrowserGym's flattened axtree: ``[13] button 'Submit'``), indented by depth.
    """
    import re

    line_re = re.compile(r"^\s*\[([^\]\s]+)\]\s+([A-Za-z]+)\s*(.*)$")
    found = {}
    for line in tree_text.splitlines():
        m = line_re.match(line)
        if m and m.group(2) in CLICK_ROLES and m.group(2) not in found:
            name = m.group(3).split(", ")[0].strip().strip("'\"")
            found[m.group(2)] = (m.group(1), m.group(2), name[:40])
    for role in CLICK_ROLES:
        if role in found:
            return found[role]
    return None


def proc_tree_memory(root_pid):
    """Memory of the processes descending from ``root_pid`` (not the root itself).

    PSS and USS (Private_Clean + Private_Dirty) from /proc/<pid>/smaps_rollup, in MB
    (1e6 bytes); processes classified as the Playwright driver (node ``run-driver``),
    Chromium browser main processes (no ``--type=`` in the command line), other Chromium
    processes (renderers, zygotes, GPU/network/storage utilities) and anything else.
    """
    import os

    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    todo, pids = list(children.get(root_pid, [])), []
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(children.get(pid, []))

    def rollup(pid):
        vals = {}
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    parts = line.split()
                    if len(parts) >= 3 and parts[0].endswith(":"):
                        vals[parts[0][:-1]] = int(parts[1])  # kB
        except OSError:
            return None
        return vals

    out = {"pss_mb": 0.0, "uss_mb": 0.0, "rss_mb": 0.0, "processes": 0, "browsers": 0, "drivers": 0,
           "chromium_children": 0, "other": 0, "by_kind_pss_mb": {}, "per_process": []}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        vals = rollup(pid)
        if vals is None or not argv:
            continue  # gone, or a zombie
        # Chromium rewrites its process title: the whole command line may be one string.
        words = " ".join(argv).split()
        exe = os.path.basename(words[0])
        if "run-driver" in words:
            kind = "drivers"
        elif "chrom" in exe:
            kind = "chromium_children" if any(w.startswith("--type=") for w in words) else "browsers"
        else:
            kind = "other"
        out[kind] += 1
        out["processes"] += 1
        pss = vals.get("Pss", 0) / 1000.0
        out["pss_mb"] += pss
        out["uss_mb"] += (vals.get("Private_Clean", 0) + vals.get("Private_Dirty", 0)) / 1000.0
        out["rss_mb"] += vals.get("Rss", 0) / 1000.0
        out["by_kind_pss_mb"][kind] = out["by_kind_pss_mb"].get(kind, 0.0) + pss
        sub = [w.split("=", 1)[1] for w in words if w.startswith(("--type=", "--utility-sub-type="))]
        out["per_process"].append([kind, "/".join(sub) or exe, round(pss, 1),
                                   round((vals.get("Private_Clean", 0) + vals.get("Private_Dirty", 0)) / 1000.0, 1)])
    me = rollup(os.getpid()) or {}
    out["python_pss_mb"] = me.get("Pss", 0) / 1000.0
    return out


def run_memory_protocol(makes, *, episodes):
    """Memory per env with several envs alive in one process (a rollout's situation).

    ``makes`` builds one env each (adapter dicts as for ``run_web_protocol``); each plays
    ``episodes`` episodes (reset seed i, one no-op step), then PSS/USS of the process tree
    is read with all of them alive and divided by their number; then all are closed.
    """
    import os

    envs_ = [make() for make in makes]
    try:
        for i in range(episodes):
            for e in envs_:
                e["reset"](i)
                e["step"]("noop(wait_ms=0)")
        mem = proc_tree_memory(os.getpid())
    finally:
        for e in envs_:
            e["close"]()
    n = len(envs_)
    return {"envs": n, "pss_mb": mem["pss_mb"], "uss_mb": mem["uss_mb"], "per_env_pss_mb": mem["pss_mb"] / n,
            "per_env_uss_mb": mem["uss_mb"] / n, "browsers": mem["browsers"], "processes": mem["processes"],
            "by_kind_pss_mb": mem["by_kind_pss_mb"]}


def run_web_protocol(make, *, episodes, warmup):
    """Time resets, no-op steps and click steps of one env, then measure its memory.

    ``make()`` returns an adapter dict: ``reset(seed) -> obs``, ``step(action) -> (obs,
    done, error)``, ``text(obs) -> element tree text with [bid]s``, ``frame(obs) -> shape of
    the screenshot``, ``close()``. Protocol: build the env and do ``warmup`` untimed warm-up
    episodes (reset seed 1_000_000+k, no-op step, click step); the first reset's time
    (browser launch included where the env launches lazily) is kept as ``cold``. Then for
    episode i = 0..N-1: time ``reset(seed=i)``; time one ``noop(wait_ms=0)`` step; pick the
    click target from the tree text of that step's observation (``pick_click_target``) and
    time ``click("<bid>")``. Only the env calls are timed; turning the observation into
    tree text is timed separately (``obs_text_*``). Memory is read with the env alive after
    the last episode; after ``close()`` the processes left behind are counted.
    """
    import collections
    import os
    import time

    clock = time.perf_counter

    def quantile(xs, q):
        xs = sorted(xs)
        if not xs:
            return float("nan")
        pos = (len(xs) - 1) * q
        lo = int(pos)
        hi = min(lo + 1, len(xs) - 1)
        return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)

    t0 = clock()
    env = make()
    make_s = clock() - t0
    samples = {"reset": [], "noop": [], "click": [], "obs_text": []}
    picks, errors, frame, cold = collections.Counter(), [], None, None
    noop_errors = click_errors = clicks_done = 0
    try:
        for k in range(warmup + episodes):
            timed = k >= warmup
            seed = k - warmup if timed else 1_000_000 + k
            t0 = clock()
            obs = env["reset"](seed)
            dt = clock() - t0
            if cold is None:
                cold = dt
            if timed:
                samples["reset"].append(dt)
            t0 = clock()
            env["text"](obs)
            if timed:
                samples["obs_text"].append(clock() - t0)
            frame = env["frame"](obs)
            t0 = clock()
            obs, _done, err = env["step"]("noop(wait_ms=0)")
            dt = clock() - t0
            if timed:
                samples["noop"].append(dt)
                if err:
                    noop_errors += 1
                    errors.append(f"noop: {err}"[:200])
            t0 = clock()
            tree = env["text"](obs)
            if timed:
                samples["obs_text"].append(clock() - t0)
            target = pick_click_target(tree)
            if target is None:
                if timed:
                    errors.append(f"seed {seed}: nothing to click in the tree")
                continue
            bid, role, name = target
            t0 = clock()
            obs, done, err = env["step"](f'click("{bid}")')
            dt = clock() - t0
            if timed:
                samples["click"].append(dt)
                clicks_done += 1
                picks[f"{role} {name!r}" if role in ("button", "tab") else role] += 1
                if err:
                    click_errors += 1
                    errors.append(f"click({bid}) {role}: {err}"[:200])
        memory = proc_tree_memory(os.getpid())
    finally:
        t0 = clock()
        env["close"]()
        close_s = clock() - t0
    time.sleep(1.0)
    left = proc_tree_memory(os.getpid())

    res = {
        "available": True,
        "episodes": episodes,
        "make_s": make_s,
        "cold_first_reset_s": cold,
        "close_s": close_s,
        "frame_shape": list(frame) if frame else None,
        "click_targets": dict(picks.most_common()),
        "noop_errors": noop_errors,
        "click_errors": click_errors,
        "clicks": clicks_done,
        "errors_sample": errors[:5],
        "memory": memory,
        "processes_left_after_close": left["processes"],
        "samples_ms": {k: [round(1000.0 * x, 2) for x in v] for k, v in samples.items()},
    }
    for key, xs in samples.items():
        res[f"{key}_median_ms"] = 1000.0 * quantile(xs, 0.5)
        res[f"{key}_p90_ms"] = 1000.0 * quantile(xs, 0.9)
        res[f"{key}_max_ms"] = 1000.0 * max(xs) if xs else float("nan")
    return res


# --------------------------------------------------------------------------------------
# OURS. The only place that knows how our env is constructed.
# --------------------------------------------------------------------------------------

OURS_KWARGS = {"observation": "screenshot_axtree"}
CHROMIUM = ""  # set from --chromium: both sides run the same binary


def make_ours(task: str, **extra):
    import envs

    env = envs.make("miniwob", task=task, **{**OURS_KWARGS, **({"browser_executable": CHROMIUM} if CHROMIUM else {}),
                                             **extra})

    def reset(seed):
        return env.reset(seed=seed)[0]

    def step(action):
        obs, _r, term, trunc, info = env.step(action)
        return obs, bool(term or trunc), info.get("feedback") or ""

    def frame(obs):
        imgs = obs.get("images") or ()
        return list(imgs[0].shape) if imgs else None

    return {"reset": reset, "step": step, "text": lambda obs: obs["text"], "frame": frame, "close": env.close}


# --------------------------------------------------------------------------------------
# PEER. Runs inside the peer venv (its source is shipped to the subprocess).
# --------------------------------------------------------------------------------------


def make_peer_browsergym(task, env_kwargs):
    """BrowserGym's MiniWoB env: ``gym.make("browsergym/miniwob.<task>", **env_kwargs)``.

    Its default action mapping (``HighLevelActionSet()``: chat, infeas, bid, nav, tab)
    takes ``noop(wait_ms=0)`` and ``click("<bid>")``. The tree text is the flattened
    axtree (``flatten_axtree_to_str(obs["axtree_object"])``, BrowserGym's own helper).
    """
    import browsergym.miniwob  # noqa: F401  (registers the tasks)
    import gymnasium as gym
    from browsergym.utils.obs import flatten_axtree_to_str

    env = gym.make(f"browsergym/miniwob.{task}", **env_kwargs)

    def reset(seed):
        return env.reset(seed=seed)[0]

    def step(action):
        obs, _r, term, trunc, _info = env.step(action)
        return obs, bool(term or trunc), obs.get("last_action_error") or ""

    def frame(obs):
        shot = obs.get("screenshot")
        return list(shot.shape) if shot is not None else None

    return {"reset": reset, "step": step, "text": lambda obs: flatten_axtree_to_str(obs["axtree_object"]),
            "frame": frame, "close": env.close}


def _peer_main():
    """Entry point of the snippet run by the peer venv's python."""
    import contextlib
    import importlib.metadata as md
    import json
    import logging
    import platform
    import sys
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)  # BrowserGym warns on every overridden task property
    args = json.loads(sys.argv[1])
    real_stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        if args.get("memory_tasks"):
            res = run_memory_protocol([(lambda t=t: make_peer_browsergym(t, args["env_kwargs"]))
                                       for t in args["memory_tasks"]], episodes=args["episodes"])
        else:
            res = run_web_protocol(lambda: make_peer_browsergym(args["task"], args["env_kwargs"]),
                                   episodes=args["episodes"], warmup=args["warmup"])
    versions = {"python": platform.python_version()}
    for dist in args["dists"]:
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            versions[dist] = None
    res["versions"] = versions
    real_stdout.write(RESULT_MARKER + json.dumps(res) + "\n")
    real_stdout.flush()


def _peer_snippet() -> str:
    parts = [f"RESULT_MARKER = {RESULT_MARKER!r}", f"CLICK_ROLES = {CLICK_ROLES!r}"]
    parts += [inspect.getsource(f) for f in (pick_click_target, proc_tree_memory, run_memory_protocol,
                                             run_web_protocol, make_peer_browsergym, _peer_main)]
    return "\n\n".join(parts) + "\n\n_peer_main()\n"


PEER_PIP = ["browsergym-miniwob==0.14.3"]
PEER_DISTS = ["browsergym-core", "browsergym-miniwob", "playwright", "gymnasium", "numpy"]

#: Peer variants: one measured row each.
PEER_VARIANTS: dict[str, dict[str, Any]] = {
    "default": {"env_kwargs": {}, "label": "BrowserGym (defaults)"},
    # BrowserGym sleeps pre_observation_delay (0.5 s) after every action and the MiniWoB
    # tasks set Playwright slow_mo=100 ms; this variant turns both off (env kwargs override
    # the task's values) to show the cost of the machinery itself.
    "nodelay": {"env_kwargs": {"pre_observation_delay": 0.0, "slow_mo": 0}, "label": "BrowserGym (no fixed waits)"},
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Peer venv + browser path
# --------------------------------------------------------------------------------------


def ensure_peer_venv(peer_dir: Path, python: str) -> Path:
    """Create (or reuse) ``<peer-dir>/venv`` with BrowserGym's MiniWoB; return its python."""
    spec = {"pip": PEER_PIP, "base_python": python}
    venv = peer_dir / "venv"
    marker = venv / ".vagen-bench-spec.json"
    py = venv / "bin" / "python"
    if marker.exists() and py.exists():
        try:
            if json.loads(marker.read_text()) == spec:
                return py
        except (OSError, ValueError):
            pass
    if venv.exists():
        shutil.rmtree(venv)
    peer_dir.mkdir(parents=True, exist_ok=True)
    log(f"[peer] creating venv {venv} ({python} -m venv) and installing {' '.join(spec['pip'])}")
    t0 = time.perf_counter()
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-input"]
    proc = subprocess.run(pip + spec["pip"], capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"pip install failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    marker.write_text(json.dumps(spec))  # written last: a half-built venv is rebuilt next time
    log(f"[peer] ready in {time.perf_counter() - t0:.1f}s")
    return py


def ensure_peer_browsers(peer_dir: Path, py: Path, chromium: str) -> Path:
    """A PLAYWRIGHT_BROWSERS_PATH whose chromium-<rev>/chrome-linux/chrome is the system Chromium.

    The peer's Playwright (1.44) cannot download its browser here; ``<rev>`` is the chromium
    revision its driver expects (playwright/driver/package/browsers.json).
    """
    code = ("import json, pathlib, playwright; p = pathlib.Path(playwright.__file__).parent / 'driver' / 'package' / "
            "'browsers.json'; print([b['revision'] for b in json.loads(p.read_text())['browsers'] "
            "if b['name'] == 'chromium'][0])")
    rev = subprocess.run([str(py), "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    browsers = peer_dir / "pw-browsers"
    link = browsers / f"chromium-{rev}" / "chrome-linux" / "chrome"
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        if os.path.realpath(link) == os.path.realpath(chromium):
            return browsers
        link.unlink()
    link.symlink_to(chromium)
    return browsers


def measure_peer(task: str, variant: str, py: Path, env: dict[str, str], args: argparse.Namespace,
                 memory_tasks: list[str] | None = None) -> dict[str, Any]:
    payload = {"task": task, "env_kwargs": PEER_VARIANTS[variant]["env_kwargs"], "episodes": args.episodes,
               "warmup": args.warmup, "dists": PEER_DISTS, "memory_tasks": memory_tasks}
    if memory_tasks:
        payload["episodes"] = 3
    with tempfile.NamedTemporaryFile("w", suffix="_web_peer_bench.py", delete=False) as f:
        f.write(_peer_snippet())
        script = f.name
    try:
        proc = subprocess.run([str(py), script, json.dumps(payload)], capture_output=True, text=True,
                              timeout=args.peer_timeout, env={**os.environ, **env})
    finally:
        os.unlink(script)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARKER)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"peer run failed (rc={proc.returncode}):\n{proc.stderr[-3000:]}")
    res = json.loads(lines[-1][len(RESULT_MARKER):])
    res["impl"] = PEER_VARIANTS[variant]["label"]
    res["cfg"] = {"gym_id": f"browsergym/miniwob.{task}", **PEER_VARIANTS[variant]["env_kwargs"]}
    return res


def measure_ours(task: str, args: argparse.Namespace) -> dict[str, Any]:
    global CHROMIUM
    CHROMIUM = args.chromium or ""
    cfg = {"name": "miniwob", "task": task, **OURS_KWARGS, "browser_executable": CHROMIUM or None}
    try:
        res = run_web_protocol(lambda: make_ours(task), episodes=args.episodes, warmup=args.warmup)
    except Exception as e:
        return {"available": False, "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc(limit=6),
                "cfg": cfg}
    res["impl"] = "ours"
    res["cfg"] = cfg
    return res


def memory_tasks(args: argparse.Namespace) -> list[str]:
    return [args.task_list[i % len(args.task_list)] for i in range(args.memory_envs)]


def measure_ours_memory(args: argparse.Namespace, share: bool) -> dict[str, Any]:
    global CHROMIUM
    CHROMIUM = args.chromium or ""
    extra = {"share_browser": True} if share else {}
    res = run_memory_protocol([(lambda t=t: make_ours(t, **extra)) for t in memory_tasks(args)], episodes=3)
    res["impl"] = "ours, one browser per env" if not share else "ours, share_browser=True (one browser, a context per env)"
    return res


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------

METRICS = ("reset", "noop", "click")


def _quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarise(rows: dict[str, dict[str, Any]], side: str) -> dict[str, Any] | None:
    """All tasks pooled: quantiles over every sample; memory figures averaged over tasks."""
    ms = [r[side] for r in rows.values() if r.get(side, {}).get("available")]
    if not ms:
        return None
    out: dict[str, Any] = {"available": True, "tasks": len(ms), "impl": ms[0].get("impl")}
    for key in (*METRICS, "obs_text"):
        xs = [x for m in ms for x in m["samples_ms"][key]]
        out[f"{key}_median_ms"] = _quantile(xs, 0.5)
        out[f"{key}_p90_ms"] = _quantile(xs, 0.9)
        out[f"{key}_n"] = len(xs)
    for key in ("pss_mb", "uss_mb", "python_pss_mb", "processes", "browsers"):
        out[key] = sum(m["memory"][key] for m in ms) / len(ms)
    out["cold_first_reset_s"] = sum(m["cold_first_reset_s"] for m in ms) / len(ms)
    out["click_errors"] = sum(m["click_errors"] for m in ms)
    out["noop_errors"] = sum(m["noop_errors"] for m in ms)
    return out


def ratios(ours: dict[str, Any] | None, peer: dict[str, Any] | None) -> dict[str, float] | None:
    """speedup_* = peer latency / our latency (>1: ours faster); memory_* = ours / peer (<1: ours smaller)."""
    if not (ours and peer and ours.get("available") and peer.get("available")):
        return None

    def div(a, b):
        return a / b if a and b and a == a and b == b else float("nan")

    out = {}
    for m in METRICS:
        for q in ("median", "p90"):
            out[f"speedup_{m}_{q}"] = div(peer[f"{m}_{q}_ms"], ours[f"{m}_{q}_ms"])
    mo, mp = ours.get("memory", ours), peer.get("memory", peer)
    out["memory_pss_ours_over_peer"] = div(mo["pss_mb"], mp["pss_mb"])
    out["memory_uss_ours_over_peer"] = div(mo["uss_mb"], mp["uss_mb"])
    return out


def goals(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The issue's goals against BrowserGym at its defaults, on the pooled figures."""
    rt, ours = summary.get("ratio_vs_default"), summary.get("ours")
    if not rt or not ours:
        return None
    out = {f"{m}_speedup_median": {"value": rt[f"speedup_{m}_median"], "goal": ">= 2"} for m in METRICS}
    out["memory_pss_ours_over_peer"] = {"value": rt["memory_pss_ours_over_peer"], "goal": "<= 0.5"}
    out["browsers_per_env"] = {"value": float(ours["browsers"]), "goal": "== 1"}
    for g in out.values():
        v = g["value"]
        g["met"] = bool(v == v and (v >= 2 if g["goal"] == ">= 2" else v <= 0.5 if g["goal"] == "<= 0.5" else v == 1))
    return out


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _dist_version(dist: str) -> str | None:
    import importlib.metadata as md

    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def _git_rev() -> str | None:
    try:
        rev = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain"], capture_output=True,
                               text=True, timeout=10).stdout.strip()
        return (rev + ("+dirty" if dirty else "")) or None
    except (OSError, subprocess.SubprocessError):
        return None


def _chromium_version(exe: str) -> str | None:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        return out.splitlines()[-1] if out else None
    except (OSError, subprocess.SubprocessError):
        return None


def _finite(x: Any) -> Any:
    """NaN/inf -> None, so the JSON line is strict JSON."""
    if isinstance(x, float):
        return x if x == x and x not in (float("inf"), float("-inf")) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    return x


def _f(x: Any, nd: int = 0) -> str:
    if isinstance(x, float):
        return "-" if x != x else f"{x:,.{nd}f}"
    return "-" if x is None else str(x)


def print_table(out: dict[str, Any]) -> None:
    cols = ("task", "impl", "reset med/p90 ms", "noop med/p90 ms", "click med/p90 ms", "PSS MB", "USS MB",
            "browsers/procs", "py PSS MB", "cold s", "click errs")
    rows: list[tuple[str, ...]] = []
    sides = [f"peer_{v}" for v in PEER_VARIANTS] + ["ours"]

    def mrow(task: str, side: str, m: dict[str, Any]) -> tuple[str, ...]:
        mem = m.get("memory", m)
        return (task, f"{side}: {m.get('impl', '')}",
                f"{_f(m['reset_median_ms'])} / {_f(m['reset_p90_ms'])}",
                f"{_f(m['noop_median_ms'])} / {_f(m['noop_p90_ms'])}",
                f"{_f(m['click_median_ms'])} / {_f(m['click_p90_ms'])}",
                _f(mem["pss_mb"]), _f(mem["uss_mb"]), f"{_f(mem['browsers'], 1)} / {_f(mem['processes'], 1)}",
                _f(mem["python_pss_mb"]), _f(m["cold_first_reset_s"], 2), _f(m["click_errors"]))

    blocks = list(out["results"].items()) + [("ALL", out["summary"])]
    for task, r in blocks:
        for side in sides:
            m = r.get(side)
            if m is None:
                continue
            if not m.get("available"):
                err_lines = [ln.strip() for ln in str(m.get("error", "")).splitlines() if ln.strip()] or [""]
                rows.append((task, side, "unavailable: " + err_lines[-1][:120]))
                continue
            rows.append(mrow(task, side, m))
        for v in PEER_VARIANTS:
            rt = r.get(f"ratio_vs_{v}")
            if rt:
                rows.append((task, f"speedup vs {v} (peer/ours)",
                             f"x{_f(rt['speedup_reset_median'], 2)} / x{_f(rt['speedup_reset_p90'], 2)}",
                             f"x{_f(rt['speedup_noop_median'], 2)} / x{_f(rt['speedup_noop_p90'], 2)}",
                             f"x{_f(rt['speedup_click_median'], 2)} / x{_f(rt['speedup_click_p90'], 2)}",
                             f"x{_f(rt['memory_pss_ours_over_peer'], 2)}", f"x{_f(rt['memory_uss_ours_over_peer'], 2)}",
                             "", "", "", ""))
    sized = [row for row in rows if len(row) == len(cols)]
    widths = [max([len(c)] + [len(row[i]) for row in sized]) for i, c in enumerate(cols)]
    h = out["host"]
    log("")
    log(f"Web env: ours vs BrowserGym MiniWoB  ({h['cpu_model']}, {h['cpu_count']} cpus, load {h['loadavg_at_start']}, "
        f"{out['protocol']['episodes']} episodes per task)")
    log("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)))
    log("  ".join("-" * w for w in widths))
    for row in rows:
        if len(row) != len(cols):
            log("  ".join([row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2]]))
        else:
            log("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    log("(speedup = peer latency / our latency, >1: ours faster; memory columns in speedup rows: ours/peer, <1: ours "
        "smaller; goals: speedup >= 2, memory <= 0.5, one browser per env)")


# --------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default=None, help=f"comma list of MiniWoB tasks (default: {DEFAULT_TASKS})")
    p.add_argument("--episodes", type=int, default=20, help="timed episodes per task and side (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=1, help="untimed warm-up episodes first (default: %(default)s)")
    p.add_argument("--quick", action="store_true",
                   help=f"smoke run: {QUICK_TASKS}, 3 episodes (unless --tasks/--episodes are given)")
    p.add_argument("--peer-variants", default=",".join(PEER_VARIANTS),
                   help=f"comma list of {', '.join(PEER_VARIANTS)} (default: %(default)s)")
    p.add_argument("--peer-dir", type=Path, default=Path("/tmp/vagen-bench-peers/browsergym"),
                   help="BrowserGym's throwaway venv (<dir>/venv) and browser path (<dir>/pw-browsers) "
                        "(default: %(default)s)")
    p.add_argument("--peer-python", default=sys.executable,
                   help="interpreter that creates the peer venv; same Python as ours by default (default: %(default)s)")
    p.add_argument("--peer-timeout", type=float, default=1800, help="seconds per peer measurement (default: %(default)s)")
    p.add_argument("--chromium", default=shutil.which("chromium-headless-shell") or shutil.which("chromium") or "",
                   help="Chromium the peer's Playwright is pointed at; ours is given the same binary "
                        "(default: the headless shell, which our env picks by itself) (default: %(default)s)")
    p.add_argument("--memory-envs", type=int, default=4,
                   help="also measure memory per env with this many envs alive in one process (0/1: skip) "
                        "(default: %(default)s)")
    p.add_argument("--no-peers", action="store_true", help="skip BrowserGym")
    p.add_argument("--no-ours", action="store_true", help="skip ours")
    p.add_argument("--json-out", type=Path, default=None, help="also write the JSON result to this file")
    p.add_argument("--save", action="store_true", help=f"also write the JSON result to {SAVE_PATH.relative_to(REPO_ROOT)}")
    given = argv if argv is not None else sys.argv[1:]
    args = p.parse_args(argv)
    if args.tasks is None:
        args.tasks = QUICK_TASKS if args.quick else DEFAULT_TASKS
    if args.quick and "--episodes" not in given:
        args.episodes = 3
    args.task_list = [t.strip() for t in args.tasks.split(",") if t.strip()]
    args.variant_list = [v.strip() for v in args.peer_variants.split(",") if v.strip()]
    unknown = [v for v in args.variant_list if v not in PEER_VARIANTS]
    if unknown:
        p.error(f"unknown peer variant(s) {unknown}; choose from {', '.join(PEER_VARIANTS)}")
    if not args.task_list or args.episodes < 1 or args.warmup < 0:
        p.error("--tasks must name a task, --episodes must be >= 1, --warmup >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if str(REPO_ROOT) not in sys.path:
        sys.path.append(str(REPO_ROOT))  # fallback: `import envs` also without the editable install

    import miniwob  # the pages both sides load (a dependency of ours)

    miniwob_url = (Path(miniwob.__file__).parent / "html" / "miniwob").as_uri() + "/"
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    out: dict[str, Any] = {
        "benchmark": "web_env",
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join([os.path.relpath(sys.executable), *sys.argv]) if argv is None else None,
        "host": {"cpu_model": cpu_model(), "cpu_count": os.cpu_count(),
                 "loadavg_at_start": [round(x, 2) for x in load] if load else None, "platform": platform.platform()},
        "protocol": {
            "episodes": args.episodes,
            "warmup_episodes": args.warmup,
            "reset_seed": "episode index i = 0..episodes-1 (warm-up: 1000000+k)",
            "per_episode": "time reset(seed=i); time step('noop(wait_ms=0)'); pick the click target from that "
                           "observation's element tree; time step('click(\"<bid>\")')",
            "click_target": f"first element of the tree with the first role present among {list(CLICK_ROLES)}",
            "timed": "the env call only; tree text from the observation timed separately as obs_text",
            "memory": "after the last episode, env alive: PSS/USS summed over the descendants of the process "
                      "hosting the env (Playwright driver + Chromium processes); python_pss_mb = that process",
            "order": "per task: BrowserGym variants (a subprocess each, own venv), then ours (this interpreter)",
            "pages": miniwob_url,
        },
        "versions": {
            "ours": {"python": platform.python_version(), "vagen_git": _git_rev(),
                     **{d: _dist_version(d) for d in ("playwright", "miniwob", "numpy", "pillow")},
                     "chromium": _chromium_version(args.chromium) if args.chromium else None},
            "peer": None,
        },
        "results": {},
    }

    peer_py: Path | None = None
    peer_env: dict[str, str] = {}
    peer_error: str | None = None
    if not args.no_peers:
        try:
            if not args.chromium:
                raise RuntimeError("no Chromium found (--chromium)")
            peer_py = ensure_peer_venv(args.peer_dir.expanduser(), args.peer_python)
            browsers = ensure_peer_browsers(args.peer_dir.expanduser(), peer_py, args.chromium)
            peer_env = {"PLAYWRIGHT_BROWSERS_PATH": str(browsers), "MINIWOB_URL": miniwob_url}
        except Exception as e:
            peer_error = f"{type(e).__name__}: {e}"
            log(f"[peer] unavailable: {peer_error}")

    for task in args.task_list:
        row: dict[str, Any] = {}
        if not args.no_peers:
            for v in args.variant_list:
                key = f"peer_{v}"
                if peer_error:
                    row[key] = {"available": False, "error": peer_error}
                    continue
                log(f"[{task}] peer {PEER_VARIANTS[v]['label']}: {args.episodes} episodes ...")
                t0 = time.perf_counter()
                try:
                    row[key] = measure_peer(task, v, peer_py, peer_env, args)
                    out["versions"]["peer"] = row[key].pop("versions", None)
                except Exception as e:
                    row[key] = {"available": False, "error": f"{type(e).__name__}: {e}"}
                log(f"[{task}]   done in {time.perf_counter() - t0:.0f}s")
        if not args.no_ours:
            log(f"[{task}] ours: {args.episodes} episodes ...")
            t0 = time.perf_counter()
            row["ours"] = measure_ours(task, args)
            log(f"[{task}]   done in {time.perf_counter() - t0:.0f}s")
        for v in args.variant_list:
            row[f"ratio_vs_{v}"] = ratios(row.get("ours"), row.get(f"peer_{v}"))
        for side, m in row.items():
            if isinstance(m, dict) and m.get("available") is False:
                log(f"[{task}] {side} unavailable: {m.get('error', '')}")
        out["results"][task] = row

    if args.memory_envs > 1:
        mem: dict[str, Any] = {}
        log(f"[memory] {args.memory_envs} envs alive in one process ...")
        if not args.no_peers and not peer_error:
            try:
                mem["peer"] = measure_peer(args.task_list[0], "default", peer_py, peer_env, args, memory_tasks(args))
                mem["peer"].pop("versions", None)
            except Exception as e:
                mem["peer"] = {"available": False, "error": f"{type(e).__name__}: {e}"}
        if not args.no_ours:
            mem["ours"] = measure_ours_memory(args, share=False)
            mem["ours_shared"] = measure_ours_memory(args, share=True)
        peer_pss = (mem.get("peer") or {}).get("per_env_pss_mb")
        for k in ("ours", "ours_shared"):
            if peer_pss and k in mem:
                mem[k]["per_env_pss_ours_over_peer"] = mem[k]["per_env_pss_mb"] / peer_pss
        out["memory_n_envs"] = mem
        for k, m in mem.items():
            if m.get("available") is False:
                log(f"[memory] {k}: unavailable: {m.get('error')}")
                continue
            log(f"[memory] {k}: {m['envs']} envs: {m['per_env_pss_mb']:.0f} MB PSS / {m['per_env_uss_mb']:.0f} MB USS "
                f"per env, {m['browsers']} browsers, {m['processes']} processes"
                + (f"; x{m['per_env_pss_ours_over_peer']:.2f} of BrowserGym's" if "per_env_pss_ours_over_peer" in m
                   else ""))

    summary: dict[str, Any] = {}
    for side in [f"peer_{v}" for v in args.variant_list] + ["ours"]:
        s = summarise(out["results"], side)
        if s:
            summary[side] = s
    for v in args.variant_list:
        summary[f"ratio_vs_{v}"] = ratios(summary.get("ours"), summary.get(f"peer_{v}"))
    out["summary"] = summary
    out["goals"] = goals(summary)
    shared = (out.get("memory_n_envs") or {}).get("ours_shared") or {}
    if out["goals"] is not None and "per_env_pss_ours_over_peer" in shared:
        out["goals"][f"memory_pss_per_env_{shared['envs']}_envs_share_browser"] = {
            "value": shared["per_env_pss_ours_over_peer"], "goal": "<= 0.5",
            "met": bool(shared["per_env_pss_ours_over_peer"] <= 0.5)}

    print_table(out)
    for name, g in (out["goals"] or {}).items():
        log(f"goal {name}: {'met' if g['met'] else 'MISSED'} ({g['value']:.2f}; goal {g['goal']})")
    line = json.dumps(_finite(out), allow_nan=False)
    print(line, flush=True)
    for path in ([args.json_out] if args.json_out else []) + ([SAVE_PATH] if args.save else []):
        path.write_text(line + "\n")
        log(f"[saved] {path}")
    failed = [f"{task}/{side}" for task, row in out["results"].items() for side, m in row.items()
              if isinstance(m, dict) and m.get("available") is False]
    if failed:
        log(f"[error] measurements failed: {', '.join(failed)}")
    return 1 if failed else 0  # a missed goal is a result, not an error


if __name__ == "__main__":
    sys.exit(main())
