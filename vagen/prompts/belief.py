"""Belief representations: how an agent writes down a state, and how we read it back.

The VAGEN paper (Wang et al. 2025, "VAGEN: Reinforcing World Model Reasoning for
Multi-Turn VLM Agents", arXiv:2510.16907) compares three ways for an agent to state its
belief in ``<observation>`` / ``<prediction>``:

- ``natural``: sentences ("The box is at row 3, column 3, below the player.");
- ``symbolic``: the env's character grid, one row per line;
- ``structured``: a JSON object mapping each entity to ``[row, col]`` points.

``write_belief`` renders the *correct* belief for a state (prompts' examples, SFT data,
oracle agents); ``parse_belief`` turns any agent text into a :class:`Belief` the
world-modeling reward (``vagen.rewards``) scores. Everything is driven by the env's
``StateSchema`` (entity names, aliases, grid symbols, reference entity): no env names
are hard-coded here.

``parse_belief`` never raises: agent text is untrusted, and a crash in reward code would
take a whole rollout batch down. Problems are reported in ``Belief.errors``.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envs.base import EntitySpec, StateSchema

Point = tuple[int, ...]  # (row, col) on grids; (x, y, z) for 3-D entities (EntitySpec.dims)

REPRESENTATIONS = ("natural", "symbolic", "structured")
RELATIONS = ("above", "below", "left", "right", "above-left", "above-right", "below-left", "below-right",
             "same")
#: Agent text beyond this is ignored (and reported): bounds parsing time on runaway outputs.
MAX_TEXT_CHARS = 50_000

_INVERSE = {"above": "below", "below": "above", "left": "right", "right": "left",
            "above-left": "below-right", "below-right": "above-left",
            "above-right": "below-left", "below-left": "above-right", "same": "same"}


@dataclass
class Belief:
    """What a belief text says about the world.

    ``entities`` maps each *mentioned* entity to the points given for it (a ``points``
    entity said to be absent, "there are no boxes", maps to ``[]``). ``relations`` holds
    every relation to the reference entity found for an entity ("below-left"), and
    ``relation_only`` the subset describing objects that were given *no* coordinates:
    those are what the reward matches by relation instead of by position.
    """

    entities: dict[str, list[Point]] = field(default_factory=dict)
    relations: dict[str, list[str]] = field(default_factory=dict)
    parsed: bool = False
    errors: list[str] = field(default_factory=list)
    relation_only: dict[str, list[str]] = field(default_factory=dict)


# ---------------------------------------------------------------------------- helpers


def relation(point: Any, ref: Any) -> str:
    """Where ``point`` lies relative to ``ref`` (both ``[row, col]``, rows grow downwards).

    One of ``above``, ``below``, ``left``, ``right``, ``above-left``, ``above-right``,
    ``below-left``, ``below-right`` or ``same``.
    """
    dr = int(point[0]) - int(ref[0])
    dc = int(point[1]) - int(ref[1])
    vertical = "above" if dr < 0 else "below" if dr > 0 else ""
    horizontal = "left" if dc < 0 else "right" if dc > 0 else ""
    if vertical and horizontal:
        return f"{vertical}-{horizontal}"
    return vertical or horizontal or "same"


def inverse_relation(rel: str) -> str:
    """The relation seen from the other side: ``inverse_relation("above-left") == "below-right"``."""
    return _INVERSE[rel]


def gold_points(state: Mapping[str, Any], schema: StateSchema) -> dict[str, list[Point]]:
    """Each schema entity's points in ``state["entities"]`` (a missing or null entity -> ``[]``)."""
    raw = state.get("entities") or {}
    out: dict[str, list[Point]] = {}
    for spec in schema.entities:
        value = raw.get(spec.name)
        if value is None:
            out[spec.name] = []
        elif spec.kind == "point":
            out[spec.name] = [tuple(int(round(float(v))) for v in value[:spec.dims])]
        else:
            out[spec.name] = [tuple(int(round(float(v))) for v in p[:spec.dims]) for p in value]
    return out


def reference_point(points: Mapping[str, list[Point]], schema: StateSchema) -> Point | None:
    """The reference entity's position, or None when it is absent (no relations then)."""
    ref = points.get(schema.reference) or []
    return ref[0] if len(ref) >= 1 else None


def _singular(spec: EntitySpec) -> str:
    return spec.aliases[0] if spec.aliases else spec.name.replace("_", " ")


def _plural(spec: EntitySpec) -> str:
    one = _singular(spec)
    for alias in spec.aliases[1:]:
        if alias.lower() in (one.lower() + "s", one.lower() + "es"):
            return alias
    name = spec.name.replace("_", " ")
    if name.lower() != one.lower() and name.lower().endswith("s"):
        return name
    return one + ("es" if one.endswith(("s", "x", "sh", "ch")) else "s")


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


# ---------------------------------------------------------------------------- writing


def write_belief(state: Mapping[str, Any], schema: StateSchema, representation: str) -> str:
    """The correct description of ``state`` in ``representation``.

    ``structured``: one-line JSON ``{"player": [2, 3], "boxes": [[3, 3], [1, 1]]}`` in
    schema order; ``symbolic``: ``state["grid"]`` rows joined by newlines (rendered from
    the entities when the state has no grid); ``natural``: one sentence per object with
    its row/column and its relation to the reference entity.
    """
    if representation == "structured":
        return _write_structured(state, schema)
    if representation == "symbolic":
        return _write_symbolic(state, schema)
    if representation == "natural":
        return _write_natural(state, schema)
    raise ValueError(f"unknown belief representation {representation!r}; expected one of {REPRESENTATIONS}")


def _write_structured(state: Mapping[str, Any], schema: StateSchema) -> str:
    raw = state.get("entities") or {}
    points = gold_points(state, schema)
    obj: dict[str, Any] = {}
    for spec in schema.entities:
        if spec.name not in raw:
            continue
        pts = [list(p) for p in points[spec.name]]
        obj[spec.name] = (pts[0] if pts else None) if spec.kind == "point" else pts
    return json.dumps(obj)


def _write_symbolic(state: Mapping[str, Any], schema: StateSchema) -> str:
    grid = state.get("grid")
    if grid:
        return "\n".join(str(row) for row in grid)
    return "\n".join(render_grid(state, schema))


def render_grid(state: Mapping[str, Any], schema: StateSchema) -> list[str]:
    """Draw the entities on a grid of ``state["grid_size"]`` using the schema's symbols.

    A fallback for states without ``"grid"``: walls and other background are unknown, so
    empty cells get the first background symbol (one mapping to no entity).
    """
    points = gold_points(state, schema)
    if any(s.dims != 2 for s in schema.entities):
        raise ValueError("a symbolic grid cannot show 3-D entities; use the structured representation")
    size = state.get("grid_size")
    if size:
        rows, cols = int(size[0]), int(size[1])
    else:
        every = [p for pts in points.values() for p in pts] or [(0, 0)]
        rows, cols = max(p[0] for p in every) + 1, max(p[1] for p in every) + 1
    background = next((s for s, ents in schema.grid_symbols.items() if not ents), ".")
    by_set = {frozenset(ents): s for s, ents in schema.grid_symbols.items()}
    cells: dict[Point, set[str]] = {}
    for name, pts in points.items():
        for p in pts:
            cells.setdefault(p, set()).add(name)
    out = []
    for r in range(rows):
        row = []
        for c in range(cols):
            names = frozenset(cells.get((r, c), ()))
            row.append(by_set.get(names, background) if names else background)
        out.append("".join(row))
    return out


def _where(point: Point, ref: Point | None, ref_phrase: str, is_ref: bool) -> str:
    if len(point) != 2:
        return "at [" + ", ".join(map(str, point)) + "]"
    text = f"at row {point[0]}, column {point[1]}"
    if ref is None or is_ref:
        return text
    rel = relation(point, ref)
    if rel == "same":
        return f"{text}, at the same position as {ref_phrase}"
    if rel in ("left", "right"):
        return f"{text}, to the {rel} of {ref_phrase}"
    if "-" in rel:
        return f"{text}, {rel} of {ref_phrase}"
    return f"{text}, {rel} {ref_phrase}"


def _write_natural(state: Mapping[str, Any], schema: StateSchema) -> str:
    raw = state.get("entities") or {}
    points = gold_points(state, schema)
    ref = reference_point(points, schema)
    if ref is not None and len(ref) != 2:
        ref = None
    try:
        ref_phrase = "the " + _singular(schema.entity(schema.reference))
    except KeyError:
        ref, ref_phrase = None, ""
    sentences = []
    # The reference first, so the relations in later sentences have an anchor.
    ordered = sorted(schema.entities, key=lambda s: s.name != schema.reference)
    for spec in ordered:
        if spec.name not in raw:
            continue
        one, is_ref = _singular(spec), spec.name == schema.reference
        pts = points[spec.name]
        if spec.kind == "point":
            if pts:
                sentences.append(f"The {one} is {_where(pts[0], ref, ref_phrase, is_ref)}.")
            else:
                sentences.append(f"There is no {one}.")
        elif not pts:
            sentences.append(f"There are no {_plural(spec)}.")
        else:
            for p in pts:
                sentences.append(f"There is {_article(one)} {one} {_where(p, ref, ref_phrase, is_ref)}.")
    return " ".join(sentences)


# ---------------------------------------------------------------------------- parsing


def parse_belief(text: Any, schema: StateSchema, representation: str) -> Belief:
    """Read a belief text in ``representation``; never raises (errors go to ``Belief.errors``)."""
    try:
        if not isinstance(text, str):
            return Belief(errors=[f"belief text is {type(text).__name__}, not str"])
        belief = Belief()
        if len(text) > MAX_TEXT_CHARS:
            belief.errors.append(f"text truncated to {MAX_TEXT_CHARS} characters")
            text = text[:MAX_TEXT_CHARS]
        if representation == "structured":
            _parse_structured(text, schema, belief)
        elif representation == "symbolic":
            _parse_symbolic(text, schema, belief)
        elif representation == "natural":
            _parse_natural(text, schema, belief)
        else:
            belief.errors.append(f"unknown representation {representation!r}")
        return belief
    except Exception as e:  # last-resort guard: reward code must survive any agent text
        return Belief(errors=[f"internal parser error: {type(e).__name__}: {e}"])


def _norm_key(key: str) -> str:
    return re.sub(r"[\s_\-]+", " ", key.strip().lower())


def _key_lookup(schema: StateSchema) -> dict[str, str]:
    """Normalised entity names and aliases, with singular/plural variants, -> entity name."""
    lookup: dict[str, str] = {}
    for spec in schema.entities:
        for word in (spec.name, *spec.aliases):
            w = _norm_key(word)
            for variant in (w, w + "s", w + "es", w[:-1] if w.endswith("s") else w,
                            w[:-2] if w.endswith("es") else w):
                if variant:
                    lookup.setdefault(variant, spec.name)
    # Exact names and aliases win over derived variants of another entity's words.
    for spec in schema.entities:
        for word in (spec.name, *spec.aliases):
            lookup[_norm_key(word)] = spec.name
    return lookup


# --- structured


def _json_candidates(text: str, limit: int = 20):
    """Balanced ``{...}`` substrings, in order of their opening brace (strings respected)."""
    starts = [m.start() for m in re.finditer(r"\{", text)][:limit]
    for start in starts:
        depth, quote, escaped = 0, "", False
        for i in range(start, len(text)):
            ch = text[i]
            if quote:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    yield text[start:i + 1]
                    break


def _loads_tolerant(block: str) -> Any:
    """``json.loads`` with a few repairs agents need: single quotes, tuples, trailing commas.

    Never ``eval``: the text is untrusted.
    """
    attempts = [block]
    fixed = re.sub(r",\s*([}\]])", r"\1", block)
    fixed = fixed.replace("(", "[").replace(")", "]")
    attempts.append(fixed)
    if "'" in fixed:
        attempts.append(fixed.replace("'", '"'))
    # Unquoted keys: {player: [1, 2]}
    # (bounded key length: an unbounded lazy match is quadratic on long runs of spaces)
    attempts.append(re.sub(r"([{,]\s{0,8})([A-Za-z_][\w \-]{0,40}?)\s{0,8}:", r'\1"\2":', attempts[-1]))
    for attempt in attempts:
        try:
            return json.loads(attempt)
        except (ValueError, RecursionError):
            continue
    raise ValueError("no JSON object could be decoded")


_MAX_COORD = 10**9  # no grid is this big; bounding keeps numpy and int() conversions safe


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value):
        value = int(round(value))
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(-?\d{1,9})\s*", value)
        value = int(m.group(1)) if m else None
    if isinstance(value, int) and abs(value) <= _MAX_COORD:
        return value
    return None


def _as_point(value: Any, dims: int = 2) -> Point | None:
    if isinstance(value, (list, tuple)) and len(value) == dims:
        coords = tuple(_as_int(v) for v in value)
        return coords if all(c is not None for c in coords) else None  # type: ignore[return-value]
    if dims != 2:
        if isinstance(value, Mapping):
            keys = {_norm_key(str(k)): v for k, v in value.items()}
            coords = tuple(_as_int(keys.get(k)) for k in "xyz"[:dims])
            return coords if all(c is not None for c in coords) else None  # type: ignore[return-value]
        return None
    if isinstance(value, Mapping):
        keys = {_norm_key(str(k)): v for k, v in value.items()}
        r = next((keys[k] for k in ("row", "r", "y") if k in keys), None)
        c = next((keys[k] for k in ("col", "column", "c", "x") if k in keys), None)
        r, c = _as_int(r), _as_int(c)
        return (r, c) if r is not None and c is not None else None
    return None


def _as_points(value: Any, dims: int = 2) -> list[Point] | None:
    if value is None:
        return []
    if isinstance(value, str):  # "(2, 3)" or "[[1, 1], [3, 3]]" as a string
        num = r"(-?\d{1,9})"
        pattern = r"(?<!\d)" + r"\s*,\s*".join([num] * dims) + r"(?!\d)"
        return [tuple(int(x) for x in m) for m in re.findall(pattern, value[:10_000])]
    single = _as_point(value, dims)
    if single is not None:
        return [single]
    if isinstance(value, (list, tuple)):
        pts = [_as_point(v, dims) for v in value]
        if all(p is not None for p in pts):
            return pts  # type: ignore[return-value]
    return None


_KEY_NOISE = re.compile(r"\b(?:positions?|locations?|pos|coords?|coordinates?|loc|cells?|of|the)\b")


def _parse_structured(text: str, schema: StateSchema, belief: Belief) -> None:
    obj = None
    for block in _json_candidates(text):
        try:
            candidate = _loads_tolerant(block)
        except ValueError:
            continue
        if isinstance(candidate, dict):
            obj = candidate
            break
    if obj is None:
        belief.errors.append("no JSON object found")
        return
    # Tolerate a wrapper such as {"entities": {...}} or {"state": {...}}.
    if len(obj) == 1:
        (only_key, only_value), = obj.items()
        if isinstance(only_value, dict) and _norm_key(str(only_key)) in ("entities", "state", "objects"):
            obj = only_value
    belief.parsed = True
    lookup = _key_lookup(schema)
    for key, value in obj.items():
        norm = _norm_key(str(key))
        # "player_position", "box locations", "pos of goal": the entity word is what counts.
        name = lookup.get(norm) or lookup.get(" ".join(_KEY_NOISE.sub(" ", norm).split()))
        if name is None:
            belief.errors.append(f"unknown key {str(key)[:40]!r}")
            continue
        pts = _as_points(value, schema.entity(name).dims)
        if pts is None:
            belief.errors.append(f"cannot read points for {name!r}")
            belief.entities.setdefault(name, [])
            continue
        belief.entities.setdefault(name, []).extend(pts)


# --- symbolic


def _parse_symbolic(text: str, schema: StateSchema, belief: Belief) -> None:
    symbols = set(schema.grid_symbols)
    if not symbols:
        belief.errors.append("schema has no grid symbols")
        return
    strip_spaces = " " not in symbols and "\t" not in symbols

    def grid_row(line: str) -> str | None:
        row = line.strip("`\r")
        if strip_spaces:
            row = re.sub(r"[ \t]+", "", row)
        return row if row and all(ch in symbols for ch in row) else None

    # The biggest block of consecutive grid-only lines is the map; prose rarely forms one.
    best: list[str] = []
    block: list[str] = []
    for line in text.splitlines() + [""]:
        row = grid_row(line)
        if row is not None:
            block.append(row)
            continue
        if sum(map(len, block)) > sum(map(len, best)):
            best = block
        block = []
    if not best:
        belief.errors.append("no grid rows found")
        return
    belief.parsed = True
    for spec in schema.entities:
        if any(spec.name in ents for ents in schema.grid_symbols.values()):
            belief.entities[spec.name] = []
    for r, row in enumerate(best):
        for c, ch in enumerate(row):
            for name in schema.grid_symbols.get(ch, ()):
                belief.entities.setdefault(name, []).append((r, c))


# --- natural

_V_UP = r"(?:above|up|upper|top|north)"
_V_DOWN = r"(?:below|beneath|under|underneath|down|lower|bottom|south)"
_H_LEFT = r"(?:left|west)"
_H_RIGHT = r"(?:right|east)"
_SEP = r"(?:\s*-\s*|\s+)?(?:and\s+)?(?:to\s+)?(?:the\s+)?(?:its\s+)?"
_SEP_H_FIRST = r"(?:\s+of)?(?:\s*-\s*|\s+and\s+)"  # "left-up", "left of and above"


def _diag(v: str, h: str) -> str:
    return rf"\b{v}{_SEP}{h}\b|\b{h}{_SEP_H_FIRST}{v}\b"


# Ordered: diagonals before single directions, so "upper left" is one relation.
_RELATION_PATTERNS: list[tuple[str, str]] = [
    ("same", r"\bsame\s+(?:position|cell|place|location|square|tile|spot|coordinates?)\b"
             r"|\bon\s+top\s+of\b|\boverlap(?:s|ping)?\b|\bcoincides?\b"),
    ("direct", r"\bright\s+(?=(?:above|below|under|underneath|beneath|over|next|beside)\b)"),
    ("above-left", _diag(_V_UP, _H_LEFT) + r"|\bnorth-?west\b"),
    ("above-right", _diag(_V_UP, _H_RIGHT) + r"|\bnorth-?east\b"),
    ("below-left", _diag(_V_DOWN, _H_LEFT) + r"|\bsouth-?west\b"),
    ("below-right", _diag(_V_DOWN, _H_RIGHT) + r"|\bsouth-?east\b"),
    ("above", r"\babove\b|\bnorth\b|\bup\s+from\b|\bhigher\s+than\b"),
    ("below", r"\bbelow\b|\bbeneath\b|\bunder(?:neath)?\b|\bsouth\b|\bdown\s+from\b|\blower\s+than\b"),
    ("left", r"\bleft\b|\bwest\b"),
    ("right", r"\bright\b|\beast\b"),
]
_NUM = r"(-?\d{1,9})(?!\d)"  # bounded: int() of a 5,000-digit string raises
_ROW = r"\brows?\s*[:=#]?\s*"
_COL = r"\b(?:col(?:umn)?s?)\s*[:=#]?\s*"
_AND = r"\s*(?:[,;&]|\band\b)?\s*(?:,\s*)?"
_COORD_PATTERNS = [
    ("rc", _ROW + _NUM + _AND + _COL + _NUM),
    ("cr", _COL + _NUM + _AND + _ROW + _NUM),
    ("rc", r"[\(\[]\s*" + _NUM + r"\s*[,;]\s*" + _NUM + r"\s*[\)\]]"),
    ("rc", r"\b(?:at|position|cell|location|coordinates?)\s*[:=]?\s*" + _NUM + r"\s*,\s*" + _NUM),
]
_COUNT_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10, "both": 2, "a": 1, "an": 1}
_NEGATION = re.compile(r"\b(?:no|zero|without)\s+(?:\w+\s+)?$|\bnone\s+of\s+the\s+$", re.I)
_OBJECT_GAP = re.compile(
    r"[\s,]*(?:(?:of|from|to|as|than|relative\s+to|with\s+respect\s+to)\s+)?(?:(?:the|a|an|your|my)\s+)?",
    re.I)
_PRONOUN_START = re.compile(r"\s*(?:it|its|it's|they|their|this|that|which)\b", re.I)
_SENTENCE_SPLIT = re.compile(r"\.(?=\s|$)|[!?;\n]")


@dataclass
class _Item:
    """One subject mention in a sentence: an entity and what is said about it."""

    entity: str
    count: int | None
    coords: list[Point] = field(default_factory=list)
    rels: list[str] = field(default_factory=list)


def _alias_regex(schema: StateSchema) -> tuple[re.Pattern[str], dict[str, str]]:
    """One regex for every alias, the entity name and its plural (longest first); word -> entity."""
    words: dict[str, str] = {}
    for spec in schema.entities:
        for word in (*spec.aliases, spec.name.replace("_", " "), _plural(spec)):
            w = " ".join(word.lower().split())
            if w and w not in words:
                words[w] = spec.name
    if not words:
        return re.compile(r"(?!)"), words  # matches nothing
    ordered = sorted(words, key=len, reverse=True)
    body = "|".join(r"\s+".join(map(re.escape, w.split())) for w in ordered)
    return re.compile(rf"\b(?:{body})\b", re.I), words


def _events(sentence: str, alias_re: re.Pattern[str], words: dict[str, str]):
    """(start, end, kind, value) for aliases, coordinates and relations, in text order."""
    found: list[tuple[int, int, str, Any]] = []
    # Claimed spans, disjoint and sorted by start: earlier patterns win over later ones.
    starts: list[int] = []
    ends: list[int] = []

    def claim(s: int, e: int) -> bool:
        k = bisect.bisect_right(starts, s)
        if (k > 0 and ends[k - 1] > s) or (k < len(starts) and starts[k] < e):
            return False
        starts.insert(k, s)
        ends.insert(k, e)
        return True

    for order, pattern in _COORD_PATTERNS:
        for m in re.finditer(pattern, sentence, re.I):
            if claim(m.start(), m.end()):
                a, b = int(m.group(1)), int(m.group(2))
                found.append((m.start(), m.end(), "coord", (a, b) if order == "rc" else (b, a)))
    for m in alias_re.finditer(sentence):
        if claim(m.start(), m.end()):
            key = re.sub(r"\s+", " ", m.group(0).lower())
            found.append((m.start(), m.end(), "alias", words[key]))
    for rel, pattern in _RELATION_PATTERNS:
        for m in re.finditer(pattern, sentence, re.I):
            if claim(m.start(), max(m.end(), m.start() + 1)) and rel != "direct":
                found.append((m.start(), m.end(), "rel", rel))
    found.sort(key=lambda ev: ev[0])
    return found


def _count_before(sentence: str, start: int) -> int | None:
    """The number word just before an alias ("two boxes", "3 small holes"), if any."""
    for word in reversed(sentence[max(0, start - 30):start].split()[-2:]):
        word = word.lower()
        if word.isdigit() and len(word) <= 3:
            return min(int(word), 100)
        if word in _COUNT_WORDS:
            return _COUNT_WORDS[word]
    return None


def _parse_natural(text: str, schema: StateSchema, belief: Belief) -> None:
    alias_re, words = _alias_regex(schema)
    kinds = {spec.name: spec.kind for spec in schema.entities}
    ref = schema.reference
    items: list[_Item] = []
    mentioned: list[str] = []
    last: _Item | None = None
    # Collapse blank runs so no pattern's adjacent optional spaces can backtrack badly.
    text = re.sub(r"[^\S\n]+", " ", text)

    for sentence in _SENTENCE_SPLIT.split(text):
        events = _events(sentence, alias_re, words)
        if not events:
            continue
        has_alias = any(ev[2] == "alias" for ev in events)
        # "It is at (3, 3)." continues the previous sentence's subject.
        current: _Item | None = last if (not has_alias and _PRONOUN_START.match(sentence)) else None
        negated = False
        pending_rel: str | None = None  # "Below the player there is a box."
        i = 0
        while i < len(events):
            start, end, kind, value = events[i]
            if kind == "alias":
                entity = value
                mentioned.append(entity)
                if _NEGATION.search(sentence[max(0, start - 30):start]):
                    current, negated = None, True
                else:
                    current, negated = _Item(entity, _count_before(sentence, start)), False
                    items.append(current)
                    if pending_rel and entity != ref:
                        current.rels.append(pending_rel)
                    pending_rel = None
            elif kind == "coord":
                if current is not None:
                    current.coords.append(value)
                elif not negated:
                    belief.errors.append(f"coordinate {value} without an entity")
            else:  # a relation; is it followed by its object ("... of the player")?
                obj = None
                if i + 1 < len(events) and events[i + 1][2] == "alias":
                    gap = sentence[end:events[i + 1][0]]
                    if _OBJECT_GAP.fullmatch(gap):
                        obj = events[i + 1][3]
                        i += 1
                        mentioned.append(obj)
                if obj is None or obj == ref:
                    if current is not None and current.entity != ref:
                        current.rels.append(value)
                    elif current is None and obj == ref and not negated:
                        pending_rel = value
                elif current is not None and current.entity == ref:
                    # "The player is above a box": the box is below the player.
                    current = _Item(obj, None, rels=[inverse_relation(value)])
                    items.append(current)
                else:
                    # A relation between two non-reference objects says nothing we score;
                    # the object still starts a new subject for what follows.
                    current = _Item(obj, None)
                    items.append(current)
            i += 1
        last = current

    for entity in mentioned:
        belief.entities.setdefault(entity, [])
    for item in items:
        coords = item.coords[-1:] if kinds.get(item.entity) == "point" else item.coords
        pts = belief.entities.setdefault(item.entity, [])
        for p in coords:
            # "the player is at (2, 3)" said twice is one player, not two.
            if p not in pts:
                pts.append(p)
        if item.rels:
            belief.relations.setdefault(item.entity, []).extend(item.rels)
        if not coords and item.rels:
            only = belief.relation_only.setdefault(item.entity, [])
            if item.count and item.count > 1 and len(item.rels) == 1:
                only.extend(item.rels * item.count)
            else:
                only.extend(item.rels)
    belief.parsed = bool(mentioned)
    if not mentioned:
        belief.errors.append("no entity mentioned")
