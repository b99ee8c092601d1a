"""The NumPy reference interpreter: the definition of what every op means."""

from hlort.interpreter.evaluator import Evaluator, evaluate  # noqa: F401
