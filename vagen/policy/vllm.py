"""The ``vllm`` backend: vLLM's offline ``LLM`` engine on GPUs (optional extra).

Import-guarded: importing this module never imports vLLM; constructing ``VLLMPolicy``
does, and fails with an install hint where vLLM or a GPU is missing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vagen.policy.base import Chat, Generation, Policy, PolicyError, SamplingParams, TokenContext
from vagen.policy.chat import normalize_chat


def vllm_available() -> bool:
    """True when vLLM imports and a CUDA device is visible."""
    try:
        import torch
        import vllm  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


class VLLMPolicy(Policy):
    """Batched generation through ``vllm.LLM.generate`` with multimodal inputs.

    Logprobs come from vLLM's ``processed_logprobs`` mode (after temperature), which
    matches the ``hf`` backend's definition when ``top_p == 1``.

    For RL (``policy.backend=vllm`` in ``vagen train``): ``generate_ids`` takes the exact token
    contexts of multi-turn rollouts (image placeholders already expanded, as the ``hf``
    backend's processor expands them); ``load_weights`` receives the trainer's tensors in
    buckets through ``collective_rpc`` into every worker (``vllm_worker.WeightLoaderExtension``);
    with ``sleep_mode`` the engine frees its GPU memory between rollouts (``sleep``/``wake_up``)
    so trainer and engine can share one GPU.
    """

    def __init__(self, path: str | Path, dtype: str = "auto", gpu_memory_utilization: float = 0.6,
                 max_images_per_prompt: int = 8, max_model_len: int | None = None, sleep_mode: bool = False,
                 **engine_kwargs: Any):
        if not vllm_available():
            raise PolicyError("the vllm backend needs a CUDA GPU and `pip install 'vagen[vllm]'`")
        import vllm
        from transformers import AutoProcessor

        from vagen.models import resolve_model_path

        self.path = resolve_model_path(str(path))
        self.name = f"vllm:{path}"
        self.processor = AutoProcessor.from_pretrained(self.path)
        kwargs = dict(model=self.path, dtype=dtype, gpu_memory_utilization=gpu_memory_utilization,
                      limit_mm_per_prompt={"image": max_images_per_prompt}, logprobs_mode="processed_logprobs",
                      worker_extension_cls="vagen.policy.vllm_worker.WeightLoaderExtension",
                      enable_sleep_mode=sleep_mode)
        if max_model_len:
            kwargs["max_model_len"] = max_model_len
        kwargs.update(engine_kwargs)
        self.llm = vllm.LLM(**kwargs)
        self._vllm = vllm
        self.policy_version = 0
        self.sleeping = False
        self._lock = threading.Lock()  # one engine call at a time (async rollout slots share it)

    def generate(self, chats: list[Chat], sampling: SamplingParams | None = None) -> list[Generation]:
        sampling = sampling or SamplingParams()
        self.wake_up()
        prompts = []
        for i, chat in enumerate(chats):
            messages, images = normalize_chat(chat, i)
            text = self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            prompt: dict[str, Any] = {"prompt": text}
            if images:
                prompt["multi_modal_data"] = {"image": images}
            prompts.append(prompt)
        with self._lock:
            return self._collect(self.llm.generate(prompts, self._params(sampling), use_tqdm=False), sampling)

    def _params(self, sampling: SamplingParams):
        return self._vllm.SamplingParams(
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_tokens,
            stop=list(sampling.stop) or None,
            seed=sampling.seed,
            logprobs=0 if sampling.logprobs else None,
            include_stop_str_in_output=sampling.include_stop,
        )

    def generate_ids(self, contexts: list[TokenContext], sampling: SamplingParams | None = None) -> list[Generation]:
        """Generate from exact token contexts (their image placeholders already expanded; vLLM
        recognises applied placeholders and does not expand them again)."""
        from PIL import Image

        sampling = sampling or SamplingParams()
        self.wake_up()
        prompts = []
        for c in contexts:
            prompt: dict[str, Any] = {"prompt_token_ids": list(c.input_ids)}
            if c.images:
                prompt["multi_modal_data"] = {"image": [im if isinstance(im, Image.Image) else Image.fromarray(im)
                                                        for im in c.images]}
            prompts.append(prompt)
        with self._lock:
            return self._collect(self.llm.generate(prompts, self._params(sampling), use_tqdm=False), sampling)

    def _collect(self, outs, sampling: SamplingParams) -> list[Generation]:
        gens = []
        for out in outs:
            c = out.outputs[0]
            lps = None
            if sampling.logprobs and c.logprobs is not None:
                lps = [float(step[tok].logprob) for tok, step in zip(c.token_ids, c.logprobs, strict=True)]
            gens.append(Generation(
                text=c.text,
                token_ids=list(c.token_ids),
                logprobs=lps,
                policy_version=self.policy_version,
                finish_reason="length" if c.finish_reason == "length" else "stop",
                prompt_token_ids=list(out.prompt_token_ids or []),
            ))
        return gens

    # -- RL: weights in, memory out -----------------------------------------------------------
    def load_weights(self, named: Iterable[tuple[str, Any]], bucket_mb: float = 512.0) -> float:
        """Load the trainer's named tensors into every worker, ``bucket_mb`` at a time; the
        prefix cache (KV computed with the old weights) is dropped. Returns seconds."""
        t0 = time.perf_counter()
        self.wake_up()
        bucket, size, limit = [], 0, bucket_mb * 2**20
        with self._lock:
            for name, t in named:
                bucket.append((name, t.detach()))
                size += t.numel() * t.element_size()
                if size >= limit:
                    self.llm.collective_rpc("vagen_load_weights", args=(bucket,))
                    bucket, size = [], 0
            if bucket:
                self.llm.collective_rpc("vagen_load_weights", args=(bucket,))
            self.llm.reset_prefix_cache()
        return time.perf_counter() - t0

    def sleep(self, level: int = 1) -> None:
        """Free the engine's GPU memory (level 1: weights to CPU, KV cache dropped)."""
        if not self.sleeping:
            self.llm.sleep(level=level)
            self.sleeping = True

    def wake_up(self) -> None:
        if self.sleeping:
            self.llm.wake_up()
            self.sleeping = False

    def close(self) -> None:
        self.llm = None
