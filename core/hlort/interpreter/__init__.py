"""The NumPy reference interpreter: the definition of what every op means.

The custom-call targets hlort ships (custom_call_targets.py) register on the custom-call
registry's first read (``import hlort`` defers them: hlort.deferred_registrations), not here: a
first compile that calls none does not import them."""

from hlort.interpreter.evaluator import Evaluator, evaluate  # noqa: F401
