"""Models the trainer updates: the actor (the rollout policy's own module), an optional
critic (a value head on a copy of the backbone) and an optional frozen reference.

``forward_logprobs`` is the one teacher-forced forward used for old/new/reference
log-probs, so every quantity comes from the same code path as the rollout's logprobs
(``log softmax(logits / T)`` over the full vocabulary).
"""

from __future__ import annotations

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
        self.head = nn.Linear(hidden_size(backbone), 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        out = self.backbone(**model_inputs(batch), output_hidden_states=True, use_cache=False)
        v = self.head(out.hidden_states[-1].float()).squeeze(-1)
        return torch.nn.functional.pad(v[:, :-1], (1, 0))


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
