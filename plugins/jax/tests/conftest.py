"""hlort-jax tests: the JAX ones skip (one line, with the reason) when jax is not installed."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # jax_platforms.py, shared by the test modules
