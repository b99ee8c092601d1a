"""Interpreter: data_movement ops."""

from __future__ import annotations
