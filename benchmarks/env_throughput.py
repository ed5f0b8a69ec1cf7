#!/usr/bin/env python3
"""Side-by-side env throughput: our envs vs. reference implementations ("peers").

Measures reset + step + render(RGB) throughput of

* ours:  ``envs.make("frozenlake", ...)`` / ``envs.make("sokoban", ...)`` in this interpreter;
* peers: gymnasium's ``FrozenLake-v1`` and gym-sokoban, each installed in a throwaway venv
  that this script creates on demand under ``--peer-dir`` (never in the project venv),
  measured by a subprocess running that venv's python.

Both sides run the *same* protocol function (``run_protocol`` below; its source is shipped
to the peer subprocess), in one run, so the ratios are fair on a noisy machine.

Prints ONE JSON line on stdout and a readable table on stderr. See benchmarks/README.md.

    .venv/bin/python benchmarks/env_throughput.py                 # everything, 50 episodes
    .venv/bin/python benchmarks/env_throughput.py --quick         # smoke run
    .venv/bin/python benchmarks/env_throughput.py --no-ours       # peers only
    .venv/bin/python benchmarks/env_throughput.py --no-peers --envs sokoban
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
DIRECTIONS = ("Up", "Down", "Left", "Right")
RESULT_MARKER = "@@VAGEN_BENCH_RESULT@@ "

# --------------------------------------------------------------------------------------
# The measurement protocol. Stdlib only: its source is sent verbatim to the peer venvs.
# --------------------------------------------------------------------------------------


def run_protocol(reset, step, render, *, episodes, max_steps, warmup):
    """Time ``episodes`` episodes of reset + (step + render) and summarise them.

    ``reset(seed)`` resets the env; ``step(direction)`` takes one of "Up", "Down", "Left",
    "Right" and returns True when the episode is over (terminated or truncated);
    ``render()`` returns the HxWx3 uint8 frame. Episode ``i`` resets with ``seed=i`` and
    plays uniformly random directions drawn from ``random.Random(i)``, rendering after
    every step, until done or ``max_steps`` steps. ``warmup`` untimed episodes (seeds
    1_000_000+k) run first so lazy imports and asset loading are not timed.
    """
    import random
    import time

    dirs = ("Up", "Down", "Left", "Right")
    clock = time.perf_counter

    def episode(seed, timed):
        rng = random.Random(seed)
        t0 = clock()
        reset(seed)
        t_reset = clock() - t0
        n, t_steps, frame = 0, 0.0, None
        done = False
        while not done and n < max_steps:
            a = dirs[rng.randrange(4)]
            t0 = clock()
            done = step(a)
            frame = render()
            t_steps += clock() - t0
            n += 1
        return t_reset, n, t_steps, frame

    for k in range(warmup):
        episode(1_000_000 + k, False)

    reset_s, steps, step_s, lengths = [], 0, 0.0, []
    frame = None
    wall0 = clock()
    for i in range(episodes):
        t_reset, n, t_steps, f = episode(i, True)
        reset_s.append(t_reset)
        steps += n
        step_s += t_steps
        lengths.append(n)
        frame = f if f is not None else frame
    wall = clock() - wall0

    def quantile(xs, q):
        xs = sorted(xs)
        if not xs:
            return float("nan")
        pos = (len(xs) - 1) * q
        lo = int(pos)
        hi = min(lo + 1, len(xs) - 1)
        return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)

    shape = list(getattr(frame, "shape", ()) or ())
    dtype = str(getattr(frame, "dtype", type(frame).__name__))
    return {
        "available": True,
        "episodes": episodes,
        "steps": steps,
        "mean_episode_len": steps / episodes if episodes else float("nan"),
        "steps_per_s": steps / step_s if step_s > 0 else float("nan"),
        "step_render_mean_ms": 1000.0 * step_s / steps if steps else float("nan"),
        "resets_per_s": episodes / sum(reset_s) if sum(reset_s) > 0 else float("nan"),
        "reset_median_ms": 1000.0 * quantile(reset_s, 0.5),
        "reset_p90_ms": 1000.0 * quantile(reset_s, 0.9),
        "reset_max_ms": 1000.0 * max(reset_s) if reset_s else float("nan"),
        "wall_s": wall,
        "frame_shape": shape,
        "frame_dtype": dtype,
    }


# --------------------------------------------------------------------------------------
# OURS. These two functions are the only place that knows how our envs are constructed:
# adjust the kwargs here if the envs' API lands with different names.
# --------------------------------------------------------------------------------------


def make_ours_frozenlake(size: int):
    """Our FrozenLake, ``size`` x ``size``, deterministic moves, image observations."""
    import envs

    # Same frame size as gymnasium's renderer (64 px cells) and no turn cap below the 50-step episode cap.
    return _make_ours(envs, "frozenlake", size=size, observation="image", is_slippery=False, cell_px=64,
                      max_turns=1000, max_actions=1000, max_actions_per_turn=1)


def make_ours_sokoban(dim_room: tuple[int, int], num_boxes: int):
    """Our Sokoban with a ``dim_room`` room and ``num_boxes`` boxes, image observations."""
    import envs

    # gym-sokoban renders 16 px tiles, as ours does by default.
    return _make_ours(envs, "sokoban", dim_room=dim_room, num_boxes=num_boxes, observation="image", cell_px=16,
                      max_turns=1000, max_actions=1000, max_actions_per_turn=1)


def _make_ours(envs_mod, name: str, **cfg):
    if not hasattr(envs_mod, "make"):
        raise RuntimeError("envs.make is not available yet (envs not landed)")
    try:
        return envs_mod.make(name, render_mode="rgb_array", **cfg)
    except (TypeError, ValueError):  # render_mode not taken as a kwarg: render() is rgb by contract
        return envs_mod.make(name, **cfg)  # a real config error raises again here


def _ours_adapters(env):
    def reset(seed):
        env.reset(seed=seed)

    def step(direction):
        out = env.step(direction)
        return bool(out[2] or out[3])

    return reset, step, env.render


# --------------------------------------------------------------------------------------
# PEERS. Builders run inside the peer venv (their source is shipped to the subprocess).
# Each returns (env, reset, step, render) in the protocol's terms.
# --------------------------------------------------------------------------------------


def peer_frozenlake(cfg):
    """gymnasium FrozenLake-v1 (toy-text, pygame rgb_array rendering)."""
    import gymnasium as gym

    env = gym.make("FrozenLake-v1", map_name=cfg["map_name"], is_slippery=False, render_mode="rgb_array")
    act = {"Left": 0, "Down": 1, "Right": 2, "Up": 3}

    def reset(seed):
        env.reset(seed=seed)

    def step(direction):
        out = env.step(act[direction])
        return bool(out[2] or out[3])

    return env, reset, step, env.render


def peer_sokoban(cfg):
    """gym-sokoban under gym 0.26 (old step API wrapped by apply_api_compatibility).

    Its room generator draws from the global ``random`` / ``np.random`` modules, not the
    env's seeded RNG, so reset(seed) seeds those too (inside the timed reset).
    """
    import random

    import gym
    import gym_sokoban  # noqa: F401  (registers the envs)
    import numpy as np

    env = gym.make(
        "Sokoban-v1",  # = gym_sokoban.envs.SokobanEnv; Sokoban-v0 is the same class at 10x10, 3 boxes
        dim_room=tuple(cfg["dim_room"]),
        num_boxes=cfg["num_boxes"],
        max_steps=cfg.get("max_steps", 120),
        apply_api_compatibility=True,
        disable_env_checker=True,
        render_mode="rgb_array",
    )
    act = {"Up": 1, "Down": 2, "Left": 3, "Right": 4}  # push-or-move, like ours

    def reset(seed):
        random.seed(seed)
        np.random.seed(seed)
        env.reset(seed=seed)

    def step(direction):
        out = env.step(act[direction])
        return bool(out[2] or out[3])

    return env, reset, step, env.render


def _peer_main():
    """Entry point of the snippet run by the peer venv's python."""
    import contextlib
    import importlib.metadata as md
    import json
    import platform
    import sys
    import warnings

    warnings.filterwarnings("ignore")
    args = json.loads(sys.argv[1])
    real_stdout = sys.stdout
    # Peers print chatter on stdout (gym-sokoban's "[SOKOBAN] Retry"): keep it off the result.
    with contextlib.redirect_stdout(sys.stderr):
        _env, reset, step, render = globals()[args["builder"]](args["cfg"])
        res = run_protocol(
            reset, step, render, episodes=args["episodes"], max_steps=args["max_steps"], warmup=args["warmup"]
        )
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
    parts = [f"RESULT_MARKER = {RESULT_MARKER!r}"]
    parts += [inspect.getsource(f) for f in (run_protocol, peer_frozenlake, peer_sokoban, _peer_main)]
    return "\n\n".join(parts) + "\n\n_peer_main()\n"


#: Throwaway venvs: name -> pip requirements and the distributions whose versions we report.
PEERS: dict[str, dict[str, Any]] = {
    "gymnasium-toytext": {
        # toy-text extra brings pygame(-ce), needed for rgb_array rendering.
        "pip": ["gymnasium[toy-text]"],
        "dists": ["gymnasium", "pygame", "pygame-ce", "numpy"],
        "label": "gymnasium FrozenLake-v1",
    },
    "gym-sokoban": {
        # gym-sokoban 0.0.6 imports pkg_resources (setuptools; removed in newer releases).
        # Works with numpy 2 as long as gym's env checker is disabled.
        "pip": ["gym==0.26.2", "gym-sokoban==0.0.6", "setuptools<81"],
        "dists": ["gym", "gym-sokoban", "numpy", "setuptools"],
        "label": "gym-sokoban (gym 0.26.2)",
    },
}

# --------------------------------------------------------------------------------------
# Env configs: one row of the comparison each.
# --------------------------------------------------------------------------------------

ENV_CONFIGS: dict[str, dict[str, Any]] = {
    "frozenlake4": {
        "ours": lambda: make_ours_frozenlake(4),
        "ours_cfg": {"name": "frozenlake", "size": 4, "observation": "image", "is_slippery": False},
        "peer": "gymnasium-toytext",
        "builder": "peer_frozenlake",
        "peer_cfg": {"map_name": "4x4"},
    },
    "frozenlake8": {
        "ours": lambda: make_ours_frozenlake(8),
        "ours_cfg": {"name": "frozenlake", "size": 8, "observation": "image", "is_slippery": False},
        "peer": "gymnasium-toytext",
        "builder": "peer_frozenlake",
        "peer_cfg": {"map_name": "8x8"},
    },
    "sokoban": {
        "ours": lambda: make_ours_sokoban((7, 7), 1),
        "ours_cfg": {"name": "sokoban", "dim_room": [7, 7], "num_boxes": 1, "observation": "image"},
        "peer": "gym-sokoban",
        "builder": "peer_sokoban",
        "peer_cfg": {"dim_room": [7, 7], "num_boxes": 1},
    },
    # Not in the default set: the peer's Sokoban-v0 setting (10x10, 3 boxes), whose room
    # generation makes resets slow and heavy-tailed.
    "sokoban10": {
        "ours": lambda: make_ours_sokoban((10, 10), 3),
        "ours_cfg": {"name": "sokoban", "dim_room": [10, 10], "num_boxes": 3, "observation": "image"},
        "peer": "gym-sokoban",
        "builder": "peer_sokoban",
        "peer_cfg": {"dim_room": [10, 10], "num_boxes": 3},
    },
}
DEFAULT_ENVS = "frozenlake4,frozenlake8,sokoban"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Peer venvs
# --------------------------------------------------------------------------------------


def ensure_peer_venv(name: str, peer_dir: Path, python: str) -> Path:
    """Create (or reuse) the venv for ``name``; return its python executable."""
    spec = {"pip": PEERS[name]["pip"], "base_python": python}
    venv = peer_dir / name
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
    log(f"[peers] creating venv {venv} ({python} -m venv) and installing {' '.join(spec['pip'])}")
    t0 = time.perf_counter()
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-input"]
    proc = subprocess.run(pip + spec["pip"], capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"pip install failed for {name}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    marker.write_text(json.dumps(spec))  # written last: a half-built venv is rebuilt next time
    log(f"[peers] {name} ready in {time.perf_counter() - t0:.1f}s")
    return py


def measure_peer(env_name: str, py: Path, args: argparse.Namespace) -> dict[str, Any]:
    conf = ENV_CONFIGS[env_name]
    payload = {
        "builder": conf["builder"],
        "cfg": conf["peer_cfg"],
        "episodes": args.episodes,
        "max_steps": args.max_steps,
        "warmup": args.warmup,
        "dists": PEERS[conf["peer"]]["dists"],
    }
    with tempfile.NamedTemporaryFile("w", suffix="_peer_bench.py", delete=False) as f:
        f.write(_peer_snippet())
        script = f.name
    try:
        proc = subprocess.run(
            [str(py), script, json.dumps(payload)], capture_output=True, text=True, timeout=args.peer_timeout
        )
    finally:
        os.unlink(script)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARKER)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"peer run failed (rc={proc.returncode}):\n{proc.stderr[-3000:]}")
    res = json.loads(lines[-1][len(RESULT_MARKER) :])
    res["impl"] = PEERS[conf["peer"]]["label"]
    res["cfg"] = conf["peer_cfg"]
    return res


# --------------------------------------------------------------------------------------
# Ours
# --------------------------------------------------------------------------------------


def measure_ours(env_name: str, args: argparse.Namespace) -> dict[str, Any]:
    conf = ENV_CONFIGS[env_name]
    try:
        env = conf["ours"]()
    except Exception as e:  # not landed yet / API mismatch: report, don't crash
        return {"available": False, "error": f"{type(e).__name__}: {e}", "cfg": conf["ours_cfg"]}
    try:
        reset, step, render = _ours_adapters(env)
        res = run_protocol(
            reset, step, render, episodes=args.episodes, max_steps=args.max_steps, warmup=args.warmup
        )
    except Exception as e:
        return {
            "available": False,
            "error": f"{type(e).__name__}: {e}",
            "traceback": traceback.format_exc(limit=5),
            "cfg": conf["ours_cfg"],
        }
    finally:
        close = getattr(env, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                pass
    res["impl"] = "envs.make"
    res["cfg"] = conf["ours_cfg"]
    return res


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


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
        rev = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        return (rev + ("+dirty" if dirty else "")) or None
    except (OSError, subprocess.SubprocessError):
        return None


def ratios(ours: dict[str, Any] | None, peer: dict[str, Any] | None) -> dict[str, float] | None:
    if not (ours and peer and ours.get("available") and peer.get("available")):
        return None
    out = {}
    for key in ("steps_per_s", "resets_per_s", "reset_median_ms", "reset_p90_ms"):
        a, b = ours.get(key), peer.get(key)
        out[f"{key}_ours_over_peer"] = a / b if a and b else float("nan")
    return out


def _finite(x: Any) -> Any:
    """NaN/inf -> None, so the JSON line is strict JSON."""
    if isinstance(x, float):
        return x if x == x and x not in (float("inf"), float("-inf")) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    return x


def _fmt(x: Any, nd: int = 1) -> str:
    if isinstance(x, float):
        return f"{x:,.{nd}f}"
    return "-" if x is None else str(x)


def print_table(results: dict[str, Any], header: dict[str, Any]) -> None:
    cols = ("env", "impl", "steps/s", "resets/s", "reset med ms", "reset p90 ms", "ep len", "frame")
    rows = []
    for env_name, r in results.items():
        for side in ("peer", "ours"):
            m = r.get(side)
            if m is None:
                continue
            if not m.get("available"):
                rows.append(
                    (env_name, side, "unavailable: " + str(m.get("error", ""))[:70], "", "", "", "", "")
                )
                continue
            rows.append(
                (
                    env_name,
                    f"{side}: {m.get('impl', '')}",
                    _fmt(m["steps_per_s"]),
                    _fmt(m["resets_per_s"]),
                    _fmt(m["reset_median_ms"], 2),
                    _fmt(m["reset_p90_ms"], 2),
                    _fmt(m["mean_episode_len"]),
                    "x".join(map(str, m.get("frame_shape", []))),
                )
            )
        rt = r.get("ratio")
        if rt:
            rows.append(
                (
                    env_name,
                    "ours/peer",
                    f"x{rt['steps_per_s_ours_over_peer']:.2f}",
                    f"x{rt['resets_per_s_ours_over_peer']:.2f}",
                    f"x{rt['reset_median_ms_ours_over_peer']:.2f}",
                    f"x{rt['reset_p90_ms_ours_over_peer']:.2f}",
                    "",
                    "",
                )
            )
    sized = [row for row in rows if not row[2].startswith("unavailable")]  # those run past the table
    widths = [max([len(c)] + [len(str(row[i])) for row in sized]) for i, c in enumerate(cols)]
    log("")
    log(
        f"Env throughput  ({header['cpu_model']}, {header['cpu_count']} cpus, load {header['loadavg']}, "
        f"{header['episodes']} episodes, <= {header['max_steps']} steps, step+render timed together)"
    )
    log("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)))
    log("  ".join("-" * w for w in widths))
    for row in rows:
        # unavailable rows: let the message run past the column widths
        if row[2].startswith("unavailable"):
            log("  ".join([row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2]]))
        else:
            log("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))
    log("(ours/peer: >1 is better for steps/s and resets/s, <1 is better for reset times)")


# --------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--envs", default=DEFAULT_ENVS, help=f"comma list of {', '.join(ENV_CONFIGS)} (default: %(default)s)"
    )
    p.add_argument(
        "--episodes", type=int, default=50, help="timed episodes per env and side (default: %(default)s)"
    )
    p.add_argument("--max-steps", type=int, default=50, help="step cap per episode (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=1, help="untimed episodes first (default: %(default)s)")
    p.add_argument(
        "--quick", action="store_true", help="fast smoke run: 5 episodes (unless --episodes is given)"
    )
    p.add_argument(
        "--peer-dir",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "vagen-bench" / "peers",
        help="where the peers' throwaway venvs live (default: %(default)s)",
    )
    p.add_argument(
        "--peer-python",
        default=sys.executable,
        help="interpreter that creates the peer venvs; same Python as ours by default (default: %(default)s)",
    )
    p.add_argument(
        "--peer-timeout", type=float, default=1800, help="seconds per peer measurement (default: %(default)s)"
    )
    p.add_argument("--no-peers", action="store_true", help="skip the peers")
    p.add_argument("--no-ours", action="store_true", help="skip ours")
    args = p.parse_args(argv)
    if args.quick and "--episodes" not in (argv if argv is not None else sys.argv[1:]):
        args.episodes = 5
    names = [e.strip() for e in args.envs.split(",") if e.strip()]
    unknown = [e for e in names if e not in ENV_CONFIGS]
    if unknown or not names:
        p.error(f"unknown env(s) {unknown}; choose from {', '.join(ENV_CONFIGS)}")
    if args.episodes < 1 or args.max_steps < 1 or args.warmup < 0:
        p.error("--episodes and --max-steps must be >= 1, --warmup >= 0")
    args.env_list = names
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if str(REPO_ROOT) not in sys.path:
        sys.path.append(str(REPO_ROOT))  # fallback: `import envs` also without the editable install

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    header = {
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "loadavg": [round(x, 2) for x in load] if load else None,
        "episodes": args.episodes,
        "max_steps": args.max_steps,
    }
    out: dict[str, Any] = {
        "benchmark": "env_throughput",
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host": {
            "cpu_model": header["cpu_model"],
            "cpu_count": header["cpu_count"],
            "loadavg_at_start": header["loadavg"],
            "platform": platform.platform(),
        },
        "protocol": {
            "episodes": args.episodes,
            "max_steps": args.max_steps,
            "warmup_episodes": args.warmup,
            "reset_seed": "episode index i = 0..episodes-1",
            "actions": "uniform over Up/Down/Left/Right from random.Random(i); render() after every step",
            "steps_per_s": "steps / time(step + render)",
            "resets_per_s": "episodes / time(reset)",
            "order": "per env: peer (subprocess, its own venv) then ours (this interpreter)",
        },
        "versions": {
            "ours": {
                "python": platform.python_version(),
                "vagen_git": _git_rev(),
                **{d: _dist_version(d) for d in ("gymnasium", "numpy", "pillow")},
            },
            "peers": {},
        },
        "results": {},
    }

    peer_pys: dict[str, Path | Exception] = {}
    for env_name in args.env_list:
        conf = ENV_CONFIGS[env_name]
        row: dict[str, Any] = {}
        if not args.no_peers:
            peer = conf["peer"]
            if peer not in peer_pys:
                try:
                    peer_pys[peer] = ensure_peer_venv(peer, args.peer_dir.expanduser(), args.peer_python)
                except Exception as e:
                    peer_pys[peer] = e
            py = peer_pys[peer]
            if isinstance(py, Exception):
                row["peer"] = {"available": False, "error": f"{type(py).__name__}: {py}"}
            else:
                log(f"[{env_name}] peer {PEERS[peer]['label']}: {args.episodes} episodes ...")
                try:
                    row["peer"] = measure_peer(env_name, py, args)
                    out["versions"]["peers"][peer] = row["peer"].pop("versions", None)
                except Exception as e:
                    row["peer"] = {"available": False, "error": f"{type(e).__name__}: {e}"}
        if not args.no_ours:
            log(f"[{env_name}] ours: {args.episodes} episodes ...")
            row["ours"] = measure_ours(env_name, args)
        row["ratio"] = ratios(row.get("ours"), row.get("peer"))
        for side in ("peer", "ours"):
            if side in row and not row[side].get("available"):
                log(f"[{env_name}] {side} unavailable: {row[side].get('error', '')}")
        out["results"][env_name] = row

    print_table(out["results"], header)
    print(json.dumps(_finite(out), allow_nan=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
