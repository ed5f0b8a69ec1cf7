"""Models the trainer updates: the actor (the rollout policy's own module), an optional
critic (a value head on a copy of the backbone) and an optional frozen reference.

``forward_logprobs`` is the one teacher-forced forward used for old/new/reference
log-probs, so every quantity comes from the same code path as the rollout's logprobs
(``log softmax(logits / T)`` over the full vocabulary).
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import torch
from torch import nn


def model_inputs(batch: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The keys a Qwen-VL forward takes from a collated batch."""
    keys = ("input_ids", "attention_mask", "pixel_values", "image_grid_thw", "mm_token_type_ids")
    return {k: batch[k] for k in keys if k in batch}


def forward_logprobs(model: nn.Module, batch: dict[str, Any], temperature: float = 1.0,
                     with_entropy: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-position log-prob of each token given its prefix, shape [B, L] (position 0 is 0).

    With ``with_entropy`` also the entropy of the predictive distribution at each position.
    """
    out = model(**model_inputs(batch), use_cache=False)
    logits = out.logits[:, :-1].float() / max(temperature, 1e-6)
    logp_all = torch.log_softmax(logits, dim=-1)
    ids = batch["input_ids"][:, 1:]
    lp = logp_all.gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    lp = torch.nn.functional.pad(lp, (1, 0))
    ent = None
    if with_entropy:
        ent = -(logp_all.exp() * logp_all).sum(-1)
        ent = torch.nn.functional.pad(ent, (1, 0))
    return lp, ent


def hidden_size(model: nn.Module) -> int:
    cfg = model.config
    text = getattr(cfg, "text_config", cfg)
    return int(text.hidden_size)


class Critic(nn.Module):
    """A value head on a copy of the policy backbone: V at each position.

    ``values[:, j]`` is the value of the state before token ``j`` is generated (the hidden
    state at position ``j-1``), aligned like ``forward_logprobs``.
    """

    def __init__(self, backbone: nn.Module):
        super().__init__()
        self.backbone = backbone
        device = next(backbone.parameters()).device  # beside the backbone (a GPU one too)
        self.head = nn.Linear(hidden_size(backbone), 1, device=device, dtype=torch.float32)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        # the decoder without the LM head (no [B, L, vocab] logits: 152k columns on a real
        # Qwen-VL); LoRA layers live inside it, so a PEFT-wrapped copy works the same way
        base = self.backbone.get_base_model() if hasattr(self.backbone, "get_base_model") else self.backbone
        inner = getattr(base, "model", None)
        if inner is not None:
            h = inner(**model_inputs(batch), use_cache=False).last_hidden_state
        else:
            h = self.backbone(**model_inputs(batch), output_hidden_states=True, use_cache=False).hidden_states[-1]
        with torch.autocast(h.device.type, enabled=False):  # values in fp32, also under AMP
            v = self.head(h.float()).squeeze(-1)
        return torch.nn.functional.pad(v[:, :-1], (1, 0))


class MixedPrecision:
    """fp32 master weights for the trained tensors + forwards autocast to the compute dtype.

    With ``model.dtype=bfloat16`` the checkpoint loads in bf16; ``promote`` turns the tensors
    that train (all of them, or only the LoRA adapters) into fp32 so small updates are kept,
    frozen tensors stay bf16, and ``autocast()`` runs the matmuls in bf16 (AMP). Disabled for
    float32 models and with ``model.master_weights=model`` (pure low-precision training).
    """

    def __init__(self, compute_dtype: torch.dtype, device: str, master: str = "float32") -> None:
        if compute_dtype == torch.float16:
            raise ValueError("model.dtype=float16 cannot be trained here (it needs loss scaling); "
                             "use bfloat16 or float32")
        self.compute = compute_dtype
        self.device_type = str(device).split(":")[0]
        self.enabled = master == "float32" and compute_dtype == torch.bfloat16

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        return self.compute if self.enabled else None

    def promote(self, model: nn.Module) -> nn.Module:
        if self.enabled:
            for p in model.parameters():
                if p.requires_grad and p.dtype != torch.float32:
                    p.data = p.data.float()
        return model

    def autocast(self):
        if not self.enabled:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.compute)


def make_critic(actor: nn.Module) -> Critic:
    """A critic whose backbone starts as a copy of the actor's weights."""
    return Critic(copy.deepcopy(actor))


def make_reference(actor: nn.Module) -> nn.Module:
    """A frozen copy of the actor for the KL term."""
    ref = copy.deepcopy(actor)
    ref.eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    return ref


def apply_lora(model: nn.Module, rank: int, alpha: int | None = None, dropout: float = 0.0) -> nn.Module:
    """Wrap the actor's attention projections with LoRA adapters (PEFT); only they train."""
    from peft import LoraConfig, get_peft_model

    cfg = LoraConfig(r=rank, lora_alpha=alpha or 2 * rank, lora_dropout=dropout,
                     target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
    return get_peft_model(model, cfg)
