"""Re-check every kept pointing step of a `vagen synth gui --backend html` output from the DOM:
replay each trajectory from its saved scene spec and ask Chromium which element a click at the
step's box centre (and a drag's drop point) reaches (`document.elementFromPoint`).

    .venv/bin/python benchmarks/synth_verify.py DIR
"""
import json
import sys
from pathlib import Path

from worldgen.actions import Action, apply_action, point_in
from worldgen.html.world import HtmlWorld
from worldgen.scene import Scene

out = Path(sys.argv[1])
rows = [json.loads(l) for l in (out / "samples.jsonl").read_text().splitlines()]
rej = [json.loads(l) for l in (out / "rejected.jsonl").read_text().splitlines() if json.loads(l).get("step") is not None]
by = {}
for r in rows + rej:
    by.setdefault(r["scene_id"], []).append(r)
checked = ok = 0
kinds = {}
with HtmlWorld() as w:
    for sid, steps in by.items():
        scene = Scene.from_json((out / "scenes" / f"{sid}.json").read_text())
        for r in sorted(steps, key=lambda x: x["step"]):
            a = Action.model_validate(r["action_spec"])
            if r["bbox"] and "reason" not in r and a.kind in ("click", "double_click", "right_click", "drag", "scroll"):
                (vid,) = w.vids_at(scene, [point_in(tuple(r["bbox"]))])
                good = vid == a.target or (a.kind == "scroll" and vid and vid.startswith(a.target.split(".")[0] + ".cell."))
                if r.get("to_bbox"):
                    good = good and w.vids_at(scene, [point_in(tuple(r["to_bbox"]))]) == [a.to]
                checked += 1; ok += good; kinds[a.kind] = kinds.get(a.kind, 0) + 1
            if a.kind not in ("done", "fail"):
                scene, _ = apply_action(scene, a)
print(json.dumps({"kept": len(rows), "pointing_checked": checked, "box_reaches_target": ok, "kinds": kinds}))
