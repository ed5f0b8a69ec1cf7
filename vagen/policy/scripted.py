"""The ``scripted`` backend: a plain Python function as a policy, for tests and baselines.

``scripted:noop`` answers a fixed text, ``scripted:random`` picks uniformly (seeded) from
a given list of answers, and ``scripted:pkg.module:function`` wraps any importable
callable ``fn(chat) -> str``. Envs register their oracles here with
``register_scripted``, so ``scripted:<name>`` works wherever a policy spec is accepted.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable, Sequence
from typing import Any

from vagen.policy.base import Chat, Generation, Policy, SamplingParams

ScriptFn = Callable[[Chat], str]
_REGISTRY: dict[str, tuple[Callable[..., ScriptFn], str]] = {}


def register_scripted(name: str, factory: Callable[..., ScriptFn], description: str) -> None:
    """Make ``scripted:<name>`` build ``factory(**options)``."""
    _REGISTRY[name] = (factory, description)


def scripted_names() -> dict[str, str]:
    """Registered scripted policies and their one-line descriptions."""
    return {k: v[1] for k, v in sorted(_REGISTRY.items())}


class ScriptedPolicy(Policy):
    """Answers each chat with ``fn(chat)``; no token ids or logprobs."""

    def __init__(self, fn: ScriptFn, name: str = "scripted"):
        self.fn = fn
        self.name = f"scripted:{name}"
        self.policy_version = 0

    def generate(self, chats: list[Chat], sampling: SamplingParams | None = None) -> list[Generation]:
        return [Generation(text=str(self.fn(c)), policy_version=self.policy_version, finish_reason="stop")
                for c in chats]


def make_scripted(name: str, **options: Any) -> ScriptedPolicy:
    """Build ``scripted:<name>``: a registered name or an import path ``module:function``."""
    if name in _REGISTRY:
        return ScriptedPolicy(_REGISTRY[name][0](**options), name)
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            fn = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise ValueError(f"scripted policy {name!r}: cannot import {attr!r} from {module!r} ({e})") from None
        if not callable(fn):
            raise ValueError(f"scripted policy {name!r} is not callable")
        return ScriptedPolicy(fn, name)
    known = ", ".join(_REGISTRY) or "none"
    raise ValueError(f"unknown scripted policy {name!r}; registered: {known}; or use scripted:module:function")


def _noop(text: str = "") -> ScriptFn:
    return lambda chat: text


def _random(answers: Sequence[str] = (), seed: int = 0) -> ScriptFn:
    rng = random.Random(seed)
    if answers:
        choices = list(answers)
        return lambda chat: rng.choice(choices)

    def env_random(chat: Chat) -> str:
        from vagen.prompts.oracle import find_context, random_response

        return random_response(find_context(chat), rng)

    return env_random


def _oracle() -> ScriptFn:
    def oracle(chat: Chat) -> str:
        from vagen.prompts.oracle import find_context, oracle_response

        return oracle_response(find_context(chat))

    return oracle


register_scripted("noop", _noop, "always answers the same text (default: empty)")
register_scripted("random", _random, "random env actions in a valid format, or a random pick from answers=[...]")
register_scripted("oracle", _oracle, "the env's solver, answering in the reasoning format with true beliefs")
