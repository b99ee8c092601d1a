"""Shape rules: elementwise ops."""

from __future__ import annotations
