"""Makes this directory's helper modules importable (tests use --import-mode=importlib)."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
