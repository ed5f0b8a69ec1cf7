"""The one context builder used for sampling and for training.

Contexts are built from token-id *segments* (ChatML: ``<|im_start|>role\\n...<|im_end|>\\n``):
the system prefix, then per turn the user segment (observation, ending with the
assistant header), the exact response ids and the closing template tokens. Because the
rollout samples from these ids and the trainer trains on the same ids, nothing is ever
re-tokenized.

History policies: ``full`` (every earlier turn), ``last_k`` (the k most recent earlier
turns), ``none`` (only the current observation); ``max_images`` keeps at most that many
images in a context, turning older turns' images into text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vagen.policy.base import TokenContext
from vagen.rollout.records import Trajectory, TurnRecord

VISION = "<|vision_start|><|image_pad|><|vision_end|>"
OMITTED_IMAGE = "[earlier image omitted]"
HISTORIES = ("full", "last_k", "none")


@dataclass
class Sample:
    """A training sequence: ids, which of them carry loss, the rollout logprobs of those,
    the turn each loss token belongs to, and the images in order."""

    input_ids: list[int]
    loss_mask: list[int]
    old_logprobs: list[float]
    turn_index: list[int]
    images: list[Any]
    traj: Trajectory
    turns: list[TurnRecord]


class ContextBuilder:
    """Token contexts from segments for a ChatML processor (Qwen-VL family)."""

    def __init__(self, processor, history: str = "full", history_k: int = 4, max_images: int | None = None):
        if history not in HISTORIES:
            raise ValueError(f"history must be one of {', '.join(HISTORIES)}, got {history!r}")
        self.processor = processor
        self.tokenizer = getattr(processor, "tokenizer", processor)
        self.history = history
        self.history_k = history_k
        self.max_images = max_images
        self.im_end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        self._newline = self.text_ids("\n")
        self._check_template()

    # -- segments ------------------------------------------------------------------
    def text_ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def system_ids(self, system_prompt: str) -> list[int]:
        return self.text_ids(f"<|im_start|>system\n{system_prompt}<|im_end|>\n")

    @staticmethod
    def _user_text(parts: list[dict], images_as_text: bool = False) -> str:
        chunks = []
        for p in parts:
            if p["type"] == "text":
                chunks.append(p["text"])
            else:
                chunks.append(OMITTED_IMAGE if images_as_text else VISION)
        return "<|im_start|>user\n" + "".join(chunks) + "<|im_end|>\n<|im_start|>assistant\n"

    def user_ids(self, parts: list[dict]) -> tuple[list[int], list[Any]]:
        """Ids of a user segment (image placeholders expanded by the processor) and its images."""
        images = [p["image"] for p in parts if p["type"] != "text"]
        text = self._user_text(parts)
        if not images:
            return self.text_ids(text), []
        from vagen.policy.chat import load_image

        enc = self.processor(text=[text], images=[load_image(i) for i in images], return_tensors="pt")
        return enc["input_ids"][0].tolist(), images

    def text_user_ids(self, parts: list[dict]) -> list[int]:
        """The same user segment with its images replaced by a note (for capped histories)."""
        return self.text_ids(self._user_text(parts, images_as_text=True))

    def close_ids(self, response_ids: list[int]) -> list[int]:
        """Template tokens that follow a response: ``<|im_end|>`` (unless generated) + newline."""
        if response_ids and response_ids[-1] == self.im_end:
            return list(self._newline)
        return [self.im_end, *self._newline]

    # -- contexts ------------------------------------------------------------------------
    def _kept_turns(self, turns: list[TurnRecord]) -> list[TurnRecord]:
        if self.history == "none":
            return []
        if self.history == "last_k":
            return turns[-self.history_k:] if self.history_k > 0 else []
        return turns

    def context(self, traj: Trajectory, user_ids: list[int], user_images: list[Any]) -> TokenContext:
        """The context for the next turn, given the new user segment."""
        ids, images = self._history(traj.prefix_ids, self._kept_turns(traj.turns), len(user_images))
        return TokenContext(ids + user_ids, images + list(user_images))

    def _history(self, prefix: list[int], turns: list[TurnRecord], reserved_images: int) -> tuple[list[int], list]:
        budget = None if self.max_images is None else max(0, self.max_images - reserved_images)
        # Newest turns keep their images first.
        keep_images = [True] * len(turns)
        if budget is not None:
            for i in range(len(turns) - 1, -1, -1):
                n = len(turns[i].images)
                if n and n <= budget:
                    budget -= n
                elif n:
                    keep_images[i] = False
                    budget = 0
        ids, images = list(prefix), []
        for t, keep in zip(turns, keep_images, strict=True):
            if keep or not t.images:
                ids += t.user_ids
                images += t.images
            else:
                ids += t.text_user_ids if t.text_user_ids is not None else t.user_ids
            ids += t.history_ids if t.history_ids is not None else t.response_ids + t.close_ids
        return ids, images

    # -- training samples -------------------------------------------------------------------
    def turn_samples(self, traj: Trajectory) -> list[Sample]:
        """One sample per turn: exactly the context the policy saw + its response."""
        out = []
        for k, t in enumerate(traj.turns):
            hist_ids, hist_images = self._history(traj.prefix_ids, self._kept_turns(traj.turns[:k]), len(t.images))
            ids = hist_ids + t.user_ids + t.response_ids
            n_ctx = len(ids) - len(t.response_ids)
            out.append(Sample(ids, [0] * n_ctx + [1] * len(t.response_ids),
                              [0.0] * n_ctx + list(t.rollout_logprobs),
                              [-1] * n_ctx + [t.turn] * len(t.response_ids), hist_images + t.images, traj, [t]))
        return out

    def trajectory_sample(self, traj: Trajectory) -> Sample:
        """One sample for the whole trajectory (valid when every turn saw full history)."""
        if self.history != "full" or self.max_images is not None:
            raise ValueError("concat-trajectory samples need history=full and no image cap; use per-turn samples")
        if any(t.history_ids is not None for t in traj.turns):
            raise ValueError("a patched trajectory (semi-online RL) is not one sequence the policy saw; "
                             "use per-turn samples (trainer.sample_mode=turn)")
        ids, mask, lps, turn_idx, images = [], [], [], [], []

        def add(seg: list[int], loss: bool, turn: int = -1, logprobs: list[float] | None = None) -> None:
            ids.extend(seg)
            mask.extend([int(loss)] * len(seg))
            lps.extend(logprobs if logprobs is not None else [0.0] * len(seg))
            turn_idx.extend([turn if loss else -1] * len(seg))

        add(traj.prefix_ids, False)
        for t in traj.turns:
            add(t.user_ids, False)
            images += t.images
            add(t.response_ids, True, t.turn, list(t.rollout_logprobs))
            add(t.close_ids, False)
        return Sample(ids, mask, lps, turn_idx, images, traj, list(traj.turns))

    # -- template check ---------------------------------------------------------------------
    def _check_template(self) -> None:
        """Refuse processors whose chat template is not the ChatML layout we build."""
        template = getattr(self.processor, "chat_template", None) or getattr(self.tokenizer, "chat_template", None)
        if not template:
            return
        msgs = [{"role": "system", "content": "S"},
                {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "U"}]},
                {"role": "assistant", "content": "A"},
                {"role": "user", "content": [{"type": "text", "text": "V"}]}]
        try:
            rendered = self.processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        except Exception:  # some templates reject list content; nothing to compare then
            return
        ours = ("<|im_start|>system\nS<|im_end|>\n" + self._user_text([{"type": "image"}, {"type": "text", "text": "U"}])
                + "A<|im_end|>\n" + self._user_text([{"type": "text", "text": "V"}]))
        if rendered != ours:
            raise ValueError("the model's chat template is not ChatML as the context builder assumes:\n"
                             f"template: {rendered!r}\nbuilder:  {ours!r}")

