"""Shape rules: control_flow ops."""

from __future__ import annotations
