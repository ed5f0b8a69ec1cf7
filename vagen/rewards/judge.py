"""LLM-as-judge for belief texts the rule-based parsers cannot score well.

The VAGEN paper (Wang et al. 2025, "VAGEN: Reinforcing World Model Reasoning for
Multi-Turn VLM Agents", arXiv:2510.16907) scores free-form ``<observation>`` /
``<prediction>`` text with a judge model that compares it with the true state. Any
``vagen.policy.Policy`` can judge: ``openai:<model>`` or ``tiny`` for real runs, a
``ScriptedPolicy`` in tests.

- **Batched**: one ``policy.generate`` call for all uncached items of a request.
- **Cached**: by sha256 of (canonical state JSON, text, representation); LRU-bounded.
- **Robust**: a garbage verdict scores 0 and is counted as a judge parse error; it never
  raises. A judge *outage* (``PolicyUnavailableError``, or any other policy error) does
  propagate: an infrastructure failure must not be scored as the agent's mistake.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from envs.base import StateSchema
from vagen.policy.base import Policy, SamplingParams
from vagen.prompts.belief import gold_points, render_grid

_PLACEHOLDERS = ("coordinates", "legend", "state", "grid", "representation", "reference", "description")
_DEFAULT_SAMPLING = SamplingParams(temperature=0.0, max_tokens=256, logprobs=False)


@dataclass(frozen=True)
class JudgeItem:
    """One question for the judge: does ``text`` describe ``state``?"""

    text: str
    state: Mapping[str, Any]
    schema: StateSchema
    representation: str = "natural"


@dataclass(frozen=True)
class JudgeVerdict:
    """The judge's score in [0, 1]; ``parse_error`` when its answer was unreadable (score 0)."""

    score: float
    parse_error: bool = False
    cached: bool = False
    answer: str = ""


def default_prompt_path() -> Path:
    """The packaged judge prompt, ``vagen/rewards/prompts/judge.txt``."""
    return Path(str(resources.files("vagen.rewards").joinpath("prompts", "judge.txt")))


# ---------------------------------------------------------------------------- answers

_NO = re.compile(r"\b(?:no|false|incorrect|wrong|inaccurate|mismatch(?:es|ed)?"
                 r"|(?:does\s*n[o']?t|do\s*n[o']?t|not)\s+match(?:es)?)\b", re.I)
_YES = re.compile(r"\b(?:yes|true|correct|accurate|match(?:es)?)\b", re.I)
_NUMBER = re.compile(r"\s*(?:score\s*[:=]?\s*)?(\d+(?:\.\d+)?|\.\d+)\s*(%?)\s*\.?\s*", re.I)


def _verdict(fragment: str) -> float | None:
    fragment = fragment.strip()[:2000]
    number = _NUMBER.fullmatch(fragment)
    if number:
        value = float(number.group(1)) / (100.0 if number.group(2) else 1.0)
        return value if 0.0 <= value <= 1.0 else None
    said_no = bool(_NO.search(fragment))
    said_yes = bool(_YES.search(_NO.sub(" ", fragment)))
    if said_yes == said_no:  # neither, or both: ambiguous
        return None
    return 1.0 if said_yes else 0.0


def parse_judge_answer(text: Any) -> float | None:
    """The judge's score from its answer, or None when unreadable.

    Reads the last ``<answer>...</answer>`` if there is one (YES/NO, or a number in
    [0, 1], or a percentage); otherwise the last non-empty line, or a short whole answer.
    Never raises.
    """
    if not isinstance(text, str):
        return None
    try:
        tags = re.findall(r"<answer>(.*?)</answer>", text[-20_000:], re.S | re.I)
        if tags:
            return _verdict(tags[-1])
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        candidates = ([lines[-1]] if lines else []) + ([text] if len(text) <= 200 else [])
        for fragment in candidates:
            value = _verdict(re.sub(r"^\s*(?:answer|verdict|final answer)\s*[:=]", "", fragment, flags=re.I))
            if value is not None:
                return value
        return None
    except Exception:  # untrusted text must never break reward computation
        return None


# ---------------------------------------------------------------------------- judge


def canonical_state(state: Mapping[str, Any], schema: StateSchema) -> dict[str, Any]:
    """The part of a state the judge sees, in a canonical form (schema order, int lists)."""
    points = gold_points(state, schema)
    grid = state.get("grid")
    return {
        "entities": {
            spec.name: ((list(points[spec.name][0]) if points[spec.name] else None) if spec.kind == "point"
                        else [list(p) for p in points[spec.name]])
            for spec in schema.entities
        },
        "grid": [str(row) for row in grid] if grid else render_grid(state, schema),
    }


class LLMJudge:
    """Asks a policy whether belief texts match states; batched, cached, robust.

    ``stats`` counts ``requests`` (items asked), ``cache_hits``, ``policy_calls``
    (``generate`` calls), ``generated`` (items sent to the policy) and ``parse_errors``.
    """

    def __init__(self, policy: Policy, prompt_path: str | Path | None = None, max_cache: int = 100_000,
                 sampling: SamplingParams | None = None):
        self.policy = policy
        path = Path(prompt_path) if prompt_path is not None else default_prompt_path()
        self.template = path.read_text(encoding="utf-8")
        if "{description}" not in self.template or "{state}" not in self.template:
            raise ValueError(f"judge prompt {path} must contain {{description}} and {{state}} placeholders")
        self.max_cache = max_cache
        self.sampling = sampling or _DEFAULT_SAMPLING
        self._cache: OrderedDict[str, JudgeVerdict] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = {"requests": 0, "cache_hits": 0, "policy_calls": 0, "generated": 0, "parse_errors": 0}

    # --- prompt and cache key

    def prompt(self, item: JudgeItem) -> str:
        """The judge prompt for one item (the template with its placeholders filled)."""
        schema = item.schema
        canon = canonical_state(item.state, schema)
        legend = [f"- {s.name} ({', '.join(s.aliases)}): {s.description}; map symbol {s.symbol!r}"
                  for s in schema.entities]
        for symbol, names in schema.grid_symbols.items():
            legend.append(f"- map symbol {symbol!r}: {' + '.join(names) if names else 'background'}")
        try:
            reference = schema.entity(schema.reference).aliases[0]
        except (KeyError, IndexError):
            reference = schema.reference
        values = {
            "coordinates": schema.coordinates,
            "legend": "\n".join(legend),
            "state": json.dumps(canon["entities"]),
            "grid": "\n".join(canon["grid"]),
            "representation": item.representation,
            "reference": reference,
            "description": item.text,
        }
        # Plain replacement, not str.format: the agent's text may contain braces. The
        # description goes in last so placeholders inside it are left alone.
        out = self.template
        for name in _PLACEHOLDERS:
            out = out.replace("{" + name + "}", values[name])
        return out

    @staticmethod
    def key(item: JudgeItem) -> str:
        """Cache key: sha256 of the canonical state JSON, the text and the representation."""
        payload = json.dumps([canonical_state(item.state, item.schema), item.text, item.representation],
                             sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()

    # --- judging

    def judge(self, items: Sequence[JudgeItem]) -> list[JudgeVerdict]:
        """Verdicts for ``items`` in order: cached ones from the cache, the rest in one batch."""
        keys = [self.key(it) for it in items]
        verdicts: list[JudgeVerdict | None] = [None] * len(items)
        todo: dict[str, list[int]] = {}  # unique uncached key -> positions (duplicates asked once)
        with self._lock:
            self.stats["requests"] += len(items)
            for i, k in enumerate(keys):
                hit = self._cache.get(k)
                if hit is not None:
                    self._cache.move_to_end(k)
                    verdicts[i] = JudgeVerdict(hit.score, hit.parse_error, True, hit.answer)
                    self.stats["cache_hits"] += 1
                else:
                    todo.setdefault(k, []).append(i)
        if todo:
            first = [positions[0] for positions in todo.values()]
            chats = [[{"role": "user", "content": self.prompt(items[i])}] for i in first]
            # Errors from the policy (PolicyUnavailableError...) propagate on purpose.
            generations = self.policy.generate(chats, self.sampling)
            if len(generations) != len(chats):
                raise RuntimeError(f"judge policy returned {len(generations)} generations for {len(chats)} chats")
            with self._lock:
                self.stats["policy_calls"] += 1
                self.stats["generated"] += len(chats)
                for (k, positions), gen in zip(todo.items(), generations, strict=True):
                    score = parse_judge_answer(gen.text) if gen.finish_reason != "error" else None
                    verdict = JudgeVerdict(score if score is not None else 0.0, score is None, False,
                                           str(gen.text)[:500])
                    self.stats["parse_errors"] += verdict.parse_error * len(positions)
                    if gen.finish_reason != "error":
                        self._remember(k, verdict)
                    for i in positions:
                        verdicts[i] = verdict
        return verdicts  # type: ignore[return-value]

    async def ajudge(self, items: Sequence[JudgeItem]) -> list[JudgeVerdict]:
        """:meth:`judge` from async code: the blocking generate runs in a worker thread."""
        return await asyncio.to_thread(self.judge, list(items))

    def _remember(self, key: str, verdict: JudgeVerdict) -> None:
        if self.max_cache <= 0:
            return
        self._cache[key] = verdict
        self._cache.move_to_end(key)
        while len(self._cache) > self.max_cache:
            self._cache.popitem(last=False)

    def cache_size(self) -> int:
        """How many verdicts are cached."""
        with self._lock:
            return len(self._cache)
