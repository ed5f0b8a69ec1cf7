"""SVG reconstruction (as in the VAGEN benchmark): write SVG code that reproduces a target image.

Targets are procedural icons (2-6 circles, ellipses, rectangles, triangles, polygons,
stars, lines/polylines and closed paths on a white or coloured canvas, seeded) or, with
``data=DIR``, the ``*.svg`` files of a folder (sorted; the seed picks ``files[seed % n]``).

An episode is up to ``max_turns`` attempts. The first observation shows the target; each
later one shows the target, the agent's rendered attempt and its similarity score. The
action is the agent's answer holding one SVG document (see :mod:`envs.svg.render` for
extraction and sanitising: agent SVG never reads files or the network). Similarity is the
weighted mean of SSIM, Sobel-edge F1 and pixel similarity, plus an optional learned metric
(:mod:`envs.svg.similarity`).

Reward per step (``reward``): ``"score"`` (default, VAGEN style) pays this attempt's
similarity, so every attempt is scored on its own; ``"improvement"`` pays how much the
attempt raised the best similarity so far (the episode's rewards then sum to its best
score). An answer that holds no renderable SVG pays ``format_penalty`` and scores 0. The
episode terminates when an attempt reaches ``success_threshold`` and is truncated after
``max_turns`` attempts; ``info["metrics"]["episode/score"]`` is the best similarity so far.

World modelling: ``state["entities"]`` maps each shape kind to the ``[row, col]`` cells of
its shapes' bounding-box centres on a ``grid_size`` x ``grid_size`` grid over the canvas
(static: the target never moves). Folder targets' shapes are unknown: every kind is empty.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envs.base import (
    IMAGE_PLACEHOLDER,
    EntitySpec,
    EnvInfraError,
    PromptPieces,
    StateSchema,
    StepInfo,
    VagenEnv,
)
from envs.grid import make_config
from envs.svg.icons import KINDS, entities_of, generate_icon
from envs.svg.render import SVGError, prepare_svg, printable, render_svg
from envs.svg.similarity import load_learned_metric, similarity

REWARD_MODES = ("score", "improvement")
_HEX = re.compile(r"^#[0-9a-fA-F]{6}$")
_VIEWBOX = re.compile(r"""viewBox\s*=\s*["']\s*([-+\d.eE]+)[\s,]+([-+\d.eE]+)[\s,]+([-+\d.eE]+)[\s,]+([-+\d.eE]+)""")


@dataclass
class SVGConfig:
    """SVG env options (see the module docstring)."""

    #: Folder of ``*.svg`` targets; None: procedural icons.
    data: str | None = None
    #: Rendered image size ``(height, width)`` of target and attempts.
    image_size: tuple[int, int] = (128, 128)
    #: Procedural icons' viewBox is ``0 0 canvas canvas``.
    canvas: int = 128
    grid_size: int = 8
    min_shapes: int = 2
    max_shapes: int = 6
    white_background_prob: float = 0.35
    max_turns: int = 3
    success_threshold: float = 0.95
    reward: str = "score"
    ssim_weight: float = 0.4
    edge_weight: float = 0.3
    pixel_weight: float = 0.3
    ssim_mode: str = "rgb"
    #: "variance": SSIM pooled where either image has structure (a blank canvas scores low); "mean": textbook.
    ssim_pooling: str = "variance"
    #: ``"module:function"`` (``f(attempt, target) -> [0, 1]`` on uint8 RGB arrays) or a local
    #: transformers vision model directory; None: no learned metric.
    learned_metric: str | None = None
    learned_weight: float = 0.3
    #: Reward (<= 0) for an answer without a renderable SVG.
    format_penalty: float = -0.1
    #: Longest SVG accepted (characters); also the largest folder file accepted (bytes).
    max_svg_chars: int = 20000
    max_elements: int = 1000
    #: "reject": an SVG with external references/embedded content (<image>, file/URL hrefs, @import...) is
    #: penalised like an unrenderable one; "strip": those parts are removed and the rest is scored.
    external_refs: str = "reject"
    #: Seconds one render may take (resvg runs in a worker process, restarted after a timeout);
    #: 0 renders in-process without a limit (faster, but a pathological SVG can stall the step).
    render_timeout_s: float = 2.0
    #: Canvas colour behind transparent areas.
    background: str = "#ffffff"
    #: Load system fonts for <text> (slower; off: text renders as nothing, for target and attempt alike).
    system_fonts: bool = False

    def validate(self) -> None:
        size = tuple(int(x) for x in self.image_size) if isinstance(self.image_size, (list, tuple)) else ()
        if len(size) != 2 or not all(16 <= s <= 1024 for s in size):
            raise ValueError(f"image_size must be (height, width) within 16..1024, got {self.image_size!r}")
        self.image_size = size  # type: ignore[assignment]
        if not 8 <= self.canvas <= 4096:
            raise ValueError(f"canvas must be within 8..4096, got {self.canvas}")
        if not 1 <= self.grid_size <= 64:
            raise ValueError(f"grid_size must be within 1..64, got {self.grid_size}")
        if not 1 <= self.min_shapes <= self.max_shapes <= 12:
            raise ValueError(f"need 1 <= min_shapes <= max_shapes <= 12, got {self.min_shapes}..{self.max_shapes}")
        if not 0.0 <= self.white_background_prob <= 1.0:
            raise ValueError(f"white_background_prob must be in [0, 1], got {self.white_background_prob}")
        if self.max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {self.max_turns}")
        if not 0.0 < self.success_threshold <= 1.0:
            raise ValueError(f"success_threshold must be in (0, 1], got {self.success_threshold}")
        if self.reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {', '.join(REWARD_MODES)}, got {self.reward!r}")
        weights = (self.ssim_weight, self.edge_weight, self.pixel_weight, self.learned_weight)
        if min(weights) < 0:
            raise ValueError("ssim_weight, edge_weight, pixel_weight and learned_weight must be >= 0")
        learned = self.learned_weight if self.learned_metric else 0.0
        if self.ssim_weight + self.edge_weight + self.pixel_weight + learned <= 0:
            raise ValueError("at least one similarity weight must be > 0")
        if self.ssim_mode not in ("rgb", "gray"):
            raise ValueError(f"ssim_mode must be 'rgb' or 'gray', got {self.ssim_mode!r}")
        if self.ssim_pooling not in ("variance", "mean"):
            raise ValueError(f"ssim_pooling must be 'variance' or 'mean', got {self.ssim_pooling!r}")
        if self.format_penalty > 0:
            raise ValueError(f"format_penalty must be <= 0 (it is a penalty), got {self.format_penalty}")
        if self.max_svg_chars < 64 or self.max_elements < 1:
            raise ValueError(f"max_svg_chars must be >= 64 and max_elements >= 1, got {self.max_svg_chars}, "
                             f"{self.max_elements}")
        if not 0 <= self.render_timeout_s <= 600:
            raise ValueError(f"render_timeout_s must be within 0..600 (0: no worker), got {self.render_timeout_s}")
        if self.external_refs not in ("reject", "strip"):
            raise ValueError(f"external_refs must be 'reject' or 'strip', got {self.external_refs!r}")
        if not isinstance(self.background, str) or not _HEX.match(self.background):
            raise ValueError(f"background must be a '#rrggbb' colour, got {self.background!r}")
        if self.data is not None and not isinstance(self.data, (str, os.PathLike)):
            raise ValueError(f"data must be a folder path, got {self.data!r}")
        if self.data is not None:
            self.data = str(self.data)


def list_svg_files(folder: str, max_bytes: int) -> list[Path]:
    """The sorted ``*.svg`` files directly in ``folder`` (resolved; none may lead outside it)."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise ValueError(f"svg data folder {folder!r} does not exist or is not a directory")
    root = root.resolve()
    files = []
    for p in sorted(root.glob("*.svg")):
        real = p.resolve()
        if not real.is_relative_to(root):
            raise ValueError(f"svg data file {p.name!r} resolves outside {str(root)!r} (symlink); refusing it")
        if not real.is_file():
            continue
        size = real.stat().st_size
        if size > max_bytes:
            raise ValueError(f"svg data file {p.name!r} is {size} bytes > the {max_bytes} limit (max_svg_chars)")
        files.append(real)
    if not files:
        raise ValueError(f"svg data folder {folder!r} holds no *.svg files")
    return files


def _viewbox(svg: str, fallback: tuple[float, float, float, float]) -> list[float]:
    m = _VIEWBOX.search(svg)
    if m:
        try:
            return [float(v) for v in m.groups()]
        except ValueError:
            pass
    return list(fallback)


def _fmt_num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


class SVGEnv(VagenEnv):
    """Write SVG code that reproduces a target image; see ``SVGConfig``."""

    name = "svg"
    description = "SVG reconstruction: write SVG code that reproduces a target image (procedural icons or a folder)"
    action_grammar = "one SVG document: '<svg ...>...</svg>' (surrounding text and ```svg fences are ignored)"
    state_schema = StateSchema(
        entities=(
            EntitySpec("circles", "points", "C", ("circle", "circles"), "circles (centre cells)", dynamic=False),
            EntitySpec("ellipses", "points", "E", ("ellipse", "ellipses", "oval", "ovals"),
                       "ellipses (centre cells)", dynamic=False),
            EntitySpec("rectangles", "points", "R", ("rectangle", "rectangles", "rect", "rects"),
                       "rectangles, rounded or not (centre cells)", dynamic=False),
            EntitySpec("triangles", "points", "T", ("triangle", "triangles"), "triangles (centre cells)",
                       dynamic=False),
            EntitySpec("polygons", "points", "P", ("polygon", "polygons", "pentagon", "hexagon", "octagon"),
                       "regular polygons with 5, 6 or 8 sides (centre cells)", dynamic=False),
            EntitySpec("stars", "points", "S", ("star", "stars"), "stars (centre cells)", dynamic=False),
            EntitySpec("lines", "points", "L", ("line", "lines", "polyline", "polylines"),
                       "lines and polylines (centre cells of their extent)", dynamic=False),
            EntitySpec("paths", "points", "B", ("path", "paths", "blob", "blobs", "curve", "curves"),
                       "curved closed blobs drawn with paths (centre cells)", dynamic=False),
        ),
        grid_symbols={"C": ("circles",), "E": ("ellipses",), "R": ("rectangles",), "T": ("triangles",),
                      "P": ("polygons",), "S": ("stars",), "L": ("lines",), "B": ("paths",), ".": ()},
        reference="canvas",
        coordinates="[row, col] of the grid cell holding a shape's bounding-box centre, 0-indexed from the "
                    "top-left cell",
    )
    config: SVGConfig

    def __init__(self, render_mode: str | None = "rgb_array", **kwargs: Any):
        self.config = make_config(SVGConfig, kwargs, self.name)
        cfg = self.config
        self.render_mode = render_mode
        self._files = list_svg_files(cfg.data, cfg.max_svg_chars) if cfg.data else None
        self._learned = load_learned_metric(cfg.learned_metric) if cfg.learned_metric else None
        self._set_spaces((cfg.image_size[0], cfg.image_size[1], 3))
        self._ready = False
        self._done = False
        self._target: np.ndarray | None = None
        self._attempt: np.ndarray | None = None

    # -- targets -------------------------------------------------------------------------
    def _load_target(self, seed: int) -> dict[str, Any]:
        cfg = self.config
        if self._files is None:
            icon = generate_icon(seed, cfg.canvas, cfg.grid_size, cfg.min_shapes, cfg.max_shapes,
                                 cfg.white_background_prob)
            return {"svg": icon["svg"], "shapes": icon["shapes"], "source": "procedural",
                    "viewbox": [0.0, 0.0, float(cfg.canvas), float(cfg.canvas)]}
        path = self._files[seed % len(self._files)]
        text = path.read_bytes()[: cfg.max_svg_chars].decode("utf-8", errors="replace")
        h, w = cfg.image_size
        return {"svg": text, "shapes": [], "source": path.name,
                "viewbox": _viewbox(text, (0.0, 0.0, float(w), float(h)))}

    def _render(self, answer: Any) -> np.ndarray:
        cfg = self.config
        svg = prepare_svg(answer, cfg.max_svg_chars, cfg.max_elements, cfg.external_refs)
        return render_svg(svg, cfg.image_size[0], cfg.image_size[1], cfg.background, cfg.system_fonts,
                          cfg.render_timeout_s or None)

    # -- state ---------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        cfg = self.config
        g = cfg.grid_size
        return {
            "entities": entities_of(self._shapes),
            "target_svg": self._target_svg,
            "shapes": copy.deepcopy(self._shapes),
            "grid_size": [g, g],
            "viewbox": list(self._viewbox),
            "canvas": cfg.canvas,
            "source": self._source,
            "turn": self.turn,
            "max_turns": cfg.max_turns,
            "last_score": self.last_score,
            "best_score": self.best_score,
        }

    # -- gymnasium API -------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(0, 2**31 - 1))
        self.episode_seed = int(seed)
        target = self._load_target(self.episode_seed)
        try:
            self._target = self._render(target["svg"])
        except SVGError as e:
            hint = " (external_refs='strip' renders it without them)" if "external reference" in str(e) else ""
            raise ValueError(f"svg target {target['source']!r} cannot be used: {e}{hint}") from None
        self._target_svg, self._shapes = target["svg"], target["shapes"]
        self._source, self._viewbox = target["source"], target["viewbox"]
        self._attempt = None
        self.turn = 0
        self.last_score = 0.0
        self.best_score = 0.0
        self._ready, self._done = True, False
        info = StepInfo(state=self._state())
        info.metrics = {"turns": 0, "episode/score": 0.0}
        cfg = self.config
        text = (f"Target image: {IMAGE_PLACEHOLDER}\nWrite one SVG document that reproduces this image as closely "
                f"as possible (shapes, positions, sizes, colours). {self._canvas_text()} "
                f"Attempt 1 of {cfg.max_turns}.")
        return self._obs(text, (self._target,)), info.as_dict()

    def step(self, action: Any):
        if not self._ready:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("the episode has ended; call reset()")
        cfg = self.config
        self.turn += 1
        info = StepInfo(state={})
        try:
            attempt = self._render(action)
        except SVGError as e:
            attempt = None
            info.feedback = str(e)
        if attempt is None:
            self._attempt = None
            self.last_score = 0.0
            info.action_valid = False
            info.penalty = cfg.format_penalty
            reward = cfg.format_penalty
            parts: dict[str, float] = {"score": 0.0}
            success = False
            result = (f"Your answer was not usable: {printable(info.feedback, 300)} "
                      f"(penalty {cfg.format_penalty:g}).")
            images: tuple[np.ndarray, ...] = (self._target,)
            header = f"Target image: {IMAGE_PLACEHOLDER}\n"
        else:
            self._attempt = attempt
            parts = self._similarity(attempt)
            score = parts["score"]
            before = self.best_score
            self.last_score = score
            self.best_score = max(self.best_score, score)
            reward = score if cfg.reward == "score" else max(0.0, score - before)
            success = score >= cfg.success_threshold
            info.action_effective = True
            info.executed_actions = ["svg"]
            detail = ", ".join(f"{k} {v:.3f}" for k, v in parts.items() if k != "score")
            result = (f"Similarity of your attempt: {score:.3f} ({detail}); best so far {self.best_score:.3f}; "
                      f"success needs {cfg.success_threshold:g}.")
            info.feedback = result
            images = (self._target, attempt)
            header = f"Target image: {IMAGE_PLACEHOLDER}\nYour attempt, rendered: {IMAGE_PLACEHOLDER}\n"
        terminated = bool(success)
        truncated = bool(not terminated and self.turn >= cfg.max_turns)
        self._done = terminated or truncated
        if terminated:
            tail = "Solved: the attempt matches the target."
        elif truncated:
            tail = "No attempts left."
        else:
            tail = f"{self._canvas_text()} Attempt {self.turn + 1} of {cfg.max_turns}: improve your SVG."
        info.state = self._state()
        info.success = bool(success)
        info.metrics = {"turns": float(self.turn), "episode/score": float(self.best_score),
                        "svg/render_ok": float(attempt is not None),
                        **{f"svg/{k}": float(v) for k, v in parts.items()}}
        return self._obs(header + result + " " + tail, images), float(reward), terminated, truncated, info.as_dict()

    def _similarity(self, attempt: np.ndarray) -> dict[str, float]:
        cfg = self.config
        try:
            return similarity(attempt, self._target, cfg.ssim_weight, cfg.edge_weight, cfg.pixel_weight,
                              self._learned, cfg.learned_weight if self._learned is not None else 0.0, cfg.ssim_mode,
                              cfg.ssim_pooling)
        except Exception as e:  # only the learned metric (user code / a model) can fail here
            raise EnvInfraError(f"svg similarity failed ({cfg.learned_metric!r}): {type(e).__name__}: {e}") from e

    def _canvas_text(self) -> str:
        vb = " ".join(_fmt_num(v) for v in self._viewbox)
        h, w = self.config.image_size
        return f'Canvas: viewBox="{vb}", rendered at {w}x{h} px on a {self.config.background} background.'

    def _obs(self, text: str, images: tuple[np.ndarray, ...]) -> dict[str, Any]:
        return {"text": printable(text, 60000, newlines=True), "images": tuple(img.copy() for img in images)}

    def render(self):
        if self._target is None:
            h, w = self.config.image_size
            return np.zeros((h, 2 * w, 3), dtype=np.uint8)
        right = self._attempt if self._attempt is not None else np.full_like(self._target, 255)
        return np.concatenate([self._target, right], axis=1)

    # -- prompts -------------------------------------------------------------------------
    def prompt_pieces(self) -> PromptPieces:
        cfg = self.config
        h, w = cfg.image_size
        if self._files is None:
            canvas = (f'The canvas is viewBox="0 0 {cfg.canvas} {cfg.canvas}" (x to the right, y down, origin at the '
                      f"top-left), rendered at {w}x{h} px.")
        else:
            canvas = f"Use the viewBox given in the observation (x to the right, y down); images render at {w}x{h} px."
        c = cfg.canvas
        refs = "penalised" if cfg.external_refs == "reject" else "removed"
        example = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {c} {c}"><rect width="{c}" height="{c}" '
                   f'fill="#ffffff"/><circle cx="{c // 3}" cy="{c // 3}" r="{c // 8}" fill="#e6194b"/>'
                   f'<rect x="{c // 2}" y="{c // 2}" width="{c // 4}" height="{c // 5}" fill="#4363d8"/></svg>')
        return PromptPieces(
            description=self.env_description(),
            action_help=(f"Your answer is ONE complete SVG document, '<svg xmlns=\"http://www.w3.org/2000/svg\" "
                         f"...>...</svg>'. {canvas} Use rect, circle, ellipse, polygon, line, polyline and path "
                         "elements with '#rrggbb' fill/stroke colours; areas you leave empty show the "
                         f"{cfg.background} background. External references (images, files, URLs, @import) are "
                         f"{refs}. At most {cfg.max_svg_chars} characters and {cfg.max_elements} elements; an "
                         "answer without a renderable SVG is penalised."),
            example_action=example,
            max_actions_per_turn=1,
            action_separator="",
        )

    def env_description(self) -> str:
        cfg = self.config
        g = cfg.grid_size
        return ("You are reconstructing an image as SVG code. You see a target image; write SVG that reproduces it "
                f"(same shapes, positions, sizes and colours). You have {cfg.max_turns} attempt"
                f"{'s' if cfg.max_turns > 1 else ''}: after each you see your rendered attempt next to the target "
                "and its similarity score (SSIM, edges and pixels, 0 to 1); reaching "
                f"{cfg.success_threshold:g} solves the task. Shape positions are the [row, col] cells of each shape's "
                f"bounding-box centre on a {g}x{g} grid over the canvas, 0-indexed from the top-left; shape kinds: "
                + ", ".join(KINDS) + ".")

    # -- pure functions of a state ---------------------------------------------------------
    @classmethod
    def solve_state(cls, state: dict[str, Any]) -> list[str] | None:
        svg = state.get("target_svg")
        return [svg] if isinstance(svg, str) and svg else None

    @classmethod
    def predict_state(cls, state: dict[str, Any], actions: list[str]) -> dict[str, Any]:
        """Targets never move; an attempt that is the target's own source scores 1."""
        nxt = copy.deepcopy(state)
        if actions:
            nxt["turn"] = int(state.get("turn", 0)) + 1
            if isinstance(actions[0], str) and actions[0].strip() == str(state.get("target_svg", "")).strip():
                nxt["last_score"] = nxt["best_score"] = 1.0
        return nxt

    @classmethod
    def random_actions(cls, rng: Any, k: int, state: dict[str, Any] | None = None) -> list[str]:
        """``k`` random procedural icons (drawn on the target's canvas size)."""
        canvas = int((state or {}).get("canvas", 128))
        grid = int(((state or {}).get("grid_size") or [8])[0])
        return [generate_icon(rng.randrange(2**31), canvas, grid)["svg"] for _ in range(k)]
