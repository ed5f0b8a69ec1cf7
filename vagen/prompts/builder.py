"""Compose prompts from an env's pieces, a reasoning format and a belief representation.

One place builds what the model sees, so sampling, training and demonstrations agree:
``system_prompt`` (env description + action help + representation + format + one
example) and ``user_message`` (the observation with its images as parts + a format
reminder).
"""

from __future__ import annotations

from typing import Any

from envs.base import IMAGE_PLACEHOLDER, PromptPieces
from vagen.prompts.formats import REPRESENTATION_INSTRUCTIONS, ReasoningFormat


def system_prompt(pieces: PromptPieces, fmt: ReasoningFormat, representation: str, example: str | None,
                  minimal: bool = False) -> str:
    """The system message: what the task is, how to act, and how to answer.

    ``minimal`` keeps only the action help and the answer template: for small models
    that learn the task from demonstrations, where every prompt token costs compute.
    """
    if minimal:
        return f"{pieces.action_help}\nYour response must look like: {fmt.template()}"
    lines = [pieces.description, pieces.action_help]
    if fmt.has_observation or fmt.has_prediction:
        lines.append(REPRESENTATION_INSTRUCTIONS[representation])
    lines.append(fmt.instruction)
    lines.append(f"Your response must look like: {fmt.template()}")
    if example:
        lines.append(f"Example response:\n{example}")
    return "\n".join(lines)


def turn_text(obs_text: str, fmt: ReasoningFormat, pieces: PromptPieces) -> str:
    """The user text of one turn: the env's observation plus a short format reminder."""
    k = pieces.max_actions_per_turn
    limit = f" (at most {k} action{'s' if k > 1 else ''}, separated by '{pieces.action_separator}')"
    return f"{obs_text}\nAnswer as {fmt.template()}{limit}."


def observation_to_content(text: str, images: tuple | list) -> list[dict[str, Any]]:
    """Text with ``<image>`` placeholders + images -> chat content parts, images in place."""
    chunks = text.split(IMAGE_PLACEHOLDER)
    if len(chunks) - 1 != len(images):
        raise ValueError(f"observation has {len(chunks) - 1} {IMAGE_PLACEHOLDER} placeholders but {len(images)} images")
    parts: list[dict[str, Any]] = []
    for i, chunk in enumerate(chunks):
        if chunk:
            parts.append({"type": "text", "text": chunk})
        if i < len(images):
            parts.append({"type": "image", "image": images[i]})
    return parts
