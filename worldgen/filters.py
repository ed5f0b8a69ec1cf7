"""Transition filters on a (frame, next frame, target box) triple — pixels only, so they judge
any world model's output (the diffusion one's above all; the HTML one is also checked
against its DOM in ``worldgen.synth``).

* :func:`frame_ok` — not (nearly) uniform, the expected size;
* :func:`change_mask` — where the two frames differ (OpenCV absdiff on grey, threshold,
  morphological opening against speckle noise);
* :func:`change_localized` — most changed pixels lie near the target (its box grown by a
  margin): an edit that repaints the whole screen did not do "what the action does";
* :func:`ssim_outside` — structural similarity (Wang et al. 2004) of the two frames with the
  target's neighbourhood masked out: the rest of the screen must be preserved.
"""

from __future__ import annotations

import numpy as np

Box = tuple[int, int, int, int]


def _grey(img) -> np.ndarray:
    a = np.asarray(img.convert("L") if hasattr(img, "convert") else img, dtype=np.float32)
    return a if a.ndim == 2 else a.mean(axis=2)


def frame_ok(img, size: tuple[int, int] | None = None, min_std: float = 2.0) -> bool:
    a = np.asarray(img.convert("RGB"), dtype=np.float32)
    if size is not None and (a.shape[1], a.shape[0]) != tuple(size):
        return False
    return float(a.std()) > min_std


def change_mask(a, b, threshold: int = 24) -> np.ndarray:
    import cv2

    ga, gb = _grey(a).astype(np.uint8), _grey(b).astype(np.uint8)
    diff = cv2.absdiff(ga, gb)
    _, mask = cv2.threshold(diff, threshold, 255, cv2.THRESH_BINARY)
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    return mask > 0


def mask_bbox(mask: np.ndarray) -> Box | None:
    ys, xs = np.nonzero(mask)
    if not len(xs):
        return None
    return int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)


def grow(box: Box, margin: int, width: int, height: int) -> Box:
    x, y, w, h = (int(round(v)) for v in box)
    x0, y0 = max(0, x - margin), max(0, y - margin)
    x1, y1 = min(width, x + w + margin), min(height, y + h + margin)
    return x0, y0, x1 - x0, y1 - y0


def change_localized(mask: np.ndarray, box: Box | None, margin: int = 120, min_inside: float = 0.5) -> bool:
    """At least ``min_inside`` of the changed pixels within ``margin`` px of the target box
    (no box: the action has no target, any change is allowed)."""
    total = int(mask.sum())
    if total == 0 or box is None:
        return True
    x, y, w, h = grow(box, margin, mask.shape[1], mask.shape[0])
    inside = int(mask[y:y + h, x:x + w].sum())
    return inside / total >= min_inside


def ssim_outside(a, b, box: Box | None, margin: int = 120) -> float:
    """Mean SSIM (7x7 windows, grey) over the pixels outside the grown target box."""
    from scipy.ndimage import uniform_filter

    x, y = _grey(a), _grey(b)
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    mx, my = uniform_filter(x, 7), uniform_filter(y, 7)
    vx = uniform_filter(x * x, 7) - mx * mx
    vy = uniform_filter(y * y, 7) - my * my
    cxy = uniform_filter(x * y, 7) - mx * my
    ssim = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    keep = np.ones_like(ssim, dtype=bool)
    if box is not None:
        gx, gy, gw, gh = grow(box, margin, ssim.shape[1], ssim.shape[0])
        keep[gy:gy + gh, gx:gx + gw] = False
    return float(ssim[keep].mean()) if keep.any() else 1.0


__all__ = ["change_localized", "change_mask", "frame_ok", "grow", "mask_bbox", "ssim_outside"]
