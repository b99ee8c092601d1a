"""Interpreter: elementwise ops."""

from __future__ import annotations
