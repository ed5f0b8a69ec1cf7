"""Image similarity for SVG reconstruction: every score is in [0, 1], symmetric, 1 for identical images.

- :func:`ssim`: structural similarity (Wang et al. 2004) with an 11-tap-like Gaussian window
  (sigma 1.5) built from ``scipy.ndimage.gaussian_filter``; per RGB channel (colour matters
  here) or on luminance; pooled by local variance (default) or plain mean; clipped to [0, 1].
- :func:`edge_similarity`: F1 of Sobel edge maps (max over channels, so edges between
  equally bright colours count) with a 1-pixel tolerance. Two edge-free images score 1,
  one edge-free image against one with edges 0. It ignores polarity: an inverted image has
  the same edges (the pixel and SSIM terms catch that).
- :func:`pixel_similarity`: 1 - mean absolute difference.
- :func:`similarity`: their weighted mean, plus an optional learned metric
  (:func:`load_learned_metric`: a ``"module:function"`` callable or a local transformers
  vision model directory, cosine similarity of pooled features clipped to [0, 1]).

Images are ``(H, W, 3)`` uint8 arrays of the same shape.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import ndimage

_C1 = 0.01**2
_C2 = 0.03**2
#: A step edge of contrast c (in [0, 1]) gives a Sobel magnitude of 4c; this keeps edges of contrast >= 0.1.
EDGE_THRESHOLD = 0.4
#: Weight floor of variance pooling: flat regions count, but far less than edges (variance ~0.01-0.25).
VARIANCE_FLOOR = 1e-3
_LUMA = np.array([0.299, 0.587, 0.114])


def _float(img: np.ndarray) -> np.ndarray:
    a = np.asarray(img)
    if a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"expected an (H, W, 3) image, got shape {a.shape}")
    return a.astype(np.float64) / 255.0


def _check(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    fa, fb = _float(a), _float(b)
    if fa.shape != fb.shape:
        raise ValueError(f"images differ in shape: {fa.shape} vs {fb.shape}")
    return fa, fb


def ssim(a: np.ndarray, b: np.ndarray, mode: str = "rgb", sigma: float = 1.5, pooling: str = "variance") -> float:
    """SSIM of two images, per channel (``mode="rgb"``) or on luminance (``"gray"``), in [0, 1].

    ``pooling="mean"`` averages the SSIM map (the textbook score). ``"variance"`` (default)
    weights each pixel by the local variance of both images plus a small floor, so the
    score is about the places where either image has structure: with plain mean pooling,
    the flat background that fills most of an icon makes a blank canvas score high.
    """
    if pooling not in ("mean", "variance"):
        raise ValueError(f"ssim pooling must be 'mean' or 'variance', got {pooling!r}")
    fa, fb = _check(a, b)
    if mode == "gray":
        chans = [(fa @ _LUMA, fb @ _LUMA)]
    elif mode == "rgb":
        chans = [(fa[..., i], fb[..., i]) for i in range(3)]
    else:
        raise ValueError(f"ssim mode must be 'rgb' or 'gray', got {mode!r}")
    values = []
    for x, y in chans:
        def g(z):
            return ndimage.gaussian_filter(z, sigma, mode="reflect", truncate=3.5)
        mx, my = g(x), g(y)
        vx, vy, cov = g(x * x) - mx * mx, g(y * y) - my * my, g(x * y) - mx * my
        num = (2 * mx * my + _C1) * (2 * cov + _C2)
        den = (mx * mx + my * my + _C1) * (vx + vy + _C2)
        smap = num / den
        if pooling == "mean":
            values.append(float(np.mean(smap)))
        else:
            w = np.maximum(vx, 0.0) + np.maximum(vy, 0.0) + VARIANCE_FLOOR
            values.append(float(np.sum(w * smap) / np.sum(w)))
    return float(min(1.0, max(0.0, float(np.mean(values)))))


def edge_map(img: np.ndarray, threshold: float = EDGE_THRESHOLD) -> np.ndarray:
    """Boolean Sobel edge map (largest gradient magnitude over the RGB channels)."""
    f = _float(img)
    mag = np.zeros(f.shape[:2])
    for i in range(3):
        ch = f[..., i]
        mag = np.maximum(mag, np.hypot(ndimage.sobel(ch, axis=0, mode="nearest"),
                                       ndimage.sobel(ch, axis=1, mode="nearest")))
    return mag > threshold


def edge_similarity(a: np.ndarray, b: np.ndarray, tolerance: int = 1) -> float:
    """F1 of the two edge maps, an edge pixel counting as matched within ``tolerance`` pixels."""
    _check(a, b)
    ea, eb = edge_map(a), edge_map(b)
    na, nb = int(ea.sum()), int(eb.sum())
    if na == 0 and nb == 0:
        return 1.0
    if na == 0 or nb == 0:
        return 0.0
    if tolerance > 0:
        st = np.ones((2 * tolerance + 1, 2 * tolerance + 1), dtype=bool)
        da, db = ndimage.binary_dilation(ea, st), ndimage.binary_dilation(eb, st)
    else:
        da, db = ea, eb
    precision = float((ea & db).sum()) / na
    recall = float((eb & da).sum()) / nb
    if precision + recall == 0:
        return 0.0
    return float(2 * precision * recall / (precision + recall))


def pixel_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """1 - mean absolute difference over all pixels and channels."""
    fa, fb = _check(a, b)
    return float(1.0 - np.mean(np.abs(fa - fb)))


LearnedMetric = Callable[[np.ndarray, np.ndarray], float]


def similarity(a: np.ndarray, b: np.ndarray, ssim_weight: float = 0.4, edge_weight: float = 0.3,
               pixel_weight: float = 0.3, learned: LearnedMetric | None = None, learned_weight: float = 0.0,
               ssim_mode: str = "rgb", ssim_pooling: str = "variance") -> dict[str, float]:
    """The weighted similarity of two images and its parts: ``{"score", "ssim", "edge", "pixel"[, "learned"]}``.

    ``score`` is the weighted mean of the parts (weights need not sum to 1; a zero weight
    skips that part's computation).
    """
    parts: dict[str, float] = {}
    weights = {"ssim": ssim_weight, "edge": edge_weight, "pixel": pixel_weight}
    if ssim_weight > 0:
        parts["ssim"] = ssim(a, b, ssim_mode, pooling=ssim_pooling)
    if edge_weight > 0:
        parts["edge"] = edge_similarity(a, b)
    if pixel_weight > 0:
        parts["pixel"] = pixel_similarity(a, b)
    if learned is not None and learned_weight > 0:
        weights["learned"] = learned_weight
        v = float(learned(a, b))
        parts["learned"] = min(1.0, max(0.0, v)) if math.isfinite(v) else 0.0
    total = sum(weights[k] for k in parts)
    score = sum(weights[k] * v for k, v in parts.items()) / total if total > 0 else 0.0
    return {"score": float(min(1.0, max(0.0, score))), **parts}


# ------------------------------------------------------------------------- learned metrics


class TransformersMetric:
    """Cosine similarity of pooled features from a local transformers vision model, clipped to [0, 1].

    Uses ``pooler_output`` when the model has one, else the mean of ``last_hidden_state``.
    Embeddings of recently seen images are cached (the target recurs every turn).
    """

    def __init__(self, path: str, device: str = "cpu"):
        import torch
        from transformers import AutoImageProcessor, AutoModel

        self.torch = torch
        self.processor = AutoImageProcessor.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path).to(device).eval()
        self.device = device
        self._cache: dict[str, np.ndarray] = {}

    def embed(self, img: np.ndarray) -> np.ndarray:
        key = hashlib.sha1(np.ascontiguousarray(img).tobytes() + str(img.shape).encode()).hexdigest()
        if key in self._cache:
            return self._cache[key]
        with self.torch.no_grad():
            inputs = self.processor(images=[np.asarray(img)], return_tensors="pt").to(self.device)
            out = self.model(**inputs)
            pooled = getattr(out, "pooler_output", None)
            if pooled is None:
                pooled = out.last_hidden_state.mean(dim=1)
            vec = pooled[0].float().cpu().numpy().reshape(-1)
        if len(self._cache) >= 8:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = vec
        return vec

    def __call__(self, a: np.ndarray, b: np.ndarray) -> float:
        if np.array_equal(a, b):
            return 1.0
        va, vb = self.embed(a), self.embed(b)
        denom = float(np.linalg.norm(va) * np.linalg.norm(vb))
        if denom == 0.0 or not math.isfinite(denom):
            return 0.0
        return float(min(1.0, max(0.0, float(va @ vb) / denom)))


def load_learned_metric(spec: str) -> Any:
    """A learned metric from ``spec``: a local transformers model directory, or ``"module:function"``.

    Raises ValueError with the reason when neither works.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"learned_metric must be a model directory or 'module:function', got {spec!r}")
    if os.path.isdir(spec):
        try:
            return TransformersMetric(spec)
        except Exception as e:
            raise ValueError(f"learned_metric {spec!r}: cannot load a transformers vision model "
                             f"(AutoModel + AutoImageProcessor): {type(e).__name__}: {e}") from e
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"learned_metric {spec!r} is neither an existing directory nor 'module:function'")
    try:
        fn = importlib.import_module(module)
        for part in attr.split("."):
            fn = getattr(fn, part)
    except Exception as e:
        raise ValueError(f"learned_metric {spec!r}: cannot import it: {type(e).__name__}: {e}") from e
    if not callable(fn):
        raise ValueError(f"learned_metric {spec!r} is not callable")
    return fn
