"""Policies: one interface, several backends, selected by a spec string.

Specs: ``tiny`` (the offline tiny Qwen-VL through ``hf``), ``tiny:<arch>``,
``hf:<path>``, ``openai:<model>``, ``vllm:<path>``, ``scripted:<name>``.
"""

from __future__ import annotations

from typing import Any

from vagen.policy.base import (
    Chat,
    Generation,
    Policy,
    PolicyError,
    PolicyRequestError,
    PolicyUnavailableError,
    SamplingParams,
)

__all__ = [
    "BACKENDS",
    "Chat",
    "Generation",
    "Policy",
    "PolicyError",
    "PolicyRequestError",
    "PolicyUnavailableError",
    "SamplingParams",
    "make_policy",
    "parse_policy_spec",
]

BACKENDS = ("hf", "openai", "vllm", "scripted")

# Options each backend accepts from `make_policy(**options)`; anything else is an error.
_OPTIONS = {
    "hf": {"device", "dtype", "max_batch_size"},
    "openai": {"base_url", "api_key_env", "max_concurrency", "max_retries", "backoff_s", "timeout_s"},
    "vllm": {"dtype", "gpu_memory_utilization", "max_images_per_prompt", "max_model_len"},
    "scripted": None,  # passed to the scripted factory, which validates its own
}


def parse_policy_spec(spec: str) -> tuple[str, str]:
    """Split a spec into ``(backend, target)``: ``tiny`` -> ``("hf", "tiny")``."""
    if not isinstance(spec, str) or not spec:
        raise ValueError("policy spec must be a non-empty string such as tiny, hf:<path>, openai:<model>")
    if spec == "tiny" or spec.startswith("tiny:"):
        return "hf", spec
    backend, sep, target = spec.partition(":")
    if not sep or backend not in BACKENDS or not target:
        raise ValueError(
            f"bad policy spec {spec!r}; expected tiny, tiny:<arch>, hf:<path>, openai:<model>, "
            "vllm:<path> or scripted:<name>"
        )
    return backend, target


def make_policy(spec: str, **options: Any) -> Policy:
    """Build the policy a spec names, passing backend-specific options through."""
    backend, target = parse_policy_spec(spec)
    allowed = _OPTIONS[backend]
    if allowed is not None:
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise ValueError(f"{backend} backend does not take {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
    if backend == "hf":
        from vagen.policy.hf import HFPolicy

        return HFPolicy(target, **options)
    if backend == "openai":
        from vagen.policy.openai import OpenAIPolicy

        return OpenAIPolicy(target, **options)
    if backend == "vllm":
        from vagen.policy.vllm import VLLMPolicy

        return VLLMPolicy(target, **options)
    from vagen.policy.scripted import make_scripted

    return make_scripted(target, **options)
