"""Run by tests/train/test_fsdp.py, as one process or under ``torchrun``: train a few steps on
the same batches and write each step's metrics and the final full weights (rank 0).

Every rank plays the *whole* batch with its replica (a world of one for ``produce``), so the
sharded update sees the same data as the single-process one; the sharded rollouts themselves
are exercised by the CLI run in the test.

    python tests/train/fsdp_check.py OUT STRATEGY STEPS [overrides...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from vagen.config import load_config
from vagen.train import distributed as D
from vagen.train.rl import RLTrainer


def main(out: str, strategy: str, steps: int, overrides: list[str]) -> None:
    cfg = load_config("train/frozenlake", overrides + [f"trainer.strategy={strategy}",
                                                       f"trainer.out_dir={out}/run", f"trainer.steps={steps}"])
    tr = RLTrainer(cfg)
    produce = tr.produce

    def whole_batch(step, policy=None, slot=0):
        real, tr.dist = tr.dist, D.DistContext()
        try:
            return produce(step, policy, slot)
        finally:
            tr.dist = real

    tr.produce = whole_batch
    init = {k: v.detach().clone() for k, v in tr.rollout_policy.model.state_dict().items()}  # full weights
    rows = []
    for _ in range(steps):
        tr.step += 1
        m = tr.train_step()
        rows.append({k: v for k, v in m.items() if isinstance(v, float) and not k.startswith(("time/", "sync/"))})
    state = D.full_state_dict(tr.actor) if strategy == "fsdp2" else tr.actor.state_dict()
    if tr.dist.is_main:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "metrics.json").write_text(json.dumps({"world": tr.dist.world, "steps": rows}))
        torch.save({k: v.detach().cpu() for k, v in state.items()}, Path(out) / "weights.pt")
        torch.save(init, Path(out) / "init.pt")
    tr.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:])
