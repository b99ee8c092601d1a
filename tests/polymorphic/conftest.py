"""generate.py (the JAX side of these programs) is imported by the JAX comparison test."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
