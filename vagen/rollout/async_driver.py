"""Asynchronous rollouts: a producer thread plays the next batches while the trainer updates.

The trainer consumes one batch per step (step ``s`` = 1, 2, ...). Workers play the batch
for step ``s`` with ``produce(s, slot)`` once the staleness bound allows it and hand it over
through a buffer. The bound is AReaL's capacity rule (Fu et al. 2025, "AReaL: A Large-Scale
Asynchronous Reinforcement Learning System for Language Reasoning", §5.1: at most
``(eta + i + 1) x B`` trajectories may have been started when the trainer holds version
``i``), applied per batch: the batch for step ``s`` starts only when
``completed_steps >= s - 1 - eta``. There are ``eta + 1`` workers, each with its own envs
(``slot``), so up to ``eta + 1`` batches are in flight at once: ``eta = 0`` is synchronous
training (the batch for step ``s`` is played with the weights after step ``s - 1``, exactly
as the sync loop does); ``eta = 1`` plays batches ``s + 1`` (and ``s + 2``) while the trainer
works on ``s``, which both hides the update and keeps twice the envs busy — what pays off
when env latency dominates (GUI sandboxes).

Before each batch its worker pushes the trainer's latest weights to the rollout policy
(``WeightSync.push``, timed). With several batches in flight, a push lands between two
generate calls of the others (never inside one: the push holds the policy's generation
lock), so a trajectory may finish under newer weights — a partial rollout; every turn
record carries the version that generated it, and no version is older than the batch's
start version, which the bound admitted. The trainer reads a batch's staleness (its own
version minus the batch's start version) from the ``Batch``.

``pause()`` (a context manager) waits for the batches in flight and holds the workers, so
the trainer can use the envs for validation. An exception in a worker stops the workers
and is raised in the trainer's ``get`` for any batch not played before it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Batch:
    step: int
    version: int                       # the rollout policy's version while this batch was played
    trajs: list
    metrics: dict[str, float]
    started: float = 0.0
    finished: float = 0.0
    sync_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class AsyncRollouts:
    def __init__(self, produce: Callable[[int, int], tuple[list, dict[str, float]]], sync, version: Callable[[], int],
                 eta: int = 1, first_step: int = 1, last_step: int | None = None) -> None:
        if eta < 0:
            raise ValueError(f"max_staleness (eta) must be >= 0, got {eta}")
        self.produce, self.sync, self.version, self.eta = produce, sync, version, int(eta)
        self.last_step = last_step
        self._cv = threading.Condition()
        self._sync_lock = threading.Lock()
        self._completed = first_step - 1     # steps the trainer has finished
        self._next = first_step              # the next batch a worker plays
        self._buffer: dict[int, Batch] = {}
        self._in_flight = 0
        self._paused = 0
        self._stop = False
        self._error: BaseException | None = None
        self.wait_s = 0.0                    # trainer time blocked in get()
        # eta + 1 workers: as many batches as the bound lets be in flight at once, each on its
        # own set of envs (``slot``); eta = 0 is one worker, i.e. the synchronous loop.
        self._threads = [threading.Thread(target=self._loop, args=(slot,), name=f"vagen-async-rollouts-{slot}",
                                          daemon=True) for slot in range(self.eta + 1)]
        for t in self._threads:
            t.start()

    # -- producer -----------------------------------------------------------------------------
    def _may_start(self) -> bool:
        if self._stop or self._error is not None:
            return True
        if self._paused or (self.last_step is not None and self._next > self.last_step):
            return False
        return self._next - 1 - self.eta <= self._completed

    def _push_latest(self) -> tuple[int, float]:
        """Bring the rollout policy to the trainer's latest version (if it is behind)."""
        with self._sync_lock:
            version = self.version()
            if self.sync.rollout_policy.policy_version == version and self.sync.pushes:
                return version, 0.0
            return version, self.sync.push(version)

    def _loop(self, slot: int) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(self._may_start)
                if self._stop or self._error is not None:
                    return
                step = self._next
                self._next += 1
                self._in_flight += 1
            try:
                t0 = time.perf_counter()
                version, sync_s = self._push_latest()
                trajs, metrics = self.produce(step, slot)
                batch = Batch(step, version, trajs, metrics, t0, time.perf_counter(), sync_s, {"slot": slot})
            except BaseException as e:  # noqa: BLE001 - handed to the trainer
                with self._cv:
                    self._error = e
                    self._in_flight -= 1
                    self._cv.notify_all()
                return
            with self._cv:
                self._buffer[step] = batch
                self._in_flight -= 1
                self._cv.notify_all()

    # -- trainer side ---------------------------------------------------------------------------
    def get(self, step: int, timeout: float | None = None) -> Batch:
        """The batch for ``step`` (blocks until it is played)."""
        t0 = time.perf_counter()
        with self._cv:
            ok = self._cv.wait_for(lambda: step in self._buffer or self._error is not None or self._stop, timeout)
            waited = time.perf_counter() - t0
            self.wait_s += waited
            if step not in self._buffer and self._error is not None:  # batches played before the error still count
                raise RuntimeError(f"the rollout producer failed: {type(self._error).__name__}: {self._error}") \
                    from self._error
            if not ok or step not in self._buffer:
                raise TimeoutError(f"no rollout batch for step {step} within {timeout} s")
            batch = self._buffer.pop(step)
        batch.extra["wait_s"] = waited
        return batch

    def completed(self, step: int) -> None:
        """The trainer finished ``step`` (its weights are now the next version)."""
        with self._cv:
            self._completed = max(self._completed, step)
            self._cv.notify_all()

    def buffered(self) -> int:
        with self._cv:
            return len(self._buffer)

    @contextlib.contextmanager
    def pause(self):
        """Hold the producer (after the batch in flight) for the duration of the block."""
        with self._cv:
            self._paused += 1
            self._cv.wait_for(lambda: self._in_flight == 0 or self._error is not None)
        try:
            yield
        finally:
            with self._cv:
                self._paused -= 1
                self._cv.notify_all()

    def close(self, timeout: float = 600.0) -> None:
        with self._cv:
            self._stop = True
            self._cv.notify_all()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))


__all__ = ["AsyncRollouts", "Batch"]
