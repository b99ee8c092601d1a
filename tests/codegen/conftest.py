"""Makes codegen_helpers importable (tests run with --import-mode=importlib)."""

import os
import sys

import pytest

pytest.importorskip("llvmlite")
sys.path.insert(0, os.path.dirname(__file__))
