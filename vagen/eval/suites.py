"""Eval suites: which episodes a run must play (its manifest).

A suite is a registered env name. ``osworld`` plays tasks (the bundled ``osworld-lite`` or
a folder of OSWorld task files), one episode per task (per seed when seeds are given);
``miniwob`` plays every task page of the package (or ``env.params.tasks``; ``--domains``
picks tasks) at each seed (default 0); ``web`` plays every registered custom web task (or
``env.params.tasks``) at each seed (default 0, 1, 2); ``replay`` plays every expert trajectory of
``env.params.data`` once, without patches (``patch_budget`` 0): UI-S1's SOP metric, score =
progress (steps matched before the first mismatch / steps); envs with ``eval_splits`` (navigation's
VAGEN splits, primitive_skill's tasks) play each split at each seed (default 0-99; ``--domains`` picks
splits; ``reset(options={"split": ...})``); every other env plays one episode per seed. The manifest is fixed before the first
episode and written to ``run.json``: it is the denominator of every rate, so an episode
that crashed counts as an error, never as missing.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

DEFAULT_SEEDS = 100
#: Task ids of split suites are ``"<split>/seed-<n>"``.
SPLIT_SEP = "/seed-"


@dataclass(frozen=True)
class Episode:
    suite: str
    task_id: str
    domain: str
    seed: int | None = None

    @property
    def key(self) -> str:
        return f"{self.suite}/{self.domain}/{self.task_id}" + ("" if self.seed is None else f"@{self.seed}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def reset_args(self) -> dict[str, Any]:
        """Keyword arguments for ``env.reset``."""
        if self.task_id.startswith("seed-"):
            return {"seed": self.seed}
        if SPLIT_SEP in self.task_id:  # a seeded episode of an env's eval split
            return {"seed": self.seed, "options": {"split": self.task_id.split(SPLIT_SEP, 1)[0]}}
        return {"seed": self.seed or 0, "options": {"task_id": self.task_id}}


def parse_seeds(items: list[str] | None) -> list[int] | None:
    """``["0-9", "42"]`` or ``["0", "1"]`` -> sorted unique ints (None when not given)."""
    if not items:
        return None
    out: set[int] = set()
    for item in items:
        for part in str(item).replace(",", " ").split():
            m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
            if not m:
                raise ValueError(f"bad seed {part!r}; use integers or ranges like 0-99")
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            if hi < lo:
                raise ValueError(f"bad seed range {part!r}")
            out.update(range(lo, hi + 1))
    return sorted(out)


def manifest(suite: str, env_params: dict[str, Any], seeds: list[int] | None = None, limit: int | None = None,
             domains: list[str] | None = None) -> list[Episode]:
    """The episodes of ``suite`` in a stable order (task suites by domain/id, seeded suites by seed)."""
    import envs

    env_cls = envs.env_class(suite)  # raises with the registered names
    if suite == "osworld":
        from envs.osworld.tasks import load_suite

        tasks = load_suite(env_params.get("tasks", "osworld-lite"), domains)
        if env_params.get("task_ids"):
            wanted = set(env_params["task_ids"])
            tasks = [t for t in tasks if t.id in wanted]
        eps = [Episode(suite, t.id, t.domain or "other", s) for t in tasks for s in (seeds or [None])]
    elif suite == "miniwob":
        from envs.web.env import miniwob_tasks

        names = env_params.get("tasks") or miniwob_tasks()
        if domains:
            names = [n for n in names if n in domains]
        eps = [Episode(suite, n, n, s) for n in names for s in (seeds or [0])]
    elif suite == "web" and not env_params.get("start_url"):
        from envs.web.tasks import list_web_tasks

        names = env_params.get("tasks") or ([env_params["task"]] if env_params.get("task") else list(list_web_tasks()))
        if domains:
            names = [n for n in names if n in domains]
        eps = [Episode(suite, n, n, s) for n in names for s in (seeds or [0, 1, 2])]
    elif suite == "replay":  # one episode per expert trajectory; the score is SOP progress
        from envs.replay.data import load_trajectories

        if not env_params.get("data"):
            raise ValueError("suite replay needs env.params.data=DIR (vagen synth or vagen eval output)")
        trajs = load_trajectories(env_params["data"], env_params.get("complete_only", True),
                                  env_params.get("success_only", True), env_params.get("split", "all"),
                                  env_params.get("test_fraction", 0.2))
        eps = [Episode(suite, t.id, t.domain, None) for t in trajs if not domains or t.domain in domains]
    elif getattr(env_cls, "eval_splits", ()):  # navigation's VAGEN splits, primitive_skill's tasks
        splits = list(env_cls.eval_splits)
        if domains:
            unknown = sorted(set(domains) - set(splits))
            if unknown:
                raise ValueError(f"suite {suite!r} has no split {', '.join(unknown)}; splits: {', '.join(splits)}")
            splits = [s for s in splits if s in domains]
        if seeds is None:
            per_split = -(-limit // len(splits)) if limit else DEFAULT_SEEDS
            seeds = list(range(per_split))
        # Seed-major order, so --limit N plays every split about equally.
        eps = [Episode(suite, f"{sp}{SPLIT_SEP}{s}", sp, s) for s in seeds for sp in splits]
    else:
        if domains:
            raise ValueError(f"suite {suite!r} has no domains; --domains applies to task suites (osworld)")
        chosen = seeds if seeds is not None else list(range(limit or DEFAULT_SEEDS))
        eps = [Episode(suite, f"seed-{s}", getattr(env_cls, "name", suite) or suite, s) for s in chosen]
    if limit is not None:
        eps = eps[:limit]
    if not eps:
        raise ValueError(f"suite {suite!r}: no episodes selected")
    return eps
