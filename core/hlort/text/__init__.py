"""XLA HLO text: parse what XLA and JAX print, print in XLA's style, compare modules."""

from hlort.text.equality import module_difference, modules_equal  # noqa: F401
from hlort.text.parser import parse_module, parse_shape  # noqa: F401
from hlort.text.printer import print_computation, print_instruction, print_module  # noqa: F401
