"""Interpreter: indexing ops."""

from __future__ import annotations
