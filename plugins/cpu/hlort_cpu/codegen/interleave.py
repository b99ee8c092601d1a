"""How many interleaved vector iterations the CPU's hot element loops ask LLVM for.

Hot element loops ask for ``INTERLEAVE`` interleaved vector iterations (``llvm.loop`` metadata,
through ``emit_loop(..., interleave=)``): a fused body is one long dependence chain (a
polynomial, an exp), and LLVM's cost model keeps a single chain for big bodies, which leaves the
core waiting on latency. Measured on GELU 2^24 (one thread): 27 ms with LLVM's choice, 15.6 ms
with 4 chains.
"""

from __future__ import annotations

from hlort_cpu.codegen import code_settings

INTERLEAVE = 4
MIN_INTERLEAVED_TRIPS = 256  # below this the hint buys nothing; on a 1-trip loop with a big
code_settings.declare(__name__, "INTERLEAVE", "MIN_INTERLEAVED_TRIPS")
# body LLVM's vectorizer ran for minutes (a scalar bf16 cbrt)


def interleave_for(trips: int) -> int:
    """The interleave hint for a loop of ``trips`` iterations known at compile time."""
    return INTERLEAVE if trips >= MIN_INTERLEAVED_TRIPS else 0
