"""Re-check every kept pointing step of a `vagen synth gui --backend html` output from the DOM:
replay each trajectory from its saved scene spec and ask Chromium which element a click at the
step's box centre (and a drag's drop point) reaches (``document.elementFromPoint``).

    .venv/bin/python benchmarks/synth_verify.py DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from worldgen.actions import Action, apply_action, point_in
from worldgen.html.world import HtmlWorld
from worldgen.scene import Scene

POINTING = ("click", "double_click", "right_click", "drag", "scroll")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def verify(out: Path) -> dict:
    kept = _rows(out / "samples.jsonl")
    rejected = [r for r in _rows(out / "rejected.jsonl") if r.get("step") is not None]
    by_scene: dict[str, list[dict]] = {}
    for r in kept + rejected:
        by_scene.setdefault(r["scene_id"], []).append(r)
    checked = good = 0
    kinds: dict[str, int] = {}
    with HtmlWorld() as world:
        for sid, steps in by_scene.items():
            scene = Scene.from_json((out / "scenes" / f"{sid}.json").read_text())
            for r in sorted(steps, key=lambda x: x["step"]):
                a = Action.model_validate(r["action_spec"])
                if r["bbox"] and "reason" not in r and a.kind in POINTING:
                    (vid,) = world.vids_at(scene, [point_in(tuple(r["bbox"]))])
                    ok = vid == a.target or (a.kind == "scroll" and bool(vid)
                                             and vid.startswith(a.target.split(".")[0] + ".cell."))
                    if r.get("to_bbox"):
                        ok = ok and world.vids_at(scene, [point_in(tuple(r["to_bbox"]))]) == [a.to]
                    checked += 1
                    good += ok
                    kinds[a.kind] = kinds.get(a.kind, 0) + 1
                if a.kind not in ("done", "fail"):
                    scene, _ = apply_action(scene, a)
    return {"kept": len(kept), "pointing_checked": checked, "box_reaches_target": good, "kinds": kinds}


if __name__ == "__main__":
    print(json.dumps(verify(Path(sys.argv[1]))))
