"""The ``vllm`` backend: vLLM's offline ``LLM`` engine on GPUs (optional extra).

Import-guarded: importing this module never imports vLLM; constructing ``VLLMPolicy``
does, and fails with an install hint where vLLM or a GPU is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vagen.policy.base import Chat, Generation, Policy, PolicyError, SamplingParams
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
    """

    def __init__(self, path: str | Path, dtype: str = "auto", gpu_memory_utilization: float = 0.6,
                 max_images_per_prompt: int = 8, max_model_len: int | None = None, **engine_kwargs: Any):
        if not vllm_available():
            raise PolicyError("the vllm backend needs a CUDA GPU and `pip install 'vagen[vllm]'`")
        import vllm
        from transformers import AutoProcessor

        from vagen.models import resolve_model_path

        self.path = resolve_model_path(str(path))
        self.name = f"vllm:{path}"
        self.processor = AutoProcessor.from_pretrained(self.path)
        kwargs = dict(model=self.path, dtype=dtype, gpu_memory_utilization=gpu_memory_utilization,
                      limit_mm_per_prompt={"image": max_images_per_prompt}, logprobs_mode="processed_logprobs")
        if max_model_len:
            kwargs["max_model_len"] = max_model_len
        kwargs.update(engine_kwargs)
        self.llm = vllm.LLM(**kwargs)
        self._vllm = vllm
        self.policy_version = 0

    def generate(self, chats: list[Chat], sampling: SamplingParams | None = None) -> list[Generation]:
        sampling = sampling or SamplingParams()
        prompts = []
        for i, chat in enumerate(chats):
            messages, images = normalize_chat(chat, i)
            text = self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            prompt: dict[str, Any] = {"prompt": text}
            if images:
                prompt["multi_modal_data"] = {"image": images}
            prompts.append(prompt)
        params = self._vllm.SamplingParams(
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_tokens,
            stop=list(sampling.stop) or None,
            seed=sampling.seed,
            logprobs=0 if sampling.logprobs else None,
            include_stop_str_in_output=sampling.include_stop,
        )
        outs = self.llm.generate(prompts, params, use_tqdm=False)
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

    def close(self) -> None:
        self.llm = None
