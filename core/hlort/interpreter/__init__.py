"""The NumPy reference interpreter: the definition of what every op means."""

from hlort.interpreter import custom_call_targets  # noqa: F401  (registers the shipped targets)
from hlort.interpreter.evaluator import Evaluator, evaluate  # noqa: F401
