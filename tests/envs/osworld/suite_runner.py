"""Plays osworld-lite tasks with the stored oracle, a no-op (DONE at once: a claim of success
with nothing done) and a FAIL policy (shared by the local `desktop` and the `docker` tests). A
WAITing no-op is played through `vagen eval osworld` (tests/eval/test_eval_osworld.py)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from envs.osworld.env import OSWorldEnv
from envs.osworld.tasks import load_suite

TASK_IDS = [t.id for t in load_suite("osworld-lite")]
INFEASIBLE = {t.id for t in load_suite("osworld-lite") if not t.feasible}


def play(env: OSWorldEnv, task_id: str, actions: list[str] | None = None) -> tuple[float, dict]:
    """One episode: the oracle's actions (default) or the given ones; returns (return, last info)."""
    _, info = env.reset(options={"task_id": task_id})
    if actions is None:
        actions = env.solve_state(info["state"])
    total = 0.0
    for a in actions:
        _, reward, terminated, truncated, info = env.step(a)
        total += reward
        if terminated or truncated:
            return total, info
    raise AssertionError(f"{task_id}: the episode did not end after {actions}")


def _play_shard(env: OSWorldEnv, noop_env: OSWorldEnv, task_ids: list[str],
                fail_ids: set[str]) -> tuple[dict[str, dict[str, float]], list[str]]:
    scores: dict[str, dict[str, float]] = {}
    failures = []
    for tid in task_ids:
        oracle, info = play(env, tid)
        noop, _ = play(noop_env, tid, ["DONE"])  # claims success having done nothing
        scores[tid] = {"oracle": oracle, "noop": noop}
        if oracle != 1.0 or not info["success"]:
            failures.append(f"{tid}: oracle scored {oracle} ({info['feedback']})")
        if noop != 0.0:
            failures.append(f"{tid}: no-op scored {noop}")
        if tid in fail_ids:
            fail, _ = play(noop_env, tid, ["FAIL"])
            scores[tid]["fail"] = fail
            if fail != (1.0 if tid in INFEASIBLE else 0.0):
                failures.append(f"{tid}: FAIL scored {fail}")
    return scores, failures


def check_suite(pairs: list[tuple[OSWorldEnv, OSWorldEnv]], fail_feasible: int = 3) -> dict[str, dict[str, float]]:
    """Oracle -> 1.0 on every task; no-op -> 0.0 on every task; FAIL -> 1.0 exactly on the
    infeasible ones (checked on all of those and the first few feasible ones).

    ``pairs`` are (env, no-op env) pairs, each on its own sandbox (their pool holds one sandbox
    per pair): the tasks are dealt round-robin and the pairs play their shares side by side, so
    every task is still played on a sandbox that no other task touches meanwhile."""
    fail_ids = INFEASIBLE | set([t for t in TASK_IDS if t not in INFEASIBLE][:fail_feasible])
    shards = [TASK_IDS[i::len(pairs)] for i in range(len(pairs))]
    with ThreadPoolExecutor(len(pairs)) as ex:
        results = list(ex.map(lambda a: _play_shard(*a[0], a[1], fail_ids), zip(pairs, shards, strict=True)))
    scores = {tid: s for part, _ in results for tid, s in part.items()}
    failures = [f for _, part in results for f in part]
    assert not failures, "\n".join(failures)
    return scores
