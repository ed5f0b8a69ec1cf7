"""Environments behind one gymnasium-based API (embodied/visual and GUI).

``envs.make(name, **cfg)`` is the only constructor the rest of the code uses;
``envs.list_envs()`` names what is registered. Must never import ``vagen``: the agent
layer depends on envs, not the reverse.
"""

from __future__ import annotations

import importlib
from typing import Any

from envs.base import EntitySpec, EnvInfraError, PromptPieces, StateSchema, VagenEnv

__all__ = ["EntitySpec", "EnvInfraError", "PromptPieces", "StateSchema", "VagenEnv", "env_class",
           "list_envs", "make", "register"]

# name -> ("module:Class", one-line description). Classes are imported on first use so
# `import envs` stays cheap and optional heavy dependencies load only when needed.
_REGISTRY: dict[str, tuple[str, str]] = {}


def register(name: str, entry_point: str, description: str) -> None:
    """Register an env class under ``name`` (``entry_point`` = ``"module:Class"``)."""
    _REGISTRY[name] = (entry_point, description)


def list_envs() -> dict[str, str]:
    """Registered env names and their one-line descriptions."""
    return {name: desc for name, (_, desc) in sorted(_REGISTRY.items())}


def env_class(name: str) -> type[VagenEnv]:
    """The class registered under ``name``."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown env {name!r}; registered: {', '.join(sorted(_REGISTRY))}")
    module, _, cls = _REGISTRY[name][0].partition(":")
    return getattr(importlib.import_module(module), cls)


def make(name: str, **cfg: Any) -> VagenEnv:
    """Construct env ``name`` with its keyword config; bad keys/values raise ValueError."""
    return env_class(name)(**cfg)


register("sokoban", "envs.sokoban.env:SokobanEnv",
         "Sokoban: push every box onto a target (procedural, always-solvable levels)")
register("frozenlake", "envs.frozenlake.env:FrozenLakeEnv",
         "FrozenLake: reach the goal across the ice without falling into a hole")
register("osworld", "envs.osworld.env:OSWorldEnv",
         "OSWorld desktop tasks (OSWorld JSON: setup, evaluators) on a sandboxed desktop; bundled osworld-lite")
register("miniwob", "envs.web.env:MiniWoBEnv",
         "MiniWoB++ web tasks (every page of the miniwob package) in Playwright-driven Chromium; element-id actions")
register("web", "envs.web.env:CustomWebEnv",
         "custom web tasks (setup/validate registry; bundled local Acme shop) or start_url + goal + validator")
register("replay", "envs.replay.env:ReplayEnv",
         "replay of expert GUI trajectories (vagen synth / vagen eval output) with action matching: semi-online RL")
register("navigation", "envs.navigation.env:NavigationEnv",
         "Navigation: walk to a named object in procedurally furnished rooms (egocentric MuJoCo views, CPU)")
register("primitive_skill", "envs.primitive_skill.env:PrimitiveSkillEnv",
         "PrimitiveSkill: tabletop manipulation with pick/place/push primitives (MuJoCo, scripted controllers)")
register("svg", "envs.svg.env:SVGEnv",
         "SVG reconstruction: write SVG code that reproduces a target image (procedural icons or a folder of SVGs)")
register("latency", "envs.latency:LatencyEnv",
         "any env with GUI-like random reset/step delays (async-rollout benchmarks and tests)")
