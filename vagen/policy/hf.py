"""The ``hf`` backend: a transformers vision-language model, batched, on CPU or GPU.

The same object is the model an RL trainer will update: ``model`` is a plain
``torch.nn.Module`` and ``policy_version`` is bumped by whoever changes its weights.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from pathlib import Path

from vagen.policy.base import Chat, Generation, Policy, SamplingParams, TokenContext
from vagen.policy.chat import normalize_chat

logger = logging.getLogger(__name__)

# Placeholders a sampler must never produce: no pixels stand behind them, so the next
# forward pass over the conversation would fail.
_VISION_TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>")


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def resolve_dtype(dtype: str, device: str):
    """``auto`` -> bfloat16 on GPU, float32 on CPU (CPU bf16 matmuls are slow and lossy)."""
    import torch

    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; allowed: auto, float32, bfloat16, float16") from None


class HFPolicy(Policy):
    """Generate with ``AutoModelForImageTextToText`` + ``AutoProcessor`` from a local dir.

    Batches are left-padded; sampling ignores the checkpoint's own generation defaults
    (a Qwen checkpoint ships top_k=1, temperature 0.1) so what you ask for is what runs.
    """

    def __init__(self, path: str | Path, device: str = "auto", dtype: str = "auto", max_batch_size: int = 16):
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        from vagen.models import resolve_model_path

        self.path = resolve_model_path(str(path))
        self.name = f"hf:{path}"
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.max_batch_size = max_batch_size
        self.processor = AutoProcessor.from_pretrained(self.path)
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.model = AutoModelForImageTextToText.from_pretrained(self.path, dtype=self.dtype).to(self.device)
        self.model.eval()
        self._reset_sampling_defaults()
        self.policy_version = 0
        #: set by a trainer keeping fp32 master weights: generation autocasts to this dtype
        self.autocast_dtype = None
        self._lock = threading.Lock()
        vocab = self.tokenizer.get_vocab()
        self.suppress_ids = sorted(vocab[t] for t in _VISION_TOKENS if t in vocab)
        eos = self.model.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        if self.tokenizer.eos_token_id is not None:
            eos.append(self.tokenizer.eos_token_id)
        self.eos_ids = sorted(set(eos))
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else self.eos_ids[0]
        self._torch = torch

    def replica(self) -> HFPolicy:
        """A second policy on a deep copy of the model (same processor, device and dtype): the
        rollout side of asynchronous training, whose weights a ``WeightSync`` refreshes."""
        import copy

        twin = copy.copy(self)
        twin.model = copy.deepcopy(self.model).to(self.dtype)  # fp32 master weights -> compute dtype
        twin.autocast_dtype = None
        twin.model.eval()
        twin._lock = threading.Lock()
        return twin

    def _reset_sampling_defaults(self) -> None:
        """Forget the checkpoint's sampling defaults (Qwen ships top_k=1, temperature 0.1):
        every call states its own, and leftovers would leak into greedy decoding."""
        from transformers import GenerationConfig

        fresh = GenerationConfig()
        gc = self.model.generation_config
        for key in ("do_sample", "temperature", "top_p", "top_k", "min_p", "typical_p", "repetition_penalty"):
            setattr(gc, key, getattr(fresh, key))

    # -- preparing inputs -------------------------------------------------------
    def prompt_texts(self, chats: list[Chat]) -> tuple[list[str], list]:
        """Chat-template each chat; return the prompt strings and all images in order."""
        texts, images = [], []
        for i, chat in enumerate(chats):
            messages, imgs = normalize_chat(chat, i)
            texts.append(self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False))
            images.extend(imgs)
        return texts, images

    def encode(self, chats: list[Chat]):
        """Processor outputs (left-padded ids, attention mask, pixel values) for a batch."""
        texts, images = self.prompt_texts(chats)
        kwargs = {"text": texts, "padding": True, "padding_side": "left", "return_tensors": "pt"}
        if images:
            kwargs["images"] = images
        return self.processor(**kwargs).to(self.device)

    def image_inputs(self, images: list) -> dict:
        """``pixel_values`` / ``image_grid_thw`` for images, exactly as the processor makes them."""
        from vagen.policy.chat import load_image

        if not images:
            return {}
        out = self.processor.image_processor(images=[load_image(i) for i in images], return_tensors="pt")
        return {k: v for k, v in out.items() if k in ("pixel_values", "image_grid_thw")}

    def encode_ids(self, contexts: list[TokenContext]):
        """Left-padded batch from exact token contexts (+ their images' pixel values)."""
        torch = self._torch
        width = max(len(c.input_ids) for c in contexts)
        ids = torch.full((len(contexts), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(contexts), width), dtype=torch.long)
        for i, c in enumerate(contexts):
            ids[i, width - len(c.input_ids):] = torch.tensor(c.input_ids, dtype=torch.long)
            mask[i, width - len(c.input_ids):] = 1
        batch = {"input_ids": ids, "attention_mask": mask,
                 **self.image_inputs([img for c in contexts for img in c.images])}
        batch.update(self.mm_token_type_ids(ids))
        return {k: v.to(self.device) for k, v in batch.items()}

    def mm_token_type_ids(self, input_ids) -> dict:
        """Qwen-VL forwards want ``mm_token_type_ids`` (1 on image tokens) with pixels."""
        if "mm_token_type_ids" not in getattr(self.processor, "model_input_names", []):
            return {}
        image_id = getattr(self.model.config, "image_token_id", None)
        return {"mm_token_type_ids": (input_ids == image_id).long()} if image_id is not None else {}

    # -- generation ---------------------------------------------------------------
    def generate(self, chats: list[Chat], sampling: SamplingParams | None = None) -> list[Generation]:
        sampling = sampling or SamplingParams()
        out: list[Generation] = []
        with self._lock:
            for start in range(0, len(chats), self.max_batch_size):
                out.extend(self._run(self.encode(chats[start:start + self.max_batch_size]), sampling))
        return out

    def generate_ids(self, contexts: list[TokenContext], sampling: SamplingParams | None = None) -> list[Generation]:
        """Generate from exact token contexts (multi-turn rollouts); same outputs as ``generate``."""
        sampling = sampling or SamplingParams()
        out: list[Generation] = []
        with self._lock:
            for start in range(0, len(contexts), self.max_batch_size):
                out.extend(self._run(self.encode_ids(contexts[start:start + self.max_batch_size]), sampling))
        return out

    def _generation_config(self, sampling: SamplingParams):
        from transformers import GenerationConfig

        greedy = sampling.temperature == 0
        cfg = GenerationConfig(
            max_new_tokens=sampling.max_tokens,
            do_sample=not greedy,
            eos_token_id=self.eos_ids,
            pad_token_id=self.pad_id,
            suppress_tokens=self.suppress_ids or None,
            repetition_penalty=1.0,
            output_logits=True,
            return_dict_in_generate=True,
        )
        if not greedy:
            cfg.temperature = sampling.temperature
            cfg.top_p = sampling.top_p
            cfg.top_k = 0  # off: a checkpoint's default top_k must not truncate sampling
        if sampling.stop:
            cfg.stop_strings = list(sampling.stop)
        return cfg

    def _run(self, inputs, sampling: SamplingParams) -> list[Generation]:
        torch = self._torch
        was_training = self.model.training
        self.model.eval()
        prompt_len = inputs["input_ids"].shape[1]
        kwargs = {"generation_config": self._generation_config(sampling)}
        if sampling.stop:
            kwargs["tokenizer"] = self.tokenizer
        with torch.random.fork_rng(devices=[self.device] if self.device.startswith("cuda") else []):
            if sampling.seed is not None:
                torch.manual_seed(sampling.seed)
            amp = (torch.autocast(self.device.split(":")[0], dtype=self.autocast_dtype) if self.autocast_dtype
                   else contextlib.nullcontext())
            with torch.inference_mode(), amp:
                res = self.model.generate(**inputs, **kwargs)
        if was_training:
            self.model.train()
        new_tokens = res.sequences[:, prompt_len:].tolist()
        logprobs = None
        if sampling.logprobs and res.logits:
            temp = sampling.temperature if sampling.temperature > 0 else 1.0
            logits = torch.stack(res.logits, dim=1).float() / temp
            chosen = res.sequences[:, prompt_len:prompt_len + logits.shape[1]]
            logprobs = torch.log_softmax(logits, dim=-1).gather(-1, chosen.unsqueeze(-1)).squeeze(-1).tolist()
        gens = []
        for i, toks in enumerate(new_tokens):
            n, finish, text = self._cut(toks, sampling.stop, sampling.include_stop)
            mask = inputs["attention_mask"][i].bool()
            gens.append(Generation(
                text=text,
                token_ids=toks[:n],
                logprobs=logprobs[i][:n] if logprobs is not None else None,
                policy_version=self.policy_version,
                finish_reason=finish,
                prompt_token_ids=inputs["input_ids"][i][mask].tolist(),
            ))
        return gens

    def _cut(self, toks: list[int], stop: tuple[str, ...], include_stop: bool = False) -> tuple[int, str, str]:
        """Where the completion ends: (number of tokens kept, finish reason, text)."""
        eos = set(self.eos_ids)
        n_eos = next((k + 1 for k, t in enumerate(toks) if t in eos), None)
        limit = n_eos if n_eos is not None else len(toks)
        decode = self._decode
        if stop:
            full = decode(toks[:limit])
            hits = [(full.find(s), s) for s in stop if s in full]
            if hits:
                pos, s = min(hits)
                # Smallest prefix whose text holds the stop string (containment is
                # monotone in the prefix length, so bisect).
                lo, hi = 1, limit
                while lo < hi:
                    mid = (lo + hi) // 2
                    if s in decode(toks[:mid]):
                        hi = mid
                    else:
                        lo = mid + 1
                return lo, "stop", full[:pos + len(s)] if include_stop else full[:pos]
        if n_eos is not None:
            return n_eos, "stop", decode(toks[:n_eos])
        return len(toks), "length", decode(toks)

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def close(self) -> None:
        self.model = None
