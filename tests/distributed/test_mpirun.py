"""Processes under ``mpirun -n 2`` and ``-n 4`` on this machine: the transport, initialize's
global device list, collectives on backend buffers, and the bounded wait (rank_program.py does
the work in each rank; these tests assert on what every rank reported).

One mpirun job per rank count runs all checks, to keep launches (about a second each) few.
"""

from __future__ import annotations

import pytest

CHECKS = (
    "transport",
    "concurrent_groups",
    "bad_contribution",
    "deadline",
    "initialize",
    "collectives",
    "program",
    "compile_errors",
    "mpi_collectives",
    "mpi_deadline",
    "serialized_groups",
    "compiled_mismatch",
    "serialized_mismatch",
    "colliding_groups",
)
ENV = {"HLORT_INTERPRETER_DEVICES": "2"}  # two interpreter devices per process
RANKS = [2, 4]


@pytest.fixture(params=RANKS, ids=[f"{n}ranks" for n in RANKS])
def job(request, mpi_ranks):
    return mpi_ranks(request.param, *CHECKS, env=ENV)


def test_every_device_array_reaches_every_rank_bit_for_bit(job):
    for rank, found in enumerate(job.check("transport")):
        assert found["whole_group_order"] == list(range(2 * job.ranks)), rank
        assert found["whole_equal"], rank
        assert all(same for _, same in found["typed"]), (rank, found["typed"])
        assert found["odd"] == {"scalar": True, "empty": True, "strided": True, "large": True}


def test_concurrent_exchanges_of_two_groups_and_colliding_tags(job):
    for rank, found in enumerate(job.check("concurrent_groups")):
        assert found["threads_alive"] == 0 and found["errors"] == [], (rank, found)
        assert found["all_ok"], rank
        assert found["collisions_ok"], rank


def test_a_contribution_for_a_device_of_another_process_is_refused(job):
    for found in job.check("bad_contribution"):
        assert found["code"] == "INVALID_ARGUMENT"
        assert "contributed [0, 99]" in found["message"]


def test_a_rank_that_never_arrives_gives_deadline_exceeded_naming_it(job):
    reports = job.check("deadline")
    last = job.ranks - 1
    for rank, found in enumerate(reports[:-1]):
        assert found["raised"] == "DEADLINE_EXCEEDED", (rank, found)
        assert f"process {last} (devices [{2 * last}, {2 * last + 1}])" in found["message"]
        assert "within 1 s" in found["message"]
    assert all(found["rejoined"] for found in reports)


def test_initialize_forms_the_global_device_list(job):
    reports = job.check("initialize")
    for rank, found in enumerate(reports):
        assert found["idempotent"]
        assert found["process_index"] == rank and found["process_count"] == job.ranks
        # two interpreter devices per process, numbered by process: the same list everywhere
        assert found["devices"] == [
            [2 * r + k, r, r == rank, "interpreter", k] for r in range(job.ranks) for k in (0, 1)
        ]
        assert found["addressable"] == [2 * rank, 2 * rank + 1]
        assert found["local_devices_are_runtime_devices"]
        # a plain hlort.compile still runs on this process's devices alone, with local ids
        assert found["plain_compile_stays_local"], (rank, found)
        assert found["remote_lookup"] == "NOT_FOUND"


def test_collectives_on_buffers_cross_processes(job):
    for rank, found in enumerate(job.check("collectives")):
        found.pop("seconds")
        code, message = found.pop("all_reduce_type_mismatch")
        assert code == "INVALID_ARGUMENT", (rank, message)  # not DEADLINE_EXCEEDED on two paths
        assert "process 0: sum bf16[3,4]; process 1: sum f32[3,4]" in message, message
        assert found == {
            "all_reduce_sum": True,  # MPI's order: within 2 (n-1) eps sum|x| of the fold
            "all_reduce_int_exact": True,
            "all_reduce_mismatch": "INVALID_ARGUMENT",  # process 0 passed another shape
            "all_reduce_max": True,
            "all_gather": True,
            "all_to_all": True,
            "permute_ring": True,
            "permute_one_way": True,
        }, rank


def test_a_compiled_program_s_collectives_span_every_process(job):
    digests: dict = {}
    for rank, found in enumerate(job.check("program")):
        # this process's executable runs the copies of its own devices (local ids 0 and 1)
        assert found["executable_devices"] == ["interpreter:0", "interpreter:1"]
        assert sorted(found["checks"]) == [str(2 * rank), str(2 * rank + 1)]
        for replica, checks in found["checks"].items():
            assert all(checks.values()), (rank, replica, checks)
        assert found["call_with_arrays"], rank
        for device, parts in found["reduce_scatter"].items():
            assert parts == [True, True], (rank, device)  # f32 within tolerance; s32 exact
        for device, forms in found["all_to_all_forms"].items():
            assert forms == [True, True], (rank, device)  # split along dim 1; tuple form
        for device, exact in found["exact_paths"].items():
            assert exact == [True, True, True], (rank, device)  # bf16, custom reducer, s32
        digests.update(found["digests"])
    # MPI gives every member the same bits: one digest per (all-reduce, group)
    assert len({d[0] for d in digests.values()}) == 1, digests
    assert len({d[1] for i, d in digests.items() if int(i) % 2 == 0}) == 1, digests
    assert len({d[1] for i, d in digests.items() if int(i) % 2 == 1}) == 1, digests


def test_mpi_collectives_of_the_transport(job):
    digests: dict = {}
    for rank, found in enumerate(job.check("mpi_collectives")):
        assert found["threads_alive"] == 0 and found["errors"] == [], (rank, found)
        assert found["within_fold"], rank
        assert all(found["integers_exact"].values()), (rank, found["integers_exact"])
        assert found["all_gather_exact"] == [True, True], rank
        for parity, steps in found["digests"].items():
            digests.setdefault(parity, set()).add(tuple(steps))
    assert all(len(v) == 1 for v in digests.values()), digests  # same bits on every rank


def test_a_rank_missing_an_mpi_all_reduce_gives_deadline_exceeded(job):
    reports = job.check("mpi_deadline")
    last = job.ranks - 1
    for rank, found in enumerate(reports):
        assert found["warm"] and found["rejoined"], (rank, found)
        if rank == last:
            assert found["late_sum"], found
            # late for a group the others gave up on: bounded, naming them, not a hang in
            # MPI_Comm_create_group
            code, message, seconds = found["late_handshake"]
            assert code == "DEADLINE_EXCEEDED", found
            assert f"process(es) {list(range(last))} reached" in message, message
            assert "gave up on it" in message and "restart the job" in message, message
            assert seconds < 30, found
            continue
        code, message, seconds = found["handshake"]
        assert code == "DEADLINE_EXCEEDED", found
        assert f"process {last} (devices [{2 * last + 1}])" in message, message
        code, message, seconds = found["in_mpi"]
        assert code == "DEADLINE_EXCEEDED" and "within 1 s" in message, found
        assert seconds < 30, found  # bounded by the 1 s timeout, not a hang
        code, message = found["retired"]
        assert code == "ABORTED" and "restart the job" in message, found


def test_group_collectives_without_thread_multiple_do_not_deadlock(job):
    """Two groups started in opposite orders on even and odd ranks, every MPI call behind one
    lock (an MPI that gives only MPI_THREAD_SERIALIZED): no communicator is created, the keyed
    exchange serves all-reduce, all-gather and all-to-all, every result right."""
    for rank, found in enumerate(job.check("serialized_groups")):
        assert found["threads_alive"] == 0 and found["errors"] == [], (rank, found)
        assert found["all_ok"], (rank, found["results"])
        assert found["communicators_made"] == 0, (rank, found)


def test_compiled_collectives_of_other_shapes_or_types_name_both_sides(job):
    """Process 0 runs a program whose collective operands are f32[16] (or s32[8]) where the
    others' are f32[8]: INVALID_ARGUMENT on every process naming both, not MPI reading past a
    buffer (garbage, a crash) or a hang; the next matching collective still works."""
    want = {
        "shape_all_reduce": ("all_reduce sum f32[16]", "all_reduce sum f32[8]"),
        "type_all_reduce": ("all_reduce sum s32[8]", "all_reduce sum f32[8]"),
        "size_all_reduce": ("all_reduce sum f32[4096]", "all_reduce sum f32[8]"),
        "shape_all_gather": ("all_gather f32[16] on 2", "all_gather f32[8] on 2"),
        "shape_all_to_all": ("all_to_all f32[2] in 8", "all_to_all f32[1] in 8"),
    }
    for rank, found in enumerate(job.check("compiled_mismatch")):
        for case, (first, other) in want.items():
            code, message, seconds = found[case]
            assert code == "INVALID_ARGUMENT", (rank, case, message)
            if case == "shape_all_to_all" and job.ranks == 2:
                first, other = "all_to_all f32[4] in 4", "all_to_all f32[2] in 4"
            assert f"process 0: {first}" in message and f"process 1: {other}" in message, (
                rank,
                case,
                message,
            )
            assert "same program" in message and seconds < 30, (rank, case, found[case])
        assert found["after"], rank


def test_keyed_exchange_collectives_of_other_shapes_name_both_sides(job):
    for rank, found in enumerate(job.check("serialized_mismatch")):
        for case in ("all_gather", "all_to_all"):
            code, message = found[case]
            assert code == "INVALID_ARGUMENT", (rank, case, message)
            assert f"process 0: {case} f32[4]" in message, (rank, case, message)
            assert f"process 1: {case} f32[2]" in message, (rank, case, message)


def test_two_groups_whose_crc32s_collide_get_their_own_creation_tags(job):
    """Their communicators are made at once over the same processes: one tag for both would let
    MPI match one creation's messages with the other's."""
    reports = job.check("colliding_groups")
    for rank, found in enumerate(reports):
        assert found["threads_alive"] == 0 and found["errors"] == [], (rank, found)
        assert found["results"] == [True, True], (rank, found)
        assert len(set(found["tags"])) == 2, (rank, found["tags"])
    assert all(found["tags"] == reports[0]["tags"] for found in reports)  # agreed


def test_mlp_training_step_on_two_ranks_of_two_cpu_devices_matches_one_device(mpi_ranks):
    """Issue 17's must-show: the data-parallel MLP step on 2 MPI ranks x 2 cpu devices."""
    pytest.importorskip("hlort_cpu", reason="the cpu plugin is not installed")
    pytest.importorskip(
        "hlort.testing.collective_programs",
        reason="the MLP step program and cpu virtual devices come with branch collbe",
    )
    job = mpi_ranks(2, "mlp", env={"HLORT_CPU_DEVICES": "2", "HLORT_FALLBACK": "error"})
    reports = job.check("mlp")
    digests = set()
    for rank, found in enumerate(reports):
        assert found["platform"] == "cpu" and found["replicas"] == 4, (rank, found)
        assert found["fallbacks"] == 0, (rank, found)
        assert found["matches_one_device"], rank  # rtol 1e-5, atol 1e-6 (f32)
        assert found["weights_moved"], rank
        assert found["call_with_arrays"], rank  # cpu's one-device fast path is not taken
        # two local copies run on their device threads; one copy of a small program inline
        assert found["inline"] == [False, True], (rank, found["inline"])
        assert found["inline_result"], rank
        digests.update(found["digests"])
    assert len(digests) == 1  # every replica on both processes ends with the same bits


def test_compile_refuses_what_the_run_cannot_place_naming_the_fix(job):
    total = 2 * job.ranks
    for rank, found in enumerate(job.check("compile_errors")):
        code, message = found["too_many"]
        assert code == "INVALID_ARGUMENT", (rank, found)
        assert f"needs {2 * total} device(s)" in message and f"have {total}" in message
        code, message = found["none_here"]
        assert code == "INVALID_ARGUMENT" and "no copy of one runs on process" in message
        code, message = found["unknown_device"]
        assert code == "NOT_FOUND" and f"no device {total + 5}" in message
