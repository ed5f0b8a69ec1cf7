"""Parse a model's raw response into its reasoning parts and actions. Never raises.

``parse_response(text, "grounding_worldmodeling")`` returns a ``ParsedResponse`` with
the parts found (think / observation / reasoning / prediction / answer), the action
tokens of the answer, and a format verdict with the reasons it failed. Lenient in what
it *extracts* (the answer is found even in a sloppy response, so the env can still act),
strict in what it *approves* (the verdict demands exactly the format's tags, each once,
in order, with nothing but whitespace outside them).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from vagen.prompts.formats import get_format

TAGS = ("think", "observation", "reasoning", "prediction", "answer")
_TAG_RE = {t: re.compile(rf"<{t}>(.*?)</{t}>", re.DOTALL | re.IGNORECASE) for t in TAGS}
_ANY_TAG = re.compile(r"</?(think|observation|reasoning|prediction|answer)>", re.IGNORECASE)
MAX_CHARS = 100_000  # longer inputs are cut before parsing so a runaway output stays cheap


@dataclass
class ParsedResponse:
    """What a response contained and whether it followed the format."""

    format: str
    think: str | None = None
    observation: str | None = None
    reasoning: str | None = None
    prediction: str | None = None
    answer: str | None = None
    actions: list[str] = field(default_factory=list)
    format_ok: bool = False
    errors: list[str] = field(default_factory=list)

    @property
    def action_text(self) -> str:
        """The string handed to ``env.step``: the answer, or "" when there is none."""
        return self.answer or ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _first(tag: str, text: str) -> str | None:
    m = _TAG_RE[tag].search(text)
    return m.group(1).strip() if m else None


def split_actions(answer: str, separator: str = ",") -> list[str]:
    """Answer text -> action tokens, split on the separator (and newlines)."""
    parts = answer.replace("\n", separator).split(separator) if separator else [answer]
    return [p.strip() for p in parts if p.strip()]


def parse_response(text: Any, format: str, separator: str = ",", max_actions: int | None = None) -> ParsedResponse:
    """Extract the parts of ``text`` and judge it against ``format``. Never raises on ``text``.

    ``format`` must name a known format (a programming error otherwise). When
    ``max_actions`` is given, more actions than that is a format error too.
    """
    fmt = get_format(format)
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    text = text[:MAX_CHARS]
    out = ParsedResponse(format=fmt.name)
    for tag in TAGS:
        setattr(out, tag, _first(tag, text))
    if out.answer is not None:
        out.actions = split_actions(out.answer, separator)
    out.errors = _verdict(text, fmt, out, max_actions)
    out.format_ok = not out.errors
    return out


def _verdict(text: str, fmt, parsed: ParsedResponse, max_actions: int | None) -> list[str]:
    errors: list[str] = []
    # Expected top-level tag sequence, then the tags inside <think>.
    expected = ["think", "answer"] if fmt.think_parts is not None else ["answer"]
    tags = [(m.group(1).lower(), m.group(0).startswith("</"), m.start(), m.end()) for m in _ANY_TAG.finditer(text)]
    counts: dict[str, int] = {}
    for name, closing, _, _ in tags:
        if not closing:
            counts[name] = counts.get(name, 0) + 1
    allowed = set(expected) | set(fmt.think_parts or ())
    for name in TAGS:
        n = counts.get(name, 0)
        if name in allowed and n != 1:
            errors.append(f"expected exactly one <{name}>, found {n}")
        elif name not in allowed and n:
            errors.append(f"<{name}> is not part of the {fmt.name} format")
    if errors:
        return errors
    # Balanced, in order: open/close pairs must nest as the template says.
    order = [(n, c) for n, c, _, _ in tags]
    want: list[tuple[str, bool]] = []
    if fmt.think_parts is not None:
        want.append(("think", False))
        for p in fmt.think_parts:
            want += [(p, False), (p, True)]
        want.append(("think", True))
    want += [("answer", False), ("answer", True)]
    if order != want:
        errors.append(f"tags out of order; expected {fmt.template()}")
        return errors
    # Text between top-level tags must be whitespace: rebuild what lies outside <think>/<answer>.
    stripped = _TAG_RE["answer"].sub("", _TAG_RE["think"].sub("", text, count=1), count=1)
    if stripped.strip():
        errors.append("text outside the tags")
    if fmt.think_parts:
        inner = parsed.think or ""
        for p in fmt.think_parts:
            inner = _TAG_RE[p].sub("", inner, count=1)
        if inner.strip():
            errors.append("text inside <think> outside its parts")
        for p in fmt.think_parts:
            if not (getattr(parsed, p) or "").strip():
                errors.append(f"<{p}> is empty")
    if not parsed.actions:
        errors.append("<answer> holds no action")
    elif max_actions is not None and len(parsed.actions) > max_actions:
        errors.append(f"{len(parsed.actions)} actions given; at most {max_actions} per turn")
    return errors
