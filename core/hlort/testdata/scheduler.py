"""Running many files: in-process, or in worker processes with a per-file timeout.

Workers are long-lived (one per job) and take files one at a time over a pipe; a worker that
exceeds the timeout, or dies (a crash, out of memory), is killed and replaced, and its file is
reported as failed. So one bad file never stops a corpus run.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable
from multiprocessing.connection import wait

from hlort.testdata.execution import FAIL, Outcome, run_file

Progress = Callable[[list[Outcome]], None]


def _worker(conn, platform: str) -> None:
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        path, relpath = task
        conn.send(run_file(path, relpath, platform))


class _Slot:
    def __init__(self, ctx, platform: str):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, platform), daemon=True)
        self.proc.start()
        child.close()
        self.task: tuple[str, str] | None = None
        self.started = 0.0

    def submit(self, task: tuple[str, str]) -> None:
        self.task = task
        self.started = time.monotonic()
        self.conn.send(task)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.join(5)
        self.conn.close()


def run_files(
    files: list[tuple[str, str]],
    platform: str = "interpreter",
    jobs: int = 1,
    timeout: float = 60.0,
    progress: Progress | None = None,
) -> list[Outcome]:
    """Outcomes of every case of ``files`` (``(path, relpath)`` pairs), in file order.
    ``jobs=0`` runs in this process (no timeout); otherwise ``jobs`` worker processes."""
    results: dict[int, list[Outcome]] = {}
    if jobs <= 0:
        for i, (path, relpath) in enumerate(files):
            results[i] = run_file(path, relpath, platform)
            if progress:
                progress(results[i])
        return [o for i in range(len(files)) for o in results[i]]
    methods = mp.get_all_start_methods()
    ctx = mp.get_context("fork" if "fork" in methods else "spawn")
    pending = list(enumerate(files))
    pending.reverse()
    slots = [_Slot(ctx, platform) for _ in range(min(jobs, max(1, len(files))))]
    index_of: dict[int, int] = {}
    try:
        while pending or any(s.task is not None for s in slots):
            for k, slot in enumerate(slots):
                if slot.task is None and pending:
                    i, task = pending.pop()
                    index_of[k] = i
                    slot.submit(task)
            busy = [s.conn for s in slots if s.task is not None]
            ready = wait(busy, timeout=0.2)
            now = time.monotonic()
            for k, slot in enumerate(slots):
                if slot.task is None:
                    continue
                i = index_of[k]
                outcome: list[Outcome] | None = None
                if slot.conn in ready:
                    try:
                        outcome = slot.conn.recv()
                    except (EOFError, OSError):
                        code = slot.proc.exitcode
                        outcome = [_failed(slot.task, f"worker died (exit code {code})")]
                        slots[k] = _replace(ctx, slot, platform)
                elif now - slot.started > timeout:
                    outcome = [_failed(slot.task, f"timeout after {timeout:g} s")]
                    slots[k] = _replace(ctx, slot, platform)
                if outcome is not None:
                    results[i] = outcome
                    slots[k].task = None
                    if progress:
                        progress(outcome)
    finally:
        for slot in slots:
            try:
                slot.conn.send(None)
            except OSError:
                pass
            slot.proc.join(1)
            if slot.proc.is_alive():
                slot.kill()
    return [o for i in range(len(files)) for o in results[i]]


def _replace(ctx, slot: _Slot, platform: str) -> _Slot:
    slot.kill()
    return _Slot(ctx, platform)


def _failed(task: tuple[str, str], message: str) -> Outcome:
    from hlort.testdata.cases import op_name

    return Outcome(task[1], task[1], op_name(task[1]), FAIL, message)
