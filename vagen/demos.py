"""Solver demonstrations as chat-format SFT samples (``vagen demos``).

Each trajectory becomes one JSONL line: the full multi-turn chat (system prompt, user
turns with image parts pointing at PNG files, assistant turns written by the oracle with
true ``<observation>``/``<prediction>`` beliefs), plus seed, success and per-turn
rewards. Images are stored next to the JSONL under ``images/``; paths in the samples are
relative to the output directory. A ``manifest.json`` records how the set was made.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import envs
from vagen.prompts.agent_env import AgentConfig, AgentEnv
from vagen.prompts.oracle import oracle_response

SAMPLES_FILE = "samples.jsonl"


def _save_images(content: list[dict], out: Path, stem: str) -> list[dict]:
    from PIL import Image

    parts = []
    k = 0
    for part in content:
        if part["type"] == "image":
            rel = f"images/{stem}_{k}.png"
            Image.fromarray(part["image"]).save(out / rel)
            parts.append({"type": "image", "image": rel})
            k += 1
        else:
            parts.append(part)
    return parts


def demo_trajectory(env: AgentEnv, seed: int, out: Path, sample_id: str) -> dict[str, Any]:
    """Run the oracle for one episode and return its SFT sample (images written to ``out``)."""
    obs, _ = env.reset(seed=seed)
    messages: list[dict[str, Any]] = [{"role": "system", "content": env.system_prompt}]
    rewards, parts = [], []
    success = False
    for turn in range(10_000):
        user = env.user_message(obs)
        response = oracle_response(user["oracle_context"])
        messages.append({"role": "user", "content": _save_images(user["content"], out, f"{sample_id}_t{turn}")})
        messages.append({"role": "assistant", "content": response})
        obs, reward, terminated, truncated, info = env.step(response)
        rewards.append(reward)
        parts.append(info["reward_parts"])
        success = bool(info["success"])
        if terminated or truncated:
            break
    return {"id": sample_id, "env": env.unwrapped.name, "seed": seed, "format": env.cfg.format,
            "representation": env.cfg.representation, "success": success, "num_turns": len(rewards),
            "rewards": rewards, "reward_parts": parts, "messages": messages}


def write_demos(env_name: str, n: int, out_dir: str | Path, format: str = "grounding_worldmodeling",
                representation: str = "structured", env_config: dict[str, Any] | None = None,
                seed_start: int = 0, progress: bool = True, system_prompt: str = "full") -> dict[str, Any]:
    """Write ``n`` oracle trajectories of ``env_name`` to ``out_dir``; return a summary."""
    out = Path(out_dir)
    (out / "images").mkdir(parents=True, exist_ok=True)
    env_config = dict(env_config or {})
    env = AgentEnv(envs.make(env_name, **env_config),
                   AgentConfig(format=format, representation=representation, system_prompt=system_prompt))
    t0 = time.time()
    successes = turns = 0
    with open(out / SAMPLES_FILE, "w") as f:
        iterator = range(n)
        if progress:
            from rich.progress import track

            iterator = track(iterator, description=f"{env_name} demos", transient=True)
        for i in iterator:
            sample = demo_trajectory(env, seed_start + i, out, f"{env_name}-{seed_start + i}")
            successes += sample["success"]
            turns += sample["num_turns"]
            f.write(json.dumps(sample) + "\n")
    env.close()
    summary = {"env": env_name, "env_config": env_config, "n": n, "seed_start": seed_start, "format": format,
               "representation": representation, "system_prompt": system_prompt, "success_rate": successes / max(n, 1),
               "mean_turns": turns / max(n, 1), "samples": SAMPLES_FILE, "seconds": round(time.time() - t0, 3)}
    (out / "manifest.json").write_text(json.dumps(summary, indent=2))
    return summary
