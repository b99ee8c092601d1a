"""Runs tests/distributed/rank_program.py under ``mpirun -n N`` and reads what each rank found.

Tests that need MPI take the ``mpi_ranks`` fixture; without mpi4py or mpirun they skip with the
one-line reason (``make test`` installs the ``[mpi]`` extra, so CI runs them). Every launch is
bounded by a subprocess timeout, and the checks themselves by collective timeouts, so a broken
exchange fails a test instead of hanging the suite.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from hlort.distributed.process_env import mpi_available

PROGRAM = Path(__file__).with_name("rank_program.py")
LAUNCH_TIMEOUT_S = 180  # a whole mpirun job on a loaded 2-core machine; checks bound themselves


class RankRun:
    def __init__(self, ranks: int, reports: list[dict], output: str):
        self.ranks = ranks
        self.reports = reports
        self.output = output

    def check(self, name: str) -> list[dict]:
        """Each rank's findings for check ``name``; fails the test on a rank's error."""
        found = [report[name] for report in self.reports]
        for rank, item in enumerate(found):
            assert "error" not in item, f"rank {rank}: {item['error']}\n{item.get('traceback')}"
        return found


@pytest.fixture(scope="session")
def mpi_ranks(tmp_path_factory):
    reason = mpi_available()
    if reason is not None:
        pytest.skip(reason)
    from hlort.distributed.mpirun import mpirun_command, mpirun_environment

    runs: dict[tuple, RankRun] = {}

    def run(ranks: int, *checks: str, env: dict[str, str] | None = None) -> RankRun:
        key = (ranks, checks, tuple(sorted((env or {}).items())))
        if key in runs:
            return runs[key]
        out = tmp_path_factory.mktemp(f"mpi{ranks}")
        environment = mpirun_environment()
        environment.update(env or {})
        done = subprocess.run(
            mpirun_command(ranks, [str(PROGRAM), str(out), *checks]),
            env=environment,
            capture_output=True,
            text=True,
            timeout=LAUNCH_TIMEOUT_S,
        )
        output = done.stdout[-4000:] + done.stderr[-4000:]
        assert done.returncode == 0, f"mpirun -n {ranks} exited {done.returncode}:\n{output}"
        reports = []
        for rank in range(ranks):
            path = out / f"rank-{rank}.json"
            assert path.exists(), f"rank {rank} wrote no report:\n{output}"
            reports.append(json.loads(path.read_text()))
        runs[key] = RankRun(ranks, reports, output)
        return runs[key]

    return run
