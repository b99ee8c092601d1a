"""Runs tests/distributed/rank_program.py under ``mpirun -n N`` and reads what each rank found.

Tests that need MPI take the ``mpi_ranks`` fixture; without mpi4py or mpirun they skip with the
one-line reason (``make test`` installs the ``[mpi]`` extra, so CI runs them). Every launch is
bounded by a subprocess timeout, and the checks themselves by collective timeouts, so a broken
exchange fails a test instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from hlort.distributed.process_env import mpi_available

PROGRAM = Path(__file__).with_name("rank_program.py")
LAUNCH_TIMEOUT_S = 180  # a whole mpirun job on a loaded 2-core machine; checks bound themselves
# PRRTE needs one non-loopback interface for its control channel, even with every rank local
NO_INTERFACE = "No network interfaces were found for out-of-band communications"


def _launch(command: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run an mpirun job in its own process group; on timeout the whole group is killed (the
    ranks too, not only mpirun), and the test fails saying so."""
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=LAUNCH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"mpirun did not finish within {LAUNCH_TIMEOUT_S} s:\n{output[-4000:]}")
    return process.returncode, output[-8000:]


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
        returncode, output = _launch(
            mpirun_command(ranks, [str(PROGRAM), str(out), *checks]), environment
        )
        if returncode != 0 and NO_INTERFACE in output:
            pytest.skip(f"Open MPI's launcher cannot start here: {NO_INTERFACE.lower()}")
        assert returncode == 0, f"mpirun -n {ranks} exited {returncode}:\n{output}"
        reports = []
        for rank in range(ranks):
            path = out / f"rank-{rank}.json"
            assert path.exists(), f"rank {rank} wrote no report:\n{output}"
            reports.append(json.loads(path.read_text()))
        runs[key] = RankRun(ranks, reports, output)
        return runs[key]

    return run
