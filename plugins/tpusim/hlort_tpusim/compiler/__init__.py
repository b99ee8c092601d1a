"""The tpusim compiler: optimized HLO module -> tpusim program (see lowering.py)."""

from hlort_tpusim.compiler.lowering import Lowering


def compile_module(module, config):
    """Lower ``module`` for the machine ``config``; returns (program, {hlo index: module})."""
    lowering = Lowering(module, config)
    program = lowering.lower()
    return program, lowering.modules
