"""``vagen eval``: play a suite's manifest with a policy and write OSWorld-compatible results.

Output folder (``--out DIR``)::

    DIR/run.json                 suite, env, policy, label, max_steps, manifest, config, versions, started/ended
    DIR/results.jsonl            one object per finished episode (appended + fsynced as each ends)
    DIR/episodes/<suite>/<domain>/<task_id>[@seed]/
        result.txt               the score, as OSWorld writes it
        task.json                {"instruction", "key"}: what the agent was asked (replayable episodes)
        traj.jsonl               {"step_num", "action_timestamp", "action", "response", "reward", "done",
                                  "info", "screenshot_file"} per step (OSWorld's layout)
        step_<n>_<timestamp>.png the observation after step n (step_0: after reset)

Episodes run in parallel on ``num_envs`` workers (each with its own env; GUI envs share one
sandbox pool of that size). An infrastructure failure (``EnvInfraError``, a policy server
that is unreachable, a dead sandbox) is retried on a fresh env up to ``retries`` times and
then recorded as ``status: infra_error`` with ``score: null`` — never as the agent's 0. Any
other exception ends the episode as ``agent_error``. ``resume`` skips episodes that already
have a results line; an episode cut off by a kill has none and is played again from scratch.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import re
import shutil
import subprocess
import threading
import time
import traceback
import zlib
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from vagen.eval.suites import SPLIT_SEP, Episode, manifest

log = logging.getLogger("vagen.eval")
STATUSES = ("ok", "agent_error", "infra_error")


def _instruction(env, obs: dict) -> str:
    """The task statement: the env's ``instruction`` / ``goal`` / its task's, else the first observation text."""
    inner = getattr(env, "unwrapped", env)
    for v in (getattr(inner, "instruction", None), getattr(inner, "goal", None),
              getattr(getattr(inner, "task", None), "instruction", None)):
        if isinstance(v, str) and v:
            return v
    return str(obs.get("text", ""))


class EvalError(ValueError):
    """The eval cannot start as asked (bad suite, an out folder holding another run, ...)."""


@dataclass
class EvalSettings:
    suite: str
    policy: str
    out: Path
    max_steps: int = 15
    num_envs: int = 1
    seeds: list[int] | None = None
    limit: int | None = None
    domains: list[str] | None = None
    resume: bool = False
    retries: int = 2
    label: str | None = None
    env_params: dict[str, Any] = field(default_factory=dict)
    policy_options: dict[str, Any] = field(default_factory=dict)
    format: str = "free_think"
    representation: str = "structured"
    system_prompt: str = "full"
    history: str = "full"
    history_k: int = 4
    max_images: int = 4
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    stop: tuple[str, ...] = ("</answer>",)
    sandbox: Any = None                 # a `sandbox:` config section (vagen.config.SandboxConfig)
    reward: Any = None                  # a `reward:` config section (vagen.config.RewardConfig)
    save_screenshots: bool = True
    progress: bool = True
    config_name: str | None = None      # the preset the settings came from

    def public(self) -> dict[str, Any]:
        skip = {"out", "sandbox", "reward", "policy_options"}
        d = {k: v for k, v in self.__dict__.items() if k not in skip}
        d["stop"] = list(self.stop)
        d["out"] = str(self.out)
        d["policy_options"] = {k: ("***" if "key" in k.lower() and "env" not in k.lower() else v)
                               for k, v in self.policy_options.items()}
        if self.sandbox is not None:
            d["sandbox"] = self.sandbox.model_dump() if hasattr(self.sandbox, "model_dump") else dict(self.sandbox)
        return d


class ResultStore:
    """``results.jsonl``: append + fsync per episode; a torn last line (a kill) is dropped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def load(self) -> list[dict]:
        if not self.path.is_file():
            return []
        raw = self.path.read_bytes()
        rows, good = [], 0
        for line in raw.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break  # torn write
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                break
            good += len(line)
        if good != len(raw):
            log.warning("%s: dropping a partial last line (interrupted run)", self.path)
            with open(self.path, "r+b") as f:
                f.truncate(good)
        return rows

    def append(self, row: dict) -> None:
        line = json.dumps(row, default=_json_default) + "\n"
        with self._lock, open(self.path, "a") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())


def _json_default(o: Any) -> Any:
    if isinstance(o, np.ndarray):
        return f"<array {o.shape} {o.dtype}>"
    if isinstance(o, (np.integer, np.floating)):
        return o.item()
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._@-]", "_", name)[:120] or "_"


def versions() -> dict[str, str]:
    import vagen

    out = {"vagen": vagen.__version__, "python": platform.python_version(), "platform": platform.platform()}
    for mod in ("torch", "transformers"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - optional
            pass
    try:
        repo = Path(__file__).resolve().parents[2]
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=5)
        if r.returncode == 0:
            out["git_commit"] = r.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return out


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class EvalRun:
    def __init__(self, s: EvalSettings) -> None:
        import envs

        if s.num_envs < 1 or s.max_steps < 1 or s.retries < 0:
            raise EvalError("num_envs and max_steps must be >= 1 and retries >= 0")
        self.s = s
        self.env_cls = envs.env_class(s.suite) if s.suite in envs.list_envs() else None
        if self.env_cls is None:
            raise EvalError(f"unknown suite {s.suite!r}; suites are registered envs: {', '.join(envs.list_envs())}")
        self.params = self._env_params()
        try:
            self.episodes = manifest(s.suite, self.params, s.seeds, s.limit, s.domains)
        except (ValueError, FileNotFoundError) as e:
            raise EvalError(str(e)) from e
        self.out = Path(s.out)
        self.store = ResultStore(self.out / "results.jsonl")
        self.label = s.label or s.policy
        self._local = threading.local()
        self._envs: list[Any] = []
        self._envs_lock = threading.Lock()
        self.pool = None
        self.policy = None

    # -- set-up ----------------------------------------------------------------------------
    def _env_params(self) -> dict[str, Any]:
        """The preset's env options with the step budget applied (``max_steps`` for task envs,
        ``max_turns`` for the grid envs): ``--max-steps`` is the budget whatever the preset says."""
        import inspect

        p = dict(self.s.env_params)
        if self.s.suite == "replay":
            p["patch_budget"] = 0  # SOP: the model's own history, stop at the first mismatch
        accepted = set().union(*(inspect.signature(c.__init__).parameters for c in self.env_cls.__mro__
                                 if "__init__" in c.__dict__ and c is not object))
        p["max_steps" if "max_steps" in accepted else "max_turns"] = self.s.max_steps
        return p

    def _prepare_out(self) -> list[dict]:
        self.out.mkdir(parents=True, exist_ok=True)
        run_json = self.out / "run.json"
        done = self.store.load()
        keys = [e.key for e in self.episodes]
        if run_json.is_file():
            prev = json.loads(run_json.read_text())
            same = (prev.get("suite") == self.s.suite and prev.get("policy") == self.s.policy
                    and [Episode(**m).key for m in prev.get("manifest", [])] == keys
                    and prev.get("max_steps") == self.s.max_steps)
            if not self.s.resume:
                raise EvalError(f"{self.out} already holds a run; pass --resume to continue it or choose another --out")
            if not same:
                raise EvalError(f"{self.out} holds a different run (suite, policy, max_steps or manifest differ); "
                                "--resume only continues the same run")
            meta = prev
            meta.setdefault("resumed", []).append(_now())
            meta["ended"] = None
        elif done:
            raise EvalError(f"{self.out} has results.jsonl but no run.json; choose another --out")
        else:
            meta = {"suite": self.s.suite, "env": self.s.suite, "policy": self.s.policy, "label": self.label,
                    "max_steps": self.s.max_steps, "num_envs": self.s.num_envs,
                    "manifest": [e.as_dict() for e in self.episodes], "config": self.s.public(),
                    "env_params": {k: v for k, v in self.params.items() if k != "pool"},
                    "versions": versions(), "started": _now(), "ended": None}
        self.meta = meta
        self._write_meta()
        return done

    def _write_meta(self) -> None:
        tmp = self.out / "run.json.tmp"
        tmp.write_text(json.dumps(self.meta, indent=2, default=_json_default) + "\n")
        tmp.replace(self.out / "run.json")

    def _make_policy(self):
        from vagen.policy import make_policy

        return make_policy(self.s.policy, **self.s.policy_options)

    def _agent_config(self):
        from vagen.prompts.agent_env import AgentConfig

        r = self.s.reward
        kw: dict[str, Any] = {}
        if r is not None:
            kw = dict(format_reward=r.format_reward, format_penalty=r.format_penalty,
                      execute_on_bad_format=r.execute_on_bad_format, observation_weight=r.wm_observation_weight,
                      prediction_weight=r.wm_prediction_weight, wm_tolerance=r.wm_tolerance)
        return AgentConfig(format=self.s.format, representation=self.s.representation,
                           system_prompt=self.s.system_prompt, **kw)

    def _new_env(self):
        import envs
        from sandboxes.pool import pool_kind
        from vagen.prompts.agent_env import AgentEnv

        params = dict(self.params)
        if pool_kind(self.env_cls, self.s.sandbox):
            params["pool"] = self._sandbox_pool()
        env = AgentEnv(envs.make(self.s.suite, **params), self._agent_config())
        with self._envs_lock:
            self._envs.append(env)
        return env

    def _sandbox_pool(self):
        with self._envs_lock:
            if self.pool is None:
                from sandboxes.pool import SandboxPool
                from sandboxes.providers import provider_from_config

                sb = self.s.sandbox
                if sb is None:
                    from vagen.config.schema import SandboxConfig

                    sb = SandboxConfig()
                self.pool = SandboxPool(provider_from_config(sb), size=self.s.num_envs)
            return self.pool

    def _env(self):
        env = getattr(self._local, "env", None)
        if env is None:
            env = self._local.env = self._new_env()
        return env

    def _drop_env(self) -> None:
        env = getattr(self._local, "env", None)
        self._local.env = None
        if env is not None:
            try:
                env.close()
            except Exception as e:  # noqa: BLE001 - a broken env must not stop the run
                log.warning("closing a failed env: %s", e)

    # -- episodes --------------------------------------------------------------------------
    def _chat(self, system: str, turns: list[tuple[dict, str]], user: dict) -> list[dict]:
        s = self.s
        if s.history == "none":
            turns = []
        elif s.history == "last_k":
            turns = turns[-s.history_k:]
        msgs: list[dict] = [{"role": "system", "content": system}]
        for u, a in turns:
            msgs += [u, {"role": "assistant", "content": a}]
        msgs.append(user)
        # keep the newest `max_images` images; older ones become a text note
        budget = s.max_images
        for i in range(len(msgs) - 1, -1, -1):
            m = msgs[i]
            if not isinstance(m.get("content"), list):
                continue
            parts = []
            for p in m["content"]:
                if p.get("type") == "image":
                    if budget > 0:
                        budget -= 1
                        parts.append(p)
                    else:
                        parts.append({"type": "text", "text": "[earlier screenshot omitted]"})
                else:
                    parts.append(p)
            msgs[i] = {**m, "content": parts}
        return msgs

    def _sampling(self, ep: Episode, step: int):
        from vagen.policy.base import SamplingParams

        seed = None
        if self.s.temperature > 0:  # per (episode, step): the same samples in any order or on resume
            seed = zlib.crc32(f"{ep.key}#{step}".encode()) & 0x7FFFFFFF
        return SamplingParams(temperature=self.s.temperature, top_p=self.s.top_p, max_tokens=self.s.max_tokens,
                              stop=tuple(self.s.stop), include_stop=True, seed=seed)

    def _episode_dir(self, ep: Episode) -> Path:
        if SPLIT_SEP in ep.task_id:  # "<split>/seed-<n>": the domain folder already names the split
            name = _safe(ep.task_id.split("/", 1)[1])
        else:
            name = _safe(ep.task_id) + ("" if ep.seed is None or ep.task_id.startswith("seed-") else f"@{ep.seed}")
        return self.out / "episodes" / _safe(ep.suite) / _safe(ep.domain) / name

    def play(self, ep: Episode) -> dict:
        """One attempt; raises on infrastructure failure."""
        env = self._env()
        d = self._episode_dir(ep)
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        t0 = time.perf_counter()
        obs, info = env.reset(**ep.reset_args())
        self._save_image(d, 0, obs)
        (d / "task.json").write_text(json.dumps({"instruction": _instruction(env, obs), "key": ep.key}))
        turns: list[tuple[dict, str]] = []
        total, tokens, steps, score, success = 0.0, 0, 0, 0.0, False
        traj = open(d / "traj.jsonl", "w")
        try:
            for step in range(1, self.s.max_steps + 1):
                user = env.user_message(obs)
                chat = self._chat(env.system_prompt, turns, user)
                gen = self.policy.generate([chat], self._sampling(ep, step))[0]
                obs, reward, terminated, truncated, info = env.step(gen.text)
                steps, total = step, total + float(reward)
                tokens += len(gen.token_ids or [])
                ts = datetime.now().strftime("%Y%m%d@%H%M%S%f")
                shot = self._save_image(d, step, obs, ts)
                done = bool(terminated or truncated or step == self.s.max_steps)
                parsed = info.get("parsed", {})
                traj.write(json.dumps({
                    "step_num": step, "action_timestamp": ts, "action": parsed.get("answer") if parsed.get("answer") is not None else gen.text,
                    "response": gen.text, "reward": float(reward), "done": done,
                    "info": {k: v for k, v in info.items() if k not in ("state",)}, "screenshot_file": shot,
                }, default=_json_default) + "\n")
                traj.flush()
                turns.append(({k: v for k, v in user.items() if k != "oracle_context"}, gen.text))
                success = bool(info.get("success"))
                if terminated or truncated:
                    break
        finally:
            traj.close()
        score = float(info.get("metrics", {}).get("episode/score", 1.0 if success else 0.0))
        (d / "result.txt").write_text(f"{score}\n")
        return {"score": score, "success": success, "steps": steps, "return": round(total, 6), "tokens": tokens,
                "wall_s": round(time.perf_counter() - t0, 3), "status": "ok", "error": None}

    def _save_image(self, d: Path, step: int, obs: dict, ts: str | None = None) -> str | None:
        if not self.s.save_screenshots or not obs.get("images"):
            return None
        from PIL import Image

        name = f"step_{step}_{ts}.png" if ts else f"step_{step}.png"
        Image.fromarray(np.asarray(obs["images"][-1], dtype=np.uint8)).save(d / name, compress_level=1)
        return name

    def run_one(self, ep: Episode) -> dict:
        from envs.base import EnvInfraError
        from sandboxes.client import SandboxError
        from vagen.policy.base import PolicyUnavailableError

        base = {**ep.as_dict(), "max_steps": self.s.max_steps, "policy": self.s.policy, "label": self.label,
                "episode_dir": str(self._episode_dir(ep).relative_to(self.out))}
        last = ""
        for attempt in range(1, self.s.retries + 2):
            try:
                return {**base, **self.play(ep), "attempts": attempt}
            except (EnvInfraError, PolicyUnavailableError, SandboxError) as e:
                last = f"{type(e).__name__}: {e}"
                log.warning("%s: infrastructure failure on attempt %d: %s", ep.key, attempt, last)
                self._drop_env()  # a fresh env (and sandbox lease) for the retry
                time.sleep(min(0.5 * attempt, 5.0))
            except Exception as e:  # noqa: BLE001 - recorded, the run goes on
                log.error("%s: episode crashed: %s", ep.key, traceback.format_exc())
                self._drop_env()
                return {**base, "score": 0.0, "success": False, "steps": 0, "return": 0.0, "tokens": 0,
                        "wall_s": 0.0, "status": "agent_error", "error": f"{type(e).__name__}: {e}",
                        "attempts": attempt}
        return {**base, "score": None, "success": False, "steps": 0, "return": None, "tokens": 0, "wall_s": 0.0,
                "status": "infra_error", "error": last, "attempts": self.s.retries + 1}

    # -- the run -------------------------------------------------------------------------
    def run(self) -> dict:
        done_rows = self._prepare_out()
        done = {Episode(r["suite"], r["task_id"], r["domain"], r.get("seed")).key for r in done_rows}
        todo = [e for e in self.episodes if e.key not in done]
        rows = list(done_rows)
        if todo:
            self.policy = self._make_policy()
        try:
            with _progress(self.s.progress, len(self.episodes), len(done), self.label, self.s.suite) as advance, \
                    ThreadPoolExecutor(max_workers=min(self.s.num_envs, max(1, len(todo))),
                                       thread_name_prefix="vagen-eval") as ex:
                futures = {ex.submit(self._worker, ep): ep for ep in todo}
                for f in as_completed(futures):
                    row = f.result()
                    self.store.append(row)
                    rows.append(row)
                    advance(row)
        finally:
            self.close()
        self.meta["ended"] = _now()
        self._write_meta()
        from vagen.eval.stats import aggregate

        stats = aggregate(rows, manifest_size=len(self.episodes))
        summary = {"out": str(self.out), "suite": self.s.suite, "policy": self.s.policy, "label": self.label,
                   "episodes": len(self.episodes), "played_now": len(todo), "stats": stats.__dict__}
        return summary

    def _worker(self, ep: Episode) -> dict:
        return self.run_one(ep)

    def close(self) -> None:
        with self._envs_lock:
            envs_, self._envs = self._envs, []
        for e in envs_:
            try:
                e.close()
            except Exception as ex:  # noqa: BLE001
                log.warning("closing env: %s", ex)
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        if self.policy is not None:
            self.policy.close()


class _progress:
    """A rich progress bar on stderr (or nothing), with a running success count."""

    def __init__(self, enabled: bool, total: int, done: int, label: str, suite: str) -> None:
        self.enabled, self.total, self.done, self.label, self.suite = enabled, total, done, label, suite
        self.ok = 0

    def __enter__(self):
        if not self.enabled:
            return lambda row: None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
                            console=Console(stderr=True), transient=False)
        self.bar.start()
        self.task = self.bar.add_task(f"eval {self.suite} {self.label}", total=self.total, completed=self.done,
                                      info="")

        def advance(row: dict) -> None:
            self.ok += bool(row.get("success"))
            self.bar.update(self.task, advance=1, info=f"success {self.ok} (this session)")

        return advance

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self.bar.stop()


def run_eval(settings: EvalSettings) -> dict:
    """Play ``settings.suite`` with ``settings.policy``; returns a summary with aggregate stats."""
    return EvalRun(settings).run()


__all__ = ["EvalError", "EvalRun", "EvalSettings", "ResultStore", "STATUSES", "run_eval"]
