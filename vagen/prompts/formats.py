"""The five reasoning strategies of the VAGEN paper (Wang et al. 2025, Sec. 3).

Each format names the tags a response must contain, in order:

- ``no_think``:                ``<answer>A</answer>``
- ``free_think``:              ``<think>T</think><answer>A</answer>``
- ``grounding``:               ``<think><observation>O</observation><reasoning>R</reasoning></think><answer>A</answer>``
- ``worldmodeling``:           ``<think><reasoning>R</reasoning><prediction>P</prediction></think><answer>A</answer>``
- ``grounding_worldmodeling``: ``<think><observation>O</observation><reasoning>R</reasoning><prediction>P</prediction></think><answer>A</answer>``

``O`` is the agent's belief about the current state (state estimation), ``P`` its belief
about the state after its actions (transition modeling); both are written in a belief
representation (``natural``, ``symbolic`` grid, ``structured`` JSON) and scored by
``vagen.rewards``.
"""

from __future__ import annotations

from dataclasses import dataclass

from vagen.prompts.belief import REPRESENTATIONS

__all__ = ["FORMATS", "REPRESENTATIONS", "REPRESENTATION_INSTRUCTIONS", "ReasoningFormat", "get_format"]


@dataclass(frozen=True)
class ReasoningFormat:
    """A reasoning strategy: which parts live inside ``<think>``, and how to ask for them."""

    name: str
    think_parts: tuple[str, ...] | None  # None: no <think>; (): free text inside <think>
    instruction: str

    @property
    def has_observation(self) -> bool:
        return bool(self.think_parts) and "observation" in self.think_parts

    @property
    def has_prediction(self) -> bool:
        return bool(self.think_parts) and "prediction" in self.think_parts

    def template(self) -> str:
        """The answer skeleton, e.g. ``<think><observation>...</observation>...</think><answer>...</answer>``."""
        if self.think_parts is None:
            return "<answer>...</answer>"
        inner = "".join(f"<{p}>...</{p}>" for p in self.think_parts) or "..."
        return f"<think>{inner}</think><answer>...</answer>"

    def render(self, answer: str, think: str = "", observation: str = "", reasoning: str = "",
               prediction: str = "") -> str:
        """Write a response in this format (used by the oracle and demonstrations)."""
        if self.think_parts is None:
            return f"<answer>{answer}</answer>"
        if not self.think_parts:
            return f"<think>{think}</think><answer>{answer}</answer>"
        values = {"observation": observation, "reasoning": reasoning, "prediction": prediction}
        inner = "".join(f"<{p}>{values[p]}</{p}>" for p in self.think_parts)
        return f"<think>{inner}</think><answer>{answer}</answer>"


FORMATS: dict[str, ReasoningFormat] = {
    f.name: f
    for f in (
        ReasoningFormat("no_think", None, "Give only your actions inside <answer></answer>."),
        ReasoningFormat("free_think", (), "First think step by step inside <think></think>, then give your actions "
                        "inside <answer></answer>."),
        ReasoningFormat("grounding", ("observation", "reasoning"),
                        "Inside <think></think>, first describe the current state inside <observation></observation>, "
                        "then reason inside <reasoning></reasoning>; then give your actions inside <answer></answer>."),
        ReasoningFormat("worldmodeling", ("reasoning", "prediction"),
                        "Inside <think></think>, reason inside <reasoning></reasoning>, then predict the state after "
                        "your actions inside <prediction></prediction>; then give your actions inside "
                        "<answer></answer>."),
        ReasoningFormat("grounding_worldmodeling", ("observation", "reasoning", "prediction"),
                        "Inside <think></think>, first describe the current state inside <observation></observation>, "
                        "then reason inside <reasoning></reasoning>, then predict the state after your actions inside "
                        "<prediction></prediction>; then give your actions inside <answer></answer>."),
    )
}


def get_format(name: str) -> ReasoningFormat:
    """The format called ``name``; a clear error lists the allowed names."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown reasoning format {name!r}; allowed: {', '.join(FORMATS)}") from None


REPRESENTATION_INSTRUCTIONS = {
    "natural": "Describe states in plain sentences, giving each object's position as row and column "
               "(e.g. 'The player is at row 2, column 3.') or relative to the player (above, below-left, ...).",
    "symbolic": "Describe states as the symbolic map: one line per row, using the map symbols.",
    "structured": "Describe states as one JSON object mapping each object type to its [row, col] "
                  "position or a list of positions.",
}
