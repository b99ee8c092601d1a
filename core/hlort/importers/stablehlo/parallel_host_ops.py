"""send/recv and infeed/outfeed inside ``interpreter.run_parallel`` (the StableHLO interpreter's
test harness), where the process grid is imported as one program.

A grid whose processes run different functions (senders and receivers) is imported one process
after another, in grid order, each process's function converted on its own: a ``send`` appends
its value to its channel's queue and a ``recv`` takes the oldest value of its channel, so a
receiver must come after its sender in the grid (as in the corpus); otherwise UNIMPLEMENTED.
``infeed`` takes the next function of the run_parallel's ``infeed=[@f, ...]`` list and yields
that function's value; ``outfeed`` consumes its values (the harness has nothing to read them;
the tests check only that the program runs). Outside run_parallel the four ops are
UNIMPLEMENTED: hlort has no host transfer channels.
"""

from __future__ import annotations

from collections import deque

from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.conversion_context import OpContext, converter
from hlort.ir.instruction import Instruction


class HostQueues:
    """The channels and the infeed queue of one run_parallel grid."""

    def __init__(self, infeed: list[str]):
        self.channels: dict[int, deque[Instruction]] = {}
        self.infeed = deque(infeed)


def queues_of(cx: OpContext) -> HostQueues | None:
    scope = cx.scope
    while scope is not None and not hasattr(scope, "host_queues"):
        scope = scope.parent
    return None if scope is None else scope.host_queues


def _need(cx: OpContext, what: str) -> HostQueues:
    queues = queues_of(cx)
    if queues is None:
        raise cx.unsupported(f"{what} outside interpreter.run_parallel is not supported by hlort")
    return queues


def _channel(cx: OpContext) -> int:
    handle = cx.attr("channel_handle", None)
    return int(handle.fields.get("handle", 0)) if isinstance(handle, ast.StructAttr) else 0


@converter("stablehlo.send")
def _send(cx: OpContext):
    queues = _need(cx, "host/device communication (send)")
    data, token = cx.operands[:-1], cx.operands[-1]
    queues.channels.setdefault(_channel(cx), deque()).extend(data)
    return [cx.b.after_all([token])]


@converter("stablehlo.recv")
def _recv(cx: OpContext):
    queues = _need(cx, "host/device communication (recv)")
    waiting = queues.channels.get(_channel(cx))
    count = len(cx.op.result_types) - 1
    if not waiting or len(waiting) < count:
        raise cx.unsupported(
            f"recv on channel {_channel(cx)} before its send in the grid order (put the sending "
            f"process first)"
        )
    values = [waiting.popleft() for _ in range(count)]
    return [*values, cx.b.after_all([cx.operand(0)])]


@converter("stablehlo.infeed")
def _infeed(cx: OpContext):
    from hlort.importers.stablehlo.convert_module import Scope

    queues = _need(cx, "infeed")
    if not queues.infeed:
        raise cx.invalid("reads past the end of run_parallel's infeed list")
    name = queues.infeed.popleft()
    func = cx.conv.mlir.functions.get(name)
    if func is None or func.body is None or func.args:
        raise cx.invalid(f"infeed function @{name} must exist and take no arguments")
    values = cx.conv.convert_body(Scope(cx.conv, cx.b, parent=None), func.body, f"@{name}")
    return [*values, cx.b.after_all([cx.operand(0)])]


@converter("stablehlo.outfeed")
def _outfeed(cx: OpContext):
    _need(cx, "outfeed")
    return [cx.b.after_all([cx.operands[-1]])]
