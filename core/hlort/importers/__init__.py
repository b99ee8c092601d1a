"""Importers: other program formats -> hlort's HLO IR (they build IR; they never optimize)."""
