"""The policy contract: chats in, generations (text + exact token ids + logprobs) out.

A *chat* is a list of OpenAI-style messages, ``{"role": ..., "content": ...}``, whose
content is a string or a list of parts: ``{"type": "text", "text": ...}``,
``{"type": "image", "image": <PIL image | HxWx3 uint8 array | data URL>}`` or
``{"type": "image_url", "image_url": {"url": <data URL>}}``.

Every backend (``hf``, ``openai``, ``scripted``, ``vllm``) implements
``Policy.generate(chats, sampling) -> list[Generation]``, one generation per chat, in order.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Literal

Chat = list[dict[str, Any]]
FinishReason = Literal["stop", "length", "error"]


class PolicyError(RuntimeError):
    """Base class for policy failures."""


class PolicyRequestError(PolicyError):
    """The request was rejected as invalid (a 4xx from a server, a malformed chat).

    Retrying will not help; the caller's input must change.
    """

    def __init__(self, message: str, status_code: int | None = None):
        super().__init__(message)
        self.status_code = status_code


class PolicyUnavailableError(PolicyError):
    """The backend could not be reached or kept failing (connection errors, 429/5xx
    after all retries). An infrastructure failure, never the agent's."""


@dataclass(frozen=True)
class SamplingParams:
    """How to sample. ``temperature == 0`` means greedy decoding.

    ``logprobs`` asks for the per-token log-probability of each generated token under
    the temperature-scaled model distribution, ``log softmax(logits / T)`` (``T = 1``
    when greedy), over the full vocabulary — the quantity an RL trainer recomputes.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 128
    stop: tuple[str, ...] = ()
    seed: int | None = None
    logprobs: bool = True
    #: Keep a matched stop string at the end of ``text`` (as vLLM's
    #: ``include_stop_str_in_output``): stopping at ``</answer>`` must not cut the tag off.
    include_stop: bool = False

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        else:
            object.__setattr__(self, "stop", tuple(self.stop))
        if any(not s for s in self.stop):
            raise ValueError("stop strings must be non-empty")


@dataclass
class Generation:
    """One completion.

    ``token_ids`` are the exact ids the model produced (including a final end-of-turn
    token when it stopped on one); they are never re-tokenized from ``text``. API
    backends that do not return ids leave the list empty. ``text`` excludes special
    tokens and anything from a matched stop string on. ``logprobs[i]`` belongs to
    ``token_ids[i]`` (or to the server's i-th token for API backends).
    """

    text: str
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] | None = None
    policy_version: int = 0
    finish_reason: FinishReason = "stop"
    prompt_token_ids: list[int] | None = None


@dataclass
class TokenContext:
    """A prompt given as exact token ids plus the images its image placeholders stand for
    (in order). Multi-turn rollouts build these incrementally so every token the policy
    saw is kept exactly, never re-tokenized."""

    input_ids: list[int]
    images: list[Any] = field(default_factory=list)


class Policy(abc.ABC):
    """A model that answers chats. Subclasses set ``name`` and implement ``generate``."""

    name: str = "policy"
    #: Incremented whenever the weights change (training updates, weight sync); stamped
    #: on every generation so off-policy data can be recognised.
    policy_version: int = 0

    @abc.abstractmethod
    def generate(self, chats: list[Chat], sampling: SamplingParams | None = None) -> list[Generation]:
        """Return one generation per chat, in order."""

    def close(self) -> None:
        """Release resources (HTTP clients, engines). Safe to call twice."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
