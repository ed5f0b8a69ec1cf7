"""A static HTML page to browse a synthesized dataset: per trajectory, every step's
screenshot with the grounded box drawn over it, the action, the intended consequence and —
for rejected steps — the filter's reason. No scripts, no external resources; all text is
escaped. ``write_viewer(DIR)`` writes ``DIR/index.html``."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

SCALE = 0.4  # thumbnails at 40 % of the screen size


def write_viewer(out: str | Path, max_trajectories: int = 200) -> Path:
    out = Path(out)
    rows = []
    for name, kept in (("samples.jsonl", True), ("rejected.jsonl", False)):
        path = out / name
        if path.exists():
            for line in path.read_text().splitlines():
                r = json.loads(line)
                r["_kept"] = kept
                rows.append(r)
    by_scene: dict[str, list[dict]] = {}
    plans = [r for r in rows if r.get("step") is None]  # a model's task/plan rejected before any frame
    for r in rows:
        if r.get("step") is not None:
            by_scene.setdefault(r["scene_id"], []).append(r)
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>vagen synth</title><style>",
             "body{font-family:sans-serif;margin:16px;background:#fafafa} .traj{margin:18px 0;padding:10px;",
             "background:#fff;border:1px solid #ddd;border-radius:8px} .steps{display:flex;gap:12px;overflow-x:auto}",
             ".step{flex:none;font-size:12px;max-width:600px} .shot{position:relative;display:inline-block}",
             ".shot img{display:block;border:1px solid #ccc} .box{position:absolute;border:2px solid #e0245e}",
             ".rej{color:#b00020;font-weight:bold} .ok{color:#137333} code{background:#f1f3f4;padding:1px 3px}",
             "</style></head><body>",
             f"<h1>Synthetic GUI trajectories</h1><pre>{escape(json.dumps(report, indent=1))}</pre>"]
    for sid, steps in list(by_scene.items())[:max_trajectories]:
        steps.sort(key=lambda r: r["step"])
        first = steps[0]
        parts.append(f"<div class='traj'><h3>{escape(sid)} &middot; {escape(first['platform'])} &middot; "
                     f"{escape(first['instruction'])}</h3><div class='steps'>")
        for r in steps:
            box = ""
            width = int(r.get("screen", [1280])[0] * SCALE)
            if r.get("bbox"):
                x, y, w, h = (v * SCALE for v in r["bbox"])
                box = f"<div class='box' style='left:{x:.0f}px;top:{y:.0f}px;width:{w:.0f}px;height:{h:.0f}px'></div>"
            status = ("<span class='ok'>kept</span>" if r["_kept"] else
                      f"<span class='rej'>rejected: {escape(r.get('reason', ''))}</span>")
            parts.append(f"<div class='step'><div>step {r['step']} &middot; {status}</div>"
                         f"<div class='shot'><img src='{escape(r['screenshot'])}' style='width:{width}px'>{box}</div>"
                         f"<div><code>{escape(r['action'])}</code></div><div>&rarr; {escape(r['consequence'])}</div>"
                         "</div>")
        parts.append("</div></div>")
    if plans:
        parts.append("<h2>Plans rejected before rendering</h2><ul>")
        parts += [f"<li>{escape(r['scene_id'])}: <span class='rej'>{escape(r['reason'])}</span> "
                  f"{escape(r.get('detail', ''))}</li>" for r in plans[:max_trajectories]]
        parts.append("</ul>")
    parts.append("</body></html>")
    page = out / "index.html"
    page.write_text("".join(parts))
    return page


__all__ = ["write_viewer"]
