"""Score a finished OSWorld episode the way OSWorld's ``DesktopEnv.evaluate`` does.

1. run ``postconfig`` (e.g. save the document, restart the browser so it flushes its profile);
2. infeasible tasks (``func == "infeasible"``) score 1 only if the agent's last action was
   ``FAIL``; a feasible task whose last action was ``FAIL`` scores 0;
3. for each ``func``: result getter -> expected getter (if any) -> metric(result, expected,
   **options); ``conj: and`` returns 0 at the first 0 else the mean, ``conj: or`` returns 1 at
   the first 1 else the max.

:class:`EvalError` is an evaluation that could not run (a getter or metric misconfigured
by the task, a postconfig step failing): the env reports it as an infrastructure error,
never as the agent's 0. A file the evaluator reads that the agent made a symbolic link out of
the sandbox's folders is read as missing (scored, noted in the detail), not an evaluation
that could not run: otherwise an agent could turn any failure into an unscored infra error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .controller import SetupError, VMController
from .getters import GetterError, run_getter
from .tasks import Task


class EvalError(RuntimeError):
    """The evaluation itself failed (not the agent's fault)."""


@dataclass
class EvalResult:
    score: float
    parts: list[float] = field(default_factory=list)
    detail: str = ""


def evaluate(task: Task, vm: VMController, last_action: str | None, work_dir: Path) -> EvalResult:
    result = _evaluate(task, vm, last_action, work_dir)
    refused = vm.refused_reads
    if refused:  # the agent pointed a file the evaluator reads out of the sandbox: read as missing
        note = (f"read as missing: {', '.join(refused)} (a symbolic link leading outside the sandbox's "
                "folders)")
        result.detail = f"{result.detail}; {note}" if result.detail else note
    return result


def _evaluate(task: Task, vm: VMController, last_action: str | None, work_dir: Path) -> EvalResult:
    from .metrics import METRICS, MetricError

    ev = task.evaluator
    if ev.postconfig:
        try:
            vm.run_steps(ev.postconfig, where="evaluator.postconfig")
        except SetupError as e:
            raise EvalError(f"task {task.id}: {e}") from e
    if ev.infeasible:
        ok = last_action == "FAIL"
        return EvalResult(1.0 if ok else 0.0, [], "infeasible task: " + ("agent said FAIL" if ok else "agent did not FAIL"))
    if last_action == "FAIL":
        return EvalResult(0.0, [], "feasible task ended with FAIL")
    work_dir.mkdir(parents=True, exist_ok=True)
    parts: list[float] = []
    for i, func in enumerate(ev.funcs):
        metric = METRICS.get(func)
        if metric is None:
            raise EvalError(f"task {task.id}: metric {func!r} is not implemented here")
        try:
            result = run_getter(vm, ev.results[i].as_dict(), work_dir) if ev.results[i] else None
            kwargs: dict[str, Any] = dict(ev.options[i]) if i < len(ev.options) else {}
            if ev.expected[i] is not None:
                expected = run_getter(vm, ev.expected[i].as_dict(), work_dir)
                score = float(metric(result, expected, **kwargs))
            else:
                score = float(metric(result, **kwargs))
        except (GetterError, MetricError, KeyError, TypeError) as e:
            raise EvalError(f"task {task.id}: evaluating {func!r}: {type(e).__name__}: {e}") from e
        parts.append(score)
        if ev.conj == "and" and score == 0.0:
            return EvalResult(0.0, parts, f"{func} scored 0 (result: {_brief(result)})")
        if ev.conj == "or" and score == 1.0:
            return EvalResult(1.0, parts, f"{func} scored 1")
    total = sum(parts) / len(parts) if ev.conj == "and" else max(parts)
    return EvalResult(total, parts, "")


def _brief(value: Any, limit: int = 160) -> str:
    """What a getter returned, short enough for the episode's detail (why a task scored 0)."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
