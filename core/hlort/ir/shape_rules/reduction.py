"""Shape rules: reduction ops."""

from __future__ import annotations
