"""PNG learning curves from a run's ``metrics.jsonl`` (``vagen plot RUN_DIR``)."""

from __future__ import annotations

from pathlib import Path

from vagen.train.metrics import read_metrics

PANELS = (
    ("success", ["success", "val/success_sampled", "val/success_greedy"]),
    ("return", ["return", "reward/env", "reward/format", "reward/world_model", "reward/penalty"]),
    ("loss", ["loss", "loss/policy", "loss/value"]),
    ("policy", ["actor/entropy", "actor/kl", "actor/clip_fraction", "actor/grad_norm"]),
    ("rollout", ["rollout/valid_action_rate", "rollout/format_ok_rate", "filter/kept_fraction"]),
    ("length", ["rollout/response_length", "rollout/turns"]),
)


def plot_run(run_dir: str | Path) -> list[Path]:
    """Write one PNG per panel (plus an overview) under ``run_dir/plots``; return the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_metrics(run_dir)
    out = Path(run_dir) / "plots"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    fig_all, axes = plt.subplots(2, 3, figsize=(15, 8))
    for ax_all, (name, keys) in zip(axes.flat, PANELS, strict=True):
        fig, ax = plt.subplots(figsize=(6, 4))
        for target in (ax, ax_all):
            for key in keys:
                pts = [(r["step"], r[key]) for r in rows if isinstance(r.get(key), (int, float))]
                if pts:
                    target.plot(*zip(*pts, strict=True), label=key, marker="." if len(pts) < 30 else None)
            target.set_title(name)
            target.set_xlabel("step")
            if target.lines:
                target.legend(fontsize=7)
        path = out / f"{name}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=80)
        plt.close(fig)
        written.append(path)
    fig_all.tight_layout()
    overview = out / "overview.png"
    fig_all.savefig(overview, dpi=70)
    plt.close(fig_all)
    return [overview, *written]
