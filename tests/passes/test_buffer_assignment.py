"""Buffer assignment: liveness, reuse in one arena, in-place updates, donated-input aliasing."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import examples, shape
from hlort.builder import Builder
from hlort.passes import assign_buffers, run_default_pipeline


def check_no_overlap(assignment) -> None:
    arena = [b for b in assignment.buffers if b.in_arena]
    for i, a in enumerate(arena):
        assert a.offset is not None and a.offset + a.size <= assignment.arena_size
        for b in arena[i + 1 :]:
            if assignment.interferes(a, b):
                assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset, (a, b)
    assert assignment.peak_bytes <= assignment.arena_size
    assert assignment.peak_bytes <= assignment.total_bytes


@pytest.mark.parametrize(
    "make",
    [
        lambda: examples.reduce_sum_fma(1000),
        lambda: examples.softmax_relu_matmul(8, 4, 16),
        lambda: examples.layernorm(8, 16),
    ],
)
def test_seeds_before_and_after_the_pipeline(make):
    module, _ = make()
    check_no_overlap(assign_buffers(module))
    run_default_pipeline(module)
    check_no_overlap(assign_buffers(module))


def test_elementwise_chain_runs_in_place():
    b = Builder("chain")
    x = b.parameter(shape.array("f32", [256]))
    e = b.exp(x)
    a = b.abs(e)
    n = b.negate(a)
    module = b.build(n)
    result = assign_buffers(module)
    assert result.buffer(e) is result.buffer(a) is result.buffer(n)
    assert result.buffer(n).kind == "output"
    assert result.arena_size == 1024 and result.peak_bytes == 1024
    assert result.buffer(x).offset is None and result.buffer(x).kind == "parameter"


def test_in_place_off_gives_every_value_its_own_block_while_its_operand_lives():
    """A backend whose kernels vectorize only on distinct pointers turns in-place reuse off:
    an op never writes over the operand it reads, but dead blocks are still reused."""
    b = Builder("chain")
    x = b.parameter(shape.array("f32", [256]))
    e = b.exp(x)
    a = b.abs(e)
    n = b.negate(a)
    c = b.cosine(n)
    module = b.build(c)
    result = assign_buffers(module, in_place=False)
    check_no_overlap(result)
    for producer, consumer in ((e, a), (a, n), (n, c)):
        assert result.buffer(producer).offset != result.buffer(consumer).offset
    assert result.buffer(e).offset == result.buffer(n).offset  # e is dead once a exists
    assert result.arena_size == 2048


def test_values_kept_out_of_the_arena_and_a_given_schedule():
    b = Builder("external")
    x = b.parameter(shape.array("f32", [64]))
    e = b.exp(x)
    d = b.dot(b.reshape(e, [8, 8]), b.reshape(e, [8, 8]))
    module = b.build(b.tanh(d))
    order = module.entry.post_order()
    result = assign_buffers(module, schedule=order, arena_values=lambda i: i is not d)
    check_no_overlap(result)
    assert result.buffer(d).kind == "external" and result.buffer(d).offset is None
    assert result.buffer(e).offset is not None
    assert result.schedule == order


def test_reuse_of_freed_buffers():
    b = Builder("reuse")
    x = b.parameter(shape.array("f32", [256]))
    zero = b.constant(np.float32(0))
    add = b.scalar_computation("add", "f32")
    t1 = b.broadcast(b.reduce(b.exp(x), zero, add, [0]), [256], [])  # temp, then freed
    t2 = b.exp(b.reverse(t1, [0]))  # reverse cannot be in place; it can reuse exp(x)'s block
    module = b.build(t2)
    result = assign_buffers(module, alignment=1)
    check_no_overlap(result)
    assert result.arena_size < result.total_bytes


def test_dynamic_update_slice_updates_in_place():
    b = Builder("dus")
    x = b.parameter(shape.array("f32", [64]))
    u = b.parameter(shape.array("f32", [8]))
    i = b.constant(np.int32(3))
    base = b.negate(x)
    updated = b.dynamic_update_slice(base, u, [i])
    module = b.build(b.abs(updated))
    result = assign_buffers(module)
    assert result.buffer(updated) is result.buffer(base)


def test_donated_parameter_becomes_the_output():
    b = Builder("donate")
    x = b.parameter(shape.array("f32", [128]))
    y = b.parameter(shape.array("f32", [128]))
    module = b.build(b.add(x, y))
    assert assign_buffers(module).output_aliases == {}
    donated = assign_buffers(module, donated=[0])
    assert donated.output_aliases == {(): 0}
    assert donated.arena_size == 0
    assert "aliases donated parameter 0" in donated.report()


def test_donated_parameter_reused_after_its_last_read():
    b = Builder("late")
    x = b.parameter(shape.array("f32", [16]))
    s = b.reduce(x, b.constant(np.float32(0)), b.scalar_computation("add", "f32"), [0])
    module = b.build(b.tuple([b.broadcast(s, [16], []), s]))
    result = assign_buffers(module, donated=[0])
    assert result.output_aliases == {(0,): 0}
    assert result.slice(module.entry.root, (1,)).offset is not None


def test_tuple_outputs_and_slices():
    b = Builder("tuple")
    x = b.parameter(shape.array("f32", [10]))
    n = b.negate(x)
    e = b.exp(x)
    module = b.build(b.tuple([n, e]))
    result = assign_buffers(module)
    slices = result.slices(module.entry.root)
    assert [s.size for s in slices] == [40, 40]
    assert {s.buffer.kind for s in slices} == {"output"}
    assert slices[0].offset != slices[1].offset
    check_no_overlap(result)
