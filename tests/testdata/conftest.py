"""Make the sample helpers (corpus_sample.py) importable by the tests here."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
