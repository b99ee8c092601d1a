"""Shape rules: data_movement ops."""

from __future__ import annotations
